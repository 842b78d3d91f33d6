//! Central-difference gradient check: an oracle independent of backward.
//!
//! [`gradcheck`] builds `f` on variables to get the analytic gradient by
//! backward, and on constants at `x ± step` to get the numerical one,
//! `(f(x+h) - f(x-h)) / 2h`. The default step is a power of two so that
//! `x ± h` is exact for moderate x and a polynomial of low degree gives the
//! exact derivative (2x^2 at 2: analytic 8, numerical 8, scaled error 0).

use crate::error::Error;
use crate::scalar::Scalar;
use crate::tape::Tape;

/// The default finite-difference step, 2^-20.
pub const DEFAULT_STEP: f64 = 1.0 / 1_048_576.0;

/// The default tolerance on the scaled error.
pub const DEFAULT_TOLERANCE: f64 = 1e-9;

/// One input's check: `scaled_error = |analytic - numerical| / max(1, |analytic|, |numerical|)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradCheck {
    /// The stored gradient backward computed for this input.
    pub analytic: f64,
    /// The central difference.
    pub numerical: f64,
    /// The distance between the two, scaled by the larger magnitude (at least 1).
    pub scaled_error: f64,
    /// The largest scaled error that passes.
    pub tolerance: f64,
}

impl GradCheck {
    /// True when the scaled error is within the tolerance.
    pub fn passed(&self) -> bool {
        self.scaled_error <= self.tolerance
    }
}

/// Compare backward's gradient of `f(inputs)` with central differences, per
/// input, with the default step and tolerance.
pub fn gradcheck<F>(f: F, inputs: &[f64]) -> Result<Vec<GradCheck>, Error>
where
    F: Fn(&[Scalar]) -> Result<Scalar, Error>,
{
    gradcheck_with(f, inputs, DEFAULT_STEP, DEFAULT_TOLERANCE)
}

/// [`gradcheck`] with an explicit step and tolerance.
///
/// Fails with the first contract error that building `f` or its backward returns.
pub fn gradcheck_with<F>(
    f: F,
    inputs: &[f64],
    step: f64,
    tolerance: f64,
) -> Result<Vec<GradCheck>, Error>
where
    F: Fn(&[Scalar]) -> Result<Scalar, Error>,
{
    let tape = Tape::new();
    let leaves = inputs
        .iter()
        .map(|&x| tape.variable(x))
        .collect::<Result<Vec<_>, _>>()?;
    f(&leaves)?.backward()?;
    let value_at = |index: usize, shifted: f64| -> Result<f64, Error> {
        // A fresh tape per evaluation, so the differences do not grow the first one.
        let tape = Tape::new();
        let mut args = inputs
            .iter()
            .map(|&v| tape.constant(v))
            .collect::<Result<Vec<_>, _>>()?;
        args[index] = tape.constant(shifted)?;
        Ok(f(&args)?.value())
    };
    let mut results = Vec::with_capacity(inputs.len());
    for (index, &x) in inputs.iter().enumerate() {
        let numerical = (value_at(index, x + step)? - value_at(index, x - step)?) / (2.0 * step);
        let analytic = leaves[index].gradient().expect("a variable is tracked");
        let scaled_error =
            (analytic - numerical).abs() / 1f64.max(analytic.abs()).max(numerical.abs());
        results.push(GradCheck {
            analytic,
            numerical,
            scaled_error,
            tolerance,
        });
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_step_is_two_to_the_minus_twenty() {
        assert_eq!(DEFAULT_STEP, 2f64.powi(-20));
    }

    #[test]
    fn a_wrong_formula_fails_the_check() {
        // relu at a kink: the one-sided analytic 0 against the central difference 0.5.
        let checks = gradcheck(|v| v[0].relu(), &[0.0]).unwrap();
        assert!(!checks[0].passed());
    }

    #[test]
    fn sigmoid_and_sqrt_derivatives_agree_with_central_differences() {
        for x in [-3.0, -0.5, 0.25, 2.0] {
            let checks = gradcheck(|v| v[0].sigmoid(), &[x]).unwrap();
            assert!(checks[0].passed(), "sigmoid at {x}: {:?}", checks[0]);
        }
        for x in [0.25, 0.5, 2.0, 9.0] {
            let checks = gradcheck(|v| v[0].sqrt(), &[x]).unwrap();
            assert!(checks[0].passed(), "sqrt at {x}: {:?}", checks[0]);
        }
    }
}

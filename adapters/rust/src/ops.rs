//! The op table: every operation's name, arity, value and local derivatives.
//!
//! This is the single place where the engine's arithmetic is written down
//! (docs/contract.md section 4), mirroring `reference/ops.py`. Each rule takes the operands'
//! forward values (and, for pow, the constant exponent) and returns the result
//! value together with one local derivative per operand slot, evaluated from the
//! forward values exactly as the contract's formula is written, so the formula
//! fixes the rounding. exp, log, tanh, pow and sigmoid (through exp, in the
//! stable form) use the platform libm through `f64` methods; the fixtures'
//! per-float bounds (docs/contract.md section 9) allow their last-bit
//! differences from the reference's correctly rounded values. sqrt, like add
//! and div, is IEEE-exact and compared exactly.

use std::fmt;

/// One operation of the contract, in the contract's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
    /// `-a`.
    Neg,
    /// `a ^ c` with `c` a finite constant exponent, not a node.
    Pow,
    /// `e ^ a`.
    Exp,
    /// Natural logarithm of `a`.
    Log,
    /// Hyperbolic tangent of `a`.
    Tanh,
    /// `a` if `a > 0` else `+0.0`.
    Relu,
    /// The logistic function `1 / (1 + e^(-a))`.
    Sigmoid,
    /// The square root of `a`.
    Sqrt,
}

/// What a rule returns: the value and one local derivative per operand slot
/// (only the first `arity` entries are meaningful).
pub type Evaluation = (f64, [f64; 2]);

/// A rule maps operand values to an [`Evaluation`]. The second argument is the
/// second operand's value for a binary op, the exponent for pow, and unused
/// (0.0) for the other unary ops.
pub type Rule = fn(f64, f64) -> Evaluation;

/// One row of the op table.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    /// Which operation this row describes.
    pub kind: OpKind,
    /// The contract's name: `add sub mul div neg pow exp log tanh relu sigmoid sqrt`.
    pub name: &'static str,
    /// How many operand nodes the operation takes (pow's exponent is not one).
    pub arity: usize,
    /// True only for pow, whose exponent is a finite constant carried by the operation.
    pub takes_exponent: bool,
    /// Value and local derivatives from the operands' forward values.
    pub rule: Rule,
}

fn add(a: f64, b: f64) -> Evaluation {
    // d(a+b)/da = 1, d(a+b)/db = 1
    (a + b, [1.0, 1.0])
}

fn sub(a: f64, b: f64) -> Evaluation {
    // d(a-b)/da = 1, d(a-b)/db = -1
    (a - b, [1.0, -1.0])
}

fn mul(a: f64, b: f64) -> Evaluation {
    // d(ab)/da = b, d(ab)/db = a
    (a * b, [b, a])
}

fn div(a: f64, b: f64) -> Evaluation {
    let r = a / b;
    // d(a/b)/da = 1/b; d(a/b)/db = -a/b^2, written -(r/b) so it reuses the rounded quotient
    (r, [1.0 / b, -(r / b)])
}

fn neg(a: f64, _: f64) -> Evaluation {
    // d(-a)/da = -1
    (-a, [-1.0, 0.0])
}

fn pow(a: f64, c: f64) -> Evaluation {
    let r = a.powf(c);
    // d(a^c)/da = c*a^(c-1); exactly 0 when c == 0, so 0^0 has derivative 0, not 0*inf
    let local = if c == 0.0 { 0.0 } else { c * a.powf(c - 1.0) };
    (r, [local, 0.0])
}

fn exp(a: f64, _: f64) -> Evaluation {
    let r = a.exp();
    // d(e^a)/da = e^a, the rounded result itself
    (r, [r, 0.0])
}

fn log(a: f64, _: f64) -> Evaluation {
    // d(ln a)/da = 1/a
    (a.ln(), [1.0 / a, 0.0])
}

fn tanh(a: f64, _: f64) -> Evaluation {
    let t = a.tanh();
    // d(tanh a)/da = 1 - tanh(a)^2, from the rounded t
    (t, [1.0 - t * t, 0.0])
}

fn relu(a: f64, _: f64) -> Evaluation {
    // relu(a) = a for a > 0 else +0.0 (so relu(-0.0) is +0.0); derivative 1 where a > 0, else 0
    if a > 0.0 {
        (a, [1.0, 0.0])
    } else {
        (0.0, [0.0, 0.0])
    }
}

fn sigmoid(a: f64, _: f64) -> Evaluation {
    // The stable form: exp of a non-positive argument, so it never overflows; for very
    // negative a the value is subnormal or +0.0, never non-finite.
    let s = if a >= 0.0 {
        1.0 / (1.0 + (-a).exp())
    } else {
        let e = a.exp();
        e / (1.0 + e)
    };
    // d(sigmoid a)/da = s*(1-s), from the rounded s: first 1 - s, then the product
    (s, [s * (1.0 - s), 0.0])
}

fn sqrt(a: f64, _: f64) -> Evaluation {
    // IEEE-exact; nan for a < 0 and -0.0 for -0.0, as IEEE-754 says
    let r = a.sqrt();
    // d(sqrt a)/da = 1/(2 sqrt a), written 0.5/r from the rounded r (+-inf at a = +-0.0)
    (r, [0.5 / r, 0.0])
}

/// Every operation of the contract, in the contract's order.
// One row per line, so the table reads as a table.
#[rustfmt::skip]
pub const OPS: [Op; 12] = [
    Op { kind: OpKind::Add, name: "add", arity: 2, takes_exponent: false, rule: add },
    Op { kind: OpKind::Sub, name: "sub", arity: 2, takes_exponent: false, rule: sub },
    Op { kind: OpKind::Mul, name: "mul", arity: 2, takes_exponent: false, rule: mul },
    Op { kind: OpKind::Div, name: "div", arity: 2, takes_exponent: false, rule: div },
    Op { kind: OpKind::Neg, name: "neg", arity: 1, takes_exponent: false, rule: neg },
    Op { kind: OpKind::Pow, name: "pow", arity: 1, takes_exponent: true, rule: pow },
    Op { kind: OpKind::Exp, name: "exp", arity: 1, takes_exponent: false, rule: exp },
    Op { kind: OpKind::Log, name: "log", arity: 1, takes_exponent: false, rule: log },
    Op { kind: OpKind::Tanh, name: "tanh", arity: 1, takes_exponent: false, rule: tanh },
    Op { kind: OpKind::Relu, name: "relu", arity: 1, takes_exponent: false, rule: relu },
    Op { kind: OpKind::Sigmoid, name: "sigmoid", arity: 1, takes_exponent: false, rule: sigmoid },
    Op { kind: OpKind::Sqrt, name: "sqrt", arity: 1, takes_exponent: false, rule: sqrt },
];

impl OpKind {
    /// This operation's row of the op table.
    pub fn op(self) -> &'static Op {
        // OPS is in declaration order, so the discriminant is the row index.
        &OPS[self as usize]
    }

    /// This operation's rule applied to operand values: the same functions as
    /// the table's `rule`, dispatched by a `match` the compiler can inline
    /// into the engine's creation path (an indirect call there costs a
    /// measurable share of creating a node).
    #[inline]
    pub fn evaluate(self, a: f64, second: f64) -> Evaluation {
        match self {
            OpKind::Add => add(a, second),
            OpKind::Sub => sub(a, second),
            OpKind::Mul => mul(a, second),
            OpKind::Div => div(a, second),
            OpKind::Neg => neg(a, second),
            OpKind::Pow => pow(a, second),
            OpKind::Exp => exp(a, second),
            OpKind::Log => log(a, second),
            OpKind::Tanh => tanh(a, second),
            OpKind::Relu => relu(a, second),
            OpKind::Sigmoid => sigmoid(a, second),
            OpKind::Sqrt => sqrt(a, second),
        }
    }

    /// The contract's name of this operation (`add`, ..., `sqrt`).
    pub fn name(self) -> &'static str {
        self.op().name
    }

    /// The operation with this contract name, if any.
    pub fn from_name(name: &str) -> Option<OpKind> {
        OPS.iter().find(|op| op.name == name).map(|op| op.kind)
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_indexed_by_kind() {
        for (index, op) in OPS.iter().enumerate() {
            assert_eq!(op.kind as usize, index);
            assert_eq!(OpKind::from_name(op.name), Some(op.kind));
        }
        assert_eq!(OpKind::from_name("detach"), None);
    }

    #[test]
    fn evaluate_applies_the_rule_of_the_same_row() {
        for op in &OPS {
            for (a, b) in [(0.7, -1.3), (2.0, 3.0), (-0.0, 0.5)] {
                let (value, locals) = op.kind.evaluate(a, b);
                let (want, want_locals) = (op.rule)(a, b);
                assert_eq!(value.to_bits(), want.to_bits(), "{} value", op.name);
                assert_eq!(
                    locals.map(f64::to_bits),
                    want_locals.map(f64::to_bits),
                    "{}",
                    op.name
                );
            }
        }
    }

    #[test]
    fn div_reuses_the_rounded_quotient() {
        let (r, locals) = div(1.0, 3.0);
        assert_eq!(locals[1].to_bits(), (-(r / 3.0)).to_bits());
    }

    #[test]
    fn relu_of_negative_zero_is_positive_zero() {
        let (value, locals) = relu(-0.0, 0.0);
        assert_eq!(value.to_bits(), 0.0f64.to_bits());
        assert_eq!(locals[0], 0.0);
    }

    #[test]
    fn pow_follows_the_ieee_special_cases() {
        assert!(pow(-8.0, 1.0 / 3.0).0.is_nan());
        assert_eq!(pow(0.0, 0.0), (1.0, [0.0, 0.0]));
        assert_eq!(pow(0.0, -1.0).0, f64::INFINITY);
        assert_eq!(pow(-0.0, -1.0).0, f64::NEG_INFINITY);
        assert!(pow(0.0, 0.5).1[0].is_infinite());
        assert_eq!(pow(-2.0, 3.0), (-8.0, [12.0, 0.0]));
    }

    #[test]
    fn sqrt_is_the_ieee_root_and_half_its_reciprocal() {
        assert_eq!(
            sqrt(2.0, 0.0).0.to_bits(),
            std::f64::consts::SQRT_2.to_bits()
        );
        assert_eq!(sqrt(0.25, 0.0), (0.5, [1.0, 0.0]));
        let (r, locals) = sqrt(3.0, 0.0);
        assert_eq!(locals[0].to_bits(), (0.5 / r).to_bits());
        assert_eq!(locals[0].to_bits(), (1.0 / (2.0 * r)).to_bits());
        assert!(sqrt(-1.0, 0.0).0.is_nan());
        assert_eq!(sqrt(0.0, 0.0), (0.0, [f64::INFINITY, 0.0]));
        let (r, locals) = sqrt(-0.0, 0.0);
        assert_eq!(r.to_bits(), (-0.0f64).to_bits());
        assert_eq!(locals[0], f64::NEG_INFINITY);
    }

    #[test]
    fn sigmoid_is_close_to_the_correctly_rounded_value() {
        // (a, the correctly rounded sigmoid(a), computed with mpfr at 300 bits)
        let table: [(f64, f64); 8] = [
            (1.0, 0.7310585786300049),
            (-1.0, 0.2689414213699951),
            (0.5, 0.6224593312018546),
            (-3.0, 0.04742587317756678),
            (2.0, 0.8807970779778824),
            (36.5, 0.9999999999999999),
            (-40.0, 4.248354255291589e-18),
            (-700.0, 9.85967654375977e-305),
        ];
        for (a, want) in table {
            let (s, _) = sigmoid(a, 0.0);
            let ulps = (s.to_bits() as i64 - want.to_bits() as i64).abs();
            assert!(ulps <= 2, "sigmoid({a}) = {s:e}, {ulps} ulps from {want:e}");
        }
    }

    #[test]
    fn sigmoid_takes_the_stable_form_on_each_side_of_zero() {
        let (s, locals) = sigmoid(-3.0, 0.0);
        let e = (-3.0f64).exp();
        assert_eq!(s.to_bits(), (e / (1.0 + e)).to_bits());
        assert_eq!(locals[0].to_bits(), (s * (1.0 - s)).to_bits());
        let (s, locals) = sigmoid(2.0, 0.0);
        assert_eq!(s.to_bits(), (1.0 / (1.0 + (-2.0f64).exp())).to_bits());
        assert_eq!(locals[0].to_bits(), (s * (1.0 - s)).to_bits());
        assert_eq!(sigmoid(0.0, 0.0), (0.5, [0.25, 0.0]));
        assert_eq!(sigmoid(-0.0, 0.0), (0.5, [0.25, 0.0]));
    }

    #[test]
    fn sigmoid_saturates_to_finite_values_without_overflow() {
        // Far below zero the value is subnormal, then +0.0 with derivative +0.0; far above it is 1.0.
        assert_eq!(sigmoid(-745.0, 0.0).0, 5e-324);
        assert_eq!(sigmoid(-746.0, 0.0), (0.0, [0.0, 0.0]));
        assert_eq!(sigmoid(-f64::MAX, 0.0), (0.0, [0.0, 0.0]));
        assert_eq!(sigmoid(40.0, 0.0), (1.0, [0.0, 0.0]));
        assert_eq!(sigmoid(f64::MAX, 0.0), (1.0, [0.0, 0.0]));
    }

    #[test]
    fn log_maps_domain_errors_to_ieee_results() {
        assert_eq!(log(0.0, 0.0).0, f64::NEG_INFINITY);
        assert!(log(-1.0, 0.0).0.is_nan());
        assert_eq!(exp(1000.0, 0.0).0, f64::INFINITY);
    }
}

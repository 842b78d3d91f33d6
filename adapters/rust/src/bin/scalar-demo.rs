//! The seed demonstration: prints the contract's seed facts, the same ten lines
//! as `python -m reference.demo`, byte for byte. Every number is computed here.

use scalar_autodiff::{Error, Scalar, Tape, gradcheck};

fn f(value: f64) -> String {
    format!("{value:.12}")
}

fn grad(node: &Scalar) -> String {
    node.gradient().map_or_else(|| "none".to_string(), f)
}

fn grads(x: &Scalar, square: &Scalar, loss: &Scalar) -> String {
    format!(
        "x_grad={} square_grad={} loss_grad={}",
        grad(x),
        grad(square),
        grad(loss)
    )
}

/// The ten demo lines.
fn lines() -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    let tape = Tape::new();
    let x = tape.variable(2.0)?;
    let square = x.mul(&x)?;
    let loss = square.add(&square)?;
    out.push(format!(
        "reused square: x={} square={} loss={}",
        f(x.value()),
        f(square.value()),
        f(loss.value())
    ));
    loss.backward()?;
    out.push(format!("one backward: {}", grads(&x, &square, &loss)));
    loss.backward()?;
    out.push(format!("repeated backward: {}", grads(&x, &square, &loss)));
    loss.zero_grad();
    out.push(format!("zero_grad: {}", grads(&x, &square, &loss)));
    loss.backward()?;
    out.push(format!("after zero: {}", grads(&x, &square, &loss)));

    let tape = Tape::new();
    let x = tape.variable(2.0)?;
    let detached = x.detach();
    let expression = x.mul(&x)?.add(&detached.mul(&tape.constant(3.0)?)?)?;
    expression.backward()?;
    out.push(format!(
        "detach: expression=x*x+detach(x)*3 value={} x_grad={} detached_grad={}",
        f(expression.value()),
        grad(&x),
        grad(&detached)
    ));

    let x = Tape::new().variable(0.5)?;
    let y = x.tanh()?.exp()?;
    y.backward()?;
    out.push(format!(
        "nonlinear: expression=exp(tanh(x)) input={} value={} gradient={}",
        f(x.value()),
        f(y.value()),
        grad(&x)
    ));

    let checks = gradcheck(|v| v[0].constant(2.0)?.mul(&v[0])?.mul(&v[0]), &[2.0])?;
    let check = checks[0];
    out.push(format!(
        "gradcheck: expression=2*x*x analytic={} numerical={} scaled_error={:.12e} pass={}",
        f(check.analytic),
        f(check.numerical),
        check.scaled_error,
        check.passed()
    ));

    out.push(typed_errors()?);
    out.push(
        "chapter 15 handoff: replace scalar edges with tensor vector-Jacobian products".to_string(),
    );
    Ok(out)
}

/// Runs the three backward error scenarios and checks that none changed a stored gradient.
fn typed_errors() -> Result<String, Error> {
    let tape = Tape::new();
    let big = tape.variable(1.0)?;
    let loss = big.mul(&tape.constant(1e308)?)?;
    loss.backward()?;
    let before = (big.gradient(), loss.gradient());
    type Action<'a> = Box<dyn Fn() -> Result<(), Error> + 'a>;
    let scenarios: [(&str, &str, Action); 3] = [
        (
            "constant-output",
            "untracked-output",
            Box::new(|| tape.constant(3.0)?.backward()),
        ),
        (
            "non-finite-seed",
            "non-finite-seed",
            Box::new(|| loss.backward_with_seed(f64::INFINITY)),
        ),
        (
            "non-finite-accumulated-gradient",
            "non-finite-accumulated-gradient",
            Box::new(|| loss.backward()),
        ),
    ];
    let labels: Vec<String> = scenarios
        .iter()
        .map(|(label, expected, action)| match action() {
            Ok(()) => format!("{label}!no-error"),
            Err(error) if error.kind() == *expected => label.to_string(),
            Err(error) => format!("{label}!{}", error.kind()),
        })
        .collect();
    let unchanged = (big.gradient(), loss.gradient()) == before;
    Ok(format!(
        "typed errors: {}; gradients unchanged={unchanged}",
        labels.join(" | ")
    ))
}

fn main() -> Result<(), Error> {
    println!("{}", lines()?.join("\n"));
    Ok(())
}

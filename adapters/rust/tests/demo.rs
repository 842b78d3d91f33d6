//! The demo binary prints exactly the ten seed-fact lines of the reference's
//! `python -m reference.demo`, byte for byte.

use std::process::Command;

const EXPECTED: &str = "\
reused square: x=2.000000000000 square=4.000000000000 loss=8.000000000000
one backward: x_grad=8.000000000000 square_grad=2.000000000000 loss_grad=1.000000000000
repeated backward: x_grad=16.000000000000 square_grad=4.000000000000 loss_grad=2.000000000000
zero_grad: x_grad=0.000000000000 square_grad=0.000000000000 loss_grad=0.000000000000
after zero: x_grad=8.000000000000 square_grad=2.000000000000 loss_grad=1.000000000000
detach: expression=x*x+detach(x)*3 value=10.000000000000 x_grad=4.000000000000 detached_grad=none
nonlinear: expression=exp(tanh(x)) input=0.500000000000 value=1.587431271430 gradient=1.248431724655
gradcheck: expression=2*x*x analytic=8.000000000000 numerical=8.000000000000 scaled_error=0.000000000000e0 pass=true
typed errors: constant-output | non-finite-seed | non-finite-accumulated-gradient; gradients unchanged=true
chapter 15 handoff: replace scalar edges with tensor vector-Jacobian products
";

#[test]
fn the_demo_prints_the_ten_seed_fact_lines_byte_for_byte() {
    let output = Command::new(env!("CARGO_BIN_EXE_scalar-demo"))
        .output()
        .expect("the scalar-demo binary runs");
    assert!(
        output.status.success(),
        "scalar-demo exited with {}",
        output.status
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), EXPECTED);
}

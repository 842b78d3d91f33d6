"""Every seed fact of docs/contract.md section 10, one named test each, on the reference engine."""

import subprocess
import sys
from pathlib import Path

from reference import NonFiniteAccumulatedGradient, NonFiniteSeed, UntrackedOutput, constant, gradcheck, variable

ROOT = Path(__file__).resolve().parent.parent


def reused_square():
    x = variable(2.0)
    square = x * x
    loss = square + square
    return x, square, loss


def grads(*nodes):
    return tuple(node.grad for node in nodes)


def test_reused_square_values_are_4_and_8():
    _, square, loss = reused_square()
    assert (square.value, loss.value) == (4.0, 8.0)


def test_one_backward_gives_loss_1_square_2_x_8():
    x, square, loss = reused_square()
    loss.backward()
    assert grads(loss, square, x) == (1.0, 2.0, 8.0)


def test_one_backward_walks_four_edges_with_the_contract_numbers():
    x, square, loss = reused_square()
    record = loss.backward()
    rows = [(e.consumer, e.operand, e.slot, e.local_derivative, e.upstream, e.contribution) for e in record.edges]
    assert rows == [
        (loss, square, 0, 1.0, 1.0, 1.0),
        (loss, square, 1, 1.0, 1.0, 1.0),
        (square, x, 0, 2.0, 2.0, 4.0),
        (square, x, 1, 2.0, 2.0, 4.0),
    ]


def test_second_backward_accumulates_to_2_4_16():
    x, square, loss = reused_square()
    loss.backward()
    loss.backward()
    assert grads(loss, square, x) == (2.0, 4.0, 16.0)


def test_zero_grad_resets_to_zero_and_one_more_backward_gives_1_2_8():
    x, square, loss = reused_square()
    loss.backward()
    loss.backward()
    loss.zero_grad()
    assert grads(loss, square, x) == (0.0, 0.0, 0.0)
    loss.backward()
    assert grads(loss, square, x) == (1.0, 2.0, 8.0)


def test_assigning_instead_of_adding_would_give_square_1_and_x_2():
    # Replay the pass with the misconception (each edge overwrites the operand's adjoint)
    # to show these are exactly the numbers the fixture's diagnosis looks for.
    x, square, loss = reused_square()
    record = loss.backward()
    assigned = {loss: 1.0}
    for edge in record.edges:
        assigned[edge.operand] = assigned[edge.consumer] * edge.local_derivative
    assert (assigned[square], assigned[x]) == (1.0, 2.0)
    assert (square.grad, x.grad) == (2.0, 8.0)


def test_detach_value_10_x_gradient_4_and_no_detached_gradient():
    x = variable(2.0)
    detached = x.detach()
    y = x * x + detached * 3.0
    y.backward()
    assert (y.value, x.grad, detached.grad, detached.tracked) == (10.0, 4.0, None, False)


def test_exp_tanh_at_half_value_and_gradient():
    x = variable(0.5)
    y = x.tanh().exp()
    y.backward()
    assert f"{y.value:.12f}" == "1.587431271430"
    assert f"{x.grad:.12f}" == "1.248431724655"


def test_central_differences_on_2x_squared_at_2_agree_exactly():
    (check,) = gradcheck(lambda v: constant(2.0) * v * v, [2.0])
    assert (check.analytic, check.numerical, check.scaled_error, check.passed) == (8.0, 8.0, 0.0, True)
    assert check.tolerance == 1e-9


def test_typed_error_demos_leave_gradients_unchanged():
    try:
        constant(3.0).backward()
        raise AssertionError("backward from a constant must fail")
    except UntrackedOutput as error:
        assert error.fields == {"operation": "constant"}
    x = variable(1.0)
    y = x * 1e308
    y.backward()
    before = grads(x, y)
    for action, expected in ((lambda: y.backward(float("inf")), NonFiniteSeed), (y.backward, NonFiniteAccumulatedGradient)):
        try:
            action()
            raise AssertionError("expected a typed error")
        except expected:
            pass
    assert grads(x, y) == before


def test_demo_prints_the_ten_lines():
    out = subprocess.run([sys.executable, "-m", "reference.demo"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout == (
        "reused square: x=2.000000000000 square=4.000000000000 loss=8.000000000000\n"
        "one backward: x_grad=8.000000000000 square_grad=2.000000000000 loss_grad=1.000000000000\n"
        "repeated backward: x_grad=16.000000000000 square_grad=4.000000000000 loss_grad=2.000000000000\n"
        "zero_grad: x_grad=0.000000000000 square_grad=0.000000000000 loss_grad=0.000000000000\n"
        "after zero: x_grad=8.000000000000 square_grad=2.000000000000 loss_grad=1.000000000000\n"
        "detach: expression=x*x+detach(x)*3 value=10.000000000000 x_grad=4.000000000000 detached_grad=none\n"
        "nonlinear: expression=exp(tanh(x)) input=0.500000000000 value=1.587431271430 gradient=1.248431724655\n"
        "gradcheck: expression=2*x*x analytic=8.000000000000 numerical=8.000000000000 "
        "scaled_error=0.000000000000e0 pass=true\n"
        "typed errors: constant-output | non-finite-seed | non-finite-accumulated-gradient; gradients unchanged=true\n"
        "chapter 15 handoff: replace scalar edges with tensor vector-Jacobian products\n"
    )

"""The seed demonstration: ``python -m reference.demo`` prints the contract's seed facts.

The Rust port's ``scalar-demo`` prints the same ten lines byte for byte.
Every number is computed here, not written in.
"""

from __future__ import annotations

from typing import Callable

from . import (
    EngineError,
    NonFiniteAccumulatedGradient,
    NonFiniteSeed,
    UntrackedOutput,
    constant,
    gradcheck,
    variable,
)


def _f(value: float) -> str:
    return f"{value:.12f}"


def _sci(value: float) -> str:
    # Rust's {:.12e} style: no plus sign and no zero padding in the exponent (0e0, 1.5e-10).
    mantissa, exponent = f"{value:.12e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _grads(x, square, loss) -> str:  # type: ignore[no-untyped-def]
    return f"x_grad={_f(x.grad)} square_grad={_f(square.grad)} loss_grad={_f(loss.grad)}"


def lines() -> list[str]:
    """The ten demo lines."""
    out = []
    x = variable(2.0)
    square = x * x
    loss = square + square
    out.append(f"reused square: x={_f(x.value)} square={_f(square.value)} loss={_f(loss.value)}")
    loss.backward()
    out.append(f"one backward: {_grads(x, square, loss)}")
    loss.backward()
    out.append(f"repeated backward: {_grads(x, square, loss)}")
    loss.zero_grad()
    out.append(f"zero_grad: {_grads(x, square, loss)}")
    loss.backward()
    out.append(f"after zero: {_grads(x, square, loss)}")

    x = variable(2.0)
    detached = x.detach()
    expression = x * x + detached * 3.0
    expression.backward()
    detached_grad = "none" if detached.grad is None else _f(detached.grad)
    out.append(
        f"detach: expression=x*x+detach(x)*3 value={_f(expression.value)} x_grad={_f(x.grad)} detached_grad={detached_grad}"  # type: ignore[arg-type]
    )

    x = variable(0.5)
    y = x.tanh().exp()
    y.backward()
    out.append(
        f"nonlinear: expression=exp(tanh(x)) input={_f(x.value)} value={_f(y.value)} gradient={_f(x.grad)}"  # type: ignore[arg-type]
    )

    (check,) = gradcheck(lambda v: constant(2.0) * v * v, [2.0])
    out.append(
        f"gradcheck: expression=2*x*x analytic={_f(check.analytic)} numerical={_f(check.numerical)} "
        f"scaled_error={_sci(check.scaled_error)} pass={str(check.passed).lower()}"
    )

    out.append(_typed_errors())
    out.append("chapter 15 handoff: replace scalar edges with tensor vector-Jacobian products")
    return out


def _typed_errors() -> str:
    labels = []
    big = variable(1.0)
    loss = big * 1e308
    loss.backward()
    before = (big.grad, loss.grad)
    scenarios: list[tuple[str, type[Exception], Callable[[], object]]] = [
        ("constant-output", UntrackedOutput, lambda: constant(3.0).backward()),
        ("non-finite-seed", NonFiniteSeed, lambda: loss.backward(float("inf"))),
        ("non-finite-accumulated-gradient", NonFiniteAccumulatedGradient, lambda: loss.backward()),
    ]
    for label, expected, action in scenarios:
        try:
            action()
            labels.append(f"{label}!no-error")
        except EngineError as error:
            labels.append(label if isinstance(error, expected) else f"{label}!{error.kind}")
    unchanged = (big.grad, loss.grad) == before
    return f"typed errors: {' | '.join(labels)}; gradients unchanged={str(unchanged).lower()}"


def main() -> None:
    """Print the ten demo lines."""
    print("\n".join(lines()))


if __name__ == "__main__":
    main()

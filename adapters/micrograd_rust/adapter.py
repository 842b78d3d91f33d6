"""micrograd-rust 0.1.0 (from PyPI, a Rust engine behind PyO3) behind the adapter protocol, driven faithfully.

micrograd-rust presents itself as a drop-in replacement for Karpathy's micrograd, and
the adapter drives it exactly like ``adapters/micrograd``: leaves are ``Value(v)``, ops
are its operators (``a + b``, ``a - b``, ``a * b``, ``a / b``, ``-a``, ``a ** c``,
``a.exp()``, ``a.tanh()``) and backward is ``Value.backward()``, which takes no seed.
Its ``Value`` has no ``relu`` and no ``log``, so those ops are not declared. Nothing in
its behaviour is corrected; its real divergences are listed in ``expected-failures.toml``.

What it has no notion of is supplied as a user would: *tracked* follows the contract's
rule (it gives every Value a gradient), and ``zero_grad(output)`` sets ``.grad = 0`` on
every node the program built that the output reaches (its ``Value`` exposes no operands,
so the walk follows the program's own operand lists). A repeated step (feature
``repeat``) is a loop of its operator, as a user would write the chain: that is how the
million-node chain reaches micrograd-rust's recursive backward.
"""

from __future__ import annotations

import functools
import sys
from importlib.metadata import version
from typing import Any, Callable

from micrograd_rust import Value

from conformance.program import Step, reachable
from conformance.serve import PYTHON_OPS, StepHook, by_steps, serve

HELLO = {
    "engine": {"name": "micrograd-rust", "version": version("micrograd-rust"), "language": "rust"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "exp", "tanh"],
    "levels": ["values", "gradients"],
    "features": ["repeat"],
}

OPS = PYTHON_OPS


def start(records: bool = True) -> StepHook:
    """A fresh micrograd-rust graph for one case, and the hook that runs its steps one by one.

    ``records`` changes nothing (no pass record is kept). An exception micrograd-rust raises at a step (a
    ZeroDivisionError, a PanicException from its Rust core) is that step's fault: ``by_steps`` reports it and
    goes on, skipping the steps that use what the step did not create.
    """
    values: dict[str, Any] = {}
    inner: dict[str, list[Any]] = {}  # a repeated step's nodes before its last, for zero_grad
    operands: dict[str, tuple[str, ...]] = {}
    tracked: dict[str, bool] = {}

    def gradients() -> dict[str, Any]:
        return {name: value.grad for name, value in values.items() if tracked[name]}

    def step_on(step: Step) -> dict[str, Any]:
        if step.op == "backward":
            values[step.output].backward()  # type: ignore[index]
            return {"gradients": gradients()}
        if step.op == "zero_grad":
            for name in reachable(step.output, operands):  # type: ignore[arg-type]
                values[name].grad = 0.0
                for node in inner.get(name, ()):
                    node.grad = 0.0
            return {"gradients": gradients()}
        assert step.id is not None
        if step.op in ("variable", "constant"):
            node, is_tracked = Value(step.value), step.op == "variable"
        else:
            apply: Callable[..., Any]
            if step.op == "pow":
                assert step.exponent is not None  # a parsed pow step always has one
                apply = functools.partial(_power, exponent=step.exponent)
            else:
                apply = OPS[step.op]
            first, *rest = (values[name] for name in step.operands)
            chain = []
            for _ in range(step.repeat or 1):
                node = apply(first, *rest)
                chain.append(node)
                first = node
            inner[step.id] = chain[:-1]
            is_tracked = any(tracked[name] for name in step.operands)
        values[step.id], tracked[step.id], operands[step.id] = node, is_tracked, step.operands
        return {"value": node.data, "tracked": is_tracked}

    return step_on


run = by_steps(start)
"""One program on micrograd-rust, a step at a time (``conformance.serve.by_steps``)."""


def _power(a: Any, exponent: float) -> Any:
    return a**exponent


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

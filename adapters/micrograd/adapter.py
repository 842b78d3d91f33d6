"""micrograd 0.1.0 (from PyPI) behind the adapter protocol, driven faithfully.

Each step maps onto micrograd's own API: leaves are ``Value(v)``, ops are its
operators (``a + b``, ``a - b``, ``a * b``, ``a / b``, ``-a``, ``a ** c``,
``a.relu()``) and backward is ``Value.backward()``. Nothing in micrograd's
behaviour is corrected: its second backward re-propagates stale intermediate
gradients, its division is ``a * b**-1``, its topological sort recurses. Its
real divergences are listed in ``expected-failures.toml`` with their reasons.

Two things micrograd has no notion of are supplied by the adapter, as a
micrograd user would: ``zero_grad(output)`` sets ``.grad = 0`` on every node
reachable from the output (micrograd only zeroes a Module's parameters), and
*tracked* follows the contract's rule (variables and what depends on them),
since micrograd gives every Value a gradient; the gradients reported are
micrograd's own ``.grad`` of those nodes.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Any

from micrograd.engine import Value

from conformance.program import Step
from conformance.serve import PYTHON_OPS, StepHook, by_steps, serve

HELLO = {
    "engine": {"name": "micrograd", "version": version("micrograd"), "language": "python"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "relu"],
    "levels": ["values", "gradients"],
    "features": [],
}

OPS = PYTHON_OPS


def start(records: bool = True) -> StepHook:
    """A fresh micrograd graph for one case, and the hook that runs its steps one by one.

    ``records`` changes nothing (no pass record is kept). An exception micrograd raises (ZeroDivisionError at
    0 ** -1, RecursionError on a deep chain) is that step's fault: ``by_steps`` reports it and goes on.
    """
    values: dict[str, Value] = {}
    tracked: dict[str, bool] = {}

    def gradients() -> dict[str, Any]:
        return {name: value.grad for name, value in values.items() if tracked[name]}

    def step_on(step: Step) -> dict[str, Any]:
        if step.op == "backward":
            values[step.output].backward()  # type: ignore[index]
            return {"gradients": gradients()}
        if step.op == "zero_grad":
            _zero_grad(values[step.output])  # type: ignore[index]
            return {"gradients": gradients()}
        if step.op in ("variable", "constant"):
            node, is_tracked = Value(step.value), step.op == "variable"
        elif step.op == "pow":
            node, is_tracked = values[step.operands[0]] ** step.exponent, tracked[step.operands[0]]
        else:
            node = OPS[step.op](*(values[name] for name in step.operands))
            is_tracked = any(tracked[name] for name in step.operands)
        values[step.id], tracked[step.id] = node, is_tracked  # type: ignore[index]
        return {"value": node.data, "tracked": is_tracked}

    return step_on


run = by_steps(start)
"""One program on micrograd, a step at a time (``conformance.serve.by_steps``)."""


def _zero_grad(output: Value) -> None:
    # What a micrograd user writes: walk the graph (iteratively) and reset .grad.
    seen = {id(output)}
    stack = [output]
    while stack:
        node = stack.pop()
        node.grad = 0
        for operand in node._prev:
            if id(operand) not in seen:
                seen.add(id(operand))
                stack.append(operand)


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

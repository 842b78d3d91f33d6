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

from conformance.program import Program
from conformance.serve import PYTHON_OPS, serve

HELLO = {
    "engine": {"name": "micrograd", "version": version("micrograd"), "language": "python"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "relu"],
    "levels": ["values", "gradients"],
    "features": [],
}

OPS = PYTHON_OPS


def run(program: Program, records: bool = True) -> list[dict[str, Any]]:
    """Run one program on micrograd and observe every step; ``records`` changes nothing (no pass record is kept)."""
    values: dict[str, Value] = {}
    tracked: dict[str, bool] = {}
    observations: list[dict[str, Any]] = []

    def gradients() -> dict[str, Any]:
        return {name: value.grad for name, value in values.items() if tracked[name]}

    for step in program:
        if step.op in ("variable", "constant"):
            node = Value(step.value)
            tracked[step.id] = step.op == "variable"  # type: ignore[index]
        elif step.op == "pow":
            node = values[step.operands[0]] ** step.exponent
            tracked[step.id] = tracked[step.operands[0]]  # type: ignore[index]
        elif step.id is not None:
            node = OPS[step.op](*(values[name] for name in step.operands))
            tracked[step.id] = any(tracked[name] for name in step.operands)
        elif step.op == "backward":
            values[step.output].backward()  # type: ignore[index]
            observations.append({"gradients": gradients()})
            continue
        else:
            _zero_grad(values[step.output])  # type: ignore[index]
            observations.append({"gradients": gradients()})
            continue
        values[step.id] = node  # type: ignore[index]
        observations.append({"value": node.data, "tracked": tracked[step.id]})  # type: ignore[index]
    return observations


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

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
so the walk follows the program's own operand lists).
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Any

from micrograd_rust import Value

from conformance.program import Program
from conformance.serve import serve

HELLO = {
    "engine": {"name": "micrograd-rust", "version": version("micrograd-rust"), "language": "rust"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "exp", "tanh"],
    "levels": ["values", "gradients"],
    "features": [],
}

OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a: -a,
    "exp": lambda a: a.exp(),
    "tanh": lambda a: a.tanh(),
}


def run(program: Program) -> list[dict[str, Any]]:
    """Run one program on micrograd-rust and observe every step."""
    values: dict[str, Any] = {}
    operands: dict[str, tuple[str, ...]] = {}
    tracked: dict[str, bool] = {}
    observations: list[dict[str, Any]] = []

    def gradients() -> dict[str, Any]:
        return {name: value.grad for name, value in values.items() if tracked[name]}

    for step in program:
        if step.id is not None:
            if step.op in ("variable", "constant"):
                node = Value(step.value)
                tracked[step.id] = step.op == "variable"
            elif step.op == "pow":
                node = values[step.operands[0]] ** step.exponent
                tracked[step.id] = tracked[step.operands[0]]
            else:
                node = OPS[step.op](*(values[name] for name in step.operands))
                tracked[step.id] = any(tracked[name] for name in step.operands)
            values[step.id] = node
            operands[step.id] = step.operands
            observations.append({"value": node.data, "tracked": tracked[step.id]})
        elif step.op == "backward":
            values[step.output].backward()  # type: ignore[index]
            observations.append({"gradients": gradients()})
        else:
            for name in _reachable(step.output, operands):  # type: ignore[arg-type]
                values[name].grad = 0.0
            observations.append({"gradients": gradients()})
    return observations


def _reachable(output: str, operands: dict[str, tuple[str, ...]]) -> set[str]:
    seen, stack = {output}, [output]
    while stack:
        for name in operands[stack.pop()]:
            if name not in seen:
                seen.add(name)
                stack.append(name)
    return seen


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

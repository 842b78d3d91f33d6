"""PyTorch behind the adapter protocol: float64 0-dim tensors, driven as PyTorch users do.

Variables are ``torch.tensor(v, dtype=float64, requires_grad=True)``,
constants the same without ``requires_grad``, detach is ``Tensor.detach()``,
ops are torch's own (``torch.exp``, ``torch.relu``, ``a ** c``, ...), every
non-leaf result calls ``retain_grad()`` so its stored gradient is observable,
and backward is ``output.backward(gradient=seed, retain_graph=True)``.
``tracked`` is ``requires_grad``; a tracked tensor whose ``.grad`` is still
None reports 0.0 (nothing accumulated yet). ``zero_grad(output)`` zeroes the
``.grad`` of every tensor the program built that the output reaches.
PyTorch raises no typed errors for inf or nan, so the adapter declares only
the values and gradients levels. PyTorch is not written from the contract (its
tanh backward is ``fma(-t, t, 1)``, its gradient sums are its own), so it declares
the ``numeric`` profile (docs/contract.md section 9). The set-up never installs
torch: without it this adapter is reported unavailable.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from conformance.program import Program, reachable
from conformance.serve import PYTHON_OPS, serve

HELLO = {
    "engine": {"name": "pytorch", "version": torch.__version__, "language": "python"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "detach"],
    "levels": ["values", "gradients"],
    "features": ["seed"],
    "profile": "numeric",
}

OPS = {**PYTHON_OPS, "exp": torch.exp, "log": torch.log, "tanh": torch.tanh, "relu": torch.relu}


def run(program: Program, records: bool = True) -> list[dict[str, Any]]:
    """Run one program with torch autograd and observe every step; ``records`` changes nothing (no pass record is kept)."""
    tensors: dict[str, torch.Tensor] = {}
    operands: dict[str, tuple[str, ...]] = {}
    observations: list[dict[str, Any]] = []

    def gradients() -> dict[str, float]:
        return {name: (0.0 if t.grad is None else t.grad.item()) for name, t in tensors.items() if t.requires_grad}

    for step in program:
        if step.id is not None:
            if step.op in ("variable", "constant"):
                tensor = torch.tensor(step.value, dtype=torch.float64, requires_grad=step.op == "variable")
            elif step.op == "pow":
                tensor = tensors[step.operands[0]] ** step.exponent
            else:
                tensor = OPS[step.op](*(tensors[name] for name in step.operands))
            if tensor.requires_grad and not tensor.is_leaf:
                tensor.retain_grad()
            tensors[step.id] = tensor
            operands[step.id] = () if step.op == "detach" else step.operands
            observations.append({"value": tensor.item(), "tracked": tensor.requires_grad})
        elif step.op == "backward":
            seed = torch.tensor(1.0 if step.seed is None else step.seed, dtype=torch.float64)
            tensors[step.output].backward(gradient=seed, retain_graph=True)  # type: ignore[index]
            observations.append({"gradients": gradients()})
        else:
            for name in reachable(step.output, operands):  # type: ignore[arg-type]
                if tensors[name].grad is not None:
                    tensors[name].grad.zero_()
            observations.append({"gradients": gradients()})
    return observations


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

"""PyTorch behind the adapter protocol: float64 0-dim tensors, driven as PyTorch users do.

Variables are ``torch.tensor(v, dtype=float64, requires_grad=True)``,
constants the same without ``requires_grad``, detach is ``Tensor.detach()``,
ops are torch's own (``torch.exp``, ``torch.relu``, ``torch.sigmoid``, ``torch.sqrt``, ``a ** c``, ...), every
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

from conformance.program import Step, reachable
from conformance.serve import PYTHON_OPS, StepHook, by_steps, serve

HELLO = {
    "engine": {"name": "pytorch", "version": torch.__version__, "language": "python"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "sigmoid", "sqrt", "detach"],
    "levels": ["values", "gradients"],
    "features": ["seed"],
    "profile": "numeric",
}

OPS = {
    **PYTHON_OPS,
    "exp": torch.exp,
    "log": torch.log,
    "tanh": torch.tanh,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "sqrt": torch.sqrt,
}


def start(records: bool = True) -> StepHook:
    """A fresh case for torch autograd, and the hook that runs its steps one by one; ``records`` changes nothing.

    An exception torch raises at a step (a RuntimeError from its autograd) is that step's fault: ``by_steps``
    reports it and goes on, skipping the steps that use what the step did not create.
    """
    tensors: dict[str, torch.Tensor] = {}
    operands: dict[str, tuple[str, ...]] = {}

    def gradients() -> dict[str, float]:
        return {name: (0.0 if t.grad is None else t.grad.item()) for name, t in tensors.items() if t.requires_grad}

    def step_on(step: Step) -> dict[str, Any]:
        if step.op == "backward":
            seed = torch.tensor(1.0 if step.seed is None else step.seed, dtype=torch.float64)
            tensors[step.output].backward(gradient=seed, retain_graph=True)  # type: ignore[index]
            return {"gradients": gradients()}
        if step.op == "zero_grad":
            for name in reachable(step.output, operands):  # type: ignore[arg-type]
                if tensors[name].grad is not None:
                    tensors[name].grad.zero_()
            return {"gradients": gradients()}
        assert step.id is not None
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
        return {"value": tensor.item(), "tracked": tensor.requires_grad}

    return step_on


run = by_steps(start)
"""One program with torch autograd, a step at a time (``conformance.serve.by_steps``); untested here: torch is not installed."""


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

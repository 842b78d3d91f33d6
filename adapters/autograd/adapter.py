"""HIPS autograd (from PyPI) behind the adapter protocol: a functional engine, replayed once per backward.

autograd differentiates Python functions written with ``autograd.numpy``; it keeps no
graph between calls and no stored gradients. The adapter therefore does what an autograd
user does. Values are computed by the same functions on plain floats (``a + b``,
``np.exp(a)``, ``np.maximum(a, 0.0)`` for relu, ``a ** c``). ``backward(output, seed)``
replays the program's subgraph of the output with one root per variable (a root of
autograd's own tracer, as ``make_vjp`` makes for its one argument) and runs autograd's
reverse pass once from the output with the seed as its cotangent, reading every root's
gradient from it. ``make_vjp`` over a tuple of all variables would do the same, but
autograd's vjp of taking one element of a tuple builds a whole tuple of zeros, which
makes a chain 10,000 deep quadratic (it timed out at 60 s).

A tracked intermediate node's gradient is the cotangent of an extra root added to it:
``node + e`` with ``e = -0.0``, which is the identity for every float including -0.0,
so the replay computes exactly the values of the forward run. The gradients of one pass
are added to the stored gradients, as a user accumulating over batches writes it, and
``zero_grad(output)`` zeroes the stored gradients of the nodes the output reaches.
*tracked* follows the contract's rule; detach is the forward value used as a constant
(autograd has no detach op). autograd raises no typed errors for inf or nan, so only
the values and gradients levels are declared, and since it is not written from the
contract it declares the ``numeric`` profile.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Any, Callable

import autograd.numpy as np
from autograd.core import VJPNode, add_outgrads
from autograd.tracer import isbox, new_box, trace_stack
from autograd.util import toposort

from conformance.program import Step
from conformance.serve import PYTHON_OPS, StepHook, by_steps, serve

HELLO = {
    "engine": {"name": "autograd", "version": version("autograd"), "language": "python"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "sqrt", "detach"],
    "levels": ["values", "gradients"],
    "features": ["seed"],
    "profile": "numeric",
}

OPS: dict[str, Callable[..., Any]] = {
    **PYTHON_OPS,
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "relu": lambda a: np.maximum(a, 0.0),
    "sqrt": np.sqrt,
}

# autograd's sigmoid is scipy's expit (autograd.scipy.special), so it is declared only where scipy is installed.
try:
    from autograd.scipy.special import expit
except ImportError:  # pragma: no cover - depends on scipy being installed
    pass
else:
    OPS["sigmoid"] = expit
    HELLO["ops"].insert(-1, "sigmoid")


def _apply(step: Step, operands: list[Any]) -> Any:
    if step.op == "pow":
        return operands[0] ** step.exponent
    return OPS[step.op](*operands)


def start(records: bool = True) -> StepHook:
    """A fresh case for autograd, and the hook that runs its steps one by one; ``records`` changes nothing.

    An exception autograd raises at a step (its reverse pass hitting Python's recursion limit, say) is that step's
    fault: ``by_steps`` reports it and goes on, skipping the steps that use what the step did not create.
    """
    steps: dict[str, Step] = {}
    values: dict[str, float] = {}
    tracked: dict[str, bool] = {}
    stored: dict[str, float] = {}

    def gradients() -> dict[str, float]:
        return {name: stored[name] for name in steps if tracked[name]}

    def step_on(step: Step) -> dict[str, Any]:
        with np.errstate(all="ignore"):
            if step.op == "backward":
                seed = 1.0 if step.seed is None else step.seed
                for name, adjoint in _backward(step.output, seed, steps, values, tracked).items():  # type: ignore[arg-type]
                    stored[name] += adjoint
                return {"gradients": gradients()}
            if step.op == "zero_grad":
                for name in _subgraph(step.output, steps):  # type: ignore[arg-type]
                    stored[name] = 0.0
                return {"gradients": gradients()}
            assert step.id is not None
            if step.op in ("variable", "constant"):
                value, is_tracked = float(step.value), step.op == "variable"  # type: ignore[arg-type]
            elif step.op == "detach":
                value, is_tracked = values[step.operands[0]], False
            else:
                value = float(_apply(step, [values[name] for name in step.operands]))
                is_tracked = any(tracked[name] for name in step.operands)
            steps[step.id], values[step.id], tracked[step.id], stored[step.id] = step, value, is_tracked, 0.0
            return {"value": value, "tracked": is_tracked}

    return step_on


run = by_steps(start)
"""One program with autograd, a step at a time (``conformance.serve.by_steps``)."""


def _subgraph(output: str, steps: dict[str, Step]) -> list[str]:
    """The nodes the output reaches (a detached copy ends the walk), in program order."""
    seen, stack = {output}, [output]
    while stack:
        step = steps[stack.pop()]
        for name in () if step.op == "detach" else step.operands:
            if name not in seen:
                seen.add(name)
                stack.append(name)
    return [name for name in steps if name in seen]


def _backward(
    output: str, seed: float, steps: dict[str, Step], values: dict[str, float], tracked: dict[str, bool]
) -> dict[str, float]:
    """The pass adjoint of every tracked node the output reaches, from one reverse pass of autograd."""
    nodes = [name for name in _subgraph(output, steps) if tracked[name]]
    if not nodes:
        return {}
    roots = {name: index for index, name in enumerate(nodes)}

    def replay(args: tuple[Any, ...]) -> Any:
        replayed: dict[str, Any] = {}
        for name in _subgraph(output, steps):
            step = steps[name]
            if step.op == "variable":
                replayed[name] = args[roots[name]]
                continue
            if not tracked[name]:  # constants, detached copies, operations on them: plain floats
                replayed[name] = values[name]
                continue
            # A root added as -0.0, the identity for every float, whose cotangent is the node's adjoint.
            replayed[name] = _apply(step, [replayed[operand] for operand in step.operands]) + args[roots[name]]
        return replayed[output]

    with trace_stack.new_trace() as trace:
        boxes = [new_box(values[name] if steps[name].op == "variable" else -0.0, trace, VJPNode.new_root()) for name in nodes]
        end = replay(tuple(boxes))
    if not (isbox(end) and end._trace == trace):
        return {}
    # autograd's backward_pass, keeping the cotangent of every root instead of returning only the last.
    outgrads: dict[Any, Any] = {end._node: (seed, False)}
    root_grads: dict[Any, Any] = {}
    for node in toposort(end._node):
        outgrad = outgrads.pop(node)
        root_grads[node] = outgrad[0]
        for parent, ingrad in zip(node.parents, node.vjp(outgrad[0])):
            outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)
    return {name: float(root_grads.get(box._node, 0.0)) for name, box in zip(nodes, boxes)}


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

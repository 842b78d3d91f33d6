"""tinygrad (from PyPI; its CPU device compiles kernels with clang) behind the adapter protocol.

tinygrad is lazy: an expression is a graph of UOps, computed when a value is read. Leaves
are realized float64 buffers (``Tensor([v], dtype=float64).realize()``), never constants,
so that no leaf is folded into the code of its consumers; ops are tinygrad's own
(``a + b``, ``a ** c``, ``a.exp()``, ``a.relu()``, ``a.detach()``, ...) and backward is
``output.backward(gradient=seed)``, which adds to ``.grad`` of every live tensor of the
output's graph.

Values are read without cutting the graph: never by realizing a node itself (tinygrad then
makes it a buffer, and backward stops there), but through concatenations of 32 steps at a
time, of all the steps since the last read (before each backward and zero_grad, and at the
end of the case). A clone per value compiles a kernel per value (a 250-deep chain took two
minutes); one concatenation of everything is built from as many padded copies (fan-out-1000
took minutes). The gradients of one observation are read the same way. Every value is
still a kernel fused from the leaves, so a graph thousands of nodes deep compiles code
quadratic in its depth: the 10,000-deep chain and the LLM programs do not finish in 60 s.

tinygrad gives every float tensor of the graph a gradient, so *tracked* follows the
contract's rule and only tracked nodes' gradients are reported (0.0 while ``.grad`` is
None). ``zero_grad(output)`` sets ``.grad = None`` on every node the output reaches.
tinygrad merges structurally equal expressions into one UOp (``x*c`` written twice is one
node); the adapter cannot stop that, and its expected failures name it. It raises no
typed errors for inf or nan, so only values and gradients are declared, under the
``numeric`` profile.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Any

from tinygrad import Tensor, dtypes

from conformance.program import Program, reachable
from conformance.serve import PYTHON_OPS, serve

HELLO = {
    "engine": {"name": "tinygrad", "version": version("tinygrad"), "language": "python"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "detach"],
    "levels": ["values", "gradients"],
    "features": ["seed"],
    "profile": "numeric",
}

OPS = PYTHON_OPS


#: How many tensors one concatenation reads: tinygrad builds a concatenation of n from n padded copies.
CHUNK = 32


def _read(tensors: list[Tensor]) -> list[float]:
    """The values of these tensors, read through concatenations of CHUNK of them, each one realize.

    Reading a tensor itself (``t.numpy()``) realizes it into a buffer, which cuts the graph backward
    walks; a concatenation leaves every tensor in it unrealized.
    """
    values: list[float] = []
    for start in range(0, len(tensors), CHUNK):
        values += [float(v) for v in Tensor.cat(*tensors[start : start + CHUNK]).numpy()]
    return values


def _leaf(value: float) -> Tensor:
    return Tensor([value], dtype=dtypes.float64).realize()


def run(program: Program, records: bool = True) -> list[dict[str, Any]]:
    """Run one program on tinygrad and observe every step."""
    tensors: dict[str, Tensor] = {}
    operands: dict[str, tuple[str, ...]] = {}
    tracked: dict[str, bool] = {}
    observations: list[dict[str, Any]] = []
    unread: list[tuple[dict[str, Any], Tensor]] = []

    def read_values() -> None:
        for observation, value in zip([o for o, _ in unread], _read([t for _, t in unread])):
            observation["value"] = value
        unread.clear()

    def gradients() -> dict[str, float]:
        names = [name for name in tensors if tracked[name]]
        held = [name for name in names if tensors[name].grad is not None]
        read = dict(zip(held, _read([tensors[name].grad for name in held])))  # type: ignore[misc]
        return {name: read.get(name, 0.0) for name in names}

    for step in program:
        if step.id is not None:
            if step.op in ("variable", "constant"):
                tensor = _leaf(step.value)  # type: ignore[arg-type]
                tracked[step.id] = step.op == "variable"
            elif step.op == "pow":
                tensor = tensors[step.operands[0]] ** step.exponent
                tracked[step.id] = tracked[step.operands[0]]
            else:
                tensor = OPS[step.op](*(tensors[name] for name in step.operands))
                tracked[step.id] = step.op != "detach" and any(tracked[name] for name in step.operands)
            tensors[step.id] = tensor
            operands[step.id] = () if step.op == "detach" else step.operands
            observation: dict[str, Any] = {"tracked": tracked[step.id]}
            unread.append((observation, tensor))
            observations.append(observation)
            continue
        read_values()
        if step.op == "backward":
            seed = 1.0 if step.seed is None else step.seed
            tensors[step.output].backward(gradient=Tensor([seed], dtype=dtypes.float64))  # type: ignore[index]
        else:
            for name in reachable(step.output, operands):  # type: ignore[arg-type]
                tensors[name].grad = None
        observations.append({"gradients": gradients()})
    read_values()
    return observations


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

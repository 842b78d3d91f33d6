"""tinygrad (from PyPI; its CPU device compiles kernels with clang) behind the adapter protocol.

tinygrad is lazy: an expression is a graph of UOps, computed when a value is read. Leaves
are float64 buffers copied from Python (``Tensor([v], dtype=float64)``, realized with the
first values read), never constants, so that no leaf is folded into the code of its
consumers; ops are tinygrad's own (``a + b``, ``a ** c``, ``a.exp()``, ``a.relu()``,
``a.detach()``, ...) and backward is ``output.backward(gradient=seed)``, which adds to
``.grad`` of every live tensor of the output's graph.

Values are read without cutting the graph backward walks. Realizing a tensor makes its UOp a
buffer in every tensor that holds it, and backward stops there; so a node is realized and read
only once no later backward reaches it, as tinygrad's own graph of the whole program says (built
once, unread, when there are two backwards or more, so that merged equal expressions count).
Each node is then a kernel of its own op on realized operands (shallowest first), and the
gradients read after that backward load them; the stored gradients are realized and read after
every step, deepest first. Reading values through concatenations of lazy nodes instead (as this
adapter did) fuses every value from the leaves: code quadratic in the depth, which clang refuses
for a chain about 500 deep (bracket nesting beyond 256). What is left is tinygrad's own cost,
1 to 2 ms of scheduling per realized tensor: through the harness on the kit's 2-core machine,
lightly loaded, llm/two-documents (13,000 realized tensors) took 24.5 s and
structure/deep-chain-10000 (20,000) 29.8 s of the adapter's 60 s. Values are read from the
buffers' memory, where ``.item()`` copies each through a transfer.

A gradient read is a buffer that every tensor holding the same UOp shares (an add hands both
operands its own gradient), and tinygrad's next backward adds into ``.grad`` in place, so each
tensor's addition lands in the others' gradients too (tests/test_engines.py reproduces it). The
adapter leaves that as it is: a tinygrad user who reads gradients between two backwards gets
the same numbers, and the expected failure of llm/two-documents names it.

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

from conformance.program import Program, Step, reachable
from conformance.serve import PYTHON_OPS, serve

HELLO = {
    "engine": {"name": "tinygrad", "version": version("tinygrad"), "language": "python"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "detach"],
    "levels": ["values", "gradients"],
    "features": ["seed"],
    "profile": "numeric",
}

OPS = PYTHON_OPS


#: How many tensors one realize schedules. A schedule's time grows with the square of its size, and each realize
#: also walks every live tensor: of 256, 512 and 768, 512 ran llm/two-documents and the 10,000 chain quickest together.
CHUNK = 512


def _read(tensors: list[Tensor]) -> list[float]:
    """The values of these tensors, each realized (CHUNK to a schedule, in the order given) and read."""
    for start in range(0, len(tensors), CHUNK):
        Tensor.realize(*tensors[start : start + CHUNK])
    return [_value(tensor) for tensor in tensors]


def _value(tensor: Tensor) -> float:
    """The float a realized tensor holds, read from its buffer's memory (``.item()`` copies it out through a transfer)."""
    if not tensor.uop.has_buffer_identity():
        return tensor.item()
    return tensor.uop.buffer.as_memoryview(allow_zero_copy=True).cast("d")[0]  # type: ignore[union-attr]


def _create(step: Step, tensors: dict[str, Tensor]) -> Tensor:
    if step.op in ("variable", "constant"):
        return Tensor([step.value], dtype=dtypes.float64)
    if step.op == "pow":
        return tensors[step.operands[0]] ** step.exponent
    return OPS[step.op](*(tensors[name] for name in step.operands))


def _last_reached(program: Program) -> dict[str, int]:
    """Per node, the index of the last backward whose output's graph holds the node's UOp (-1: none).

    With two backwards or more, it is read from tinygrad's own graph of the whole program, built once
    without reading anything, so that merged equal expressions count as the same node.
    """
    backwards = [index for index, step in enumerate(program) if step.op == "backward"]
    if len(backwards) <= 1:
        return dict.fromkeys((step.id for step in program if step.id is not None), backwards[-1] if backwards else -1)
    tensors: dict[str, Tensor] = {}
    for step in program:
        if step.id is not None:
            tensors[step.id] = _create(step, tensors)
    last = dict.fromkeys(tensors, -1)
    for index in backwards:
        graph = tensors[program[index].output].uop.toposort()  # type: ignore[index]
        last.update((name, index) for name, tensor in tensors.items() if tensor.uop in graph)
    return last


def run(program: Program, records: bool = True) -> list[dict[str, Any]]:
    """Run one program on tinygrad and observe every step."""
    last_reached = _last_reached(program)
    tensors: dict[str, Tensor] = {}
    operands: dict[str, tuple[str, ...]] = {}
    tracked: dict[str, bool] = {}
    depth: dict[str, int] = {}
    observations: list[dict[str, Any]] = []
    unread: dict[str, dict[str, Any]] = {}

    def read_values(index: int) -> None:
        """Realize and read every leaf, and every node that no backward after step ``index`` reaches.

        Shallowest first, so that a schedule's nodes mostly load operands realized by earlier ones: a chain of
        nodes within one schedule costs its scheduler the square of its length.
        """
        names = [name for name in unread if depth[name] == 0 or last_reached[name] <= index]
        names.sort(key=depth.__getitem__)
        for name, value in zip(names, _read([tensors[name] for name in names])):
            unread.pop(name)["value"] = value

    def gradients() -> dict[str, float]:
        """Every tracked node's stored gradient, realized and read deepest first (a node's is made of its consumers')."""
        names = [name for name in tensors if tracked[name]]
        held = [name for name in sorted(names, key=depth.__getitem__, reverse=True) if tensors[name].grad is not None]
        read = dict(zip(held, _read([tensors[name].grad for name in held])))  # type: ignore[misc]
        return {name: read.get(name, 0.0) for name in names}

    for index, step in enumerate(program):
        if step.id is not None:
            tensors[step.id] = _create(step, tensors)
            if step.op in ("variable", "constant"):
                tracked[step.id] = step.op == "variable"
            else:
                tracked[step.id] = step.op != "detach" and any(tracked[name] for name in step.operands)
            operands[step.id] = () if step.op == "detach" else step.operands
            depth[step.id] = 1 + max((depth[name] for name in step.operands), default=-1)
            unread[step.id] = {"tracked": tracked[step.id]}
            observations.append(unread[step.id])
            continue
        if step.op == "backward":
            seed = 1.0 if step.seed is None else step.seed
            tensors[step.output].backward(gradient=Tensor([seed], dtype=dtypes.float64))  # type: ignore[index]
        else:
            for name in reachable(step.output, operands):  # type: ignore[arg-type]
                tensors[name].grad = None
        read_values(index)
        observations.append({"gradients": gradients()})
    read_values(len(program))
    return observations


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

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
Each node is then a kernel of its own op on realized operands, and the gradients read after that
backward load them; the stored gradients are realized too, from the output back, and read again
only where a backward or zero_grad has given ``.grad`` another UOp since. A gradient read is a
buffer that every tensor holding the same UOp shares (an add hands both operands its own
gradient), and tinygrad's next backward adds into ``.grad`` in place (``assign``), so each
tensor's addition lands in the others' gradients too (tests/test_engines.py reproduces it; read
so, 35 parameters of llm/two-documents came out wrong after its second backward). So with a
backward still to come, each node read whose gradient buffer another tensor holds gets one of its
own, holding the value read. Reading values through concatenations of lazy nodes instead (as this
adapter did) fuses every value from the leaves: code quadratic in the depth, which clang refuses
for a chain about 500 deep (bracket nesting beyond 256). What is left is tinygrad's own cost,
1 to 2 ms of scheduling per realized tensor (less where a schedule repeats the structure of an
earlier one, which tinygrad caches). Measured through the harness under nice on the kit's 2-core
machine, lightly loaded: llm/one-document (6,800 realized tensors) 12 to 13 s,
llm/two-documents (13,000) 23 to 29 s, structure/deep-chain-10000 (20,000) 24 to 30 s, more on
a busier machine; the adapter's timeout is 60 s. Values are read from the buffers' memory, where
``.item()`` copies each through a transfer.

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
from collections import Counter
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
    last_backward = max((index for index, step in enumerate(program) if step.op == "backward"), default=-1)
    tensors: dict[str, Tensor] = {}
    operands: dict[str, tuple[str, ...]] = {}
    tracked: dict[str, bool] = {}
    depth: dict[str, int] = {}
    observations: list[dict[str, Any]] = []
    unread: dict[str, dict[str, Any]] = {}
    read: dict[str, tuple[Any, float]] = {}

    def read_values(index: int) -> None:
        """Realize and read every leaf, and every node that no backward after step ``index`` reaches.

        Shallowest first, so that a schedule's nodes mostly load operands realized by earlier ones: a chain of
        nodes within one schedule costs its scheduler the square of its length.
        """
        names = [name for name in unread if depth[name] == 0 or last_reached[name] <= index]
        names.sort(key=depth.__getitem__)
        for name, value in zip(names, _read([tensors[name] for name in names])):
            unread.pop(name)["value"] = value

    def gradients(index: int) -> dict[str, float]:
        """Every tracked node's stored gradient, read again only where ``.grad`` holds another UOp than when read.

        Deepest first: a node's gradient is made of its consumers', which are deeper.
        """
        names = [name for name in tensors if tracked[name]]
        changed = [
            name
            for name in sorted(names, key=depth.__getitem__, reverse=True)
            if (grad := tensors[name].grad) is not None and read.get(name, (None,))[0] is not grad.uop
        ]
        for name, value in zip(changed, _read([tensors[name].grad for name in changed])):  # type: ignore[misc]
            read[name] = (tensors[name].grad.uop, value)  # type: ignore[union-attr]
        if last_backward > index:
            # The next backward adds into .grad in place: no node read may share its gradient's buffer.
            holders = Counter(tensor.grad.uop.base for tensor in tensors.values() if tensor.grad is not None)
            for name in names:
                grad = tensors[name].grad
                if grad is not None and holders[grad.uop.base] > 1:
                    tensors[name].grad = Tensor([read[name][1]], dtype=dtypes.float64)
                    read[name] = (tensors[name].grad.uop, read[name][1])  # type: ignore[union-attr]
        return {name: read[name][1] if tensors[name].grad is not None else 0.0 for name in names}

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
        observations.append({"gradients": gradients(index)})
    read_values(len(program))
    return observations


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

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

It speaks protocol 2.1 through ``conformance.serve.by_steps``: what tinygrad raises at one
step (building a node, a backward, the reads after it) is that step's fault, the steps that
name a node it did not create are skipped, and the rest of the case is compared.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Any

from tinygrad import Tensor, dtypes

from conformance.program import Program, Step, reachable
from conformance.protocol import Observation
from conformance.serve import PYTHON_OPS, by_steps, serve

HELLO = {
    "engine": {"name": "tinygrad", "version": version("tinygrad"), "language": "python"},
    "ops": ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "sigmoid", "sqrt", "detach"],
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
    without reading anything, so that merged equal expressions count as the same node. A node tinygrad
    refuses to build is left out, with what depends on it: running the case, its step faults (``_Case``).
    """
    backwards = [index for index, step in enumerate(program) if step.op == "backward"]
    if len(backwards) <= 1:
        return dict.fromkeys((step.id for step in program if step.id is not None), backwards[-1] if backwards else -1)
    tensors: dict[str, Tensor] = {}
    for step in program:
        if step.id is not None:
            try:
                tensors[step.id] = _create(step, tensors)
            except Exception:  # noqa: BLE001 - the step raises again when the case runs it, and faults there
                continue
    last = dict.fromkeys(tensors, -1)
    for index in backwards:
        if program[index].output not in tensors:
            continue
        graph = tensors[program[index].output].uop.toposort()  # type: ignore[index]
        last.update((name, index) for name, tensor in tensors.items() if tensor.uop in graph)
    return last


class _Case:
    """One program on tinygrad, a step at a time: ``step`` is the hook ``conformance.serve.by_steps`` drives.

    A creation step's observation is a dict that gets its value later, when the node is realized and read
    (``read_values``); ``finish`` reads the ones left after the last step.
    """

    def __init__(self, program: Program) -> None:
        self.last_reached = _last_reached(program)
        self.index = {id(step): index for index, step in enumerate(program)}  # by_steps hands over the steps
        self.end = len(program)
        self.tensors: dict[str, Tensor] = {}
        self.operands: dict[str, tuple[str, ...]] = {}
        self.tracked: dict[str, bool] = {}
        self.depth: dict[str, int] = {}
        self.unread: dict[str, dict[str, Any]] = {}

    def step(self, step: Step) -> dict[str, Any]:
        """Run one step; what tinygrad raises here is the step's fault (``by_steps``), its node never created."""
        if step.id is not None:
            tensor = _create(step, self.tensors)
            self.tensors[step.id] = tensor
            if step.op in ("variable", "constant"):
                self.tracked[step.id] = step.op == "variable"
            else:
                self.tracked[step.id] = step.op != "detach" and any(self.tracked[name] for name in step.operands)
            self.operands[step.id] = () if step.op == "detach" else step.operands
            self.depth[step.id] = 1 + max((self.depth[name] for name in step.operands), default=-1)
            self.unread[step.id] = {"tracked": self.tracked[step.id]}
            return self.unread[step.id]
        if step.op == "backward":
            seed = 1.0 if step.seed is None else step.seed
            self.tensors[step.output].backward(gradient=Tensor([seed], dtype=dtypes.float64))  # type: ignore[index]
        else:
            for name in reachable(step.output, self.operands):  # type: ignore[arg-type]
                self.tensors[name].grad = None
        self.read_values(self.index[id(step)])
        return {"gradients": self.gradients()}

    def read_values(self, index: int) -> None:
        """Realize and read every leaf, and every node that no backward after step ``index`` reaches.

        Shallowest first, so that a schedule's nodes mostly load operands realized by earlier ones: a chain of
        nodes within one schedule costs its scheduler the square of its length. A node stays unread until its
        read succeeds: a read that raises at one step is that step's fault, and the nodes are read again later.
        """
        names = [name for name in self.unread if self.depth[name] == 0 or self.last_reached.get(name, self.end) <= index]
        names.sort(key=self.depth.__getitem__)
        for name, value in zip(names, _read([self.tensors[name] for name in names])):
            self.unread.pop(name)["value"] = value

    def gradients(self) -> dict[str, float]:
        """Every tracked node's stored gradient, realized and read deepest first (a node's is made of its consumers')."""
        names = [name for name in self.tensors if self.tracked[name]]
        held = [name for name in sorted(names, key=self.depth.__getitem__, reverse=True) if self.tensors[name].grad is not None]
        read = dict(zip(held, _read([self.tensors[name].grad for name in held])))  # type: ignore[misc]
        return {name: read.get(name, 0.0) for name in names}

    def finish(self) -> None:
        """Read the values of the nodes still unread after the last step (a failure here is the case's error)."""
        self.read_values(self.end)


def run(program: Program, records: bool = True) -> list[Observation | dict[str, Any]]:
    """Run one program on tinygrad and observe every step (protocol 2.1: ``conformance.serve.by_steps``).

    An exception tinygrad raises at one step (building a node, a backward, a read) is that step's fault, and the
    steps that name a node it did not create are skipped; the values read after the last step are the case's.
    """
    case = _Case(program)
    observations = by_steps(lambda records: case.step)(program, records)
    case.finish()
    return observations


if __name__ == "__main__":
    sys.exit(serve(HELLO, run))

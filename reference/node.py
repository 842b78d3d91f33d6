"""Nodes, leaves, operations, backward and zero_grad: the semantic contract in code.

A ``Node`` is one scalar of the graph. It keeps its operands as an ordered
tuple with one local derivative per operand slot, so ``x*x`` holds two edges
to the same ``x`` and never merges them (docs/contract.md section 1). The topological order
is computed iteratively (a million-node chain works) and backward computes
fresh pass adjoints, checks every contribution and every prospective stored
gradient, and commits only when all checks passed (docs/contract.md section 5).
"""

from __future__ import annotations

import gc
import math
from contextlib import contextmanager
from typing import Iterator, Optional, Union

from .errors import (
    NonFiniteAccumulatedGradient,
    NonFiniteContribution,
    NonFiniteLeaf,
    NonFiniteLocalDerivative,
    NonFinitePassAdjoint,
    NonFiniteResult,
    NonFiniteSeed,
    UntrackedOutput,
)
from .ops import OPS
from .record import PassRecord

_isfinite = math.isfinite

Operand = Union["Node", float, int]


class Node:
    """One scalar of the graph: a leaf or the result of one operation.

    ``operation`` is ``variable``, ``constant``, ``detached`` or an op name;
    ``operands`` and ``local_derivatives`` are parallel tuples, one entry per
    operand slot. A node is ``tracked`` iff it is a variable or an operation with
    a tracked operand; only tracked nodes have a stored gradient (``grad``).
    Equality is identity: two nodes with equal values are different nodes.
    """

    __slots__ = ("value", "tracked", "operation", "operands", "local_derivatives", "exponent", "_grad", "_walk", "_place")

    def __init__(
        self,
        value: float,
        operation: str,
        operands: tuple["Node", ...] = (),
        local_derivatives: tuple[float, ...] = (),
        tracked: bool = False,
        exponent: Optional[float] = None,
    ) -> None:
        self.value = value
        self.operation = operation
        self.operands = operands
        self.local_derivatives = local_derivatives
        self.tracked = tracked
        self.exponent = exponent
        self._grad: Optional[float] = 0.0 if tracked else None
        # Scratch of topology(): the last walk that reached this node, and its place in that walk's order.
        self._walk: Optional[object] = None
        self._place = 0

    def __repr__(self) -> str:
        return f"Node({self.operation}, value={self.value!r}, grad={self._grad!r})"

    @property
    def grad(self) -> Optional[float]:
        """The stored (accumulated) gradient; None for an untracked node."""
        return self._grad

    # -- operations ---------------------------------------------------------

    def add(self, other: Operand) -> "Node":
        """self + other."""
        return apply("add", (self, _as_node(other)))

    def sub(self, other: Operand) -> "Node":
        """self - other."""
        return apply("sub", (self, _as_node(other)))

    def mul(self, other: Operand) -> "Node":
        """self * other."""
        return apply("mul", (self, _as_node(other)))

    def div(self, other: Operand) -> "Node":
        """self / other."""
        return apply("div", (self, _as_node(other)))

    def neg(self) -> "Node":
        """-self."""
        return apply("neg", (self,))

    def pow(self, exponent: float) -> "Node":
        """self ** exponent, where exponent is a finite constant, not a node."""
        return apply("pow", (self,), exponent)

    def exp(self) -> "Node":
        """e ** self."""
        return apply("exp", (self,))

    def log(self) -> "Node":
        """Natural logarithm of self."""
        return apply("log", (self,))

    def tanh(self) -> "Node":
        """Hyperbolic tangent of self."""
        return apply("tanh", (self,))

    def relu(self) -> "Node":
        """self if self > 0 else +0.0."""
        return apply("relu", (self,))

    def sigmoid(self) -> "Node":
        """The logistic function of self, 1 / (1 + e ** -self)."""
        return apply("sigmoid", (self,))

    def sqrt(self) -> "Node":
        """The square root of self."""
        return apply("sqrt", (self,))

    def detach(self) -> "Node":
        """An untracked leaf with this node's value and no edge to it."""
        return Node(self.value, "detached")

    __add__ = add
    __sub__ = sub
    __mul__ = mul
    __truediv__ = div
    __neg__ = neg

    def __radd__(self, other: Operand) -> "Node":
        return _as_node(other).add(self)

    def __rsub__(self, other: Operand) -> "Node":
        return _as_node(other).sub(self)

    def __rmul__(self, other: Operand) -> "Node":
        return _as_node(other).mul(self)

    def __rtruediv__(self, other: Operand) -> "Node":
        return _as_node(other).div(self)

    def __pow__(self, exponent: float) -> "Node":
        return self.pow(exponent)

    # -- gradients ----------------------------------------------------------

    def backward(self, seed: float = 1.0) -> PassRecord:
        """Run one backward pass from this node and add its pass adjoints to the stored gradients.

        Raises UntrackedOutput, NonFiniteSeed, NonFiniteContribution,
        NonFinitePassAdjoint or NonFiniteAccumulatedGradient; when it raises, no
        stored gradient has changed. Returns the pass record.
        """
        with _no_cycle_collection():
            return self._backward(seed)

    def _backward(self, seed: float) -> PassRecord:
        if not self.tracked:
            raise UntrackedOutput(operation=self.operation)
        seed = float(seed)
        if not _isfinite(seed):
            raise NonFiniteSeed(seed=seed)
        topo = topology(self)  # which also leaves each node's index in topo in its _place
        pass_adjoints: list[Optional[float]] = [0.0 if node.tracked else None for node in topo]
        pass_adjoints[-1] = seed
        for consumer_index in range(len(topo) - 1, -1, -1):
            consumer = topo[consumer_index]
            upstream = pass_adjoints[consumer_index]
            if upstream is None:
                upstream = 0.0
            slot = 0
            for operand, local in zip(consumer.operands, consumer.local_derivatives):
                contribution = upstream * local
                if not _isfinite(contribution):
                    raise NonFiniteContribution(
                        consumer=consumer, slot=slot, operand=operand, upstream=upstream, local_derivative=local
                    )
                if operand.tracked:
                    operand_index = operand._place
                    before = pass_adjoints[operand_index]
                    assert before is not None
                    after: Optional[float] = before + contribution
                    if not _isfinite(after):  # type: ignore[arg-type]
                        raise NonFinitePassAdjoint(node=operand, previous=before, contribution=contribution)
                    pass_adjoints[operand_index] = after
                slot += 1
        prospective: list[Optional[float]] = []
        for node, pass_adjoint in zip(topo, pass_adjoints):
            if pass_adjoint is None:
                prospective.append(None)
                continue
            stored = node._grad
            assert stored is not None
            total = stored + pass_adjoint
            if not _isfinite(total):
                raise NonFiniteAccumulatedGradient(node=node, stored=stored, pass_adjoint=pass_adjoint)
            prospective.append(total)
        # Every check passed: commit.
        for node, committed in zip(topo, prospective):
            if committed is not None:
                node._grad = committed
        # The record's edges are this sweep again, done when first read (PassRecord.edges): a pass keeps
        # nothing per edge, which on a long chain was half its memory.
        return PassRecord(seed, tuple(topo), tuple(pass_adjoints), tuple(prospective))

    def zero_grad(self) -> None:
        """Set the stored gradient of every tracked node reachable from this node to 0.0."""
        with _no_cycle_collection():
            for node in topology(self):
                if node.tracked:
                    node._grad = 0.0


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    # A pass over a large graph allocates one small tuple per edge. Each allocation burst
    # makes Python's cycle collector traverse the whole (acyclic) graph again, which
    # costs more than the pass itself; the pass creates no cycles, so refcounting frees
    # everything it drops, and the collector is paused for its duration only.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def topology(output: Node) -> list[Node]:
    """Every node reachable from ``output``, each once, operands before results, output last.

    The canonical order: depth-first post-order from the output, operands
    visited in slot order. Iterative, so depth is limited only by memory.

    Each node it reaches is marked with this walk's token and left with its
    index in the order (``_walk``, ``_place``), which backward reads: a set of
    visited nodes and a dict of places, a million entries each on a long chain,
    cost more per node the larger they grow.
    """
    walk = object()
    order: list[Node] = []
    output._walk = walk
    nodes = [output]
    next_slot = [0]
    while nodes:
        node = nodes[-1]
        slot = next_slot[-1]
        if slot < len(node.operands):
            next_slot[-1] = slot + 1
            operand = node.operands[slot]
            if operand._walk is not walk:
                operand._walk = walk
                nodes.append(operand)
                next_slot.append(0)
        else:
            nodes.pop()
            next_slot.pop()
            node._place = len(order)
            order.append(node)
    return order


def variable(value: float) -> Node:
    """A tracked leaf. Raises NonFiniteLeaf for inf or nan."""
    return _leaf(value, "variable")


def constant(value: float) -> Node:
    """An untracked leaf. Raises NonFiniteLeaf for inf or nan."""
    return _leaf(value, "constant")


def _leaf(value: float, operation: str) -> Node:
    value = float(value)
    if not _isfinite(value):
        raise NonFiniteLeaf(operation=operation, value=value)
    return Node(value, operation, tracked=operation == "variable")


def _as_node(operand: Operand) -> Node:
    return operand if isinstance(operand, Node) else constant(operand)


def apply(operation: str, operands: tuple[Node, ...], exponent: Optional[float] = None) -> Node:
    """Apply the op named ``operation`` to ``operands`` (and pow's constant exponent).

    Raises NonFiniteResult or NonFiniteLocalDerivative and then creates no node.
    Raises ValueError for an unknown op, a wrong arity or a missing/non-finite
    exponent: those are programming mistakes, not contract errors.
    """
    op = OPS.get(operation)
    if op is None:
        raise ValueError(f"unknown operation {operation!r}; known: {', '.join(OPS)}")
    if len(operands) != op.arity:
        raise ValueError(f"{operation} takes {op.arity} operand(s), got {len(operands)}")
    if op.takes_exponent:
        if exponent is None or not _isfinite(exponent):
            raise ValueError(f"{operation} needs a finite constant exponent, got {exponent!r}")
        exponent = float(exponent)
        a = operands[0]
        value, locals_ = op.rule(a.value, exponent)
        tracked = a.tracked
    elif exponent is not None:
        raise ValueError(f"{operation} takes no exponent")
    elif op.arity == 2:
        a, b = operands
        value, locals_ = op.rule(a.value, b.value)
        tracked = a.tracked or b.tracked
    else:
        a = operands[0]
        value, locals_ = op.rule(a.value)
        tracked = a.tracked
    if not _isfinite(value):
        raise NonFiniteResult(operation=operation, value=value)
    for slot, local in enumerate(locals_):
        if not _isfinite(local):
            raise NonFiniteLocalDerivative(operation=operation, slot=slot, value=local)
    return Node(value, operation, operands, locals_, tracked, exponent)

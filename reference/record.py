"""The pass record: what one backward call computed, node by node and edge by edge.

``Node.backward`` returns a ``PassRecord`` (docs/contract.md section 5, "The pass record"). Node fields
hold node handles; the fixture layer names them by program id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

if TYPE_CHECKING:
    from .node import Node


def _itself(node: "Node") -> Any:
    """A node as a record holds it by default: the handle itself."""
    return node


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One node of the topology: its pass adjoint and stored gradient after commit.

    ``pass_adjoint`` and ``stored_gradient`` are None for an untracked node.
    """

    node: "Node"
    operation: str
    value: float
    tracked: bool
    pass_adjoint: Optional[float]
    stored_gradient: Optional[float]


@dataclass(frozen=True, slots=True)
class EdgeRecord:
    """One operand edge as backward walked it.

    ``consumer`` read ``operand`` in slot ``slot`` (0-based). ``upstream`` is the
    consumer's pass adjoint (0.0 for an untracked consumer) and ``contribution`` is
    ``upstream * local_derivative``. ``before`` and ``after`` are the operand's pass
    adjoint around this edge, None when the operand is untracked.
    """

    consumer: "Node"
    slot: int
    operand: "Node"
    local_derivative: float
    upstream: float
    contribution: float
    operand_tracked: bool
    before: Optional[float]
    after: Optional[float]


@dataclass(frozen=True)
class PassRecord:
    """A successful backward pass: the seed, nodes in topology order, edges in processing order.

    ``nodes`` and ``edges`` are built the first time they are read, so a backward
    whose record nobody inspects (a training step) does not pay for a hundred
    thousand record objects; the edges are computed again then, from the
    topology and the seed.
    """

    seed: float
    topology: tuple["Node", ...] = field(repr=False)
    pass_adjoints: tuple[Optional[float], ...] = field(repr=False)
    stored_gradients: tuple[Optional[float], ...] = field(repr=False)

    @cached_property
    def nodes(self) -> tuple[NodeRecord, ...]:
        """Every node of the topology, in canonical order, output last."""
        return tuple(NodeRecord(*row) for row in self.node_rows())

    def node_rows(self, name: Callable[["Node"], Any] = _itself) -> Iterator[tuple[Any, ...]]:
        """The fields of every NodeRecord, in order, without building the records; each node as ``name`` gives it."""
        for node, pass_adjoint, stored in zip(self.topology, self.pass_adjoints, self.stored_gradients):
            yield name(node), node.operation, node.value, node.tracked, pass_adjoint, stored

    @cached_property
    def edges(self) -> tuple[EdgeRecord, ...]:
        """Every operand edge, in the order backward processed them."""
        return tuple(EdgeRecord(*row) for row in self.edge_rows())

    def edge_rows(self, name: Callable[["Node"], Any] = _itself) -> Iterator[tuple[Any, ...]]:
        """The fields of every EdgeRecord, in order, without building the records; each node as ``name`` gives it.

        The pass's reverse sweep done again (``Node._backward`` keeps nothing per edge): the
        same products and sums in the same order give the same floats, which the check at the
        end confirms against the pass adjoints the pass itself kept.
        """
        topology = self.topology
        position = {node: index for index, node in enumerate(topology)}
        running: list[Optional[float]] = [0.0 if node.tracked else None for node in topology]
        running[-1] = self.seed
        for consumer_index in range(len(topology) - 1, -1, -1):
            consumer = topology[consumer_index]
            upstream = running[consumer_index]
            if upstream is None:
                upstream = 0.0
            for slot, (operand, local) in enumerate(zip(consumer.operands, consumer.local_derivatives)):
                contribution = upstream * local
                before = after = None
                if operand.tracked:
                    operand_index = position[operand]
                    before = running[operand_index]
                    assert before is not None
                    running[operand_index] = after = before + contribution
                yield name(consumer), slot, name(operand), local, upstream, contribution, operand.tracked, before, after
        if tuple(running) != self.pass_adjoints:  # pragma: no cover - the two sweeps would have drifted apart
            raise AssertionError("the replayed sweep does not end at the pass's adjoints")

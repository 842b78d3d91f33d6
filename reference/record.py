"""The pass record: what one backward call computed, node by node and edge by edge.

``Node.backward`` returns a ``PassRecord`` (DESIGN.md 3.3 step 7). Node fields
hold node handles; the fixture layer names them by program id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .node import Node


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

    ``child`` consumed ``parent`` in operand slot ``operand``. ``upstream`` is the
    child's pass adjoint (0.0 for an untracked child) and ``contribution`` is
    ``upstream * local_derivative``. ``before`` and ``after`` are the parent's pass
    adjoint around this edge, None when the parent is untracked.
    """

    child: "Node"
    parent: "Node"
    operand: int
    local_derivative: float
    upstream: float
    contribution: float
    parent_tracked: bool
    before: Optional[float]
    after: Optional[float]


@dataclass(frozen=True, slots=True)
class PassRecord:
    """A successful backward pass: the seed, nodes in topology order, edges in processing order."""

    seed: float
    nodes: tuple[NodeRecord, ...]
    edges: tuple[EdgeRecord, ...]

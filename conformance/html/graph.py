"""The computation graph of one step of a case, with the first difference marked.

``build_graph`` turns a fixture's program and the observations at one step (the
reference's and, for a failure, the adapter's) into a ``Graph``: a node per
creation step up to that step (id, operation, value, pass adjoint, stored
gradient) and an operand edge per (consumer, slot) (local derivative and
contribution), annotated from the step's pass record, or from the last backward
before it. ``focus_of`` names the one node or edge a difference's JSON path
points at. A big graph (the LLM cases, the deep chain) is cut to the
neighbourhood of the focus, a few hops, and says how big it was.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from ..fixture import Fixture
from ..protocol import EdgeRecord, NodeRecord, Observation, PassRecord

#: Above this many nodes a graph is cut to the neighbourhood of its focus.
MAX_NODES = 40
#: How many hops (either direction) the neighbourhood reaches from the focus.
HOPS = 3
#: A node with more neighbours than this (a shared leaf, a big sum) is shown but not walked through.
HUB = 8


@dataclass(frozen=True)
class Focus:
    """What a difference points at: a node (``slot`` None) or the operand edge (consumer ``node``, ``slot``)."""

    node: str
    slot: Optional[int] = None

    @property
    def is_edge(self) -> bool:
        """True when the focus is an operand edge."""
        return self.slot is not None


@dataclass
class GraphNode:
    """One node as drawn: expected numbers, and the adapter's where they differ."""

    id: str
    operation: str
    value: Optional[float] = None
    pass_adjoint: Optional[float] = None
    stored_gradient: Optional[float] = None
    tracked: bool = True
    failed: str = ""
    """The error kind when the reference's creation failed (the node then does not exist)."""
    actual: dict[str, object] = field(default_factory=dict)
    """The adapter's value of each field that differs from the reference's (a missing one is None)."""


@dataclass
class GraphEdge:
    """One operand edge (consumer, slot) -> operand; ``detach`` draws a link that is not an edge."""

    consumer: str
    slot: int
    operand: str
    local_derivative: Optional[float] = None
    contribution: Optional[float] = None
    detached: bool = False
    actual: dict[str, object] = field(default_factory=dict)


@dataclass
class Graph:
    """The nodes and edges to draw, the focus, and how much of the full graph is shown."""

    step: int
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    focus: Optional[Focus]
    total_nodes: int
    total_edges: int
    annotated_from: str
    """Which step's records the numbers come from, in words."""

    @property
    def cut(self) -> bool:
        """True when only part of the graph is shown (a neighbourhood of the focus, or a repeated step as one node)."""
        return len(self.nodes) < self.total_nodes


_PATH = re.compile(r"observations\[(\d+)\](?:\.(.*))?$")
_NODE_KEY = re.compile(r"pass\.nodes\[([^\]]+)\]")
_EDGE_KEY = re.compile(r"pass\.edges\[([^\]]+)\]")


def step_of(path: str) -> int:
    """The step index a difference's JSON path starts with (0 when it names none)."""
    match = _PATH.match(path)
    return int(match.group(1)) if match else 0


def focus_of(path: str, fixture: Fixture, actual: list[Observation]) -> Optional[Focus]:
    """The node or edge the JSON path of a difference points at; the step's own node or output otherwise."""
    match = _PATH.match(path)
    if match is None:
        return None
    index, rest = int(match.group(1)), match.group(2) or ""
    if index >= len(fixture.program):
        return None
    step = fixture.program[index]
    own = Focus(step.id) if step.id is not None else Focus(step.output or "")
    expected_pass = fixture.expected[index].pass_
    actual_pass = actual[index].pass_ if index < len(actual) else None
    if (found := _NODE_KEY.match(rest)) is not None:
        key = found.group(1)
        if key.isdigit():
            records = [r for r in (expected_pass, actual_pass) if r is not None and int(key) < len(r.nodes)]
            return Focus(records[0].nodes[int(key)].node) if records else own
        return Focus(key)
    if (found := _EDGE_KEY.match(rest)) is not None:
        key = found.group(1)
        if key.isdigit():
            records = [r for r in (expected_pass, actual_pass) if r is not None and int(key) < len(r.edges)]
            edge = records[0].edges[int(key)] if records else None
            return Focus(edge.consumer, edge.slot) if edge is not None else own
        consumer, _, slot = key.rpartition(":")
        return Focus(consumer, int(slot)) if slot.isdigit() else own
    if rest.startswith("gradients."):
        return Focus(rest.split(".", 1)[1])
    if rest.startswith("error") and step.id is None:
        observed = actual[index].error if index < len(actual) else None
        for error in (fixture.expected[index].error, observed):
            if error is not None and (error.consumer or error.node):
                return Focus(error.consumer, error.slot) if error.consumer and error.slot is not None else Focus(error.node or "")
    return own


def _pass_before(observations: list[Observation], upto: int) -> tuple[Optional[PassRecord], int]:
    for index in range(min(upto, len(observations) - 1), -1, -1):
        record = observations[index].pass_
        if record is not None:
            return record, index
    return None, -1


def build_graph(fixture: Fixture, step: int, actual: Optional[list[Observation]] = None, focus: Optional[Focus] = None) -> Graph:
    """The graph at ``step``: nodes created up to it, annotated from its pass record or the last before it."""
    expected = list(fixture.expected)
    actual = actual or []
    nodes: dict[str, GraphNode] = {}
    edges: list[GraphEdge] = []
    for index, created in enumerate(fixture.program[: step + 1]):
        if created.id is None:
            continue
        want = expected[index]
        # A repeated step (feature repeat) is drawn as one node: its inner nodes id[k] are one chain.
        operation = created.op if created.repeat is None else f"{created.op} repeated {created.repeat} times"
        node = GraphNode(created.id, operation, want.value, tracked=bool(want.tracked))
        if want.error is not None:
            node.failed = want.error.kind
        got = actual[index] if index < len(actual) else None
        if got is not None and want.error is None and not _same(got.value, want.value):
            node.actual["value"] = got.value
        nodes[created.id] = node
        for slot, operand in enumerate(created.operands):
            edges.append(GraphEdge(created.id, slot, operand, detached=created.op == "detach"))
    record, at = _pass_before(expected, step)
    got_record = actual[at].pass_ if 0 <= at < len(actual) else None
    if record is not None:
        _annotate(nodes, edges, record, got_record)
        where = f"the pass record of step {at}" + ("" if at == step else " (the last backward before this step)")
    else:
        where = "the values only (no backward has run yet)"
    gradients = expected[step].gradients if step < len(expected) else None
    if gradients is not None and record is None:
        where = f"the stored gradients after step {step} (the case records no pass)"
        got_gradients = actual[step].gradients if step < len(actual) else None
        for name, gradient in gradients.items():
            if name in nodes:
                nodes[name].stored_gradient = gradient
                theirs = (got_gradients or {}).get(name)
                if actual and not _same(gradient, theirs):
                    nodes[name].actual["stored_gradient"] = theirs
    focus = _placed(focus, nodes, edges, fixture, step)
    # The full size counts every node and edge a repeated step's chain makes, though the chain is drawn as one node.
    repeats = {s.id: s.repeat for s in fixture.program[: step + 1] if s.id is not None and s.repeat is not None}
    total_nodes = len(nodes) + sum(n - 1 for n in repeats.values())
    total_edges = len(edges) + sum((n - 1) * len(s.operands) for s in fixture.program[: step + 1] if (n := s.repeat))
    shown = _neighbourhood(nodes, edges, focus)
    kept = [edge for edge in edges if edge.consumer in shown and edge.operand in shown]
    return Graph(step, [nodes[n] for n in nodes if n in shown], kept, focus, total_nodes, total_edges, where)


def _placed(
    focus: Optional[Focus], nodes: dict[str, GraphNode], edges: list[GraphEdge], fixture: Fixture, step: int
) -> Optional[Focus]:
    """The focus as something drawn: an edge the program lacks falls back to its consumer, a node to the step's own."""
    if focus is not None and focus.is_edge and any(e.consumer == focus.node and e.slot == focus.slot for e in edges):
        return focus
    if focus is not None and focus.node in nodes:
        return Focus(focus.node)
    if focus is not None and focus.node.split("[")[0] in nodes:  # an inner node id[k] of a repeated step
        return Focus(focus.node.split("[")[0])
    own = fixture.program[step]
    name = own.id or own.output or ""
    if name in nodes:
        return Focus(name)
    return Focus(next(reversed(nodes))) if nodes else None


def _same(a: Optional[float], b: Optional[float]) -> bool:
    """The same float bit for bit in the ways that matter here: equal with the same sign, or both nan."""
    if a is None or b is None:
        return a is b
    return (a == b and math.copysign(1.0, a) == math.copysign(1.0, b)) or (a != a and b != b)


def _annotate(nodes: dict[str, GraphNode], edges: list[GraphEdge], record: PassRecord, got: Optional[PassRecord]) -> None:
    got_nodes: dict[str, NodeRecord] = {n.node: n for n in got.nodes} if got is not None else {}
    got_edges: dict[tuple[str, int], EdgeRecord] = {(e.consumer, e.slot): e for e in got.edges} if got is not None else {}
    for want in record.nodes:
        node = nodes.get(want.node)
        if node is None:
            continue
        node.pass_adjoint, node.stored_gradient = want.pass_adjoint, want.stored_gradient
        if got is None:
            continue
        other = got_nodes.get(want.node)
        for name in ("value", "pass_adjoint", "stored_gradient"):
            theirs = getattr(other, name) if other is not None else None
            if not _same(getattr(want, name), theirs):
                node.actual[name] = theirs
    by_key = {(e.consumer, e.slot): e for e in edges}
    for want_edge in record.edges:
        edge = by_key.get((want_edge.consumer, want_edge.slot))
        if edge is None:
            continue
        edge.local_derivative, edge.contribution = want_edge.local_derivative, want_edge.contribution
        if got is None:
            continue
        other_edge = got_edges.get((want_edge.consumer, want_edge.slot))
        for name in ("local_derivative", "contribution"):
            theirs = getattr(other_edge, name) if other_edge is not None else None
            if not _same(getattr(want_edge, name), theirs):
                edge.actual[name] = theirs


def _neighbourhood(nodes: dict[str, GraphNode], edges: list[GraphEdge], focus: Optional[Focus]) -> set[str]:
    """Every node when the graph is small; else those within HOPS of the focus (at most MAX_NODES)."""
    if len(nodes) <= MAX_NODES:
        return set(nodes)
    around: dict[str, list[str]] = {name: [] for name in nodes}
    for edge in edges:
        if edge.consumer in around and edge.operand in around:
            around[edge.consumer].append(edge.operand)
            around[edge.operand].append(edge.consumer)
    starts = [name for name in nodes if focus is None or name == focus.node]
    if focus is not None and focus.is_edge:
        starts += [e.operand for e in edges if e.consumer == focus.node and e.slot == focus.slot]
    starts = starts[:1] if focus is None else starts
    if not starts:
        starts = [next(reversed(nodes))]
    seen = dict.fromkeys(starts, 0)
    queue = deque(starts)
    while queue and len(seen) < MAX_NODES:
        name = queue.popleft()
        if seen[name] >= HOPS or (seen[name] > 0 and len(around[name]) > HUB):
            continue
        for other in around[name]:
            if other not in seen and len(seen) < MAX_NODES:
                seen[other] = seen[name] + 1
                queue.append(other)
    return set(seen)

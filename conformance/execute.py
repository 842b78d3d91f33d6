"""The reference engine as a ``Session``: what the generator records and the python adapter answers.

``run_program`` observes a program on a fresh reference graph (see ``conformance.observe``
for the loop and ``conformance.protocol`` for the observation types). ``gradients`` holds
the stored gradient of every tracked node the program has created so far, so a step that
touches a node it should not is visible. Nodes are named by program id everywhere.
"""

from __future__ import annotations

from typing import Optional

import reference
from reference import Node
from reference import PassRecord as ReferencePassRecord

from .observe import observe
from .program import Program, ProgramError, Step
from .protocol import EdgeRecord, NodeRecord, Observation, PassRecord


class ReferenceSession:
    """One program on a fresh reference graph."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.names: dict[Node, str] = {}

    def create(self, step: Step) -> tuple[float, bool]:
        """Create the step's node with the reference's constructors."""
        assert step.id is not None
        if step.op == "variable":
            node = reference.variable(step.value)  # type: ignore[arg-type]
        elif step.op == "constant":
            node = reference.constant(step.value)  # type: ignore[arg-type]
        elif step.op == "detach":
            node = self._lookup(step.operands[0]).detach()
        else:
            node = reference.apply(step.op, tuple(self._lookup(name) for name in step.operands), step.exponent)
        self.nodes[step.id] = node
        self.names[node] = step.id
        return node.value, node.tracked

    def backward(self, output: str, seed: float, record: bool) -> Optional[PassRecord]:
        """The reference's backward, its record named by program ids."""
        raw = self._lookup(output).backward(seed)
        return pass_record(raw, self.names) if record else None

    def zero_grad(self, output: str) -> None:
        """The reference's zero_grad."""
        self._lookup(output).zero_grad()

    def gradients(self) -> dict[str, float]:
        """Every stored gradient, by id."""
        return {name: node.grad for name, node in self.nodes.items() if node.grad is not None}

    def name(self, node: Node) -> str:
        """The id a node was created under."""
        return self.names[node]

    def _lookup(self, name: str) -> Node:
        try:
            return self.nodes[name]
        except KeyError:
            raise ProgramError(f"id {name!r} was never created (its creating step failed)") from None


def run_program(program: Program, *, record_pass: bool = True) -> list[Observation]:
    """Execute ``program`` on a fresh reference graph and return one observation per step."""
    return observe(ReferenceSession(), program, record_pass=record_pass)


def pass_record(record: ReferencePassRecord, names: dict[Node, str]) -> PassRecord:
    """The reference's pass record with nodes named by program id."""
    # From the record's raw rows: the same numbers as ``record.nodes``/``record.edges``, without building the
    # reference's record objects first. A row holds the fields of the wire type in its order (the reference's
    # record types have the protocol's field names, tests/test_observation_fields.py), its nodes named here.
    name = names.__getitem__
    return PassRecord(
        seed=record.seed,
        nodes=[NodeRecord(*row) for row in record.node_rows(name)],
        edges=[EdgeRecord(*row) for row in record.edge_rows(name)],
    )

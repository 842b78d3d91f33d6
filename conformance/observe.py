"""The one loop that runs a program on an engine and observes every step (docs/protocol.md).

Every engine the kit runs in-process implements ``Session``: the reference
(``conformance.execute``), the catalogue of broken engines (``conformance.mutants``) and
the correct variants (``conformance.variants``). ``observe`` turns a program into one
``Observation`` per step, so the wire form of an observation is written in one place
(``conformance.protocol``) and the step loop in one place (here).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

from reference.errors import NODE_FIELDS, EngineError

from .program import Program, ProgramError, Step, observed_ids
from .protocol import ErrorInfo, Observation, PassRecord


class Session(Protocol):
    """One program's run on one engine: it creates nodes under program ids and runs gradient steps.

    Each method raises the contract's ``EngineError`` when the engine rejects the step, and
    ``ProgramError`` for an id that does not exist (its creating step failed).
    """

    def create(self, step: Step) -> tuple[float, bool]:
        """Create the node of a creation step under ``step.id``; return its value and tracked flag."""

    def backward(self, output: str, seed: float, record: bool) -> Optional[PassRecord]:
        """Run backward from node ``output``; return the pass record, nodes by id, when ``record`` is set."""

    def zero_grad(self, output: str) -> None:
        """Zero the stored gradient of every tracked node reachable from ``output``."""

    def gradients(self) -> dict[str, float]:
        """The stored gradient of every tracked node created so far, by id."""

    def name(self, node: Any) -> str:
        """The program id of one of the engine's nodes (as an error carries it)."""


def observe(session: Session, program: Program, *, record_pass: bool = True) -> list[Observation]:
    """Run ``program`` on a fresh ``session`` and return one observation per step.

    A repeated step (``repeat``) is created as its chain of single steps, named ``id[1]`` ..
    ``id[n-1]`` and ``id``; gradients are then observed for the program's own ids only.
    Raises ProgramError when a step names an id whose creating step failed.
    """
    observations: list[Observation] = []
    named = observed_ids(program)

    def gradients() -> dict[str, float]:
        stored = session.gradients()
        return stored if named is None else {name: value for name, value in stored.items() if name in named}

    for step in program:
        try:
            if step.id is not None:
                value, tracked = session.create(step) if step.repeat is None else _create_chain(session, step)
                observations.append(Observation(value=value, tracked=tracked))
            elif step.op == "zero_grad":
                session.zero_grad(_output(step))
                observations.append(Observation(gradients=gradients()))
            else:
                record = session.backward(_output(step), 1.0 if step.seed is None else step.seed, record_pass)
                observations.append(Observation(gradients=gradients(), pass_=record))
        except EngineError as error:
            info = error_info(error, session.name)
            observations.append(Observation(error=info, gradients=None if step.id is not None else gradients()))
    return observations


def _create_chain(session: Session, step: Step) -> tuple[float, bool]:
    """A repeated step, created as its single steps; the last one's value and tracked flag."""
    value, tracked = 0.0, False
    for single in step.written_out():
        value, tracked = session.create(single)
    return value, tracked


def _output(step: Step) -> str:
    if step.output is None:  # pragma: no cover - parse_program guarantees it
        raise ProgramError(f"{step.op} without an output")
    return step.output


def error_info(error: EngineError, name: Callable[[Any], str]) -> ErrorInfo:
    """The error as observed: its kind, then its fields, nodes named by program id."""
    fields: dict[str, Any] = {key: name(value) if key in NODE_FIELDS else value for key, value in error.fields.items()}
    return ErrorInfo(kind=error.kind, **fields)

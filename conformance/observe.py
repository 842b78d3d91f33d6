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

from .program import Program, ProgramError, Step
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
    observe_step = step_hook(session, record_pass=record_pass)
    return [observe_step(step) for step in program]


def step_hook(session: Session, *, record_pass: bool = True) -> Callable[[Step], Observation]:
    """The function that runs one step on a fresh ``session`` and observes it: ``observe`` a step at a time.

    ``observe`` calls it for every step of a program; ``conformance.serve.by_steps`` calls it step by step, so
    that an exception the engine raises at one step (the catalogue's RecursionError on a deep chain) is that
    step's fault (protocol 2.1) and not the case's error. A contract error is the step's observation; a
    ProgramError and every other exception propagate. Once a repeated step has run, gradients are observed for
    the ids of the steps run so far only (its chain's inner ids are not the program's): before it, no other id
    exists, so this is what ``observe`` does with the whole program in view.
    """
    own: set[str] = set()
    repeated = False

    def gradients() -> dict[str, float]:
        stored = session.gradients()
        return {name: value for name, value in stored.items() if name in own} if repeated else stored

    def observe_step(step: Step) -> Observation:
        nonlocal repeated
        if step.id is not None:
            own.add(step.id)
            repeated = repeated or step.repeat is not None
        try:
            if step.id is not None:
                value, tracked = session.create(step) if step.repeat is None else _create_chain(session, step)
                return Observation(value=value, tracked=tracked)
            if step.op == "zero_grad":
                session.zero_grad(_output(step))
                return Observation(gradients=gradients())
            record = session.backward(_output(step), 1.0 if step.seed is None else step.seed, record_pass)
            return Observation(gradients=gradients(), pass_=record)
        except EngineError as error:
            info = error_info(error, session.name)
            return Observation(error=info, gradients=None if step.id is not None else gradients())

    return observe_step


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

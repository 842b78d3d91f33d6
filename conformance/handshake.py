"""The handshake: what an adapter's hello declares, checked field by field (docs/protocol.md, "hello").

``Handshake.parse`` turns a hello (decoded, or plain data) into a ``Handshake`` or an
``AdapterFault`` that names every problem at once: a porter whose hello has three bad
fields sees all three, not one per start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, TypeVar

from .faults import AdapterFault, quote
from .fixture import Fixture
from .program import DECLARABLE_OPS
from .protocol import (
    ERROR_KINDS,
    FEATURES,
    LEVELS,
    PROTOCOL_VERSION,
    GradientScope,
    Hello,
    Level,
    Precision,
    Profile,
    TraceKind,
    hello_fields,
    version_mismatch,
)


@dataclass(frozen=True)
class Handshake:
    """What the adapter said about itself in its hello."""

    name: str
    version: str
    language: str
    ops: frozenset[str]
    levels: frozenset[Level]
    features: frozenset[str] = field(default_factory=frozenset)
    error_kinds: frozenset[str] = frozenset(ERROR_KINDS)
    """The error kinds the engine reports (hello's optional ``error_kinds``; default every kind)."""
    trace: TraceKind = TraceKind.FULL
    """``full``, or ``nodes`` for pass records without edge records (hello's optional ``trace``)."""
    profile: Profile = Profile.CONTRACT
    """How its floats are compared (docs/contract.md section 9): ``contract`` or ``numeric``."""
    gradients: GradientScope = GradientScope.ALL
    """``leaves``: the engine keeps stored gradients on tracked leaves only (hello's optional ``gradients``)."""
    precision: Precision = Precision.FLOAT64
    """``float32``: the engine computes in single precision (hello's optional ``precision``)."""

    def view(self, fixture: Fixture) -> Fixture:
        """The fixture as this engine is compared on it: its leaves' stored gradients only, its floats as float32."""
        if self.gradients is GradientScope.LEAVES:
            fixture = fixture.leaves_only()
        if self.precision is Precision.FLOAT32:
            fixture = fixture.as_float32()
        return fixture

    def partial(self) -> list[str]:
        """What the adapter declared less than in full, one phrase each (empty when nothing)."""
        found = []
        missing = [kind for kind in ERROR_KINDS if kind not in self.error_kinds]
        # An adapter without the errors level that reports no kind at all says nothing by it: not a phrase to repeat.
        if missing and ("errors" in self.levels or self.error_kinds):
            found.append(f"errors: {len(self.error_kinds)} of {len(ERROR_KINDS)} kinds (not {', '.join(missing)})")
        if self.trace == "nodes" and "trace" in self.levels:
            found.append("trace: nodes only")
        if self.gradients is GradientScope.LEAVES:
            found.append("gradients: leaves only (stored gradients compared on variables alone)")
        if self.precision is Precision.FLOAT32:
            found.append("precision: float32 (a float agrees also as the contract's value in single precision)")
        return found

    def to_json(self) -> dict[str, Any]:
        """The handshake as report data (the pytest plugin's workers send it so), sets sorted."""
        return {
            "name": self.name,
            "version": self.version,
            "language": self.language,
            "ops": sorted(self.ops),
            "features": sorted(self.features),
            "levels": sorted(self.levels),
            "error_kinds": sorted(self.error_kinds),
            "trace": self.trace.value,
            "profile": self.profile.value,
            "gradients": self.gradients.value,
            "precision": self.precision.value,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> "Handshake":
        """The handshake ``to_json`` wrote (already checked once, as a hello)."""
        return Handshake(
            data["name"],
            data["version"],
            data["language"],
            frozenset(data.get("ops", ())),
            frozenset(Level(level) for level in data["levels"]),
            frozenset(data.get("features", ())),
            frozenset(data["error_kinds"]),
            TraceKind(data["trace"]),
            Profile(data["profile"]),
            GradientScope(data.get("gradients", GradientScope.ALL.value)),
            Precision(data.get("precision", Precision.FLOAT64.value)),
        )

    @staticmethod
    def parse(message: Hello | dict[str, Any]) -> "Handshake":
        """Check a hello reply (decoded, or as plain data); raise AdapterFault naming everything wrong with it.

        Every field is checked on its own (``protocol.hello_fields``), so a hello with three bad fields gets
        one message naming all three. A wrong protocol version is reported alone: the other fields of
        another version may differ without being wrong there.
        """
        if isinstance(message, Hello):
            fields: dict[str, Any] = {name: getattr(message, name) for name in message.__struct_fields__}
            problems: list[str] = []
        else:
            fields, problems = hello_fields(message)
        if "protocol" in fields and fields["protocol"] != PROTOCOL_VERSION:
            raise AdapterFault(version_mismatch(fields["protocol"]))
        sets: dict[str, frozenset[str]] = {}
        for key, allowed in (("ops", DECLARABLE_OPS), ("levels", tuple(LEVELS)), ("features", FEATURES)):
            if key in fields:
                sets[key] = _declared(key, fields[key], allowed, problems)
        raw_kinds = fields.get("error_kinds")
        sets["error_kinds"] = _declared("error_kinds", ERROR_KINDS if raw_kinds is None else raw_kinds, ERROR_KINDS, problems)
        trace = _choice("trace", fields.get("trace", TraceKind.FULL.value), TraceKind, problems)
        if trace is TraceKind.NODES and "order" in sets.get("levels", ()):
            problems.append(
                "field 'trace': 'nodes' cannot be declared with the order level, which compares the edge "
                "sequence: drop order from 'levels', or send edge records and declare trace 'full'"
            )
        profile = _choice("profile", fields.get("profile", Profile.CONTRACT.value), Profile, problems)
        scope = _choice("gradients", fields.get("gradients", GradientScope.ALL.value), GradientScope, problems)
        precision = _choice("precision", fields.get("precision", Precision.FLOAT64.value), Precision, problems)
        if scope is GradientScope.LEAVES and "trace" in sets.get("levels", ()):
            problems.append(
                "field 'gradients': 'leaves' cannot be declared with the trace level, which compares every node's "
                "stored gradient: drop trace from 'levels', or keep the gradients of every tracked node"
            )
        if problems:
            raise AdapterFault("hello: " + "; ".join(problems))
        assert trace is not None and profile is not None and scope is not None and precision is not None
        engine = fields["engine"]
        return Handshake(
            engine.name,
            engine.version,
            engine.language,
            sets["ops"],
            frozenset(Level(level) for level in sets["levels"]),
            sets["features"],
            sets["error_kinds"],
            trace,
            profile,
            scope,
            precision,
        )


def _declared(key: str, raw: Any, allowed: tuple[str, ...], problems: list[str]) -> frozenset[str]:
    """A declared set, with a problem appended for the values the protocol does not know."""
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        named = ", ".join(repr(value) for value in unknown)
        problems.append(f"field {key!r}: unknown {named} (known: {', '.join(allowed)})")
    return frozenset(raw)


E = TypeVar("E", TraceKind, Profile, GradientScope, Precision)


def _choice(key: str, raw: str, kind: type[E], problems: list[str]) -> Optional[E]:
    """One of an enum's values, or None with a problem appended."""
    if raw in tuple(kind):
        return kind(raw)
    choices = ", ".join(repr(value.value) for value in kind)
    problems.append(f"field {key!r}: {quote(raw, 60)} is not one of {choices}")
    return None

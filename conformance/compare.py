"""Compare an adapter's observations with a fixture's expectations, level by level.

``compare_level`` returns the differences at one level (docs/contract.md section 9,
docs/protocol.md "Levels"), each with the step, the JSON path of the
difference, expected and actual values and, for floats, their ulp distance and
bound. Under the adapter's profile a float is compared bit for bit (an ``exact``
fixture under ``contract``) or within its own bound from the fixture's ``bounds``;
ids, kinds, slots and booleans must match exactly.

The sign of zero: where a float is compared bit for bit, or its bound is 0 under
``contract`` (a zero every port has exactly: tanh(-0.0), neg, relu, a product of zeros),
-0.0 and 0.0 differ whatever the case's mode. Elsewhere (a nonzero bound, the ``numeric``
profile) they agree, and ``compare`` lists the float in ``signed_zero_warnings``.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional, Sequence

import msgspec

from .fixture import Fixture, StepBounds, agree
from .program import Program, Step
from .protocol import EDGE_FLOATS, NODE_FLOATS, EdgeRecord, ErrorInfo, Level, NodeRecord, Observation, PassRecord, Profile
from .wire import NON_FINITE, to_json_ready, ulp_distance

#: The profile a port is compared under when it declares none (docs/contract.md section 9).
DEFAULT_PROFILE = Profile.CONTRACT

#: Node-record fields compared at ``trace``: every field of the record but its key (``NodeRecord.KEY``).
_NODE_FIELDS = tuple(field for field in NodeRecord.__struct_fields__ if field not in NodeRecord.KEY)
#: Edge-record fields compared at ``trace`` (keyed by consumer and slot): every field but the key and the running sums.
_TRACE_EDGE_FIELDS = tuple(
    field for field in EdgeRecord.__struct_fields__ if field not in EdgeRecord.KEY and field not in EdgeRecord.RUNNING
)
#: Edge-record fields compared at ``order`` (by position).
_ORDER_EDGE_FIELDS = EdgeRecord.ORDER
#: The float fields of the pass record's node and edge records, compared by ulps and bounds: read from the
#: struct definitions (``protocol.record_floats``), so a new float field is one by itself.
_RECORD_FLOATS = frozenset(NODE_FLOATS + EDGE_FLOATS)


@dataclass(frozen=True)
class Difference:
    """The first (or one) place where actual differs from expected."""

    level: str
    step: int
    path: str
    expected: Any
    actual: Any
    ulps: Optional[float] = None
    note: str = ""
    bound: Optional[float] = None
    """The float's bound when it was compared under one (None: compared bit for bit)."""

    def describe(self) -> str:
        """One line: step, path, expected, actual, ulp distance and, under a bound, how far over it."""
        text = f"step {self.step}: {self.path}: expected {show(self.expected)}, got {show(self.actual)}"
        if self.ulps is not None and math.isfinite(self.ulps):
            parts = [f"{self.ulps:.0f} ulp apart" if self.ulps < 1e6 else f"{self.ulps:.1e} ulp apart"]
            e, a = as_float(self.expected), as_float(self.actual)
            if self.bound == 0.0:
                parts.append("its bound is 0: every correct port has this exact number")
            elif self.bound is not None and e is not None and a is not None:
                parts.append(f"{abs(e - a) / self.bound:.3g} times its bound {self.bound:.3g}")
            text += f" ({'; '.join(parts)})"
        if self.note:
            text += f"; {self.note}"
        return text


class Said(str):
    """A difference's side written in words, not JSON: ``a value``, ``fault ZeroDivisionError: ...``."""


def show(value: Any) -> str:
    """A difference's expected or actual value as the reports write it: JSON, or ``nothing`` where there is none."""
    if value is _MISSING:
        return "nothing"
    if isinstance(value, Said):
        return str(value)
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    return json.dumps(to_json_ready(value), sort_keys=False)


_MISSING = object()


#: The largest finite float32.
FLOAT32_MAX = (2.0 - 2.0**-23) * 2.0**127
#: The smallest normal float32, 2^-126.
FLOAT32_TINIEST_NORMAL = 2.0**-126
#: How many float32 ulps a single-precision engine's value may be from the float64 one (``single_precision``).
FLOAT32_ULPS = 4


def single_precision(differences: Sequence[Difference]) -> bool:
    """Whether every difference is what computing in float32 makes of the expected float.

    An engine in single precision has the expected leaves rounded to float32 and rounds again at every op,
    so each of its floats is a float32 number within FLOAT32_ULPS float32 ulps of the contract's value;
    past float32's largest finite value it has an infinity of the same sign, and below its smallest normal
    one a float32 number within that normal of the value (it underflowed). A sign of zero alone is not it.
    """
    if not differences:
        return False
    return all(_float32_of(as_float(d.expected), as_float(d.actual)) for d in differences)


def float32_rounding(differences: Sequence[Difference]) -> bool:
    """Whether some difference is float32's rounding of a float in its normal range, not only its underflow or overflow.

    A float64 engine whose formula underflows to 0 or overflows to inf where the contract's does not (scipy's
    ``expit(-740)`` is ``1 / (1 + exp(740))``, 0.0) has differences ``single_precision`` also accepts: only a
    float32 number near a value float32 holds as a normal number shows an engine computing in single precision.
    """
    return any(
        FLOAT32_TINIEST_NORMAL <= abs(expected) <= FLOAT32_MAX and _float32_of(expected, as_float(d.actual))
        for d in differences
        if (expected := as_float(d.expected)) is not None and math.isfinite(expected)
    )


def _float32_of(expected: Optional[float], actual: Optional[float]) -> bool:
    """Whether ``actual`` is what single precision makes of ``expected`` (``single_precision``)."""
    if expected is None or actual is None or not math.isfinite(expected) or actual == expected:
        return False
    if abs(expected) > FLOAT32_MAX:
        return math.isinf(actual) and math.copysign(1.0, actual) == math.copysign(1.0, expected)
    if not math.isfinite(actual):
        return False
    try:
        (rounded,) = struct.unpack("<f", struct.pack("<f", actual))
    except OverflowError:
        return False
    if rounded != actual:
        return False
    if abs(expected) < FLOAT32_TINIEST_NORMAL:
        return abs(actual - expected) <= FLOAT32_TINIEST_NORMAL
    return abs(actual - expected) <= FLOAT32_ULPS * math.ldexp(1.0, math.frexp(expected)[1] - 24)


def as_float(raw: Any) -> Optional[float]:
    """A JSON float (number or non-finite string) as a float; None if it is neither."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str) and raw in NON_FINITE:
        return NON_FINITE[raw]
    return None


@dataclass(frozen=True)
class Comparison:
    """What comparing one level found: differences, the largest share of a bound used, fields compared, sign warnings."""

    differences: list[Difference]
    largest_share: float
    """The largest ``|expected - actual| / bound`` among floats that agreed within a nonzero bound."""
    compared: int
    """How many fields were compared (each that agreed and each difference): 0 means the level checked nothing."""
    signed_zero_warnings: list[Difference]
    """Floats that agreed although only the sign of zero differed (under ``numeric``, or a nonzero bound)."""
    not_comparable: tuple[int, ...] = ()
    """Steps this level would have compared that the adapter skipped (protocol 2.1: they depend on a step that faulted)."""


class _Collector:
    def __init__(
        self,
        level: Level,
        bounds: Optional[tuple[StepBounds, ...]],
        limit: int,
        profile: Profile,
        gradient_ids: Optional[frozenset[str]] = None,
        float32: bool = False,
    ) -> None:
        self.level = level
        self.float32 = float32
        """Whether a float agrees also as single precision makes it (``Fixture.float32``)."""
        self.float32_agreed = 0
        self.gradient_ids = gradient_ids
        """The ids whose stored gradients are compared (``Fixture.compared_gradients``); None: every one."""
        self.bounds = bounds
        self.limit = limit
        self.contract = profile is Profile.CONTRACT
        self.found: list[Difference] = []
        self.warnings: list[Difference] = []
        self.largest = 0.0
        self.compared = 0
        """How many fields were compared: each one that agreed, and each difference found."""

    @property
    def full(self) -> bool:
        return len(self.found) >= self.limit

    def add(
        self,
        step: int,
        path: str,
        expected: Any,
        actual: Any,
        ulps: Optional[float] = None,
        note: str = "",
        bound: Optional[float] = None,
    ) -> None:
        self.compared += 1
        if not self.full:
            self.found.append(Difference(self.level, step, path, expected, actual, ulps, note, bound))

    def bound_at(self, step: int, path: str) -> Optional[float]:
        """The bound of the float at ``path`` (``observations[i].REST``), or None when compared bit for bit."""
        if self.bounds is None:
            return None
        return self.bounds[step].get(path.split("].", 1)[1], 0.0)

    def number(self, step: int, path: str, expected: Optional[float], actual: Optional[float]) -> None:
        """Compare two floats (either may be None: an untracked node's adjoint) under the step's bound."""
        if expected is None or actual is None:
            if expected is not actual:
                self.add(step, path, _or_missing(expected), _or_missing(actual))
            else:
                self.compared += 1
            return
        if expected == actual and (expected != 0.0 or math.copysign(1.0, expected) == math.copysign(1.0, actual)):
            self.compared += 1
            return  # the same bits: agrees under any bound, and uses none of it
        bound = self.bound_at(step, path)
        if expected == 0.0 and actual == 0.0:  # equal but for the sign: not a distance in ulp
            # A zero that every port has exactly (bound 0) has its sign too: compared under contract
            # whatever the case's mode. Where the sign is not failed, it is still reported as a warning.
            if bound is None or (bound == 0.0 and self.contract):
                self.add(step, path, expected, actual, note="only the sign of zero differs (-0.0 vs 0.0)")
            elif len(self.warnings) < self.limit:
                note = "only the sign of zero differs (-0.0 vs 0.0); not failed under this profile and bound"
                self.warnings.append(Difference(self.level, step, path, expected, actual, note=note, bound=bound))
                self.compared += 1
            return
        if not agree(expected, actual, bound):
            if self.float32 and _float32_of(expected, actual):  # a declared float32 engine: its rounding agrees
                self.compared += 1
                self.float32_agreed += 1
                return
            self.add(step, path, expected, actual, ulp_distance(expected, actual), bound=bound)
        else:
            self.compared += 1
            if bound and expected != actual:
                # The figure of merit under a bound: how much of it the difference used.
                self.largest = max(self.largest, abs(expected - actual) / bound)

    def same(self, step: int, path: str, expected: Any, actual: Any) -> None:
        """Compare two ids, kinds, slots or flags exactly."""
        if type(expected) is not type(actual) or expected != actual:
            self.add(step, path, _or_missing(expected), _or_missing(actual))
        else:
            self.compared += 1

    def fields(self, step: int, path: str, expected: Any, actual: Any, names: tuple[str, ...], floats: frozenset[str]) -> None:
        """Compare the named fields of two records."""
        for name in names:
            if name in floats:
                self.number(step, f"{path}.{name}", getattr(expected, name), getattr(actual, name))
            else:
                self.same(step, f"{path}.{name}", getattr(expected, name), getattr(actual, name))

    def error(self, step: int, path: str, expected: ErrorInfo, actual: ErrorInfo) -> None:
        """Compare two errors: the kind, then every field of the expected kind, then any field it does not have."""
        self.same(step, f"{path}.kind", expected.kind, actual.kind)
        want, got = expected.fields(), actual.fields()
        for name, value in want.items():
            if name not in got:
                self.add(step, f"{path}.{name}", value, _MISSING)
            elif isinstance(value, float):  # the decoded types say which fields are floats
                self.number(step, f"{path}.{name}", value, got[name])
            else:
                self.same(step, f"{path}.{name}", value, got[name])
        for name, value in got.items():
            if name not in want:
                self.add(step, f"{path}.{name}", _MISSING, value, note="unexpected field")

    def gradients(self, step: int, path: str, expected: dict[str, float], actual: Optional[dict[str, float]]) -> None:
        if actual is None:
            self.add(step, path, expected, _MISSING)
            return
        if self.gradient_ids is not None:  # an engine that keeps the leaves' gradients only: those are compared
            expected = {key: value for key, value in expected.items() if key in self.gradient_ids}
            actual = {key: value for key, value in actual.items() if key in self.gradient_ids}
        for key, value in expected.items():
            if key not in actual:
                self.add(step, f"{path}.{key}", value, _MISSING, note="no stored gradient reported for a tracked node")
            elif value != actual[key] or value == 0.0:  # equal non-zero floats have the same bits (see ``number``)
                self.number(step, f"{path}.{key}", value, actual[key])
            else:
                self.compared += 1
        for key in actual:
            if key not in expected:
                self.add(step, f"{path}.{key}", _MISSING, actual[key], note="a gradient for a node that has none")


def _or_missing(value: Any) -> Any:
    return _MISSING if value is None else value


def compare_level(
    fixture: Fixture,
    observations: list[Observation],
    level: str,
    limit: int = 20,
    *,
    profile: str = DEFAULT_PROFILE,
    edges: bool = True,
) -> tuple[list[Difference], float]:
    """Differences at ``level`` (at most ``limit``) under ``profile``, and the largest share of a bound used.

    The second value is the largest ``|expected - actual| / bound`` among floats that agree
    within a nonzero bound (0 when every float matched bit for bit). ``edges=False`` is for
    an adapter whose hello declares ``"trace": "nodes"``: ``trace`` then compares the seed
    and the node records only, and ignores edges. The observations come decoded and
    shape-checked (``conformance.protocol``), so only their contents can differ.
    """
    comparison = compare_fields(fixture, observations, level, limit, profile=profile, edges=edges)
    return comparison.differences, comparison.largest_share


def compare_fields(
    fixture: Fixture,
    observations: list[Observation],
    level: str,
    limit: int = 20,
    *,
    profile: str = DEFAULT_PROFILE,
    edges: bool = True,
) -> Comparison:
    """``compare_level``'s differences and largest share, with the count of fields compared and the signed-zero warnings.

    The count says whether the level checked anything: 0 is no pass. A float that differs
    only in the sign of zero fails where its bound is 0 under ``contract`` (or the case is
    compared exactly); elsewhere (a nonzero bound, the ``numeric`` profile) it agrees and is
    listed in ``signed_zero_warnings`` (at most ``limit``), so that reports can say so.
    """
    bounds = fixture.step_bounds(Profile(profile))
    out = _Collector(Level(level), bounds, limit, Profile(profile), fixture.compared_gradients, fixture.float32)
    levels: dict[str, Callable[..., None]] = {
        Level.VALUES: _values,
        Level.GRADIENTS: _gradients,
        Level.ERRORS: _errors,
        Level.TRACE: partial(_trace, with_edges=edges),
        Level.ORDER: _order,
    }
    compare = levels[level]
    empty = Observation()
    gone = _not_created(fixture.program, observations)
    skipped: list[int] = []
    for index, (step, expected) in enumerate(zip(fixture.program, fixture.expected)):
        actual = observations[index] if index < len(observations) else empty
        if actual.fault is not None or actual.skipped is not None:
            # Protocol 2.1: a step the engine raised at, or did not run. Only where this level compares the step.
            probe = _Collector(Level(level), None, 1, Profile(profile))
            compare(probe, index, step, expected, empty)
            if probe.found or probe.compared:
                if actual.fault is not None:
                    note = "the engine raised or refused here" + ("; a later step that uses it is skipped" if step.id else "")
                    said = _expectation(Level(level), step, expected)
                    out.add(index, f"observations[{index}]", said, Said(f"fault {actual.fault}"), note=note)
                else:
                    skipped.append(index)
        else:
            if gone and expected.gradients is not None:  # a node the engine never created has no stored gradient
                expected = msgspec.structs.replace(
                    expected, gradients={k: v for k, v in expected.gradients.items() if k not in gone}
                )
            compare(out, index, step, expected, actual)
        if out.full:
            break
    return Comparison(out.found, out.largest, out.compared, out.warnings, tuple(skipped))


def _not_created(program: Program, observations: Sequence[Observation]) -> frozenset[str]:
    """The ids whose creating step faulted or was skipped (protocol 2.1): no later observation can hold them."""
    return frozenset(
        step.id
        for step, observation in zip(program, observations)
        if step.id is not None and (observation.fault is not None or observation.skipped is not None)
    )


def _expectation(level: Level, step: Step, expected: Observation) -> Said:
    """What the contract has at a step, in words, as ``level`` compares it, for a step the engine faulted at."""
    if expected.error is not None and level in (Level.ERRORS, Level.VALUES):
        return Said(f"the error {expected.error.kind}")
    if step.id is not None:
        return Said(f"a value ({show(expected.value)})")
    return Said("a pass record" if level in (Level.TRACE, Level.ORDER) else "gradients")


def _values(out: _Collector, index: int, step: Step, expected: Observation, actual: Observation) -> None:
    if step.id is None:
        return
    path = f"observations[{index}]"
    if expected.error is not None:
        if actual.error is None:  # what came back instead of the error is what tells the bug
            returned = {"value": actual.value, "tracked": actual.tracked}
            note = f"{step.describe()} should have failed with {expected.error.kind}, but returned a value"
            out.add(index, f"{path}.error", expected.error, returned, note=note)
            return
        out.error(index, f"{path}.error", expected.error, actual.error)
        return
    if actual.error is not None:
        out.add(index, f"{path}.error", _MISSING, actual.error, note=f"{step.describe()} should have succeeded")
        return
    out.number(index, f"{path}.value", expected.value, actual.value)
    out.same(index, f"{path}.tracked", expected.tracked, actual.tracked)


def _gradients(out: _Collector, index: int, step: Step, expected: Observation, actual: Observation) -> None:
    if step.id is not None or expected.error is not None:
        return
    path = f"observations[{index}]"
    if actual.error is not None:
        out.add(index, f"{path}.error", _MISSING, actual.error, note=f"{step.describe()} failed where the reference succeeded")
        return
    assert expected.gradients is not None
    out.gradients(index, f"{path}.gradients", expected.gradients, actual.gradients)


def _errors(out: _Collector, index: int, step: Step, expected: Observation, actual: Observation) -> None:
    if step.id is not None or expected.error is None:
        return
    path = f"observations[{index}]"
    if actual.error is None:
        note = f"{step.describe()} should have failed with {expected.error.kind}, but it succeeded"
        out.add(index, f"{path}.error", expected.error, _MISSING, note=note)
    else:
        out.error(index, f"{path}.error", expected.error, actual.error)
    assert expected.gradients is not None
    out.gradients(index, f"{path}.gradients", expected.gradients, actual.gradients)


def _pass_of(out: _Collector, index: int, expected: Observation, actual: Observation) -> Optional[PassRecord]:
    """The actual pass record when the expected step has one and the actual one exists; else None.

    A failed backward or a missing record is recorded as a difference first.
    """
    if expected.pass_ is None:
        return None
    if actual.error is not None:
        note = "backward failed where the reference succeeded"
        out.add(index, f"observations[{index}].error", _MISSING, actual.error, note=note)
        return None
    if actual.pass_ is None:
        out.add(index, f"observations[{index}].pass", "a pass record", _MISSING)
        return None
    return actual.pass_


def _trace(out: _Collector, index: int, step: Step, expected: Observation, actual: Observation, with_edges: bool = True) -> None:
    record = _pass_of(out, index, expected, actual)
    if record is None:
        return
    assert expected.pass_ is not None
    path = f"observations[{index}].pass"
    want = expected.pass_
    out.number(index, f"{path}.seed", want.seed, record.seed)
    nodes = {n.node: n for n in record.nodes}
    for node in want.nodes:
        got = nodes.pop(node.node, None)
        if got is None:
            out.add(index, f"{path}.nodes[{node.node}]", node, _MISSING, note="node missing from the pass")
            continue
        out.fields(index, f"{path}.nodes[{node.node}]", node, got, _NODE_FIELDS, _RECORD_FLOATS)
    for name in nodes:
        out.add(index, f"{path}.nodes[{name}]", _MISSING, nodes[name], note="a node the pass should not reach")
    if not with_edges:
        return
    edges = {(e.consumer, e.slot): e for e in record.edges}
    for edge in want.edges:
        got_edge = edges.pop((edge.consumer, edge.slot), None)
        where = f"{path}.edges[{edge.consumer}:{edge.slot}]"
        if got_edge is None:
            out.add(index, where, edge, _MISSING, note="operand edge missing (merged or skipped?)")
            continue
        out.fields(index, where, edge, got_edge, _TRACE_EDGE_FIELDS, _RECORD_FLOATS)
    for consumer, slot in edges:
        out.add(
            index,
            f"{path}.edges[{consumer}:{slot}]",
            _MISSING,
            edges[(consumer, slot)],
            note="an edge the contract does not have",
        )


def _order(out: _Collector, index: int, step: Step, expected: Observation, actual: Observation) -> None:
    record = _pass_of(out, index, expected, actual)
    if record is None:
        return
    assert expected.pass_ is not None
    want = expected.pass_
    path = f"observations[{index}].pass"
    want_nodes = [n.node for n in want.nodes]
    got_nodes = [n.node for n in record.nodes]
    if want_nodes != got_nodes:
        at = next((i for i, (a, b) in enumerate(zip(want_nodes, got_nodes)) if a != b), min(len(want_nodes), len(got_nodes)))
        out.add(
            index,
            f"{path}.nodes[{at}].node",
            want_nodes[at] if at < len(want_nodes) else _MISSING,
            got_nodes[at] if at < len(got_nodes) else _MISSING,
            note="topology differs from the canonical depth-first post-order",
        )
        return
    out.compared += len(want_nodes)  # the post-order agreed, node by node
    for position, (edge, got) in enumerate(zip(want.edges, record.edges)):
        out.fields(index, f"{path}.edges[{position}]", edge, got, _ORDER_EDGE_FIELDS, _RECORD_FLOATS)
        if out.found:
            return
    if len(record.edges) != len(want.edges):
        out.add(index, f"{path}.edges", f"{len(want.edges)} edges", f"{len(record.edges)} edges")

"""Compare an adapter's observations with a fixture's expectations, level by level.

``compare_level`` returns the differences at one level (docs/contract.md section 9,
docs/protocol.md "Levels"), each with the step, the JSON path of the
difference, expected and actual values and, for floats, their ulp distance and
bound. Under the adapter's profile a float is compared bit for bit (an ``exact``
fixture under ``contract``) or within its own bound from the fixture's ``bounds``;
ids, kinds, slots and booleans must match exactly.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional

from .fixture import Fixture, StepBounds, agree
from .wire import NON_FINITE, to_json_ready, ulp_distance

#: The profile a port is compared under when it declares none (docs/contract.md section 9).
DEFAULT_PROFILE = "contract"

#: Keys whose values are floats (numbers or non-finite strings) wherever they appear.
FLOAT_KEYS = frozenset(
    {
        "value",
        "seed",
        "pass_adjoint",
        "stored_gradient",
        "local_derivative",
        "upstream",
        "contribution",
        "before",
        "after",
        "previous",
        "stored",
    }
)


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
        text = f"step {self.step}: {self.path}: expected {_show(self.expected)}, got {_show(self.actual)}"
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


def _show(value: Any) -> str:
    if value is _MISSING:
        return "nothing"
    return json.dumps(to_json_ready(value), sort_keys=False)


_MISSING = object()


def as_float(raw: Any) -> Optional[float]:
    """A JSON float (number or non-finite string) as a float; None if it is neither."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str) and raw in NON_FINITE:
        return NON_FINITE[raw]
    return None


class _Collector:
    def __init__(self, level: str, bounds: Optional[tuple[StepBounds, ...]], limit: int) -> None:
        self.level = level
        self.bounds = bounds
        self.limit = limit
        self.found: list[Difference] = []
        self.largest = 0.0

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
        if not self.full:
            self.found.append(Difference(self.level, step, path, expected, actual, ulps, note, bound))

    def bound_at(self, step: int, path: str) -> Optional[float]:
        """The bound of the float at ``path`` (``observations[i].REST``), or None when compared bit for bit."""
        if self.bounds is None:
            return None
        return self.bounds[step].get(path.split("].", 1)[1], 0.0)

    def value(self, step: int, path: str, expected: Any, actual: Any, is_float: bool) -> None:
        if is_float:
            e, a = as_float(expected), as_float(actual)
            if e is None or a is None:
                if expected is None and actual is None:
                    return
                self.add(step, path, expected, actual)
                return
            bound = self.bound_at(step, path)
            if not agree(e, a, bound):
                if e == 0.0 and a == 0.0:  # equal but for the sign: not a distance in ulp
                    self.add(step, path, expected, actual, note="only the sign of zero differs (-0.0 vs 0.0)")
                else:
                    self.add(step, path, expected, actual, ulp_distance(e, a), bound=bound)
            elif bound and e != a:
                # The figure of merit under a bound: how much of it the difference used.
                self.largest = max(self.largest, abs(e - a) / bound)
            return
        if type(expected) is not type(actual) or expected != actual:
            self.add(step, path, expected, actual)

    def record(self, step: int, path: str, expected: dict[str, Any], actual: Any, keys: Optional[list[str]] = None) -> None:
        """Compare two flat objects key by key (all of expected's keys, and no extra ones)."""
        if not isinstance(actual, dict):
            self.add(step, path, expected, actual, note="expected an object")
            return
        for key in keys if keys is not None else list(expected):
            self.value(step, f"{path}.{key}", expected.get(key, _MISSING), actual.get(key, _MISSING), key in FLOAT_KEYS)
        if keys is None:
            for key in actual:
                if key not in expected:
                    self.add(step, f"{path}.{key}", _MISSING, actual[key], note="unexpected field")

    def gradients(self, step: int, path: str, expected: dict[str, Any], actual: Any) -> None:
        if not isinstance(actual, dict):
            self.add(step, path, expected, actual if actual is not None else _MISSING)
            return
        for key, value in expected.items():
            if key not in actual:
                self.add(step, f"{path}.{key}", value, _MISSING, note="no stored gradient reported for a tracked node")
            else:
                self.value(step, f"{path}.{key}", value, actual[key], True)
        for key in actual:
            if key not in expected:
                self.add(step, f"{path}.{key}", _MISSING, actual[key], note="a gradient for a node that has none")


def compare_level(
    fixture: Fixture,
    observations: list[Any],
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
    and the node records only, and ignores edges.
    """
    out = _Collector(level, fixture.step_bounds(profile), limit)
    levels: dict[str, Callable[..., None]] = {
        "values": _values,
        "gradients": _gradients,
        "errors": _errors,
        "trace": partial(_trace, with_edges=edges),
        "order": _order,
    }
    compare = levels[level]
    for index, (step, expected) in enumerate(zip(fixture.program, fixture.expected)):
        actual = observations[index] if index < len(observations) else None
        if not isinstance(actual, dict):
            actual = {}
        compare(out, index, step, expected, actual)
        if out.full:
            break
    return out.found, out.largest


def _values(out: _Collector, index: int, step: Any, expected: dict[str, Any], actual: dict[str, Any]) -> None:
    if step.id is None:
        return
    path = f"observations[{index}]"
    if "error" in expected:
        if "error" not in actual:
            out.add(index, f"{path}.error", expected["error"], _MISSING, note=f"{step.describe()} should have failed")
            return
        out.record(index, f"{path}.error", expected["error"], actual["error"])
        return
    if "error" in actual:
        out.add(index, f"{path}.error", _MISSING, actual["error"], note=f"{step.describe()} should have succeeded")
        return
    out.record(index, path, expected, actual, ["value", "tracked"])


def _gradients(out: _Collector, index: int, step: Any, expected: dict[str, Any], actual: dict[str, Any]) -> None:
    if step.id is not None or "error" in expected:
        return
    path = f"observations[{index}]"
    if "error" in actual:
        out.add(index, f"{path}.error", _MISSING, actual["error"], note=f"{step.describe()} failed where the reference succeeded")
        return
    out.gradients(index, f"{path}.gradients", expected["gradients"], actual.get("gradients"))


def _errors(out: _Collector, index: int, step: Any, expected: dict[str, Any], actual: dict[str, Any]) -> None:
    if step.id is not None or "error" not in expected:
        return
    path = f"observations[{index}]"
    if "error" not in actual:
        out.add(index, f"{path}.error", expected["error"], _MISSING, note=f"{step.describe()} should have failed")
    else:
        out.record(index, f"{path}.error", expected["error"], actual["error"])
    out.gradients(index, f"{path}.gradients", expected["gradients"], actual.get("gradients"))


def _pass_of(
    out: _Collector, index: int, expected: dict[str, Any], actual: dict[str, Any], edges: bool = True
) -> Optional[dict[str, Any]]:
    """The actual pass record when the expected step has one and the actual one is well formed; else None.

    A failed backward or a malformed record is recorded as a difference first.
    Without ``edges`` the record's edges are not looked at (they may be missing).
    """
    if "pass" not in expected:
        return None
    if "error" in actual:
        note = "backward failed where the reference succeeded"
        out.add(index, f"observations[{index}].error", _MISSING, actual["error"], note=note)
        return None
    record = actual.get("pass")
    if not isinstance(record, dict):
        out.add(index, f"observations[{index}].pass", "a pass record", record if record is not None else _MISSING)
        return None
    for key in ("nodes", "edges") if edges else ("nodes",):
        if not isinstance(record.get(key), list) or not all(isinstance(item, dict) for item in record[key]):
            out.add(index, f"observations[{index}].pass.{key}", "a list of objects", record.get(key, _MISSING))
            return None
    return record


def _trace(
    out: _Collector, index: int, step: Any, expected: dict[str, Any], actual: dict[str, Any], with_edges: bool = True
) -> None:
    record = _pass_of(out, index, expected, actual, with_edges)
    if record is None:
        return
    path = f"observations[{index}].pass"
    want = expected["pass"]
    out.value(index, f"{path}.seed", want["seed"], record.get("seed", _MISSING), True)
    nodes = {n.get("node"): n for n in record["nodes"]}
    for node in want["nodes"]:
        got = nodes.pop(node["node"], None)
        if got is None:
            out.add(index, f"{path}.nodes[{node['node']}]", node, _MISSING, note="node missing from the pass")
            continue
        out.record(
            index,
            f"{path}.nodes[{node['node']}]",
            node,
            got,
            ["operation", "value", "tracked", "pass_adjoint", "stored_gradient"],
        )
    for name in nodes:
        out.add(index, f"{path}.nodes[{name}]", _MISSING, nodes[name], note="a node the pass should not reach")
    if not with_edges:
        return
    edges = {(e.get("consumer"), e.get("slot")): e for e in record["edges"]}
    for edge in want["edges"]:
        key = (edge["consumer"], edge["slot"])
        got = edges.pop(key, None)
        where = f"{path}.edges[{edge['consumer']}:{edge['slot']}]"
        if got is None:
            out.add(index, where, edge, _MISSING, note="operand edge missing (merged or skipped?)")
            continue
        out.record(index, where, edge, got, ["operand", "local_derivative", "upstream", "contribution", "operand_tracked"])
    for consumer, slot in edges:
        out.add(
            index,
            f"{path}.edges[{consumer}:{slot}]",
            _MISSING,
            edges[(consumer, slot)],
            note="an edge the contract does not have",
        )


def _order(out: _Collector, index: int, step: Any, expected: dict[str, Any], actual: dict[str, Any]) -> None:
    record = _pass_of(out, index, expected, actual)
    if record is None:
        return
    path = f"observations[{index}].pass"
    want_nodes = [n["node"] for n in expected["pass"]["nodes"]]
    got_nodes = [n.get("node") for n in record["nodes"]]
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
    for position, (edge, got) in enumerate(zip(expected["pass"]["edges"], record["edges"])):
        out.record(index, f"{path}.edges[{position}]", edge, got, ["consumer", "slot", "operand", "before", "after"])
        if out.found:
            return
    if len(record["edges"]) != len(expected["pass"]["edges"]):
        out.add(index, f"{path}.edges", f"{len(expected['pass']['edges'])} edges", f"{len(record['edges'])} edges")

"""Run fixtures against one adapter and turn every (case, level) into an outcome.

Outcomes: passed, failed (a wrong answer), error (a protocol violation or a
crash), unsupported (an op, feature or level the adapter does not declare),
xfailed and xpassed (against the adapter's expected-failures list). Faults are
results, not exceptions: one broken case never ends the run.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from .compare import compare_level
from .diagnose import diagnose, diagnose_error
from .expected import Expected, find
from .fixture import Fixture
from .transport import AdapterFault, Handshake, Transport

OUTCOMES = ("passed", "failed", "error", "unsupported", "xfailed", "xpassed")
#: Consecutive start failures after which the adapter is not started again in this run.
MAX_START_FAILURES = 3


@dataclass(frozen=True)
class Result:
    """The outcome of one case at one level on one adapter."""

    adapter: str
    case: str
    level: str
    outcome: str
    message: str = ""
    diagnosis: tuple[str, ...] = ()
    largest_ulps: float = 0.0
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        """The result as report data."""
        data: dict[str, Any] = {"case": self.case, "adapter": self.adapter, "level": self.level, "outcome": self.outcome}
        data["message"] = self.message
        if self.diagnosis:
            data["diagnosis"] = list(self.diagnosis)
        if self.reason:
            data["reason"] = self.reason
        data["largest_ulps"] = self.largest_ulps
        return data


@dataclass
class AdapterRun:
    """Everything one adapter produced in one run."""

    name: str
    available: bool = True
    reason: str = ""
    handshake: Optional[Handshake] = None
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, outcome: str, level: Optional[str] = None) -> int:
        """How many results have this outcome (at this level)."""
        return sum(1 for r in self.results if r.outcome == outcome and (level is None or r.level == level))

    @property
    def unexpected(self) -> list[Result]:
        """Results that fail the gate."""
        return [r for r in self.results if r.outcome in ("failed", "error", "xpassed")]

    @property
    def largest_ulps(self) -> float:
        """The largest float distance seen between expected and actual among agreeing values."""
        return max((r.largest_ulps for r in self.results), default=0.0)


def support_gap(fixture: Fixture, hello: Handshake) -> Optional[str]:
    """Why the adapter cannot run this case at all, or None."""
    missing_ops = [op for op in fixture.ops if op not in hello.ops]
    if missing_ops:
        return f"needs op {', '.join(missing_ops)}"
    missing_features = [f for f in fixture.features if f not in hello.features]
    if missing_features:
        return f"needs feature {', '.join(missing_features)}"
    if "errors" in fixture.levels and "errors" not in hello.levels:
        return "expects typed errors, and the adapter does not declare the errors level"
    return None


def run_adapter(
    name: str,
    transport: Transport,
    fixtures: Iterable[Fixture],
    expected: list[Expected],
    progress: Optional[Callable[[int, int, str], None]] = None,
) -> AdapterRun:
    """Run every fixture on one adapter; never raises for adapter faults."""
    run = AdapterRun(name)
    fixtures = list(fixtures)
    started = time.monotonic()
    start_failures = 0
    last_fault = ""
    for index, fixture in enumerate(fixtures):
        if progress:
            progress(index, len(fixtures), fixture.id)
        if start_failures >= MAX_START_FAILURES:
            run.results += _charge(
                name, fixture, fixture.levels, f"not started again after {start_failures} failed starts: {last_fault}", expected
            )
            continue
        try:
            hello = transport.handshake()
            run.handshake = hello
            start_failures = 0
        except AdapterFault as fault:
            start_failures += 1
            last_fault = str(fault)
            run.results += _charge(name, fixture, fixture.levels, f"adapter failed to start: {fault}", expected)
            continue
        run.results += run_case(name, transport, hello, fixture, expected)
    if progress:
        progress(len(fixtures), len(fixtures), "")
    run.seconds = time.monotonic() - started
    return run


def run_case(name: str, transport: Transport, hello: Handshake, fixture: Fixture, expected: list[Expected]) -> list[Result]:
    """Every level's result for one case."""
    gap = support_gap(fixture, hello)
    if gap:
        return [Result(name, fixture.id, level, "unsupported", gap) for level in fixture.levels]
    levels = [level for level in fixture.levels if level in hello.levels]
    unsupported = [
        Result(name, fixture.id, level, "unsupported", "the adapter does not declare this level")
        for level in fixture.levels
        if level not in hello.levels
    ]
    try:
        observations = transport.run(fixture.id, fixture.program)
    except AdapterFault as fault:
        return unsupported + _charge(name, fixture, levels, str(fault), expected)
    results = []
    for level in levels:
        differences, ulps = compare_level(fixture, observations, level)
        if differences:
            first = differences[0]
            extra = f" (and {len(differences) - 1} more difference(s))" if len(differences) > 1 else ""
            message = f"{first.describe()}{extra}"
            outcome = Result(name, fixture.id, level, "failed", message, tuple(diagnose(fixture, observations, level)), ulps)
        else:
            outcome = Result(name, fixture.id, level, "passed", largest_ulps=ulps)
        results.append(_apply_expected(outcome, expected))
    return unsupported + results


def _charge(name: str, fixture: Fixture, levels: Iterable[str], message: str, expected: list[Expected]) -> list[Result]:
    hint = diagnose_error(message)
    return [
        _apply_expected(Result(name, fixture.id, level, "error", message, (hint,) if hint else ()), expected) for level in levels
    ]


def _apply_expected(result: Result, expected: list[Expected]) -> Result:
    entry = find(expected, result.case, result.level)
    if entry is None:
        return result
    if result.outcome in ("failed", "error"):
        return Result(
            result.adapter,
            result.case,
            result.level,
            "xfailed",
            result.message,
            result.diagnosis,
            result.largest_ulps,
            entry.reason,
        )
    if result.outcome == "passed":
        message = (
            f"listed as an expected failure ({entry.reason!r}, pattern {entry.case!r} level {entry.level!r}) "
            "but passed: remove the stale entry"
        )
        return Result(result.adapter, result.case, result.level, "xpassed", message, reason=entry.reason)
    return result


def select(fixtures: list[Fixture], patterns: Optional[list[str]], shard: Optional[tuple[int, int]]) -> list[Fixture]:
    """Fixtures whose id matches any pattern (all when none), then this shard's share."""
    import fnmatch

    chosen = [f for f in fixtures if not patterns or any(fnmatch.fnmatchcase(f.id, p) or f.id == p for p in patterns)]
    if shard:
        k, n = shard
        chosen = [f for i, f in enumerate(chosen) if i % n == k - 1]
    return chosen


def progress_printer(adapter: str) -> Optional[Callable[[int, int, str], None]]:
    """A one-line progress display on a terminal; None (quiet) when stderr is not one."""
    if not sys.stderr.isatty():
        return None
    started = time.monotonic()

    def show(done: int, total: int, case: str) -> None:
        if time.monotonic() - started < 0.5 and done < total:
            return
        line = f"{adapter}: {done}/{total} {case}"[:100]
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r\033[K{line}{end}")
        sys.stderr.flush()

    return show

"""Run fixtures against one adapter and turn every (case, level) into an outcome.

Outcomes: passed, failed (a wrong answer), error (a protocol violation or a
crash), unsupported (an op, feature or level the adapter does not declare),
xfailed and xpassed (against the adapter's expected-failures list), and not-run
(the adapter was given up on as unresponsive, the run's time budget ran out, or
the run was interrupted). Faults are results, not exceptions: one broken case
never ends the run.

An ``AdapterSession`` holds one adapter's transport for a run and decides when
an adapter is dead: after MAX_UNRESPONSIVE timeouts or failed starts in a row
with no case answered in between, it is not started again, and one
adapter-level diagnosis (``AdapterDown``) covers every case it did not run.
The CLI and the pytest plugin both use it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Callable, Iterable, Optional, Sequence

from .compare import Difference, compare_fields, float32_rounding, single_precision
from .consistency import Explanation, explain_run
from .contract import Rule, rules_for_case
from .diagnose import Diagnoser, diagnose_error
from .expected import Expected, find, passed_message, unreviewed_warning
from .fixture import Fixture
from .protocol import Level, Observation, Profile
from .reproducer import Reproducer
from .transport import AHEAD, AdapterFault, Handshake, Transport, case_timeout


class Outcome(StrEnum):
    """How one (adapter, case, level) ended (docs/protocol.md, "Outcomes")."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    UNSUPPORTED = "unsupported"
    XFAILED = "xfailed"
    XPASSED = "xpassed"
    NOT_RUN = "not-run"


#: Every outcome, in the order reports list them.
OUTCOMES: tuple[Outcome, ...] = tuple(Outcome)


class PytestAction(StrEnum):
    """What the pytest plugin does with a (case, level) subtest of this outcome."""

    PASS = "pass"
    SKIP = "skip"
    XFAIL = "xfail"
    FAIL = "fail"


@dataclass(frozen=True)
class OutcomeRow:
    """How every reporter shows one outcome: the one place an outcome is mapped to words."""

    word: str
    """The heading word of the terminal details, live log and HTML badge."""
    unexpected: bool
    """Whether it fails the gate (the CLI's exit status, the pytest session, the JUnit counts)."""
    junit: Optional[str]
    """The JUnit element under its testcase (``failure``, ``error``, ``skipped``); None for a pass."""
    pytest: PytestAction
    says: str
    """What the one-line text of pytest's message and JUnit's attribute shows: ``explanation`` (message, likely
    bugs, contract rules), ``message`` or ``reason`` (an expected failure's)."""
    prefix: str = ""
    """What that text starts with in pytest's message and in JUnit's skipped message."""

    def text(self, result: "Result") -> str:
        """The result's text for this outcome, prefix first."""
        if self.says == "explanation":
            return self.prefix + result.explanation()
        return self.prefix + (result.reason if self.says == "reason" else result.message)


#: Each outcome's row (docs/protocol.md, "Outcomes"); ``test_outcome_table`` checks every outcome has one.
OUTCOME_TABLE: dict[Outcome, OutcomeRow] = {
    Outcome.PASSED: OutcomeRow("PASSED", False, None, PytestAction.PASS, "message"),
    Outcome.FAILED: OutcomeRow("FAILED", True, "failure", PytestAction.FAIL, "explanation", "failed: "),
    Outcome.ERROR: OutcomeRow("ERROR", True, "error", PytestAction.FAIL, "explanation", "error: "),
    Outcome.UNSUPPORTED: OutcomeRow("UNSUPPORTED", False, "skipped", PytestAction.SKIP, "message", "unsupported: "),
    Outcome.XFAILED: OutcomeRow("XFAILED", False, "skipped", PytestAction.XFAIL, "reason", "expected failure: "),
    Outcome.XPASSED: OutcomeRow("UNEXPECTED PASS", True, "failure", PytestAction.FAIL, "message", "unexpected pass: "),
    Outcome.NOT_RUN: OutcomeRow("NOT RUN", True, "error", PytestAction.FAIL, "message"),
}
#: Outcomes that fail the gate.
UNEXPECTED = tuple(outcome for outcome, row in OUTCOME_TABLE.items() if row.unexpected)
#: Why a level whose comparison checked no field is unsupported, not passed.
NOTHING_TO_COMPARE = (
    "nothing to compare: the case lists this level, but none of its steps has a field compared at it "
    "(a fixture bug: regenerate the fixture)"
)
#: Timeouts or failed starts in a row, with no case answered in between, after which an adapter is given up on.
MAX_UNRESPONSIVE = 3


@dataclass(frozen=True)
class Result:
    """The outcome of one case at one level on one adapter."""

    adapter: str
    case: str
    level: str
    outcome: Outcome
    message: str = ""
    diagnosis: tuple[str, ...] = ()
    largest_share: float = 0.0
    """The largest ``|expected - actual| / bound`` among floats that agreed within a nonzero bound."""
    reason: str = ""
    observations: Optional[tuple[Observation, ...]] = None
    """A wrong answer's actual observations (failed, and xfailed from failed), for the HTML report's graph."""
    stderr: str = ""
    """The tail of the adapter's stderr when a wrong answer was compared (an error's message carries its own).

    Requests are sent ahead, so it may end with lines the adapter wrote for the cases after this one.
    """
    compared: int = 0
    """How many fields the comparison at this level compared (0: the adapter's answer was not compared)."""
    signed_zero_warnings: tuple[str, ...] = ()
    """Floats that agreed although only their sign of zero differed (``compare.Comparison``), each described."""
    single_precision: bool = False
    """A wrong answer whose every difference is float32 rounding of the expected float (``compare.single_precision``)."""
    float32_rounding: bool = False
    """Some difference of it is float32's rounding of a float in float32's normal range (``compare.float32_rounding``)."""
    first_difference: Optional[Difference] = None
    """A wrong answer's first difference (its ``message`` describes it), for the shrinker."""

    def to_json(self) -> dict[str, Any]:
        """The result as report data."""
        data: dict[str, Any] = {"case": self.case, "adapter": self.adapter, "level": self.level, "outcome": self.outcome}
        data["message"] = self.message
        if self.diagnosis:
            data["diagnosis"] = list(self.diagnosis)
        if self.reason:
            data["reason"] = self.reason
        data["largest_share"] = self.largest_share
        data["compared"] = self.compared
        if self.single_precision:
            data["single_precision"] = True
        if self.float32_rounding:
            data["float32_rounding"] = True
        if self.outcome == Outcome.FAILED:
            data["rules"] = [rule.id for rule in self.rules()]
        return data

    @staticmethod
    def from_json(data: dict[str, Any], observations: Optional[tuple[Observation, ...]] = None) -> "Result":
        """The result ``to_json`` wrote (the pytest plugin's workers send it so), with its wrong answer's observations."""
        return Result(
            data["adapter"],
            data["case"],
            Level(data["level"]),
            Outcome(data["outcome"]),
            data.get("message", ""),
            tuple(data.get("diagnosis", ())),
            float(data.get("largest_share") or 0.0),
            data.get("reason", ""),
            observations,
            data.get("stderr", ""),
            int(data.get("compared") or 0),
            single_precision=bool(data.get("single_precision")),
            float32_rounding=bool(data.get("float32_rounding")),
        )

    def rules(self) -> list[Rule]:
        """The contract rules a failed result's case exercises (none for other outcomes)."""
        if self.outcome != Outcome.FAILED:
            return []
        return rules_for_case(self.case, self.level)

    def explanation(self) -> str:
        """The message, each likely bug, and the contract rules to read, one per line."""
        lines = [self.message, *(f"likely bug: {hint}" for hint in self.diagnosis)]
        rules = self.rules()
        if rules:
            lines.append(f"contract: {', '.join(rule.reference() for rule in rules)}; read it with `conformance docs contract`")
        return "\n".join(lines)


@dataclass
class AdapterRun:
    """Everything one adapter produced in one run."""

    name: str
    available: bool = True
    reason: str = ""
    handshake: Optional[Handshake] = None
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0
    down: Optional["AdapterDown"] = None
    interrupted: str = ""
    expected_failures: str = ""
    """The adapter's expected-failures file, if it has one."""
    unreviewed: int = 0
    """How many of its entries are unreviewed drafts (``unreviewed = true``)."""
    explanation: Optional[Explanation] = None
    """What the catalogue says of its wrong answers taken together (``conformance.consistency``), once the run ended."""
    reproducers: dict[tuple[str, str], Reproducer] = field(default_factory=dict)
    """A minimal reproducer per failed (case, level) (``conformance.reproduce``), when the run shrank them."""
    reproducer_notes: list[str] = field(default_factory=list)
    """Why failed results were left without a reproducer, if any were."""

    @property
    def warning(self) -> Optional[str]:
        """The unreviewed-drafts warning every report shows, or None."""
        return unreviewed_warning(self.unreviewed, self.expected_failures) if self.unreviewed else None

    def count(self, outcome: str, level: Optional[str] = None) -> int:
        """How many results have this outcome (at this level)."""
        return sum(1 for r in self.results if r.outcome == outcome and (level is None or r.level == level))

    def rename(self, name: str) -> None:
        """Call the adapter ``name`` in the run and every result (an ad hoc command, once its hello named the engine).

        A not-run result's message names the adapter that was given up on: it is renamed too.
        """
        self.name = name
        old = self.down.headline if self.down is not None else None
        if self.down is not None:
            self.down.adapter = name

        def renamed(result: Result) -> Result:
            if old is None or self.down is None or result.outcome != Outcome.NOT_RUN:
                return replace(result, adapter=name)
            return replace(result, adapter=name, message=result.message.replace(old, self.down.headline))

        self.results = [renamed(result) for result in self.results]

    @property
    def unexpected(self) -> list[Result]:
        """Results that fail the gate."""
        return [r for r in self.results if r.outcome in UNEXPECTED]

    @property
    def signed_zero_warning(self) -> Optional[str]:
        """The warning every report shows when floats passed that differed only in the sign of zero, or None."""
        found = [(r.case, text) for r in self.results for text in r.signed_zero_warnings]
        if not found:
            return None
        cases = len({case for case, _ in found})
        return (
            f"{len(found)} float(s) in {cases} case(s) differ from the contract only in the sign of zero, not failed "
            f"under this profile or bound (docs/contract.md, numbers.signed-zero); first: {found[0][0]} {found[0][1]}"
        )

    @property
    def largest_share(self) -> float:
        """The largest share of its bound that an agreeing float used (0 when every float matched exactly)."""
        at = self.largest_share_at
        return at.largest_share if at is not None else 0.0

    @property
    def largest_share_at(self) -> Optional[Result]:
        """The result where that largest share was seen (None when every agreeing float was exact)."""
        best = max(self.results, key=lambda r: r.largest_share, default=None)
        return best if best is not None and best.largest_share > 0 else None


def engine_name(hello: Optional[Handshake], fallback: str, taken: Iterable[str]) -> str:
    """What reports call an ad hoc ``--command`` adapter: its engine's name from hello, kept unique among ``taken``.

    Without a hello (it never answered) it keeps ``fallback``; a name another adapter of the run has already
    gets `` (command)``, then a number.
    """
    if hello is None or not hello.name.strip():
        return fallback
    taken = set(taken)
    name = hello.name.strip()
    if name in taken:
        name = f"{name} ({fallback})"
    number = 2
    while name in taken:
        name = f"{hello.name.strip()} ({fallback} {number})"
        number += 1
    return name


def support_gap(fixture: Fixture, hello: Handshake) -> Optional[str]:
    """Why the adapter cannot run this case at all, or None."""
    missing_ops = [op for op in fixture.ops if op not in hello.ops]
    if missing_ops:
        return f"needs op {', '.join(missing_ops)}"
    missing_features = [f for f in fixture.features if f not in hello.features]
    if missing_features:
        return f"needs feature {', '.join(missing_features)}"
    # Any expected error, a failed creation too (compared at values): an engine without typed errors cannot answer it.
    if fixture.error_kinds and "errors" not in hello.levels:
        return "expects typed errors, and the adapter does not declare the errors level"
    return None


@dataclass(frozen=True)
class Plan:
    """What one case will be on one adapter: the levels run and compared, and why each other level is not."""

    levels: tuple[Level, ...]
    """The case's levels this adapter is compared at, in the case's order; none: its request is never sent."""
    skipped: dict[Level, str]
    """Every other level of the case, with the reason it is unsupported here."""
    fixture: Fixture
    """The case as this adapter is compared on it (only the leaves' stored gradients, for a leaves-only engine)."""

    @property
    def records(self) -> bool:
        """Whether the run request asks for pass records (``trace`` and ``order`` read them)."""
        return reads_records(self.levels)

    def unsupported(self, name: str, fixture: Fixture) -> list[Result]:
        """The results of the skipped levels, in the case's order."""
        return [
            Result(name, fixture.id, level, Outcome.UNSUPPORTED, self.skipped[level])
            for level in fixture.levels
            if level in self.skipped
        ]


def plan(fixture: Fixture, hello: Handshake) -> Plan:
    """The one decision of which of a case's levels an adapter runs, used by the runner, send-ahead, the plugin and the fuzzer.

    A case the adapter cannot run at all (``support_gap``) skips every level with that reason; otherwise a level it
    cannot be compared at (``level_gaps``) is skipped with its own.
    """
    gap = support_gap(fixture, hello)
    gaps: dict[str, str] = {level: gap for level in fixture.levels} if gap else level_gaps(fixture, hello)
    levels = tuple(Level(level) for level in fixture.levels if level not in gaps)
    return Plan(levels, {Level(level): reason for level, reason in gaps.items()}, hello.view(fixture))


def level_gaps(fixture: Fixture, hello: Handshake) -> dict[str, str]:
    """The case's levels this adapter cannot be compared at, each with the reason; the other levels run.

    A level the adapter does not declare, and the levels an error kind it does
    not report (hello's ``error_kinds``) makes uncomparable: such an engine
    does not see the failure, so the step itself is not comparable (``values``
    for a failed creation, ``errors`` for a failed backward), nor is what it
    may have changed afterwards. A creation it did not reject leaves one more
    node in every later stored-gradient map (``gradients``, ``errors``), though
    no later step can reach it; a backward it did not reject may have committed
    its gradients, which every later map (``gradients``) and every later pass
    record's stored gradients (``trace``) show. Values, and the fresh pass
    adjoints ``order`` compares, do not change.
    """
    gaps: dict[str, str] = {
        level: "the adapter does not declare this level" for level in fixture.levels if level not in hello.levels
    }
    if fixture.error_kinds <= hello.error_kinds:  # every error the case expects, the adapter reports
        return gaps
    steps = list(zip(fixture.program, fixture.expected))
    for index, (step, expected) in enumerate(steps):
        error = expected.error
        if error is None or error.kind in hello.error_kinds:
            continue
        later = [(s, e) for s, e in steps[index + 1 :] if s.op in ("backward", "zero_grad")]
        affected = ["values"] if step.id is not None else ["errors"]
        if any(e.error is None for _, e in later):
            affected.append("gradients")
        if step.id is not None and any(e.error is not None for _, e in later):
            affected.append("errors")
        if step.id is None and any(e.pass_ is not None for _, e in later):
            affected.append("trace")
        why = f"step {index} expects error kind {error.kind}, which the adapter does not report (hello's error_kinds)"
        for level in affected:
            if level in fixture.levels:
                gaps.setdefault(level, why)
    return gaps


@dataclass
class AdapterDown:
    """Why an adapter was given up on: said once for the adapter, not once per case."""

    adapter: str
    message: str
    faults: int
    seconds: float
    stderr: str = ""
    hint: str = ""
    not_run: int = 0
    refused: bool = False
    """No new start would help (a refused hello, a command that cannot be executed): it was given up on at once."""
    why: str = "its hello was refused"
    """A refused adapter's verdict (``AdapterFault.final``): ``its hello was refused``, ``it cannot be started``."""

    @property
    def verdict(self) -> str:
        """Why it was given up on, in a few words: ``unresponsive``, or the refused adapter's ``why``."""
        return self.why if self.refused else "unresponsive"

    @property
    def headline(self) -> str:
        """The adapter and its verdict as a phrase: ``NAME is unresponsive``, ``NAME's hello was refused``."""
        if not self.refused:
            return f"{self.adapter} is unresponsive"
        return f"{self.adapter}'s {self.why[4:]}" if self.why.startswith("its ") else f"{self.adapter} {self.why[3:]}"

    def describe(self) -> str:
        """The adapter-level diagnosis: what happened, after how long, what it usually means, the stderr tail."""
        if self.refused:
            lines = [
                f"{self.adapter}: {self.why}, so nothing was run on it; {self.not_run} (case, level) result(s) were not "
                "run. "
                + (
                    "A hello does not change between starts"
                    if self.why == "its hello was refused"
                    else "A new start would fail the same way"
                )
                + ", so it was not started again.",
                f"  {self.message}",
            ]
        else:
            lines = [
                f"{self.adapter} is unresponsive: {self.faults} timeouts or failed starts in a row, with no case "
                f"answered, over {self.seconds:.1f} s; it was not started again, and {self.not_run} (case, level) "
                "result(s) were not run.",
                f"  last fault: {self.message}",
            ]
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        if self.stderr.strip():
            lines.append("  adapter stderr (last lines):")
            lines += ["    " + line for line in self.stderr.rstrip().splitlines()[-15:]]
        else:
            lines.append("  adapter stderr: (empty)")
        return "\n".join(lines)


class AdapterSession:
    """One adapter's transport across a run: runs cases, and gives up on the adapter once it is clearly dead.

    ``deadline`` (a ``time.monotonic()`` value) is the whole run's time budget: a case never waits past it,
    and once it has passed every case is not run. The session names likely bugs with its own ``Diagnoser``
    (or the one given), so what one run has simulated is never seen by another.
    """

    def __init__(
        self,
        name: str,
        transport: Transport,
        expected: list[Expected],
        *,
        deadline: Optional[float] = None,
        budget_note: str = "the run's time budget ran out",
        on_result: Optional[Callable[[list[Result]], None]] = None,
        profile: Optional[str] = None,
        diagnoser: Optional[Diagnoser] = None,
    ) -> None:
        self.name = name
        self.profile = profile
        self.transport = transport
        self.expected = expected
        self.deadline = deadline
        self.budget_note = budget_note
        self.on_result = on_result
        self.diagnoser = diagnoser or Diagnoser()
        self.hello: Optional[Handshake] = None
        self.down: Optional[AdapterDown] = None
        self._streak = 0
        self._streak_started = 0.0
        self._attempt_started = 0.0
        self._faulted = False
        # The upcoming cases the last _send_ahead went through (sent, or not to be sent), and the last of them:
        # the next call, one case on, starts after it instead of going through them again.
        self._through = 0
        self._through_last: Optional[Fixture] = None
        self._through_start = 0  # the adapter's start (``Transport.starts``) they were sent to

    def run_case(self, fixture: Fixture, upcoming: Sequence[Fixture] = ()) -> list[Result]:
        """Every level's result for one case; never raises for adapter faults.

        ``upcoming`` are the cases to be run next: as soon as this case's reply is in, their requests are
        sent ahead (a transport with ``send_ahead``), so the adapter runs them while this one is compared.
        """
        results = self._run_case(fixture, upcoming)
        if self.on_result:
            self.on_result(results)
        return results

    def _send_ahead(self, upcoming: Sequence[Fixture]) -> None:
        if self.hello is None or self.down is not None:
            return
        started = self.transport.starts
        start = self._through - 1  # upcoming is the last call's, one case on
        if start < 1 or start > len(upcoming) or upcoming[start - 1] is not self._through_last or started != self._through_start:
            start = 0  # another sequence, or a restarted adapter that has none of them: from the first
        self._through, self._through_start = start, started
        for position in range(start, len(upcoming)):
            fixture = upcoming[position]
            planned = plan(fixture, self.hello)
            if planned.levels and not self.transport.send_ahead(fixture.id, fixture.program, records=planned.records):
                break
            self._through, self._through_last = position + 1, fixture

    def _run_case(self, fixture: Fixture, upcoming: Sequence[Fixture] = ()) -> list[Result]:
        if self.down is not None:
            self.down.not_run += len(fixture.levels)
            return not_run(self.name, fixture, f"{self.down.headline} (see the adapter's diagnosis)")
        remaining = None if self.deadline is None else self.deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return not_run(self.name, fixture, self.budget_note)
        self._attempt_started = time.monotonic()
        try:
            self.hello = self.transport.handshake()
            if self.profile is not None:
                self.hello = replace(self.hello, profile=Profile(self.profile))
            self.diagnoser.declare(self.hello)
        except AdapterFault as fault:
            self._fault(fault)
            return _charge(self.name, fixture, fixture.levels, f"adapter failed to start: {fault}", self.expected)
        planned = plan(fixture, self.hello)
        if not planned.levels:
            return planned.unsupported(self.name, fixture)
        timeout = None  # the transport's own: its base plus the program's allowance (case_timeout)
        if remaining is not None:  # but never past the run's budget
            base = self.transport.timeout
            timeout = max(0.1, remaining if base is None else min(remaining, case_timeout(base, fixture.program)))
        self._faulted = False
        results = run_case(
            self.name,
            self.transport,
            self.hello,
            fixture,
            self.expected,
            timeout,
            self._fault,
            diagnoser=self.diagnoser,
            after_reply=(lambda: self._send_ahead(upcoming)) if upcoming else None,
        )
        if not self._faulted:
            self._streak = 0  # a case was answered: whatever failed before was not a dead adapter
        return results

    def _fault(self, fault: AdapterFault) -> None:
        self._faulted = True
        if fault.final:  # a refused hello, a command that cannot be executed: no new start would help
            elapsed = time.monotonic() - self._attempt_started
            self.down = AdapterDown(self.name, fault.message, 1, elapsed, fault.stderr, fault.hint, refused=True, why=fault.final)
            return
        if fault.kind not in ("timeout", "start"):
            self._streak = 0
            return
        if self._streak == 0:
            self._streak_started = self._attempt_started
        self._streak += 1
        if self._streak >= MAX_UNRESPONSIVE:
            self.down = AdapterDown(
                self.name,
                fault.message,
                self._streak,
                time.monotonic() - self._streak_started,
                fault.stderr,
                fault.hint,
            )


def not_run(name: str, fixture: Fixture, why: str) -> list[Result]:
    """Every level of a case reported as not run, with the reason."""
    return [Result(name, fixture.id, level, Outcome.NOT_RUN, f"not run: {why}") for level in fixture.levels]


def run_adapter(
    name: str,
    transport: Transport,
    fixtures: Iterable[Fixture],
    expected: list[Expected],
    progress: Optional[Callable[[int, int, str], None]] = None,
    *,
    deadline: Optional[float] = None,
    budget_note: str = "the run's time budget ran out",
    on_result: Optional[Callable[[list[Result]], None]] = None,
    profile: Optional[str] = None,
) -> AdapterRun:
    """Run every fixture on one adapter; never raises for adapter faults.

    ``profile`` overrides the profile the adapter declares in its hello (docs/contract.md section 9).

    An interrupt (Ctrl-C, or SIGTERM turned into KeyboardInterrupt by the CLI) ends the loop: the cases not
    reached are reported as not run and ``interrupted`` says why, so the caller can still write its reports.
    """
    run = AdapterRun(name)
    fixtures = list(fixtures)
    started = time.monotonic()
    session = AdapterSession(
        name, transport, expected, deadline=deadline, budget_note=budget_note, on_result=on_result, profile=profile
    )
    index = 0
    try:
        for index, fixture in enumerate(fixtures):
            if progress:
                progress(index, len(fixtures), fixture.id)
            run.results += session.run_case(fixture, fixtures[index + 1 : index + 1 + AHEAD])
            run.handshake = session.hello or run.handshake
        index = len(fixtures)
    except KeyboardInterrupt as interrupt:
        run.interrupted = str(interrupt) or "interrupted (Ctrl-C)"
        for fixture in fixtures[index:]:
            run.results += not_run(name, fixture, f"the run was {run.interrupted}")
    if progress:
        progress(len(fixtures), len(fixtures), "")
    if session.hello is not None:  # a name the rest of the run contradicts is taken back
        run.results, run.explanation = explain_run(
            run.results,
            {fixture.id: fixture for fixture in fixtures},
            session.diagnoser,
            session.hello.profile,
            edges=session.hello.trace == "full",
        )
    run.down = session.down
    run.seconds = time.monotonic() - started
    return run


def run_case(
    name: str,
    transport: Transport,
    hello: Handshake,
    fixture: Fixture,
    expected: list[Expected],
    timeout: Optional[float] = None,
    on_fault: Optional[Callable[[AdapterFault], None]] = None,
    *,
    diagnoser: Optional[Diagnoser] = None,
    after_reply: Optional[Callable[[], None]] = None,
) -> list[Result]:
    """Every level's result for one case; a failed level's likely bugs are named by ``diagnoser`` (default: a new one).

    ``after_reply`` is called once the adapter's reply is in, before it is compared.
    """
    planned = plan(fixture, hello)
    levels = planned.levels
    unsupported = planned.unsupported(name, fixture)
    fixture = planned.fixture
    if not levels:
        return unsupported
    edges = hello.trace == "full"
    diagnoser = diagnoser or Diagnoser()
    try:
        observations = transport.run(fixture.id, fixture.program, timeout, records=planned.records)
    except AdapterFault as fault:
        if on_fault:
            on_fault(fault)
        return unsupported + _charge(name, fixture, levels, str(fault), expected)
    if after_reply:
        after_reply()
    results = []
    for level in levels:
        comparison = compare_fields(fixture, observations, level, profile=hello.profile, edges=edges)
        differences, share = comparison.differences, comparison.largest_share
        not_comparable = _not_comparable(fixture, observations, comparison.not_comparable)
        if not differences and not comparison.compared:
            # Not a pass: nothing was checked (a fixture listing a level its steps do not exercise, or every step
            # it compares depends on one the engine faulted at).
            results.append(Result(name, fixture.id, level, Outcome.UNSUPPORTED, not_comparable or NOTHING_TO_COMPARE))
            continue
        if differences:
            first = differences[0]
            extra = f" (and {len(differences) - 1} more difference(s))" if len(differences) > 1 else ""
            message = f"{first.describe()}{extra}" + (f"; {not_comparable}" if not_comparable else "")
            diagnosis = tuple(diagnoser.diagnose(fixture, observations, level, hello.profile, edges=edges))
            at = {difference.step for difference in differences}
            faults = (o.fault for i, o in enumerate(observations) if o.fault is not None and i in at)
            hints = (diagnose_error(fault, fixture) for fault in faults)
            diagnosis += tuple(dict.fromkeys(hint for hint in hints if hint and hint not in diagnosis))
            stderr = transport.stderr_tail()
            outcome = Result(
                name,
                fixture.id,
                level,
                Outcome.FAILED,
                message,
                diagnosis,
                share,
                "",
                tuple(observations),
                stderr,
                comparison.compared,
                single_precision=single_precision(differences),
                float32_rounding=float32_rounding(differences),
                first_difference=first,
            )
        else:
            signed = tuple(warning.describe() for warning in comparison.signed_zero_warnings)
            outcome = Result(
                name,
                fixture.id,
                level,
                Outcome.PASSED,
                not_comparable,
                largest_share=share,
                compared=comparison.compared,
                signed_zero_warnings=signed,
            )
        results.append(outcome)
    failing = [r.level for r in results if r.outcome == Outcome.FAILED]
    passing = [r.level for r in results if r.outcome == Outcome.PASSED]
    return unsupported + [_apply_expected(result, expected, failing, passing) for result in results]


def _not_comparable(fixture: Fixture, observations: Sequence[Observation], skipped: Sequence[int]) -> str:
    """The sentence for the steps a level could not compare (protocol 2.1 ``skipped``), naming the fault behind them."""
    if not skipped:
        return ""
    roots: dict[int, str] = {}
    for index in skipped:
        k = index
        while observations[k].skipped is not None:  # shape-checked: each names an earlier step
            k = observations[k].skipped  # type: ignore[assignment]
        roots.setdefault(k, observations[k].fault or "")
    causes = "; ".join(f"step {k} ({fixture.program[k].describe()}) faulted: {fault}" for k, fault in sorted(roots.items()))
    return f"{len(skipped)} step(s) not comparable, as the adapter skipped them: {causes}"


def reads_records(levels: Iterable[str]) -> bool:
    """Whether comparing these levels reads pass records (``trace`` and ``order`` do)."""
    return any(level in (Level.TRACE, Level.ORDER) for level in levels)


def _charge(name: str, fixture: Fixture, levels: Iterable[str], message: str, expected: list[Expected]) -> list[Result]:
    hint = diagnose_error(message, fixture)
    return [
        _apply_expected(Result(name, fixture.id, level, Outcome.ERROR, message, (hint,) if hint else ()), expected)
        for level in levels
    ]


def _apply_expected(result: Result, expected: list[Expected], failing: Sequence[str] = (), passing: Sequence[str] = ()) -> Result:
    """The result against the expected failures; ``failing``, ``passing``: the levels of its case that did so."""
    entry = find(expected, result.case, result.level)
    if entry is None:
        return result
    if result.outcome in (Outcome.FAILED, Outcome.ERROR):
        return replace(result, outcome=Outcome.XFAILED, reason=entry.reason)
    if result.outcome == Outcome.PASSED:
        message = passed_message(expected, entry, result.case, result.level, failing, passing)
        return Result(
            result.adapter, result.case, result.level, Outcome.XPASSED, message, reason=entry.reason, compared=result.compared
        )
    return result


def select(fixtures: list[Fixture], patterns: Optional[list[str]], shard: Optional[tuple[int, int]]) -> list[Fixture]:
    """Fixtures whose id matches any pattern (all when none), then this shard's share."""
    import fnmatch

    chosen = [f for f in fixtures if not patterns or any(fnmatch.fnmatchcase(f.id, p) or f.id == p for p in patterns)]
    if shard:
        k, n = shard
        chosen = [f for i, f in enumerate(chosen) if i % n == k - 1]
    return chosen

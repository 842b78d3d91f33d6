"""Differential fuzzing: random programs on the reference and on an adapter, divergences shrunk.

hypothesis draws programs (``conformance.strategies.programs``) over the ops
the adapter declares; each one runs on the reference, becomes an in-memory
fixture exactly as the generator would make it (levels and comparison policy
included), runs once on the adapter through its transport, and is compared at
every level both the adapter declares and the program needs. A wrong answer
or an adapter fault (crash, hang, protocol violation) is a divergence;
hypothesis then shrinks it to a minimal program, which ``save_regression``
can turn into a regression case and its fixture.

An adapter that does not declare the ``errors`` level only gets programs in
which no step fails, with ordinary leaf values, as ``runner.support_gap`` would
otherwise report every failing case as unsupported.

A divergence whose diagnosis names a bug that the adapter's expected
failures list (their ``bug`` field) is *known*: it is reported once, with
the entry's reason, does not count as a divergence, and the search goes on,
so a known bug neither stops the run nor hides the next one.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import Flaky

from .cases.case import Case
from .compare import DEFAULT_PROFILE, Difference, compare_level
from .diagnose import Diagnoser, diagnose_error
from .errors import UsageError
from .expected import Expected, bugs_of
from .files import write_atomic
from .fixture import FIXTURES_DIR, Fixture
from .generate import build_fixture, generate
from .mutants import BUGS, bug_named
from .program import DECLARABLE_OPS, Program, program_hash, program_to_json
from .protocol import LEVELS, Profile
from .runner import plan, reads_records
from .shrink import shrink_program
from .strategies import programs
from .transport import AdapterFault, Handshake, Transport
from .wire import to_json_ready

#: The case id every fuzzed program carries on the wire.
FUZZ_CASE = "fuzz/example"
#: Where --save puts regression case definitions.
REGRESSIONS_CASES_DIR = Path(__file__).resolve().parent / "cases" / "regressions"


@dataclass(frozen=True)
class Divergence:
    """One program on which the adapter and the reference disagree."""

    program: Program
    fixture: Fixture
    level: str
    difference: Optional[Difference] = None
    fault: Optional[str] = None
    count: int = 0
    observations: tuple[Any, ...] = ()
    diagnosis: tuple[str, ...] = ()
    profile: str = DEFAULT_PROFILE
    """The profile the program was compared under (docs/contract.md section 9)."""
    edges: bool = True
    """False for an adapter whose pass records hold node records only (hello's ``"trace": "nodes"``)."""
    records: bool = True
    """False when the divergence shows on the run without pass records (the request's ``records`` false) only."""

    def describe(self) -> str:
        """The program, one step a line, then the first difference (or the fault) and the likely bug."""
        lines = ["minimal program:"]
        lines += [f"  {index:>2}  {step.describe()}" for index, step in enumerate(self.program)]
        if not self.records:
            lines.append("(on the run that reads no pass record: the request's records false)")
        if self.fault is not None:
            lines.append(f"adapter fault: {self.fault}")
        elif self.difference is not None:
            more = f" (and {self.count - 1} more difference(s))" if self.count > 1 else ""
            lines.append(f"first difference, level {self.level}: {self.difference.describe()}{more}")
        lines += [f"likely bug: {text}" for text in self.diagnosis]
        return "\n".join(lines)


@dataclass
class KnownDivergence:
    """Programs that diverged by a bug the adapter's expected failures name: reported once, not a failure."""

    bug: str
    entry: Expected
    first_at: int
    programs: int = 1

    def describe(self, source: str) -> str:
        """``known: <bug>: <reason> (<expected-failures file>)``."""
        return f"known: {self.bug}: {self.entry.reason} ({source})"


@dataclass
class FuzzResult:
    """What one fuzz run did and found."""

    handshake: Handshake
    levels: tuple[str, ...]
    profile: str = DEFAULT_PROFILE
    """The profile every program was compared under."""
    examples: int = 0
    calls: int = 0
    first_found_at: Optional[int] = None
    seconds: float = 0.0
    divergence: Optional[Divergence] = None
    flaky: bool = False
    notes: list[str] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    """With keep_going: every distinct divergence found, each shrunk, in the order found."""
    repeats: int = 0
    """With keep_going: divergent programs skipped because their signature was already recorded."""
    known: dict[str, KnownDivergence] = field(default_factory=dict)
    """Divergences explained by bugs the expected failures name, by bug name, in the order found."""
    known_programs: int = 0
    """Divergent programs that known bugs explain (not counted as divergences)."""

    @property
    def rate(self) -> float:
        """Programs run per second, shrinking included."""
        return self.calls / self.seconds if self.seconds > 0 else 0.0


class _Diverged(Exception):
    """Raised inside the hypothesis test so that it shrinks; carries the divergence."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.describe())
        self.divergence = divergence


def compared_levels(hello: Handshake, levels: Optional[list[str]] = None, skip: Optional[list[str]] = None) -> tuple[str, ...]:
    """The levels a fuzz run compares: ``levels`` (default: every level the adapter declares) minus ``skip``."""
    chosen = set(levels) if levels else set(hello.levels)
    return tuple(level for level in LEVELS if level in chosen and level in hello.levels and level not in set(skip or ()))


def strategy_for(hello: Handshake, levels: tuple[str, ...], max_steps: int, exclude_ops: Optional[list[str]] = None) -> Any:
    """Programs this adapter can run: its ops but ``exclude_ops``, its seed feature, failing steps only with errors."""
    errors = "errors" in levels
    return programs(
        [op for op in DECLARABLE_OPS if op in hello.ops and op not in set(exclude_ops or ())],
        max_steps=max_steps,
        seeds="seed" in hello.features,
        extreme=errors,
        failures=errors,
    )


def examine(
    transport: Transport, program: Program, levels: tuple[str, ...], profile: str = DEFAULT_PROFILE
) -> Optional[Divergence]:
    """Run one program on the reference and the adapter; the first divergence, or None when they agree.

    The program becomes a fixture as the generator makes one, bounds included, and the
    adapter's floats are compared under ``profile`` exactly as ``conformance run`` would.
    Levels the adapter's partial declarations make uncomparable for this program
    (``runner.plan``: an error kind it does not report) are not compared.
    """
    case = Case(FUZZ_CASE, "a program drawn by conformance fuzz", program, "conformance fuzz")
    fixture = build_fixture(case, profile=Profile(profile))
    try:
        hello = transport.handshake()
        observations = transport.run(FUZZ_CASE, program)
    except AdapterFault as fault:
        hint = diagnose_error(str(fault), fixture)
        return Divergence(program, fixture, "error", fault=str(fault), diagnosis=(hint,) if hint else (), profile=profile)
    edges = hello.trace == "full"
    planned = plan(fixture, hello)
    fixture = planned.fixture  # as this adapter is compared on it
    compared = [level for level in planned.levels if level in levels]
    for level in compared:
        differences, _ = compare_level(fixture, observations, level, profile=profile, edges=edges)
        if differences:
            observed = tuple(observations)
            found = Divergence(program, fixture, level, differences[0], count=len(differences), observations=observed)
            return replace(found, edges=edges, profile=profile)
    plain = [level for level in compared if not reads_records([level])]
    if not plain or len(plain) == len(compared) or not any(step.op == "backward" for step in program):
        return None
    # Once more without pass records: an engine may take another path when no record is read
    # (docs/protocol.md, the run request's ``records``), and it must give the same answers on it.
    try:
        observations = transport.run(FUZZ_CASE, program, records=False)
    except AdapterFault as fault:
        hint = diagnose_error(str(fault), fixture)
        found = Divergence(program, fixture, "error", fault=str(fault), diagnosis=(hint,) if hint else (), profile=profile)
        return replace(found, records=False)
    for level in plain:
        differences, _ = compare_level(fixture, observations, level, profile=profile, edges=edges)
        if differences:
            observed = tuple(observations)
            found = Divergence(program, fixture, level, differences[0], count=len(differences), observations=observed)
            return replace(found, edges=edges, profile=profile, records=False)
    return None


def minimize(
    transport: Transport,
    divergence: Divergence,
    result: Optional[FuzzResult] = None,
    known: Iterable[str] = (),
    *,
    diagnoser: Optional[Diagnoser] = None,
) -> Divergence:
    """The divergence on the smallest, simplest program that still shows it (``conformance.shrink``), diagnosed.

    A change is kept when the divergence stays at the same level (or stays a fault),
    keeps at least one of the likely bugs its diagnosis named (when it named any), and
    does not become one of the ``known`` bugs (catalogue names): shrinking must not
    trade a bug for another, least of all for a known one. ``diagnoser`` names the bugs
    (default: a new one; a fuzz run passes its own).
    """
    diagnoser = diagnoser or Diagnoser()
    levels = tuple(LEVELS) if divergence.fault is None else ()
    known = frozenset(known)
    compared = result.levels if result is not None else tuple(LEVELS)
    divergence = _with_diagnosis(divergence, diagnoser)
    named = set(divergence.diagnosis)

    def still(program: Program) -> Optional[Divergence]:
        if result is not None:
            result.calls += 1
        found = examine(transport, program, levels, divergence.profile)
        if found is None or found.level != divergence.level or (found.fault is None) != (divergence.fault is None):
            return None
        found = _with_diagnosis(found, diagnoser)
        if named and not named & set(found.diagnosis):
            return None
        if known and known_bugs(found, known, compared, diagnoser=diagnoser):
            return None
        return found

    return shrink_program(divergence.program, still) or divergence


def signature(divergence: Divergence) -> tuple[Any, ...]:
    """What makes two divergences the same for keep_going: level, diagnosis and the kind of first difference.

    The kind is the difference's JSON path with node ids and indices taken out
    (``observations[3].gradients.x`` -> ``gradients``), or the fault for a crash.
    """
    if divergence.fault is not None:
        kind = re.sub(r"\d+(\.\d+)?", "#", divergence.fault.splitlines()[0])[:80]
    elif divergence.difference is not None:
        kind = ".".join(re.sub(r"\[[^]]*\]", "", divergence.difference.path).split(".")[1:2])
    else:
        kind = ""
    return (divergence.level, divergence.diagnosis, kind)


def known_bugs(
    divergence: Divergence, known: Iterable[str], levels: Iterable[str] = LEVELS, *, diagnoser: Optional[Diagnoser] = None
) -> tuple[str, ...]:
    """The bugs among ``known`` (catalogue names) that explain a diagnosed divergence; () when it is new.

    Either its diagnosis names one of them, or the program shows several known
    bugs at once, which no single variant of the catalogue reproduces whole:
    then every one of ``levels`` at which the adapter diverges must be
    reproduced, at that level, by a known bug's variant that fails there too. ``diagnoser`` runs
    the variants (default: a new one; a fuzz run passes its own, which runs each once per program).
    """
    listed, compared = set(known), set(levels)
    names = [bug for bug in BUGS if bug in listed]
    named = next((bug_named(text) for text in divergence.diagnosis if bug_named(text) in names), None)
    if named is not None:
        return (named,)
    if divergence.fault is not None or not divergence.observations or len(names) < 2:
        return ()
    fixture, observations = divergence.fixture, list(divergence.observations)
    diagnoser = diagnoser or Diagnoser()
    explained: list[str] = []

    def differs(expected: Fixture, actual: list[Any], level: str) -> bool:
        # Compared as the divergence itself was: under its profile, with or without edges.
        return bool(compare_level(expected, actual, level, limit=1, profile=divergence.profile, edges=divergence.edges)[0])

    for level in (level for level in fixture.levels if level in compared):
        if not differs(fixture, observations, level):
            continue
        for bug in names:
            variant = _variant(fixture, bug, diagnoser)
            if (
                variant is not None
                and differs(fixture, list(variant.expected), level)
                and not differs(variant, observations, level)
            ):
                explained.append(bug)
                break
        else:
            return ()
    return tuple(dict.fromkeys(explained))


def _variant(fixture: Fixture, bug: str, diagnoser: Diagnoser) -> Optional[Fixture]:
    """The fixture with the catalogue variant's observations as its expectations (None if the variant cannot run it)."""
    simulated = diagnoser.simulate(fixture, bug)
    return None if simulated is None else replace(fixture, expected=tuple(simulated))


def _with_diagnosis(divergence: Divergence, diagnoser: Diagnoser) -> Divergence:
    if divergence.fault is not None or divergence.diagnosis:
        return divergence
    found = tuple(
        diagnoser.diagnose(
            divergence.fixture, list(divergence.observations), divergence.level, divergence.profile, edges=divergence.edges
        )
    )
    return replace(divergence, diagnosis=found)


#: The URL schemes --database takes as a Redis server (redis-py's ``Redis.from_url``).
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def example_database(where: Union[Path, str, None]) -> Optional[ExampleDatabase]:
    """The hypothesis example database ``where`` names: None, a folder, or a Redis URL (``redis://host:port/db``).

    A Redis database lets the CI shards of a campaign on many machines share their examples.
    Raises UsageError when ``where`` is a Redis URL but the ``redis`` package is missing or the
    server cannot be reached.
    """
    if where is None:
        return None
    text = str(where)
    if not text.startswith(REDIS_SCHEMES):
        return DirectoryBasedExampleDatabase(text)
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError:
        needs = "a Redis URL needs the redis package (pip install 'scalar-conformance[redis]')"
        raise UsageError(f"--database {text}: {needs}") from None
    client = redis.Redis.from_url(text)
    try:
        client.ping()
    except redis.RedisError as error:
        raise UsageError(f"--database {text}: cannot reach the Redis server: {error}") from None
    return RedisExampleDatabase(client, key_prefix=b"conformance-fuzz:")


def fuzz(
    transport: Transport,
    *,
    examples: int = 200,
    seed: int = 0,
    database: Union[Path, str, None] = None,
    max_steps: int = 24,
    levels: Optional[list[str]] = None,
    skip: Optional[list[str]] = None,
    shrink: bool = True,
    progress: Optional[Callable[[FuzzResult, bool], None]] = None,
    exclude_ops: Optional[list[str]] = None,
    keep_going: bool = False,
    profile: Optional[str] = None,
    expected: Iterable[Expected] = (),
) -> FuzzResult:
    """Fuzz one adapter for up to ``examples`` programs; shrink the first divergence to a minimal program.

    Raises AdapterFault when the adapter cannot even start. ``database`` is a
    hypothesis example database folder or Redis URL (shared by CI shards, ``example_database``); None keeps none,
    so a run depends only on ``seed``. ``shrink=False`` stops at the first
    divergence as drawn (for measuring how soon one is found). ``exclude_ops``
    keeps those ops out of the programs drawn. ``keep_going`` does not stop at a
    divergence: each one whose signature (level, diagnosis, kind of difference)
    is new is shrunk by step deletion and recorded in ``divergences``, and the
    search goes on for all ``examples``, so one known bug cannot hide the others.
    ``profile`` overrides the one the adapter declares. ``expected`` are the adapter's
    expected failures: a divergence whose diagnosis names the ``bug`` of one of them is
    recorded once in ``known`` and the search goes on, with or without ``keep_going``.
    """
    hello = transport.handshake()
    profile = profile or hello.profile
    result = FuzzResult(hello, compared_levels(hello, levels, skip), profile)
    listed = bugs_of(expected)
    diagnoser = Diagnoser()  # this run's: what it simulates is not seen by another run
    diagnoser.declare(hello)
    latest: list[Divergence] = []
    seen: set[tuple[Any, ...]] = set()
    started = time.monotonic()

    @settings(
        max_examples=examples,
        database=example_database(database),
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, *((Phase.shrink,) if shrink and not keep_going else ())),
        print_blob=False,
    )
    @hypothesis_seed(seed)
    @given(strategy_for(hello, result.levels, max_steps, exclude_ops))
    def check(program: Program) -> None:
        result.calls += 1
        if result.first_found_at is None or keep_going:
            result.examples += 1
        if progress is not None:
            result.seconds = time.monotonic() - started
            progress(result, False)
        divergence = examine(transport, program, result.levels, profile)
        if divergence is not None and listed:
            divergence = _with_diagnosis(divergence, diagnoser)
            bugs = known_bugs(divergence, listed, result.levels, diagnoser=diagnoser)
            if bugs:
                if result.first_found_at is None or keep_going:  # not while hypothesis shrinks a new one
                    result.known_programs += 1
                    for bug in bugs:
                        _record_known(result, bug, listed[bug])
                return
        if divergence is not None and keep_going:
            _record_if_new(transport, _with_diagnosis(divergence, diagnoser), result, seen, shrink, diagnoser, listed)
            return
        if divergence is not None:
            if result.first_found_at is None:
                result.first_found_at = result.examples
            latest.append(divergence)
            raise _Diverged(divergence)

    try:
        check()
    except _Diverged as error:
        result.divergence = error.divergence
    except Flaky:
        # The adapter answered one program differently on two runs; report the last divergence seen.
        result.flaky = True
        result.notes.append("the adapter's answers were not reproducible (hypothesis reported the test as flaky)")
        result.divergence = latest[-1] if latest else None
    if keep_going:
        result.divergence = result.divergences[0] if result.divergences else None
    elif result.divergence is not None:
        if shrink:
            result.divergence = minimize(transport, result.divergence, result, listed, diagnoser=diagnoser)
        result.divergence = _with_diagnosis(result.divergence, diagnoser)
    result.seconds = time.monotonic() - started
    if progress is not None:
        progress(result, True)
    return result


def _record_known(result: FuzzResult, bug: str, entry: Expected) -> None:
    if bug in result.known:
        result.known[bug].programs += 1
    else:
        result.known[bug] = KnownDivergence(bug, entry, result.examples)


def _record_if_new(
    transport: Transport,
    divergence: Divergence,
    result: FuzzResult,
    seen: set[tuple[Any, ...]],
    shrink: bool,
    diagnoser: Diagnoser,
    known: Iterable[str] = (),
) -> None:
    """Record a divergence unless one recorded is the same after shrinking (``same_divergence``).

    ``seen`` holds the signatures of the divergences as drawn, so a program like one
    already shrunk is not shrunk again.
    """
    drawn = signature(divergence)
    if drawn in seen:
        result.repeats += 1
        return
    seen.add(drawn)
    if result.first_found_at is None:
        result.first_found_at = result.examples
    if shrink:
        divergence = minimize(transport, divergence, result, known, diagnoser=diagnoser)
    if any(same_divergence(divergence, other) for other in result.divergences):
        result.repeats += 1
        return
    result.divergences.append(divergence)


def same_divergence(one: Divergence, other: Divergence) -> bool:
    """Whether two shrunk divergences are one for keep_going: the same program, or the same signature.

    Signatures agree when level and kind of first difference agree and the diagnoses
    share a likely bug (or both name none): a program that one bug alone explains
    and one that two bugs could explain are the same divergence.
    """
    if one.program == other.program:
        return True
    (level, named, kind), (level_2, named_2, kind_2) = signature(one), signature(other)
    if level != level_2 or kind != kind_2:
        return False
    return bool(set(named) & set(named_2)) if named or named_2 else True


def regression_id(program: Program) -> str:
    """The case id of a regression: ``regressions/`` and the first 12 hex digits of the program's hash."""
    return f"regressions/{program_hash(program)[:12]}"


def regression_text(program: Program) -> str:
    """A regression case file's text: the program as JSON, one step a line."""
    steps = [json.dumps(to_json_ready(step), ensure_ascii=False, allow_nan=False) for step in program_to_json(program)]
    return "[\n" + ",\n".join(f"  {step}" for step in steps) + "\n]\n"


def save_regression(
    program: Program, cases_dir: Path = REGRESSIONS_CASES_DIR, fixtures_dir: Path = FIXTURES_DIR
) -> tuple[Case, Path, Path]:
    """Write the program as a regression case and generate its fixture; returns the case and both paths."""
    from .cases.regressions import load_case

    case_path = cases_dir / f"{regression_id(program).split('/', 1)[1]}.json"
    write_atomic(case_path, regression_text(program))
    # A port's own folder is named as `conformance regen --cases` names it, so that regen re-derives the same text.
    own = cases_dir.resolve() != REGRESSIONS_CASES_DIR.resolve()
    case = load_case(case_path, f"{cases_dir.resolve().name}/{case_path.name}" if own else None)
    ((fixture_path, text),) = generate([case], fixtures_dir).items()
    write_atomic(fixture_path, text)
    return case, case_path, fixture_path

"""``conformance run``: run the fixtures against adapters and gate on the result.

Without --adapter, every registered adapter whose requirements are met runs
(built first when its build is stale, saying so); unavailable ones are
reported with their reason. Exit 0 when nothing unexpected happened, 1 on
conformance failures (failed, error, unexpected pass, not run, failed build, an
adapter that compared nothing unless --allow-nothing-compared),
2 on usage errors (zero cases selected among them), 130 or 143 when
interrupted by Ctrl-C or SIGTERM, after the partial reports are written.

Timeouts, most specific first: --timeout / --handshake-timeout, the adapter's
registry entry, the defaults in conformance.transport. --max-time bounds the
whole run: what did not run by then is reported as not run.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Optional, Sequence

from ..corpora import add_fixtures_option, describe_folders, fixture_dirs, load_corpora_reporting
from ..coverage import nothing_compared
from ..errors import UsageError
from ..expected import Expected, check_cases
from ..expected_update import observed_results, run_notes, update_expected
from ..fixture import Fixture, FixtureBug
from ..html import check_target, write_report
from ..launch import OpenedAdapter, choose_adapters, open_adapter
from ..program import Program
from ..protocol import Profile
from ..registry import REGISTRY, AdapterConfig
from ..report import (
    LiveLog,
    details_text,
    matrix_text,
    summary_line,
    versions_line,
    warning_lines,
    write_json,
    write_junit,
    write_markdown,
)
from ..runner import AdapterRun, Outcome, engine_name, not_run, run_adapter, select
from ..transport import CASE_TIMEOUT, HANDSHAKE_TIMEOUT, AdapterFault, Transport


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("run", help="run the fixtures against adapters (the CI gate)")
    parser.add_argument(
        "--adapter", action="append", metavar="NAME", help="a registered adapter (repeatable; default: all available)"
    )
    parser.add_argument("--command", metavar="CMD", help="run an unregistered adapter command ad hoc")
    parser.add_argument("--expected-failures", type=Path, metavar="FILE", help="expected-failures file for --command")
    parser.add_argument(
        "--build",
        metavar="CMD",
        help="a build command for --command, run once before the run (in the current folder; its time is not "
        "charged to the handshake); its failure fails the run with the build's output",
    )
    parser.add_argument("--case", action="append", metavar="PATTERN", help="only cases whose id matches (fnmatch; repeatable)")
    parser.add_argument("--shard", metavar="K/N", help="run the K-th of N equal shares of the cases")
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", help=f"per-case timeout (default: the registry's, else {CASE_TIMEOUT:g})"
    )
    parser.add_argument(
        "--handshake-timeout",
        type=float,
        metavar="SECONDS",
        help=f"how long an adapter has to answer hello (default: the registry's, else {HANDSHAKE_TIMEOUT:g})",
    )
    parser.add_argument(
        "--max-time",
        type=float,
        metavar="SECONDS",
        help="budget for the whole run: what has not run by then is reported as not run (default: none)",
    )
    parser.add_argument(
        "--allow-empty", action="store_true", help="an empty selection of cases is not an error (it is by default)"
    )
    parser.add_argument(
        "--allow-nothing-compared",
        action="store_true",
        help="an adapter that compared nothing (its hello declares no op or level the selected cases use) does not "
        "fail the run (it does by default)",
    )
    parser.add_argument(
        "--profile",
        choices=[profile.value for profile in Profile],
        help="compare floats under this profile instead of the one each adapter declares "
        "(docs/contract.md section 9: contract compares exact cases bit for bit, numeric compares every case under "
        "its derived bounds)",
    )
    parser.add_argument(
        "--no-shrink", action="store_true", help="do not shrink each failure to a minimal reproducer after the run"
    )
    parser.add_argument(
        "--shrink-seconds",
        type=float,
        metavar="S",
        help="time for shrinking an adapter's failures in all (default: twice the time its run took, start and build "
        "included, so that a run with failures takes at most 3x one without)",
    )
    parser.add_argument(
        "--reproducers",
        type=Path,
        metavar="DIR",
        help="save each minimal reproducer as a case (DIR/cases) and its fixture (DIR/fixtures), with its re-run command",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the JSON report")
    parser.add_argument(
        "--html", type=Path, metavar="FILE", help="write the HTML report: matrix, and the graph of every failure (one file)"
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write the matrix as Markdown")
    parser.add_argument(
        "--update-expected", action="store_true", help="rewrite each adapter's expected-failures file from this run"
    )
    parser.add_argument(
        "--registry", type=Path, default=REGISTRY, help="adapter registry (default: the kit checkout's adapters/adapters.toml)"
    )
    add_fixtures_option(parser)
    parser.set_defaults(handler=run)


#: When this module was imported: the start of a ``conformance run`` process, near enough (a few imports later).
_PROCESS_STARTED = time.monotonic()


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """K/N with 1 <= K <= N, or a usage error."""
    if text is None:
        return None
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard {text!r}: expected K/N, for example 1/4") from None
    if not 1 <= k <= n:
        raise UsageError(f"--shard {text!r}: K must be between 1 and N")
    return k, n


def positive(value: Optional[float], option: str) -> Optional[float]:
    """A positive number of seconds (or None), or a usage error."""
    if value is not None and not value > 0:
        raise UsageError(f"{option} {value:g}: must be a positive number of seconds")
    return value


def empty_selection_message(
    fixtures_dirs: Sequence[Path],
    total: int,
    patterns: Optional[list[str]],
    shard: object,
    *,
    case_option: str = "--case",
    allow_option: str = "--allow-empty",
    fixtures_option: str = "--fixtures",
) -> str:
    """Why zero cases were selected, naming the folders looked in and the caller's options (the CLI's by default)."""
    if total == 0:
        return (
            f"no case found: {describe_folders(fixtures_dirs)} {'has' if len(fixtures_dirs) == 1 else 'have'} no fixture files"
            + ("" if all(folder.is_dir() for folder in fixtures_dirs) else " (it does not exist)")
            + f"; point {fixtures_option} at the corpus, or reinstall the kit"
        )
    chosen = f"{case_option} {' '.join(patterns)}" if patterns else "the selection"
    extra = f" with --shard {shard}" if shard else ""
    where = ", ".join(str(folder) for folder in fixtures_dirs)
    return f"no case selected: {chosen}{extra} matches none of the {total} cases in {where} ({allow_option} accepts that)"


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C so that the adapters are stopped and the partial reports written."""


def _on_sigterm(signum: int, frame: Optional[FrameType]) -> None:
    raise _Terminated("interrupted by SIGTERM")


def run(args: argparse.Namespace) -> int:
    """Run, report, and return the exit code."""
    shard = parse_shard(args.shard)
    timeout = positive(args.timeout, "--timeout")
    handshake_timeout = positive(args.handshake_timeout, "--handshake-timeout")
    max_time = positive(args.max_time, "--max-time")
    positive(args.shrink_seconds, "--shrink-seconds")
    if args.reproducers is not None and args.reproducers.exists() and not args.reproducers.is_dir():
        raise UsageError(f"--reproducers {args.reproducers}: is a file, not a folder; nothing was run")
    adapters = choose_adapters(
        command=args.command, names=args.adapter, expected_failures=args.expected_failures, registry=args.registry
    )
    if args.build is not None:
        if not args.command:
            raise UsageError("--build is the build command of --command: give the adapter as --command CMD too")
        adapters = [replace(a, build=args.build) if a.ad_hoc else a for a in adapters]
    if args.html:
        check_target(args.html, "--html")
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    early: Optional[OpenedAdapter] = None
    try:
        # The first adapter starts while the corpus loads, when opening it takes no build (which would log).
        early = _launched(adapters[0], timeout, handshake_timeout, args.update_expected) if adapters else None
        folders = fixture_dirs(args.fixtures)
        corpus, fixture_bugs = load_corpora_reporting(folders)
        fixtures = select(corpus, args.case, shard)
        # Every case pattern of an expected-failures file must match a case of the corpus (of this run or not).
        args.case_ids = None if fixture_bugs else {f.id for f in corpus}  # a fixture bug ends the run with exit 2
        if args.case_ids is not None and not args.update_expected:  # which removes such entries, saying so
            for adapter in adapters:
                check_cases(adapter.expected_failures_path(), args.case_ids)
        if not fixtures and not fixture_bugs and not args.allow_empty:
            raise UsageError(empty_selection_message(folders, len(corpus), args.case, args.shard))
        return _run_all(args, adapters, early, fixtures, fixture_bugs, timeout, handshake_timeout, max_time)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if early is not None:
            early.close()  # closed after its run already; here when the command ended before it: no process is left


def _launched(
    adapter: AdapterConfig, timeout: Optional[float], handshake_timeout: Optional[float], expected_missing_ok: bool
) -> Optional[OpenedAdapter]:
    """The adapter opened, and its process started when it is available; None when it needs a build first."""
    if adapter.build_reason() is not None:  # a build logs, and may take minutes: it runs at its turn
        return None
    opened = open_adapter(adapter, timeout=timeout, handshake_timeout=handshake_timeout, expected_missing_ok=expected_missing_ok)
    if opened.transport is not None:
        opened.transport.launch()
    return opened


def _run_all(
    args: argparse.Namespace,
    adapters: list[AdapterConfig],
    early: Optional[OpenedAdapter],
    fixtures: list[Fixture],
    fixture_bugs: list[FixtureBug],
    timeout: Optional[float],
    handshake_timeout: Optional[float],
    max_time: Optional[float],
) -> int:
    """Run the selected cases on every adapter (the first one ``early`` when it was opened already), report."""
    deadline = None if max_time is None else time.monotonic() + max_time
    budget_note = f"the run's --max-time budget of {max_time:g} s ran out" if max_time else ""
    log = LiveLog()
    runs: list[AdapterRun] = []
    build_failures: list[str] = []
    interrupted = ""
    for index, adapter in enumerate(adapters):
        if interrupted:
            runs.append(_not_started(adapter, fixtures, f"the run was {interrupted}"))
            continue
        opened = early if index == 0 else None
        try:
            began = _PROCESS_STARTED if index == 0 else time.monotonic()
            one, build_failure = _run_one(
                adapter, args, fixtures, timeout, handshake_timeout, deadline, budget_note, log, opened, began=began
            )
        except KeyboardInterrupt as interrupt:  # during a build or between cases
            interrupted = str(interrupt) or "interrupted (Ctrl-C)"
            runs.append(_not_started(adapter, fixtures, f"the run was {interrupted}"))
            continue
        if adapter.ad_hoc:  # called by its engine's name from hello, not "command"
            one.rename(engine_name(one.handshake, adapter.name, [a.name for a in adapters if a is not adapter]))
        runs.append(one)
        interrupted = one.interrupted
        if build_failure:
            build_failures.append(f"{adapter.name}: {build_failure}")
    print(versions_line())
    print(matrix_text(runs))
    details = details_text(runs)
    if details:
        print()
        print(details)
    for failure in build_failures:
        print(f"\nBUILD FAILED {failure}")
    for bug in fixture_bugs:
        print(f"\nFIXTURE BUG {bug} (no adapter is blamed; regenerate with `conformance regen`)")
    empty = [line for run in runs if (line := nothing_compared(run, fixtures)) is not None]
    for line in empty:
        print(f"\n{line}")
    print()
    for line in warning_lines(runs):
        print(line)
    print(summary_line(runs))
    if args.json:
        write_json(runs, args.json)
    if args.junit:
        write_junit(runs, args.junit)
    if args.markdown:
        write_markdown(runs, args.markdown)
    if args.html:
        write_report(runs, fixtures, args.html)
    if interrupted:
        print(f"conformance: {interrupted}; the reports cover what ran before it", file=sys.stderr)
        return 143 if "SIGTERM" in interrupted else 130
    if fixture_bugs:
        return 2
    unexpected = any(run.unexpected for run in runs) or build_failures
    if empty and not args.allow_nothing_compared:
        return 1  # a green run of nothing is no conformance; --update-expected does not change that
    return 1 if unexpected and not args.update_expected else 0


def _not_started(adapter: AdapterConfig, fixtures: list[Fixture], why: str) -> AdapterRun:
    run = AdapterRun(adapter.name)
    for fixture in fixtures:
        run.results += not_run(adapter.name, fixture, why)
    return run


def _run_one(
    adapter: AdapterConfig,
    args: argparse.Namespace,
    fixtures: list[Fixture],
    timeout: Optional[float],
    handshake_timeout: Optional[float],
    deadline: Optional[float],
    budget_note: str,
    log: LiveLog,
    opened: Optional[OpenedAdapter] = None,
    *,
    began: float,
) -> tuple[AdapterRun, Optional[str]]:
    """One adapter's run (``opened`` when ``run`` opened it already), and its build failure if the build failed.

    ``began``: when this adapter's turn started (the process's start for the first one), for the shrinking budget.
    """
    if opened is None:
        opened = open_adapter(
            adapter,
            timeout=timeout,
            handshake_timeout=handshake_timeout,
            log=log.note,
            expected_missing_ok=args.update_expected,
        )
    if opened.unavailable:
        log.note(f"{adapter.name}: unavailable: {opened.unavailable}")
        return AdapterRun(adapter.name, available=False, reason=opened.unavailable), None
    if opened.build_failure:
        log.note(f"{adapter.name}: build failed")
        return AdapterRun(adapter.name, available=False, reason="build failed"), opened.build_failure
    assert opened.transport is not None
    expected = opened.expected
    log.start(adapter.name, len(fixtures))
    try:
        run = run_adapter(
            adapter.name,
            opened.transport,
            fixtures,
            expected,
            log.progress,
            deadline=deadline,
            budget_note=budget_note,
            on_result=log.results,
            profile=args.profile,
        )
        _shrink_failures(run, adapter, opened.transport, fixtures, args, log, began=began, deadline=deadline)
    finally:
        opened.close()
    log.finish(run)
    path = adapter.expected_failures_path()
    run.expected_failures = str(path) if path else ""
    if args.update_expected:
        expected = _update_expected(adapter, run, expected, args)
    else:  # a stale or too broad entry, judged over the whole run (each result's message sees only its case)
        for note in run_notes(expected, observed_results(run.results)):
            log.note(f"{adapter.name}: {path}: {note}")
    run.unreviewed = sum(entry.unreviewed for entry in expected)
    return run, None


def _shrink_failures(
    run: AdapterRun,
    adapter: AdapterConfig,
    transport: Transport,
    fixtures: list[Fixture],
    args: argparse.Namespace,
    log: LiveLog,
    began: float,
    deadline: Optional[float],
) -> None:
    """A minimal reproducer for each failed (case, level), unless --no-shrink; saved as cases with --reproducers.

    The budget, unless --shrink-seconds gives one, is twice the time the adapter took so far (its start, build
    and run: from ``began``), and never past the run's --max-time ``deadline``.
    """
    if args.no_shrink or run.down is not None or run.interrupted or run.handshake is None:
        return
    if not any(result.outcome == Outcome.FAILED for result in run.results):
        return
    from ..diagnose import Diagnoser
    from ..reproduce import reproduce_run

    started = time.monotonic()
    budget = args.shrink_seconds if args.shrink_seconds is not None else 2 * (started - began)
    if deadline is not None:
        budget = min(budget, deadline - started)
    if budget <= 0:
        run.reproducer_notes = ["no failure was shrunk: the run's --max-time budget ran out"]
        return
    log.note(f"{run.name}: shrinking each failure to a minimal reproducer (at most {budget:.0f} s; --no-shrink skips it)")
    by_id = {fixture.id: fixture for fixture in fixtures}
    try:
        diagnoser = Diagnoser()
        diagnoser.declare(run.handshake)
        run.reproducers, run.reproducer_notes = reproduce_run(
            run.results, transport, by_id, run.handshake.profile, seconds=budget, diagnoser=diagnoser
        )
    except AdapterFault as fault:  # the adapter died while shrinking: the run's results stand
        run.reproducer_notes = [f"shrinking stopped: {fault}"]
    if args.reproducers is not None:
        which = f"--command {shlex.quote(adapter.command)}" if adapter.ad_hoc else f"--adapter {shlex.quote(adapter.name)}"
        _save_reproducers(run, args.reproducers, which)
    log.note(f"{run.name}: {len(run.reproducers)} reproducer(s) in {time.monotonic() - started:.1f} s")


def _save_reproducers(run: AdapterRun, folder: Path, adapter_option: str) -> None:
    """Each reproducer as a case (``folder/cases``) and its fixture (``folder/fixtures``), with the command re-running it.

    Written as ``conformance fuzz --save`` writes a regression, so ``conformance regen --cases FOLDER/cases
    --fixtures FOLDER/fixtures`` re-derives the fixtures after an upgrade of the kit.
    """
    from ..fuzz import save_regression

    saved: dict[Program, str] = {}
    fixtures = folder / "fixtures"
    try:
        for key, reproducer in sorted(run.reproducers.items()):
            if reproducer.program not in saved:
                case, _, _ = save_regression(reproducer.program, folder / "cases", fixtures)
                saved[reproducer.program] = case.id
            rerun = f"conformance run {adapter_option} --fixtures {shlex.quote(str(fixtures))} --case {saved[reproducer.program]}"
            run.reproducers[key] = replace(reproducer, rerun=rerun)
    except OSError as error:
        raise UsageError(f"--reproducers {folder}: cannot write there: {error}") from None


def _update_expected(adapter: AdapterConfig, run: AdapterRun, old: list[Expected], args: argparse.Namespace) -> list[Expected]:
    """Rewrite the adapter's file from the run; the entries now in it.

    An entry that still applies keeps its reason, bug and review state; a new
    one is a draft (``unreviewed = true``) whose reason is the diagnosis, or
    the first difference when there is none, with the catalogue ``bug`` when
    the diagnosis names one.
    """
    path = adapter.expected_failures_path()
    if path is None:
        print(f"{adapter.name}: no expected_failures file is configured; nothing updated", file=sys.stderr)
        return old
    observed = observed_results(run.results)
    command = shlex.join(["conformance", *getattr(args, "argv", ["run", "--update-expected"])])
    header = (
        f"Expected failures of the {adapter.name} adapter: case pattern, level and the reason.\n"
        f"Rewritten by `{command}`; edit the reasons freely.\n"
        "A new entry is a draft marked `unreviewed = true`: check its reason (and its bug, the catalogue's name\n"
        "for the likely bug), then delete the flag. Every run warns while a draft is left."
    )
    update = update_expected(path, old, observed, header, getattr(args, "case_ids", None))
    for note in update.notes:
        print(f"{adapter.name}: {path}: {note}", file=sys.stderr)
    print(f"{adapter.name}: wrote {len(update.entries)} expected failure(s) to {path} ({update.added} new)", file=sys.stderr)
    return update.entries

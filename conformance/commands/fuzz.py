"""``conformance fuzz``: differential fuzzing of one adapter against the reference.

Random programs run on the reference and on the adapter; the first divergence
is shrunk to a minimal program and printed with its first difference and the
likely bug. ``--save`` keeps it as a regression case and generates its
fixture: in the kit's checkout into its own ``conformance/cases/regressions/`` and
``fixtures/``, from an installed kit into ``./conformance-cases`` and
``./conformance-fixtures`` of the user's project (never into site-packages), where
``conformance regen --cases`` re-derives them. A divergence whose likely bug the adapter's expected failures name
(their ``bug`` field) is reported once as known and does not stop the search.
Exit 0 when no divergence but known ones was found, 1 when one was (or the
adapter could not start or build), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from ..corpora import fixture_dirs
from ..errors import UsageError
from ..files import refuse_installed_package
from ..fixture import FIXTURES_DIR, in_checkout
from ..fuzz import REGRESSIONS_CASES_DIR, FuzzResult, fuzz, save_regression
from ..launch import choose_adapters, open_adapter
from ..program import DECLARABLE_OPS
from ..protocol import LEVELS, Profile
from ..registry import REGISTRY
from ..transport import HANDSHAKE_TIMEOUT, AdapterFault


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("fuzz", help="differential fuzzing: random programs on the reference and one adapter")
    parser.add_argument("--adapter", action="append", metavar="NAME", help="the registered adapter to fuzz")
    parser.add_argument("--command", metavar="CMD", help="fuzz an unregistered adapter command ad hoc")
    parser.add_argument(
        "--expected-failures",
        type=Path,
        metavar="FILE",
        help="expected-failures file for --command: divergences by a bug its entries name are reported as known",
    )
    parser.add_argument("--examples", type=int, default=200, metavar="N", help="programs to try (default 200)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="random seed; a run is reproducible (default 0)")
    parser.add_argument("--max-steps", type=int, default=24, metavar="N", help="longest program drawn (default 24)")
    parser.add_argument(
        "--level",
        dest="levels",
        action="append",
        choices=LEVELS,
        metavar="LEVEL",
        help="compare only this level (repeatable; default: every level the adapter declares)",
    )
    parser.add_argument(
        "--skip-level",
        action="append",
        choices=LEVELS,
        default=[],
        metavar="LEVEL",
        help="do not compare this level (repeatable), e.g. order for an engine that walks its tape",
    )
    parser.add_argument(
        "--database",
        metavar="DIR|URL",
        help="hypothesis example database: a folder, or a Redis URL (redis://host:port/db) that CI shards on many "
        "machines share (default: none, the run depends only on --seed)",
    )
    parser.add_argument(
        "--exclude-op",
        action="append",
        choices=DECLARABLE_OPS,
        default=[],
        metavar="OP",
        help="draw no program with this op (repeatable), e.g. to look past a known bug in one op",
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="do not stop at the first divergence: record each distinct one (level, diagnosis, kind), shrunk, "
        "and go on for all --examples",
    )
    parser.add_argument(
        "--profile",
        choices=[profile.value for profile in Profile],
        help="compare under this profile instead of the one the adapter declares (docs/contract.md section 9)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help="per-program timeout (default 10)")
    cases, fixtures = save_targets()
    parser.add_argument(
        "--save",
        action="store_true",
        help=f"keep the minimal program as a regression case (in --cases-dir, default {cases}) and generate its "
        f"fixture (in --fixtures, default {fixtures})",
    )
    parser.add_argument("--cases-dir", type=Path, metavar="DIR", help=f"where --save writes the case (default: {cases})")
    parser.add_argument("--fixtures", metavar="DIR", help=f"where --save writes the fixture (default: {fixtures})")
    parser.add_argument("--registry", type=Path, default=REGISTRY, help="adapter registry (default: adapters/adapters.toml)")
    parser.set_defaults(handler=run)


#: Where ``--save`` writes in an installed kit: folders of the user's project, never the package.
OWN_CASES = Path("conformance-cases")
OWN_FIXTURES = Path("conformance-fixtures")


def save_targets() -> tuple[str, str]:
    """How ``--help`` names the default folders of ``--save``: the kit's own in its checkout, the project's otherwise."""
    if in_checkout():
        return "the kit checkout's conformance/cases/regressions/", "the kit checkout's fixtures/"
    return f"./{OWN_CASES}", f"./{OWN_FIXTURES}"


def _save_folders(args: argparse.Namespace) -> tuple[Path, Path]:
    """The folders --save writes: as given, or the defaults; refused inside an installed package."""
    checkout = in_checkout()
    cases: Path = args.cases_dir or (REGRESSIONS_CASES_DIR if checkout else OWN_CASES)
    fixtures = fixture_dirs([args.fixtures])[0] if args.fixtures else FIXTURES_DIR if checkout else OWN_FIXTURES
    refuse_installed_package(cases, "--cases-dir")
    refuse_installed_package(fixtures, "--fixtures")
    return cases, fixtures


def run(args: argparse.Namespace) -> int:
    """Fuzz, report, save on request; return the exit code."""
    cases_dir, fixtures_dir = _save_folders(args) if args.save else (REGRESSIONS_CASES_DIR, FIXTURES_DIR)
    if args.examples < 1:
        raise UsageError(f"--examples {args.examples}: must be at least 1")
    if args.max_steps < 1:
        raise UsageError(f"--max-steps {args.max_steps}: must be at least 1")
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: must be positive")
    if bool(args.command) == bool(args.adapter) or (args.adapter and len(args.adapter) > 1):
        raise UsageError("fuzz needs exactly one adapter: --adapter NAME or --command CMD")
    (adapter,) = choose_adapters(
        command=args.command, names=args.adapter, expected_failures=args.expected_failures, registry=args.registry
    )
    # fuzz has no --handshake-timeout: it gives every adapter the default time to answer hello.
    opened = open_adapter(adapter, timeout=args.timeout, handshake_timeout=HANDSHAKE_TIMEOUT)
    if opened.unavailable:
        print(f"{adapter.name}: unavailable: {opened.unavailable}")
        return 1
    if opened.build_failure:
        print(f"BUILD FAILED {adapter.name}: {opened.build_failure}")
        return 1
    assert opened.transport is not None
    expected_path = adapter.expected_failures_path()
    try:
        result = fuzz(
            opened.transport,
            examples=args.examples,
            seed=args.seed,
            database=args.database,
            max_steps=args.max_steps,
            levels=args.levels,
            skip=args.skip_level,
            progress=_progress(adapter.name),
            exclude_ops=args.exclude_op,
            keep_going=args.keep_going,
            profile=args.profile,
            expected=opened.expected,
        )
    except AdapterFault as fault:
        print(f"{adapter.name}: the adapter failed to start: {fault}")
        return 1
    finally:
        opened.close()
    print(_summary(adapter.name, result, args))
    if result.known:
        print(f"{result.known_programs} program(s) diverged by bugs the expected failures list; not counted, the search went on:")
        for known in result.known.values():
            print(known.describe(str(expected_path)))
    for note in result.notes:
        print(f"note: {note}")
    if result.divergence is None:
        return 0
    found = result.divergences if args.keep_going else [result.divergence]
    for number, divergence in enumerate(found, 1):
        print()
        if args.keep_going:
            print(f"DIVERGENCE {number} of {len(found)}, level {divergence.level}")
        print(divergence.describe())
        if args.save:
            case, case_path, fixture_path = save_regression(divergence.program, cases_dir, fixtures_dir)
            print(f"saved case {case.id}: {case_path}")
            print(f"generated fixture: {fixture_path}")
            print(f"re-run it: {_rerun(args, adapter.name, case.id, fixtures_dir)}")
            if not divergence.records:
                print(
                    "note: this divergence shows only on the run that reads no pass record; the saved case is "
                    "run with its pass records read (its levels include trace), so it may pass there"
                )
    return 1


def _rerun(args: argparse.Namespace, name: str, case: str, fixtures_dir: Path) -> str:
    """The command that runs the saved case again, as the user would type it from the same folder."""
    again = f"--adapter {shlex.quote(name)}" if args.adapter else f"--command {shlex.quote(args.command)}"
    if args.registry != REGISTRY:
        again += f" --registry {shlex.quote(str(args.registry))}"
    if args.command and args.expected_failures:
        again += f" --expected-failures {shlex.quote(str(args.expected_failures))}"
    where = "" if fixtures_dir == FIXTURES_DIR else f" --fixtures {shlex.quote(str(fixtures_dir))}"
    return f"conformance run {again} --case {case}{where}"


def _summary(name: str, result: FuzzResult, args: argparse.Namespace) -> str:
    hello = result.handshake
    skipped = [level for level in hello.levels if level not in result.levels]
    levels = ", ".join(result.levels) + (f" (not compared: {', '.join(sorted(skipped))})" if skipped else "")
    head = (
        f"{name} ({hello.name} {hello.version}, {hello.language}): profile {result.profile}, seed {args.seed}, "
        f"levels {levels}; "
        f"{result.calls} program(s) in {result.seconds:.1f} s, {result.rate:.1f} examples/s"
    )
    if result.divergence is None:
        return f"{head}\nno {'other ' if result.known else ''}divergence in {result.examples} example(s)"
    if args.keep_going:
        return (
            f"{head}\n{len(result.divergences)} distinct divergence(s) in {result.examples} example(s), "
            f"the first at example {result.first_found_at}; {result.repeats} more program(s) diverged the same way"
        )
    shrunk = result.calls - result.examples
    return f"{head}\nDIVERGENCE found after {result.first_found_at} example(s), shrunk in {shrunk} more run(s)"


def _progress(name: str) -> Optional[Callable[[FuzzResult, bool], None]]:
    """A one-line display of examples done and examples/s on a terminal; None (quiet) otherwise."""
    if not sys.stderr.isatty():
        return None
    shown = [0.0]

    def show(result: FuzzResult, done: bool) -> None:
        now = time.monotonic()
        if not done and now - shown[0] < 0.2:
            return
        shown[0] = now
        phase = "shrinking" if result.first_found_at is not None else "examples"
        count = result.calls - result.examples if result.first_found_at is not None else result.examples
        line = f"{name}: {phase} {count}, {result.rate:.1f} examples/s"
        sys.stderr.write(f"\r\033[K{line}" if not done else "\r\033[K")
        sys.stderr.flush()

    return show

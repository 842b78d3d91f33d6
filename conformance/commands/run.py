"""``conformance run``: run the fixtures against adapters and gate on the result.

Without --adapter, every registered adapter whose requirements are met runs
(built first when its build is stale); unavailable ones are reported with
their reason. Exit 0 when nothing unexpected happened, 1 on conformance
failures (failed, error, unexpected pass, failed build), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..expected import Expected, load_expected, write_expected
from ..fixture import FIXTURES_DIR, load_corpus_reporting
from ..registry import REGISTRY, AdapterConfig, RegistryError, ad_hoc, load_registry
from ..report import details_text, matrix_text, summary_line, write_json, write_junit, write_markdown
from ..runner import AdapterRun, Result, progress_printer, run_adapter, select
from ..transport import SubprocessTransport


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("run", help="run the fixtures against adapters (the CI gate)")
    parser.add_argument(
        "--adapter", action="append", metavar="NAME", help="a registered adapter (repeatable; default: all available)"
    )
    parser.add_argument("--command", metavar="CMD", help="run an unregistered adapter command ad hoc")
    parser.add_argument("--expected-failures", type=Path, metavar="FILE", help="expected-failures file for --command")
    parser.add_argument("--case", action="append", metavar="PATTERN", help="only cases whose id matches (fnmatch; repeatable)")
    parser.add_argument("--shard", metavar="K/N", help="run the K-th of N equal shares of the cases")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="per-case timeout (default 60)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the JSON report")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write the matrix as Markdown")
    parser.add_argument(
        "--update-expected", action="store_true", help="rewrite each adapter's expected-failures file from this run"
    )
    parser.add_argument("--registry", type=Path, default=REGISTRY, help="adapter registry (default: adapters/adapters.toml)")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES_DIR, help="fixtures folder")
    parser.set_defaults(handler=run)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """K/N with 1 <= K <= N, or a usage error."""
    from ..cli import UsageError

    if text is None:
        return None
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard {text!r}: expected K/N, for example 1/4") from None
    if not 1 <= k <= n:
        raise UsageError(f"--shard {text!r}: K must be between 1 and N")
    return k, n


def choose_adapters(args: argparse.Namespace) -> list[AdapterConfig]:
    """The adapters this run uses, from --command, --adapter or the whole registry."""
    from ..cli import UsageError

    adapters: list[AdapterConfig] = []
    if args.command:
        adapter = ad_hoc(args.command)
        if args.expected_failures:
            adapter = AdapterConfig(**{**adapter.__dict__, "expected_failures": str(args.expected_failures.resolve())})
        adapters.append(adapter)
    if args.adapter or not args.command:
        try:
            registry = load_registry(args.registry)
        except RegistryError as error:
            raise UsageError(str(error)) from None
        for name in args.adapter or list(registry):
            if name not in registry:
                raise UsageError(f"--adapter {name!r} is not registered in {args.registry} (known: {', '.join(registry)})")
            adapters.append(registry[name])
    return adapters


def run(args: argparse.Namespace) -> int:
    """Run, report, and return the exit code."""
    shard = parse_shard(args.shard)
    adapters = choose_adapters(args)
    corpus, fixture_bugs = load_corpus_reporting(args.fixtures)
    fixtures = select(corpus, args.case, shard)
    if not fixtures and not fixture_bugs:
        from ..cli import UsageError

        raise UsageError(f"no case matches {args.case}")
    runs: list[AdapterRun] = []
    build_failures: list[str] = []
    for adapter in adapters:
        missing = adapter.missing()
        if missing:
            runs.append(AdapterRun(adapter.name, available=False, reason=missing))
            continue
        failure = adapter.run_build()
        if failure:
            build_failures.append(f"{adapter.name}: {failure}")
            runs.append(AdapterRun(adapter.name, available=False, reason="build failed"))
            continue
        expected = load_expected(adapter.expected_failures_path())
        transport = SubprocessTransport(adapter.argv(), cwd=adapter.cwd, env=adapter.env, timeout=args.timeout)
        try:
            runs.append(run_adapter(adapter.name, transport, fixtures, expected, progress_printer(adapter.name)))
        finally:
            transport.close()
        if args.update_expected:
            _update_expected(adapter, runs[-1], expected)
    print(matrix_text(runs))
    details = details_text(runs)
    if details:
        print()
        print(details)
    for failure in build_failures:
        print(f"\nBUILD FAILED {failure}")
    for bug in fixture_bugs:
        print(f"\nFIXTURE BUG {bug} (no adapter is blamed; regenerate with `conformance regen`)")
    print()
    print(summary_line(runs))
    if args.json:
        write_json(runs, args.json)
    if args.junit:
        write_junit(runs, args.junit)
    if args.markdown:
        write_markdown(runs, args.markdown)
    if fixture_bugs:
        return 2
    unexpected = any(run.unexpected for run in runs) or build_failures
    return 1 if unexpected and not args.update_expected else 0


def _update_expected(adapter: AdapterConfig, run: AdapterRun, old: list[Expected]) -> None:
    path = adapter.expected_failures_path()
    if path is None:
        print(f"{adapter.name}: no expected_failures file is configured; nothing updated", file=sys.stderr)
        return
    ran = {(r.case, r.level) for r in run.results}
    keep = [e for e in old if not any(e.matches(case, level) for case, level in ran)]
    failing: list[Result] = [r for r in run.results if r.outcome in ("failed", "error", "xfailed")]
    entries = list(keep)
    for result in failing:
        previous = next((e for e in old if e.matches(result.case, result.level)), None)
        reason = previous.reason if previous else (result.diagnosis[0] if result.diagnosis else result.message.splitlines()[0])
        entries.append(Expected(result.case, result.level, reason))
    header = (
        f"Expected failures of the {adapter.name} adapter: case pattern, level and the reason.\n"
        f"Rewritten by `conformance run --adapter {adapter.name} --update-expected`; edit the reasons freely."
    )
    write_expected(path, entries, header)
    print(f"{adapter.name}: wrote {len(entries)} expected failure(s) to {path}", file=sys.stderr)

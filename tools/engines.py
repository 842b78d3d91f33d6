"""The matrix of real engines: run the registered adapters, keep the run in docs/engines.json, render docs/engines.md.

    python tools/engines.py run [--adapter NAME ...]   # run them (default: every registered adapter but broken)
    python tools/engines.py page [--check]             # docs/engines.md from docs/engines.json (--check: is it current?)

``run`` calls ``conformance run --json`` once per adapter with the interpreter running this
script (``make engines`` uses .venv-engines, where the optional engines are installed) and
records, per adapter: the engine's name and version from its hello, the date of the run,
the counts per level and every divergence (failed, xfailed, xpassed, error, not run) with
its one-line reason and the case's program. An adapter that is unavailable here keeps its
entry from an earlier run, with that run's date, so torch and tinygrad stay in the page
when a lighter machine refreshes the rest. The page is generated, never edited by hand;
``tests/test_engines.py`` checks that the committed page is what the committed JSON renders.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from conformance.fixture import load_corpus
from conformance.protocol import LEVELS

ROOT = Path(__file__).resolve().parent.parent
JSON_PATH = ROOT / "docs" / "engines.json"
PAGE_PATH = ROOT / "docs" / "engines.md"
#: Adapters that are not engines: the catalogue of deliberately broken ones.
NOT_ENGINES = {"broken"}
#: The outcomes a page lists as divergences, each with its reason.
DIVERGENCES = ("failed", "xfailed", "xpassed", "error", "not-run")
#: A program longer than this is named, not printed.
LONGEST_PROGRAM = 12


class EnginesError(ValueError):
    """A malformed docs/engines.json or a failed run; the message names the file or the adapter."""


def _program(case: str, programs: dict[str, list[str]]) -> str:
    steps = programs.get(case)
    if steps is None:
        return ""
    if len(steps) > LONGEST_PROGRAM:
        return f"{len(steps)} steps: `conformance explain {case}`"
    return "; ".join(steps)


def _reason(result: dict[str, Any]) -> str:
    if result.get("reason"):
        return str(result["reason"])
    if result.get("diagnosis"):
        return f"likely bug: {result['diagnosis'][0]}"
    return str(result.get("message", "")).strip().splitlines()[0] if result.get("message") else ""


def entry_from_report(report: dict[str, Any], adapter: str, date: str, programs: dict[str, list[str]]) -> dict[str, Any]:
    """One adapter's row of docs/engines.json from its ``conformance run --json`` report."""
    (summary,) = [a for a in report["adapters"] if a["name"] == adapter]
    if not summary["available"]:
        return {"adapter": adapter, "available": False, "reason": summary.get("reason", "")}
    engine = summary.get("engine", {})
    divergences: dict[tuple[str, str], dict[str, Any]] = {}
    for result in report["results"]:
        if result["adapter"] != adapter or result["outcome"] not in DIVERGENCES:
            continue
        key = (result["case"], result["outcome"])
        if key in divergences:
            divergences[key]["levels"].append(result["level"])
            continue
        divergences[key] = {
            "case": result["case"],
            "outcome": result["outcome"],
            "levels": [result["level"]],
            "reason": _reason(result),
            "program": _program(result["case"], programs),
        }
    return {
        "adapter": adapter,
        "available": True,
        "engine": engine.get("name", adapter),
        "version": engine.get("version", ""),
        "language": engine.get("language", ""),
        "profile": summary.get("profile", "contract"),
        "run_on": date,
        "seconds": summary.get("seconds"),
        "levels": summary["levels"],
        "divergences": sorted(divergences.values(), key=lambda d: (d["case"], d["outcome"])),
    }


def run_adapters(adapters: list[str], previous: dict[str, Any]) -> dict[str, Any]:
    """Run each adapter through ``conformance run`` and merge the rows into ``previous`` (the JSON's data)."""
    programs = {fixture.id: [step.describe() for step in fixture.program] for fixture in load_corpus()}
    rows = {row["adapter"]: row for row in previous.get("engines", [])}
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    for adapter in adapters:
        with tempfile.TemporaryDirectory() as folder:
            report_path = Path(folder) / "report.json"
            command = [sys.executable, "-m", "conformance", "run", "--adapter", adapter, "--json", str(report_path)]
            print(f"== {adapter}: {' '.join(command[1:])}", flush=True)
            status = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL).returncode
            if status not in (0, 1) or not report_path.exists():
                raise EnginesError(f"adapter {adapter!r}: `conformance run` ended with status {status} and no report")
            report = json.loads(report_path.read_text())
        row = entry_from_report(report, adapter, date, programs)
        if row["available"] or adapter not in rows or not rows[adapter].get("available"):
            rows[adapter] = row
        else:
            print(f"   {adapter} is unavailable here ({row['reason']}); keeping its run of {rows[adapter]['run_on']}")
    return (
        {"kit": report.get("kit", previous.get("kit")), "engines": [rows[name] for name in sorted(rows)]}
        if adapters
        else previous
    )


def _cell(counts: dict[str, int]) -> str:
    parts = [
        f"{counts[outcome]} {outcome}"
        for outcome in ("passed", "failed", "error", "xfailed", "xpassed", "not-run")
        if counts.get(outcome)
    ]
    if counts.get("unsupported"):
        parts.append(f"({counts['unsupported']} unsupported)")
    return ", ".join(parts) or "-"


def render(data: dict[str, Any]) -> str:
    """docs/engines.md from the data of docs/engines.json."""
    engines = data["engines"]
    lines = [
        "# Real engines against the kit",
        "",
        "<!-- Generated by `python tools/engines.py page` from docs/engines.json; never edit by hand. -->",
        "",
        "Each row is one engine as its adapter drives it (`adapters/adapters.toml`), from the last",
        "run of `make engines` that could run it, on the date shown. A cell counts that level's",
        "results; unsupported ones (an op, feature or level the engine lacks) are in brackets.",
        "Every divergence follows with its one-line reason and the program that shows it:",
        "xfailed ones are the engine's real behaviour, listed in its expected-failures file.",
        "",
        "sigmoid and sqrt (contract section 4, optional ops): torch (`torch.sigmoid`, `torch.sqrt`) and",
        "tinygrad (`Tensor.sigmoid`, `Tensor.sqrt`) declare both, autograd `np.sqrt` always and scipy's",
        "`expit` as sigmoid where scipy is installed (the `engines` extra installs it). tinygrad's sigmoid,",
        "1 / (1 + exp2(-a / ln 2)), is 11 ulps off at -40, 0.0 at -740 and has a nan gradient where exp2",
        "overflows; torch's sigmoid and scipy's expit are 0.0 at -740. All three take sqrt as the contract",
        "does. The reference, Rust and Go ports pass every sigmoid and sqrt case at every level.",
        "",
        "| adapter | engine | version | profile | run on | " + " | ".join(LEVELS) + " |",
        "|---|---|---|---|---|" + "---|" * len(LEVELS),
    ]
    for row in engines:
        if not row.get("available"):
            lines.append(
                f"| {row['adapter']} | not run: {row.get('reason', '')} | | | | " + " | ".join("" for _ in LEVELS) + " |"
            )
            continue
        cells = [_cell(row["levels"].get(level, {})) for level in LEVELS]
        lines.append(
            f"| {row['adapter']} | {row['engine']} ({row['language']}) | {row['version']} | {row['profile']} | {row['run_on']} | "
            + " | ".join(cells)
            + " |"
        )
    for row in engines:
        if not row.get("available") or not row["divergences"]:
            continue
        lines += [
            "",
            f"## {row['engine']} {row['version']}",
            "",
            "| case | levels | outcome | reason | program |",
            "|---|---|---|---|---|",
        ]
        for d in row["divergences"]:
            reason = d["reason"].replace("|", "\\|")
            program = f"`{d['program']}`" if d["program"] and not d["program"][0].isdigit() else d["program"]
            lines.append(
                f"| `{d['case']}` | {', '.join(d['levels'])} | {d['outcome']} | {reason} | {program.replace('|', '/')} |"
            )
    return "\n".join(lines) + "\n"


def load(path: Path = JSON_PATH) -> dict[str, Any]:
    """The data of docs/engines.json (empty when it does not exist yet)."""
    if not path.exists():
        return {"engines": []}
    try:
        data = json.loads(path.read_text())
    except ValueError as error:
        raise EnginesError(f"{path}: not JSON: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("engines"), list):
        raise EnginesError(f"{path}: expected an object with a list under 'engines'")
    return data


def main(argv: list[str] | None = None) -> int:
    """The command line; exit 0 on success, 1 when --check finds the page stale, 2 on an error."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the adapters and update docs/engines.json and docs/engines.md")
    run.add_argument(
        "--adapter", action="append", help="an adapter of adapters/adapters.toml (repeatable; default: all but broken)"
    )
    page = commands.add_parser("page", help="render docs/engines.md from docs/engines.json")
    page.add_argument("--check", action="store_true", help="only check that docs/engines.md is current")
    args = parser.parse_args(argv)
    try:
        data = load()
        if args.command == "run":
            from conformance.registry import load_registry

            adapters = args.adapter or [name for name in load_registry() if name not in NOT_ENGINES]
            data = run_adapters(adapters, data)
            JSON_PATH.write_text(json.dumps(data, indent=2) + "\n")
            print(f"wrote {JSON_PATH.relative_to(ROOT)}")
        text = render(data)
        if args.command == "page" and args.check:
            if not PAGE_PATH.exists() or PAGE_PATH.read_text() != text:
                print(
                    f"{PAGE_PATH.relative_to(ROOT)} is not what {JSON_PATH.relative_to(ROOT)} renders: "
                    "run `python tools/engines.py page`"
                )
                return 1
            return 0
        PAGE_PATH.write_text(text)
        print(f"wrote {PAGE_PATH.relative_to(ROOT)}")
    except EnginesError as error:
        print(f"engines: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Reports of a run: the terminal matrix and details, JSON, JUnit XML and Markdown.

The matrix has one row per adapter and level with the count of every outcome;
details list each unexpected result (failed, error, xpassed) with its message
and diagnosis. Every report is written atomically.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from .fixture import LEVELS
from .generate import write_atomic
from .runner import OUTCOMES, AdapterRun

COLUMNS = ("passed", "failed", "error", "unsupported", "xfailed", "xpassed")


def _rows(runs: list[AdapterRun]) -> list[tuple[str, str, list[int]]]:
    rows = []
    for run in runs:
        if not run.available:
            continue
        for level in LEVELS:
            counts = [run.count(outcome, level) for outcome in COLUMNS]
            if any(counts):
                rows.append((run.name, level, counts))
    return rows


def matrix_text(runs: list[AdapterRun]) -> str:
    """The adapters x levels table for a terminal."""
    header = ["adapter", "level", *COLUMNS]
    body = [[name, level, *map(str, counts)] for name, level, counts in _rows(runs)]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = []
    for row in [header, *body]:
        cells = [cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    for run in runs:
        if not run.available:
            lines.append(f"{run.name}: unavailable: {run.reason}")
        elif run.handshake is not None:
            hello = run.handshake
            lines.append(
                f"{run.name}: {hello.name} {hello.version} ({hello.language}), {run.seconds:.1f} s, "
                f"largest distance among agreeing nonzero floats: {run.largest_ulps:.0f} ulp"
            )
    return "\n".join(lines)


def details_text(runs: list[AdapterRun]) -> str:
    """Every unexpected result with its message and diagnosis."""
    blocks = []
    for run in runs:
        for result in run.unexpected:
            word = {"failed": "FAILED", "error": "ERROR", "xpassed": "UNEXPECTED PASS"}[result.outcome]
            block = [f"{word} {result.adapter} {result.case} [{result.level}]", f"  {result.message}"]
            for hint in result.diagnosis:
                block.append(f"  likely bug: {hint}")
            blocks.append("\n".join(block))
    return "\n\n".join(blocks)


def summary_line(runs: list[AdapterRun]) -> str:
    """The closing line: counts over every adapter."""
    totals = {outcome: sum(run.count(outcome) for run in runs) for outcome in OUTCOMES}
    unavailable = sum(1 for run in runs if not run.available)
    text = f"{totals['passed']} passed, {totals['failed']} failed"
    text += f", {totals['error']} errors, {totals['unsupported']} unsupported"
    text += f", {totals['xfailed']} xfailed, {totals['xpassed']} xpassed"
    if unavailable:
        text += f"; {unavailable} adapter(s) unavailable"
    return text


def to_json(runs: list[AdapterRun]) -> dict[str, Any]:
    """The JSON report."""
    adapters = []
    for run in runs:
        entry: dict[str, Any] = {"name": run.name, "available": run.available}
        if not run.available:
            entry["reason"] = run.reason
        if run.handshake is not None:
            entry["engine"] = {"name": run.handshake.name, "version": run.handshake.version, "language": run.handshake.language}
        entry.update({outcome: run.count(outcome) for outcome in ("passed", "failed", "unsupported", "xfailed", "xpassed")})
        entry["errors"] = run.count("error")
        entry["seconds"] = round(run.seconds, 3)
        entry["largest_ulps"] = run.largest_ulps if math.isfinite(run.largest_ulps) else None
        entry["levels"] = {level: {outcome: run.count(outcome, level) for outcome in COLUMNS} for level in LEVELS}
        adapters.append(entry)
    results = [r.to_json() for run in runs for r in run.results]
    return {"adapters": adapters, "results": results, "summary": summary_line(runs)}


def write_json(runs: list[AdapterRun], path: Path) -> None:
    """Write the JSON report."""
    write_atomic(path, json.dumps(to_json(runs), indent=2) + "\n")


def write_junit(runs: list[AdapterRun], path: Path) -> None:
    """Write JUnit XML: a testsuite per adapter, a testcase per (case, level)."""
    suites = ET.Element("testsuites", name="conformance")
    for run in runs:
        suite = ET.SubElement(suites, "testsuite", name=run.name, tests=str(len(run.results)))
        suite.set("failures", str(run.count("failed") + run.count("xpassed")))
        suite.set("errors", str(run.count("error")))
        suite.set("skipped", str(run.count("unsupported") + run.count("xfailed") + (0 if run.available else 1)))
        if not run.available:
            case = ET.SubElement(suite, "testcase", classname=run.name, name="(adapter)")
            ET.SubElement(case, "skipped", message=f"unavailable: {run.reason}")
        for result in run.results:
            case = ET.SubElement(suite, "testcase", classname=f"{run.name}.{result.level}", name=result.case)
            text = "\n".join([result.message, *(f"likely bug: {d}" for d in result.diagnosis)])
            if result.outcome in ("failed", "xpassed"):
                ET.SubElement(case, "failure", message=result.message.splitlines()[0] if result.message else "").text = text
            elif result.outcome == "error":
                ET.SubElement(case, "error", message=result.message.splitlines()[0]).text = text
            elif result.outcome in ("unsupported", "xfailed"):
                ET.SubElement(case, "skipped", message=f"{result.outcome}: {result.reason or result.message}")
    ET.indent(suites)
    write_atomic(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def markdown(runs: list[AdapterRun]) -> str:
    """The conformance matrix as a Markdown table (for a README)."""
    lines = ["| adapter | level | " + " | ".join(COLUMNS) + " |", "|---|---|" + "---:|" * len(COLUMNS)]
    for name, level, counts in _rows(runs):
        lines.append(f"| {name} | {level} | " + " | ".join(str(c) for c in counts) + " |")
    for run in runs:
        if not run.available:
            lines.append(f"| {run.name} | unavailable: {run.reason} |" + " |" * len(COLUMNS))
    return "\n".join(lines) + "\n"


def write_markdown(runs: list[AdapterRun], path: Path) -> None:
    """Write the Markdown matrix."""
    write_atomic(path, markdown(runs))

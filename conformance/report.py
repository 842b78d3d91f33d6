"""Reports of a run: the terminal matrix and details, JSON, JUnit XML and Markdown.

The matrix has one row per adapter and level with the count of every outcome;
details list each unexpected result (failed, error, xpassed) with its message
and diagnosis, errors that repeat one message are listed once with the cases
they cover, and an adapter that was given up on as unresponsive gets one
adapter-level block instead of one per case. Every report names the kit, the
protocol and the fixture format versions, and is written atomically.
``LiveLog`` prints progress while a run goes on, also without a terminal.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Optional, TextIO

from . import __version__
from .coverage import closest_agreeing, coverage_json, coverage_line
from .files import write_atomic
from .fixture import FORMAT_VERSION
from .protocol import LEVELS, PROTOCOL_VERSION
from .runner import OUTCOMES, AdapterRun, Outcome, Result

COLUMNS = OUTCOMES
#: How many failure lines LiveLog prints per adapter before it only counts them.
LIVE_FAILURE_LINES = 20


def versions_line() -> str:
    """The versions every report records."""
    return f"conformance {__version__}, protocol {PROTOCOL_VERSION}, fixture format {FORMAT_VERSION}"


def kit_json() -> dict[str, Any]:
    """The versions and the date, as report data."""
    return {
        "kit": __version__,
        "protocol": PROTOCOL_VERSION,
        "fixture_format": FORMAT_VERSION,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _rows(runs: list[AdapterRun]) -> list[tuple[str, str, list[int]]]:
    rows: list[tuple[str, str, list[int]]] = []
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
            closest = closest_agreeing(run)
            took = f"{run.seconds:.1f} s" if run.seconds > 0 else ""
            partial = f"declares less: {'; '.join(hello.partial())}" if hello.partial() else ""
            tail = ", ".join(part for part in (partial, took, f"closest agreeing float: {closest}" if closest else "") if part)
            lines.append(
                f"{run.name}: {hello.name} {hello.version} ({hello.language}), profile {hello.profile}"
                + (f", {tail}" if tail else "")
            )
        if run.available:
            lines.append(f"{run.name}: {coverage_line(run)}")
    return "\n".join(lines)


_WORDS = {"failed": "FAILED", "error": "ERROR", "xpassed": "UNEXPECTED PASS"}


def _groups(run: AdapterRun) -> list[list[Result]]:
    """Unexpected results, errors with one message (case ids aside) gathered into one group, in run order."""
    groups: dict[tuple[str, ...], list[Result]] = {}
    for result in run.unexpected:
        if result.outcome == Outcome.NOT_RUN or (
            run.down is not None and result.outcome == Outcome.ERROR and run.down.message in result.message
        ):
            continue  # the adapter-level diagnosis says it once
        key: tuple[str, ...] = (result.outcome, result.case, result.level)
        if result.outcome == Outcome.ERROR:
            key = ("error", re.sub(re.escape(result.case) + r"\b", "{case}", result.message))
        groups.setdefault(key, []).append(result)
    return list(groups.values())


def details_text(runs: list[AdapterRun]) -> str:
    """Every unexpected result with its message and diagnosis; each repeated error and each dead adapter once."""
    blocks = []
    for run in runs:
        for group in _groups(run):
            first = group[0]
            cases = list(dict.fromkeys(r.case for r in group))
            if len(group) == 1:
                where = f"{first.case} [{first.level}]"
            else:
                shown = ", ".join(cases[:5]) + (f", and {len(cases) - 5} more" if len(cases) > 5 else "")
                where = f"{len(group)} results in {len(cases)} case(s): {shown}"
            block = [f"{_WORDS[first.outcome]} {first.adapter} {where}"]
            block += [f"  {line}" for line in first.explanation().splitlines()]
            blocks.append("\n".join(block))
        explained = diagnosis_lines([run])
        if explained:
            blocks.append("\n".join(explained))
        if run.down is not None:
            blocks.append("ADAPTER DOWN " + run.down.describe())
        elif run.count(Outcome.NOT_RUN):
            reason = next(r.message for r in run.results if r.outcome == Outcome.NOT_RUN)
            blocks.append(f"NOT RUN {run.name}: {run.count('not-run')} (case, level) result(s): {reason}")
    return "\n\n".join(blocks)


def warning_lines(runs: list[AdapterRun]) -> list[str]:
    """One line per adapter whose expected-failures file has unreviewed drafts, one per adapter with sign-of-zero warnings."""
    warnings = [(run.name, text) for run in runs for text in (run.warning, run.signed_zero_warning) if text]
    return [f"WARNING {name}: {text}" for name, text in warnings]


def diagnosis_lines(runs: list[AdapterRun]) -> list[str]:
    """Each adapter's whole-run explanation (``consistency.Explanation``), a ``DIAGNOSIS NAME: ...`` line each."""
    return [f"DIAGNOSIS {run.name}: {line}" for run in runs if run.explanation is not None for line in run.explanation.lines()]


def summary_line(runs: list[AdapterRun]) -> str:
    """The closing line: counts over every adapter."""
    totals: dict[str, int] = {outcome.value: sum(run.count(outcome) for run in runs) for outcome in OUTCOMES}
    unavailable = sum(1 for run in runs if not run.available)
    text = f"{totals['passed']} passed, {totals['failed']} failed"
    text += f", {totals['error']} errors, {totals['unsupported']} unsupported"
    text += f", {totals['xfailed']} xfailed, {totals['xpassed']} xpassed"
    if totals["not-run"]:
        text += f", {totals['not-run']} not run"
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
            entry["profile"] = run.handshake.profile
            entry["error_kinds"] = sorted(run.handshake.error_kinds)
            entry["trace"] = run.handshake.trace
            entry["partial"] = run.handshake.partial()
        entry.update(
            {
                outcome: run.count(outcome)
                for outcome in (Outcome.PASSED, Outcome.FAILED, Outcome.UNSUPPORTED, Outcome.XFAILED, Outcome.XPASSED)
            }
        )
        entry["errors"] = run.count(Outcome.ERROR)
        entry["not_run"] = run.count(Outcome.NOT_RUN)
        if run.down is not None:
            entry["down"] = {
                "message": run.down.message,
                "faults": run.down.faults,
                "seconds": round(run.down.seconds, 3),
                "hint": run.down.hint,
                "stderr": run.down.stderr,
                "not_run": run.down.not_run,
                "diagnosis": run.down.describe(),
            }
        if run.interrupted:
            entry["interrupted"] = run.interrupted
        entry["expected_failures"] = run.expected_failures or None
        entry["unreviewed_expected_failures"] = run.unreviewed
        if run.warning:
            entry["warning"] = run.warning
        entry["signed_zero_warning"] = run.signed_zero_warning
        entry["explanation"] = run.explanation.to_json() if run.explanation is not None else None
        entry["seconds"] = round(run.seconds, 3)
        entry["largest_share"] = run.largest_share if math.isfinite(run.largest_share) else None
        if run.largest_share_at is not None:
            entry["largest_share_at"] = {"case": run.largest_share_at.case, "level": run.largest_share_at.level}
        entry["levels"] = {level: {outcome: run.count(outcome, level) for outcome in COLUMNS} for level in LEVELS}
        if run.available:
            entry["coverage"] = coverage_json(run)
        adapters.append(entry)
    results = [r.to_json() for run in runs for r in run.results]
    return {**kit_json(), "adapters": adapters, "results": results, "summary": summary_line(runs)}


def write_json(runs: list[AdapterRun], path: Path) -> None:
    """Write the JSON report."""
    write_atomic(path, json.dumps(to_json(runs), indent=2) + "\n")


def write_junit(runs: list[AdapterRun], path: Path) -> None:
    """Write JUnit XML: a testsuite per adapter, a testcase per (case, level)."""
    suites = ET.Element("testsuites", name="conformance")
    for run in runs:
        down = run.down is not None
        suite = ET.SubElement(suites, "testsuite", name=run.name, tests=str(len(run.results) + (1 if down else 0)))
        properties = ET.SubElement(suite, "properties")
        for key, value in kit_json().items():
            ET.SubElement(properties, "property", name=key, value=str(value))
        if run.available:
            ET.SubElement(properties, "property", name="coverage", value=coverage_line(run))
        suite.set("failures", str(run.count(Outcome.FAILED) + run.count(Outcome.XPASSED)))
        suite.set("errors", str(run.count(Outcome.ERROR) + (1 if down else 0)))
        skipped = (
            run.count(Outcome.UNSUPPORTED) + run.count(Outcome.XFAILED) + run.count(Outcome.NOT_RUN) + (0 if run.available else 1)
        )
        suite.set("skipped", str(skipped))
        if not run.available:
            case = ET.SubElement(suite, "testcase", classname=run.name, name="(adapter)")
            ET.SubElement(case, "skipped", message=f"unavailable: {run.reason}")
        if run.down is not None:
            case = ET.SubElement(suite, "testcase", classname=run.name, name="(adapter)")
            summary = f"{run.down.verdict}: {run.down.not_run} (case, level) result(s) not run; {run.down.message}"
            ET.SubElement(case, "error", message=summary).text = run.down.describe()
        for result in run.results:
            case = ET.SubElement(suite, "testcase", classname=f"{run.name}.{result.level}", name=result.case)
            text = result.explanation()
            if result.outcome in (Outcome.FAILED, Outcome.XPASSED):
                ET.SubElement(case, "failure", message=result.message.splitlines()[0] if result.message else "").text = text
            elif result.outcome == Outcome.ERROR:
                ET.SubElement(case, "error", message=result.message.splitlines()[0]).text = text
            elif result.outcome in (Outcome.UNSUPPORTED, Outcome.XFAILED):
                ET.SubElement(case, "skipped", message=f"{result.outcome}: {result.reason or result.message}")
            elif result.outcome == Outcome.NOT_RUN:
                ET.SubElement(case, "skipped", message=result.message)
        if run.available:
            ET.SubElement(suite, "system-out").text = f"{run.name}: {coverage_line(run)}"
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
    for run in runs:
        if run.available:
            lines.append(f"\n{run.name}: {coverage_line(run)}.")
    for run in runs:
        if run.explanation is not None and run.explanation.lines():
            lines.append("\n" + "\n".join(f"{run.name}: {line}." for line in run.explanation.lines()))
    profiles = [f"{run.name} {run.handshake.profile}" for run in runs if run.handshake is not None]
    if profiles:
        lines.append(f"\nProfiles (docs/contract.md section 9): {', '.join(profiles)}.")
    for run in runs:
        if run.down is not None:
            lines.append(f"\n{run.name} was given up on ({run.down.verdict}): {run.down.message}")
    for run in runs:
        if run.handshake is not None and run.handshake.partial():
            lines.append(f"\n{run.name} declares less: {'; '.join(run.handshake.partial())}.")
    for line in warning_lines(runs):
        lines.append(f"\n**{line}**")
    return "\n".join(lines) + "\n"


def write_markdown(runs: list[AdapterRun], path: Path) -> None:
    """Write the Markdown matrix."""
    write_atomic(path, markdown(runs))


class LiveLog:
    """Progress while a run goes on, on stderr, with or without a terminal.

    One line when an adapter starts and when it finishes (with its counts and
    time), and one line per unexpected result as it happens (the first
    LIVE_FAILURE_LINES per adapter; the rest are counted). On a terminal a
    transient ``done/total`` line is shown as well. A CI log thus shows where
    a long run stands.
    """

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._shown = 0
        self._adapter = ""
        self._started = 0.0
        self._transient = False

    def start(self, adapter: str, cases: int) -> None:
        """An adapter's run begins."""
        self._adapter, self._shown, self._started = adapter, 0, time.monotonic()
        self._line(f"{adapter}: running {cases} case(s)")

    def results(self, results: list[Result]) -> None:
        """Called with one case's results; prints the unexpected ones, a line per outcome and message."""
        lines: dict[tuple[str, str], list[str]] = {}
        for result in results:
            if result.outcome in (Outcome.FAILED, Outcome.ERROR, Outcome.XPASSED):
                first = result.message.splitlines()[0] if result.message else ""
                lines.setdefault((f"{_WORDS[result.outcome]} {result.adapter} {result.case}", first), []).append(result.level)
        for (head, first), levels in lines.items():
            self._shown += 1
            if self._shown <= LIVE_FAILURE_LINES:
                self._line(f"{head} [{', '.join(levels)}]: {first}"[:240])
            elif self._shown == LIVE_FAILURE_LINES + 1:
                self._line(f"{results[0].adapter}: more unexpected results; they are all in the report at the end")

    def progress(self, done: int, total: int, case: str) -> None:
        """A transient done/total line, on a terminal only."""
        if not self.tty or (time.monotonic() - self._started < 0.5 and done < total):
            return
        self.stream.write(f"\r\033[K{self._adapter}: {done}/{total} {case}"[:100])
        self.stream.flush()
        self._transient = True

    def finish(self, run: AdapterRun) -> None:
        """An adapter's run ended: one line with its counts."""
        counts = ", ".join(f"{run.count(o)} {o}" for o in OUTCOMES if run.count(o))
        state = f" (given up on: {run.down.verdict})" if run.down else (f" ({run.interrupted})" if run.interrupted else "")
        self._line(f"{run.name}: finished in {run.seconds:.1f} s: {counts or 'no results'}{state}")

    def note(self, text: str) -> None:
        """Any other line (a build, an unavailable adapter)."""
        self._line(text)

    def _line(self, text: str) -> None:
        if self._transient:
            self.stream.write("\r\033[K")
            self._transient = False
        self.stream.write(text + "\n")
        self.stream.flush()

"""The HTML report of a run: one self-contained file (inline CSS, SVG and script; nothing fetched at view time).

From the top: the versions and the date; the adapters (engine, version,
language, profile, the largest ulp distance of a first difference, the closest
agreeing float, how much of the selected corpus was compared); the matrix adapter x level with a count per outcome; filters
(outcome, adapter, level) that show and hide with a few lines of inline script;
then a section per failing or expected-failing (case, level) with its graph
(``failure.py``), per unexpected pass, per error (one per repeated message),
and per adapter given up on. Everything that came from an adapter is escaped.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import Optional

from ..coverage import closest_agreeing, coverage_line
from ..files import write_atomic
from ..fixture import Fixture
from ..protocol import LEVELS
from ..report import warning_lines
from ..runner import OUTCOME_TABLE, OUTCOMES, AdapterRun, Outcome, Result
from .failure import failure_html, first_difference
from .style import CSS, SCRIPT


def _anchor(name: str, number: int) -> str:
    """An element id for a result: the adapter's name in safe characters, and a number."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", name) + f"-{number}"


def _e(value: object) -> str:
    return html.escape(str(value))


def _largest_ulps(run: AdapterRun, fixtures: dict[str, Fixture]) -> Optional[float]:
    """The largest ulp distance among the first differences of the adapter's wrong answers (None: there are none)."""
    found: list[float] = []
    for result in run.results:
        fixture = fixtures.get(result.case)
        if result.observations is None or fixture is None:
            continue
        difference = first_difference(result, fixture, run.handshake)
        if difference is not None and difference.ulps is not None:
            found.append(difference.ulps)
    return max(found) if found else None


def _adapters(runs: list[AdapterRun], fixtures: dict[str, Fixture]) -> str:
    rows = [
        "<table id='adapters'><tr><th>adapter</th><th>engine</th><th>version</th><th>language</th><th>profile</th>"
        "<th>declares less</th><th>largest ulp distance (first differences)</th><th>closest agreeing float</th>"
        "<th>time</th><th>compared</th></tr>"
    ]
    for run in runs:
        attrs = f"class='filterable' data-adapter='{_e(run.name)}'"
        if not run.available:
            rows.append(f"<tr {attrs}><td>{_e(run.name)}</td><td colspan='9'>unavailable: {_e(run.reason)}</td></tr>")
            continue
        hello = run.handshake
        engine = [hello.name, hello.version, hello.language, hello.profile] if hello is not None else ["?", "?", "?", "?"]
        # What it declared less than in full (leaves-only gradients, float32, error kinds, ...), as every report says.
        engine.append(("; ".join(hello.partial()) or "nothing") if hello is not None else "?")
        ulps = _largest_ulps(run, fixtures)
        shown = (
            "none (no wrong answer)"
            if ulps is None
            else ("not finite: a nan or an infinity differs" if math.isinf(ulps) else f"{ulps:.3g}")
        )
        closest = closest_agreeing(run) or "none (no result passed)"
        cells = [run.name, *engine, shown, closest, f"{run.seconds:.1f} s", coverage_line(run)]
        rows.append(f"<tr {attrs}>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return "\n".join(rows) + "</table>"


def _matrix(runs: list[AdapterRun]) -> str:
    head = "".join(f"<th>{_e(o)}</th>" for o in OUTCOMES)
    rows = [f"<table id='matrix'><tr><th>adapter</th><th>level</th>{head}</tr>"]
    for run in runs:
        if not run.available:
            continue
        for level in LEVELS:
            counts = [run.count(outcome, level) for outcome in OUTCOMES]
            if not any(counts):
                continue
            cells = "".join(
                f"<td class='count {_e(o)}{' zero' if n == 0 else ''}' data-outcome='{_e(o)}'>{n}</td>"
                for o, n in zip(OUTCOMES, counts)
            )
            attrs = f"class='filterable' data-adapter='{_e(run.name)}' data-level='{_e(level)}'"
            rows.append(f"<tr {attrs}><td>{_e(run.name)}</td><td>{_e(level)}</td>{cells}</tr>")
    return "\n".join(rows) + "</table>"


def _filters(runs: list[AdapterRun]) -> str:
    def boxes(name: str, values: list[str], checked: set[str]) -> str:
        items = "".join(
            f"<label><input type='checkbox' name='{name}' value='{_e(v)}'{' checked' if v in checked else ''}> {_e(v)}</label>"
            for v in values
        )
        return f"<fieldset><legend>{name}</legend>{items}</fieldset>"

    shown = [o.value for o in OUTCOMES if o not in (Outcome.PASSED, Outcome.UNSUPPORTED)]
    names = [run.name for run in runs]
    return (
        "<form id='filters'>"
        + boxes("outcome", shown, set(shown))
        + boxes("adapter", names, set(names))
        + boxes("level", list(LEVELS), set(LEVELS))
        + "<p id='shown'></p></form>"
    )


def _plain_section(result: Result, anchor: str, body: str, levels: list[str], cases: list[str]) -> str:
    attrs = f"class='result' id='{_e(anchor)}' data-adapter='{_e(result.adapter)}' data-level='{_e(' '.join(levels))}'"
    attrs += f" data-outcome='{_e(result.outcome)}' data-case='{_e(' '.join(cases))}'"
    word = OUTCOME_TABLE[result.outcome].word
    where = f"<code>{_e(cases[0])}</code> [{_e(', '.join(levels))}]"
    if len(cases) > 1:
        where = f"{len(cases)} cases: " + ", ".join(f"<code>{_e(c)}</code>" for c in cases[:12])
        where += f" and {len(cases) - 12} more" if len(cases) > 12 else ""
    return (
        f"<section {attrs}><h3><span class='badge {_e(result.outcome)}'>{word}</span> {_e(result.adapter)} {where}</h3>"
        f"{body}</section>"
    )


def _errors(run: AdapterRun) -> list[str]:
    """One section per error message (case ids aside), and one per unexpected pass."""
    groups: dict[tuple[str, ...], list[Result]] = {}
    for result in run.results:
        if result.outcome == Outcome.XPASSED:
            groups.setdefault(("xpassed", result.case, result.level), []).append(result)
        elif result.outcome == Outcome.ERROR and not (run.down is not None and run.down.message in result.message):
            groups.setdefault(("error", re.sub(re.escape(result.case) + r"\b", "{case}", result.message)), []).append(result)
    sections = []
    for number, group in enumerate(groups.values()):
        first = group[0]
        body = f"<pre class='message'>{_e(first.message)}</pre>"
        body += "".join(f"<p class='bug'><b>likely bug:</b> {_e(hint)}</p>" for hint in first.diagnosis)
        levels = list(dict.fromkeys(r.level for r in group))
        cases = list(dict.fromkeys(r.case for r in group))
        sections.append(_plain_section(first, _anchor(run.name, number) + f"-{first.outcome}", body, levels, cases))
    return sections


def _down(run: AdapterRun) -> str:
    if run.down is None and not run.count(Outcome.NOT_RUN):
        return ""
    text = run.down.describe() if run.down is not None else next(r.message for r in run.results if r.outcome == Outcome.NOT_RUN)
    levels = list(dict.fromkeys(r.level for r in run.results if r.outcome == Outcome.NOT_RUN)) or list(LEVELS)
    attrs = f"class='result' data-adapter='{_e(run.name)}' data-level='{_e(' '.join(levels))}' data-outcome='not-run'"
    return (
        f"<section {attrs}><h3><span class='badge not-run'>NOT RUN</span> {_e(run.name)}: "
        f"{run.count(Outcome.NOT_RUN)} (case, level) result(s)</h3><pre class='message'>{_e(text)}</pre></section>"
    )


def render(
    runs: list[AdapterRun], fixtures: dict[str, Fixture], versions: str, date: str, title: str = "Conformance report"
) -> str:
    """The whole report as one HTML document."""
    sections: list[str] = []
    for run in runs:
        for number, result in enumerate(run.results):
            fixture = fixtures.get(result.case)
            if result.outcome in (Outcome.FAILED, Outcome.XFAILED) and fixture is not None and result.observations is not None:
                sections.append(
                    failure_html(
                        result,
                        fixture,
                        run.handshake,
                        _anchor(run.name, number),
                        run.reproducers.get((result.case, result.level)),
                    )
                )
            elif result.outcome == Outcome.XFAILED:
                body = f"<p class='reason'><b>expected failure:</b> {_e(result.reason)}</p>"
                body += f"<pre class='message'>{_e(result.message)}</pre>"
                sections.append(_plain_section(result, _anchor(run.name, number), body, [result.level], [result.case]))
        sections += _errors(run)
        sections.append(_down(run))
    warnings = "".join(f"<p class='warning'>{_e(line)}</p>" for line in warning_lines(runs))
    warnings += "".join(
        f"<p class='diagnosis'><b>{_e(run.name)}:</b> {_e(line)}</p>"
        for run in runs
        if run.explanation is not None
        for line in run.explanation.lines()
    )
    details = "\n".join(s for s in sections if s) or "<p>Nothing failed: every result passed, was unsupported or not run.</p>"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{CSS}</style></head>
<body>
<header><h1>{_e(title)}</h1><p class='versions'>{_e(versions)}; generated {_e(date)}</p></header>
<h2>Adapters</h2>
{_adapters(runs, fixtures)}
<h2>Matrix</h2>
{_matrix(runs)}
{warnings}
<h2>Failures, expected failures, errors</h2>
{_filters(runs)}
<div id="details">
{details}
</div>
<script>{SCRIPT}</script>
</body></html>
"""


def write_html(runs: list[AdapterRun], fixtures: dict[str, Fixture], path: Path, versions: str, date: str) -> None:
    """Write the report atomically: a reader sees the old file or the whole new one."""
    write_atomic(path, render(runs, fixtures, versions, date))

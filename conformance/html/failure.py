"""One failing (case, level) as HTML: the program, the graph, expected beside actual, the likely bug, stderr.

The first difference is found again with ``compare_level`` from the result's
actual observations, under the adapter's profile; its JSON path names the node
or edge the graph marks. Everything an adapter produced (numbers, stderr) is
escaped before it is written.
"""

from __future__ import annotations

import html
import math
import re
from typing import TYPE_CHECKING, Optional

from ..compare import Difference, as_float, compare_level, show
from ..fixture import Fixture
from ..protocol import Observation
from ..runner import OUTCOME_TABLE, Result
from ..transport import Handshake
from .draw import number, svg
from .graph import Focus, build_graph, focus_of

if TYPE_CHECKING:
    from ..reproducer import Reproducer

#: Lines of the adapter's stderr a failure shows.
STDERR_LINES = 15
#: Rows of the expected/actual table at most.
MAX_FIELDS = 24


def first_difference(result: Result, fixture: Fixture, hello: Optional[Handshake]) -> Optional[Difference]:
    """The first difference of a failed result, found again from its actual observations (None without them)."""
    if result.observations is None:
        return None
    profile = hello.profile if hello is not None else "contract"
    edges = hello is None or hello.trace == "full"
    if hello is not None:
        fixture = hello.view(fixture)
    found, _ = compare_level(fixture, list(result.observations), result.level, 1, profile=profile, edges=edges)
    return found[0] if found else None


def failure_html(
    result: Result, fixture: Fixture, hello: Optional[Handshake], anchor: str, reproducer: Optional["Reproducer"] = None
) -> str:
    """The section of one failed (or xfailed) result, with its minimal reproducer when the run shrank one."""
    e = html.escape
    parts = [_heading(result, anchor)]
    parts.append(f"<p class='message'>{e(result.message)}</p>")
    for hint in result.diagnosis:
        parts.append(f"<p class='bug'><b>likely bug:</b> {e(hint)}</p>")
    if reproducer is not None:
        parts.append(f"<pre class='reproducer'>{e(chr(10).join(reproducer.lines()))}</pre>")
    if result.reason:
        parts.append(f"<p class='reason'><b>expected failure:</b> {e(result.reason)}</p>")
    rules = result.rules()
    if rules:
        parts.append(f"<p class='rules'>contract: {e(', '.join(rule.reference() for rule in rules))}</p>")
    difference = first_difference(result, fixture, hello)
    actual = list(result.observations or ())
    step = difference.step if difference is not None else len(fixture.program) - 1
    focus = focus_of(difference.path, fixture, actual) if difference is not None else None
    graph = build_graph(fixture, step, actual, focus)
    parts.append("<div class='columns'>")
    parts.append(_program(fixture, step))
    picture, note = svg(graph, anchor)
    size = f"{graph.total_nodes} nodes and {graph.total_edges} operand edges up to step {step}"
    if graph.cut:
        where = graph.focus.node if graph.focus is not None else "the step"
        size = f"the {len(graph.nodes)} nodes within a few hops of {where}, of {size}"
    caption = (
        f"Graph at step {step}: {size}; numbers from {graph.annotated_from}; the adapter's value in brackets where it differs."
    )
    parts.append(f"<figure class='graph-box'><figcaption>{e(caption)}</figcaption>")
    if note:
        parts.append(f"<p class='note'>{e(note)}</p>")
    parts.append(f"{picture}</figure></div>")
    if difference is not None:
        parts.append(_side_by_side(difference, fixture, actual, graph.focus, result.level, hello))
    if result.stderr.strip():
        tail = "\n".join(result.stderr.rstrip().splitlines()[-STDERR_LINES:])
        summary = "adapter stderr (its last lines when this case was compared: the adapter may have been running later cases)"
        parts.append(f"<details><summary>{e(summary)}</summary><pre class='stderr'>{e(tail)}</pre></details>")
    else:
        parts.append("<p class='note'>adapter stderr: (empty)</p>")
    return "\n".join(parts) + "</section>"


def _heading(result: Result, anchor: str) -> str:
    e = html.escape
    attrs = f"class='result' id='{e(anchor)}' data-adapter='{e(result.adapter)}' data-level='{e(result.level)}'"
    attrs += f" data-outcome='{e(result.outcome)}' data-case='{e(result.case)}'"
    word = OUTCOME_TABLE[result.outcome].word
    return (
        f"<section {attrs}><h3><span class='badge {e(result.outcome)}'>{e(word)}</span> "
        f"{e(result.adapter)} <code>{e(result.case)}</code> [{e(result.level)}]</h3>"
    )


def _program(fixture: Fixture, step: int) -> str:
    e = html.escape
    items = []
    shown = range(len(fixture.program))
    if len(fixture.program) > 60:  # the LLM cases and the deep chain: the steps around the difference
        shown = range(max(0, step - 20), min(len(fixture.program), step + 10))
    before = f"<p class='gap'>... {shown.start} earlier steps</p>" if shown.start > 0 else ""
    for index in shown:
        mark = " class='here'" if index == step else ""
        items.append(f"<li{mark}><code>{e(fixture.program[index].describe())}</code></li>")
    after = f"<p class='gap'>... {len(fixture.program) - shown.stop} later steps</p>" if shown.stop < len(fixture.program) else ""
    head = f"<h4>Program ({len(fixture.program)} steps)</h4>"
    return f"<div class='program'>{head}{before}<ol start='{shown.start}'>{''.join(items)}</ol>{after}</div>"


def _relevant(key: str, focus: Optional[Focus]) -> bool:
    if focus is None:
        return True
    if focus.is_edge:
        return key.startswith(f"pass.edges[{focus.node}:{focus.slot}]")
    return key in ("value", f"gradients.{focus.node}") or key.startswith(f"pass.nodes[{focus.node}]")


def _side_by_side(
    difference: Difference,
    fixture: Fixture,
    actual: list[Observation],
    focus: Optional[Focus],
    level: str,
    hello: Optional[Handshake],
) -> str:
    """The first difference, then the focus's fields at that step: expected | actual.

    Only fields the result's level compares are shown beside it: pass-record fields at ``trace`` and
    ``order``, error fields where the adapter declares the ``errors`` level, so an adapter that keeps no
    pass record never sees those fields as differences.
    """
    e = html.escape
    index = difference.step
    want = fixture.expected[index].floats() if index < len(fixture.expected) else {}
    got = actual[index].floats() if index < len(actual) else {}
    # A pass record the case does not compare (no trace level) is not shown beside nothing.
    has_pass = index < len(fixture.expected) and fixture.expected[index].pass_ is not None and level in ("trace", "order")
    errors = hello is None or "errors" in hello.levels
    keys = [
        k
        for k in dict.fromkeys([*want, *got])
        if _relevant(k, focus) and (has_pass or not k.startswith("pass.")) and (errors or not k.startswith("error."))
    ]
    keys = keys[:MAX_FIELDS]
    path = re.sub(r"^observations\[\d+\]\.?", "", difference.path) or "(the step)"
    ulps = _distance(difference)
    rows = [
        "<table class='sides'><tr><th>field at step " + str(index) + "</th><th>expected</th><th>actual</th><th>ulps</th></tr>",
        f"<tr class='first'><td><code>{e(path)}</code></td><td>{e(_plain(difference.expected))}</td>"
        f"<td>{e(_plain(difference.actual))}</td><td>{e(ulps)}</td></tr>",
    ]
    for key in keys:
        if f"observations[{index}].{key}" == difference.path:
            continue
        a, b = want.get(key), got.get(key)
        cls = " class='differs'" if number(a) != number(b) else ""
        rows.append(f"<tr{cls}><td><code>{e(key)}</code></td><td>{e(number(a))}</td><td>{e(number(b))}</td><td></td></tr>")
    return "\n".join(rows) + "</table>"


def _distance(difference: Difference) -> str:
    """The ulp distance as the table shows it: ``nan`` or ``inf`` for a non-finite side, never "ulps inf"."""
    if difference.ulps is None:
        return ""
    if math.isfinite(difference.ulps):
        return f"{difference.ulps:.3g}"
    sides = [as_float(difference.expected), as_float(difference.actual)]
    if any(side is not None and math.isnan(side) for side in sides):
        return "nan (no distance)"
    return "inf (an infinite side)"


def _plain(value: object) -> str:
    text = show(value)
    return text if len(text) < 400 else text[:400] + " ..."

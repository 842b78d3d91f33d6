"""``conformance explain CASE --html``: the walk-through of one case as a page, a graph per backward.

The same picture as a failure's, with nothing marked: every node with its value,
pass adjoint and stored gradient, every operand edge with its slot, local
derivative and contribution, after each backward of the case (and the values
alone when the case has none). Big graphs show the neighbourhood of the output.
"""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path

from ..files import write_atomic
from ..fixture import Fixture
from ..program import Step
from .draw import svg
from .graph import build_graph
from .style import CSS

#: A longer program shows its first and last HALF steps.
HALF = 30


def walk_html(fixture: Fixture, versions: str) -> str:
    """The page: the case, its program, and a figure per backward step."""
    e = html.escape
    program = list(enumerate(fixture.program))
    if len(program) > 2 * HALF:  # the LLM cases, the deep chain: the start and the end
        skipped = f"<p class='gap'>... {len(program) - 2 * HALF} steps not shown</p>"
        steps = _items(program[:HALF]) + f"</ol>{skipped}<ol start='{len(program) - HALF}'>" + _items(program[-HALF:])
    else:
        steps = _items(program)
    backwards = [i for i, step in enumerate(fixture.program) if step.op == "backward"] or [len(fixture.program) - 1]
    figures = []
    for index in backwards:
        graph = build_graph(fixture, index)
        size = f"{graph.total_nodes} nodes and {graph.total_edges} operand edges"
        if graph.cut and graph.focus is not None:
            size = f"the {len(graph.nodes)} nodes within a few hops of {graph.focus.node}, of {size}"
        picture, note = svg(dataclasses.replace(graph, focus=None), f"step{index}")
        error = fixture.expected[index].error
        outcome = f"fails: {error.kind}; the numbers are the last pass's" if error is not None else ""
        caption = (
            f"After step {index}, {fixture.program[index].describe()}: {size}; numbers from {graph.annotated_from}. {outcome}"
        )
        note_html = f"<p class='note'>{e(note)}</p>" if note else ""
        figures.append(f"<figure class='graph-box walk'><figcaption>{e(caption)}</figcaption>{note_html}{picture}</figure>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(fixture.id)}</title><style>{CSS}</style></head>
<body><header><h1>{e(fixture.id)}</h1><p class='versions'>{e(versions)}</p></header>
<p>{e(fixture.description)}</p>
<p>ops: {e(", ".join(fixture.ops) or "-")}; levels: {e(", ".join(fixture.levels))}; comparison: {e(fixture.comparison.mode)}</p>
<h2>Program ({len(program)} steps)</h2><ol start='0'>{steps}</ol>
<h2>Graphs</h2>
{"".join(figures)}
</body></html>
"""


def _items(steps: list[tuple[int, Step]]) -> str:
    return "".join(f"<li><code>{html.escape(step.describe())}</code></li>" for _, step in steps)


def write_walk(fixture: Fixture, path: Path, versions: str) -> None:
    """Write the walk-through page atomically."""
    write_atomic(path, walk_html(fixture, versions))

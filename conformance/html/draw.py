"""Drawing a ``Graph``: an SVG laid out by Graphviz's ``dot``, or a plain table where ``dot`` is missing.

The layout is dot's (a subprocess, ``dot -Tsvg``); nothing here places a node by
hand. The focus (the first differing node or edge) is the one element with the
class ``focus``, in the picture and in the table alike, so a reader (and a test)
finds it the same way in both. Every label is escaped: ids come from fixtures,
numbers from adapters.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from typing import Optional

from .graph import Graph, GraphEdge, GraphNode

#: Seconds dot may take for one graph before the table is shown instead.
DOT_TIMEOUT = 20.0


def dot_missing() -> Optional[str]:
    """Why no picture can be drawn (dot is not on PATH), or None."""
    if shutil.which("dot") is None:
        return "Graphviz's dot is not on PATH (install the graphviz package), so the graph is shown as a table"
    return None


def number(value: object) -> str:
    """A float as the report shows it: repr (every bit), none for a missing one."""
    if value is None:
        return "none"
    return repr(value) if isinstance(value, float) else str(value)


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _node_label(node: GraphNode) -> list[str]:
    lines = [f"{node.id} = {node.operation}"]
    if node.failed:
        return [*lines, f"fails: {node.failed}"]
    lines.append(f"value {number(node.value)}" + _actual(node.actual, "value"))
    if node.tracked:
        if node.pass_adjoint is not None or "pass_adjoint" in node.actual:
            lines.append(f"pass adjoint {number(node.pass_adjoint)}" + _actual(node.actual, "pass_adjoint"))
        lines.append(f"stored gradient {number(node.stored_gradient)}" + _actual(node.actual, "stored_gradient"))
    else:
        lines.append("untracked")
    return lines


def _edge_label(edge: GraphEdge) -> list[str]:
    if edge.detached:
        return ["detach (no edge)"]
    lines = [f"slot {edge.slot}"]
    if edge.local_derivative is not None or "local_derivative" in edge.actual:
        lines.append(f"local {number(edge.local_derivative)}" + _actual(edge.actual, "local_derivative"))
        lines.append(f"contribution {number(edge.contribution)}" + _actual(edge.actual, "contribution"))
    return lines


def _actual(actual: dict[str, object], name: str) -> str:
    return f" (got {number(actual[name])})" if name in actual else ""


def _is_focus_node(graph: Graph, node: GraphNode) -> bool:
    return graph.focus is not None and not graph.focus.is_edge and graph.focus.node == node.id


def _is_focus_edge(graph: Graph, edge: GraphEdge) -> bool:
    return graph.focus is not None and graph.focus.is_edge and (graph.focus.node, graph.focus.slot) == (edge.consumer, edge.slot)


def to_dot(graph: Graph, prefix: str = "g") -> str:
    """The graph in the DOT language: operands left, consumers right, edges in slot order.

    Element ids start with ``prefix``, so several pictures in one page never share an id.
    """
    index = {node.id: f"n{i}" for i, node in enumerate(graph.nodes)}
    lines = [
        "digraph G {",
        f'  rankdir=LR; bgcolor="transparent"; id="{_dot_text(prefix)}";',
        '  node [shape=box, style="rounded,filled", fillcolor="#f6f8fa", color="#8c959f", fontname="Helvetica", fontsize=10];',
        '  edge [color="#57606a", fontname="Helvetica", fontsize=9];',
    ]
    for node in graph.nodes:
        label = "\\n".join(_dot_text(line) for line in _node_label(node))
        attrs = [f'label="{label}"', f'id="{_dot_text(prefix)}-{index[node.id]}"']
        if node.actual:
            attrs.append('fillcolor="#fff1e5"')
        if not node.tracked or node.failed:
            attrs.append('style="rounded,dashed"')
        if _is_focus_node(graph, node):
            attrs += ['class="focus"', 'color="#cf222e"', "penwidth=3"]
        lines.append(f"  {index[node.id]} [{', '.join(attrs)}];")
    for position, edge in enumerate(sorted(graph.edges, key=lambda e: (index[e.consumer], e.slot))):
        label = "\\n".join(_dot_text(line) for line in _edge_label(edge))
        attrs = [f'label="{label}"', f'id="{_dot_text(prefix)}-e{position}"']
        if edge.detached:
            attrs.append("style=dashed")
        if edge.actual:
            attrs.append('fontcolor="#bc4c00"')
        if _is_focus_edge(graph, edge):
            attrs += ['class="focus"', 'color="#cf222e"', 'fontcolor="#cf222e"', "penwidth=3"]
        lines.append(f"  {index[edge.operand]} -> {index[edge.consumer]} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def svg(graph: Graph, prefix: str = "g") -> tuple[str, str]:
    """The graph as inline SVG, or as a table with the reason there is no picture: (markup, note)."""
    missing = dot_missing()
    if missing is not None:
        return table(graph), missing
    try:
        done = subprocess.run(
            ["dot", "-Tsvg"], input=to_dot(graph, prefix), capture_output=True, text=True, timeout=DOT_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return table(graph), f"dot failed ({error}), so the graph is shown as a table"
    if done.returncode != 0:
        return table(graph), f"dot failed ({done.stderr.strip()[:200]}), so the graph is shown as a table"
    text = done.stdout
    start = text.find("<svg")
    text = text[start:].replace("<svg ", '<svg class="graph" ', 1)
    return re.sub(r"<!--.*?-->\n?", "", text, flags=re.S), ""


def table(graph: Graph) -> str:
    """The graph as two plain tables (nodes, then edges), the focus row marked with the class ``focus``."""
    rows = ["<table class='graph-table'><tr><th>node</th><th>operation</th><th>value</th>"]
    rows[0] += "<th>pass adjoint</th><th>stored gradient</th></tr>"
    for node in graph.nodes:
        mark = " class='focus'" if _is_focus_node(graph, node) else ""
        cells = [node.id, node.operation, _cell(node, "value"), _cell(node, "pass_adjoint"), _cell(node, "stored_gradient")]
        rows.append(f"<tr{mark}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    rows.append("</table><table class='graph-table'><tr><th>consumer</th><th>slot</th><th>operand</th>")
    rows[-1] += "<th>local derivative</th><th>contribution</th></tr>"
    for edge in graph.edges:
        mark = " class='focus'" if _is_focus_edge(graph, edge) else ""
        cells = [edge.consumer, str(edge.slot), edge.operand, _cell(edge, "local_derivative"), _cell(edge, "contribution")]
        rows.append(f"<tr{mark}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return "\n".join(rows) + "</table>"


def _cell(item: GraphNode | GraphEdge, name: str) -> str:
    return number(getattr(item, name)) + _actual(item.actual, name)

"""``conformance train --html FILE``: the loss curve as a page in the report's visual language.

One self-contained page (the report's stylesheet): the run's settings, the first
step's loss and the mean of the last 20%, the verdict coloured as an outcome
(passed when the loss fell, failed when it did not), and the curve as inline SVG:
every step's loss in a light line, its moving average (the same window as the
PNG of ``--plot``) in a dark one, with the axes' round values.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Sequence

from ..files import write_atomic
from ..plot import moving_average, nice_ticks
from .style import COLOURS, CSS

#: The chart's size and its margins (left for the loss labels, bottom for the step labels), in pixels.
WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 820, 420, 60, 40, 16, 16


def loss_svg(losses: Sequence[float]) -> str:
    """The curve as an SVG element: each step light, the moving average dark, round values on both axes."""
    low, high = min(losses), max(losses)
    yticks = nice_ticks(low, high) if high > low else [low]
    low, high = min(low, yticks[0]), max(high, yticks[-1])
    span = (high - low) or 1.0
    steps = max(1, len(losses) - 1)

    def x(i: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * i / steps

    def y(v: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (high - v) / span

    parts = [f"<svg class='loss' viewBox='0 0 {WIDTH} {HEIGHT}' width='{WIDTH}' height='{HEIGHT}' role='img'>"]
    for tick in yticks:
        parts.append(f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y(tick):.1f}' y2='{y(tick):.1f}' stroke='#eaeef2'/>")
        parts.append(f"<text x='{LEFT - 6}' y='{y(tick) + 4:.1f}' text-anchor='end' font-size='11'>{tick:g}</text>")
    for tick in nice_ticks(1, len(losses)) if len(losses) > 1 else [1.0]:
        below = HEIGHT - BOTTOM + 16
        parts.append(f"<text x='{x(tick - 1):.1f}' y='{below}' text-anchor='middle' font-size='11'>{tick:g}</text>")
    parts.append(f"<text x='{(WIDTH + LEFT) / 2}' y='{HEIGHT - 6}' text-anchor='middle' font-size='12'>step</text>")
    parts.append(f"<line x1='{LEFT}' x2='{LEFT}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' stroke='#57606a'/>")
    parts.append(f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{HEIGHT - BOTTOM}' y2='{HEIGHT - BOTTOM}' stroke='#57606a'/>")
    window = max(1, len(losses) // 20)
    for series, colour, width in ((losses, "#a0bee6", 1.5), (moving_average(losses, window), COLOURS["passed"], 2.5)):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(series))
        parts.append(f"<polyline fill='none' stroke='{colour}' stroke-width='{width}' points='{points}'/>")
    return "".join(parts) + "</svg>"


def loss_html(losses: Sequence[float], settings: str, first: float, last: float, tail: int, versions: str) -> str:
    """The page: settings, the two losses, the verdict and the curve."""
    e = html.escape
    fell = last < first
    verdict = f"the loss fell by {first - last:.4f}" if fell else "the loss did not fall"
    outcome = "passed" if fell else "failed"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Training loss</title><style>{CSS}</style></head>
<body><header><h1>Training loss</h1><p class='versions'>{e(versions)}</p></header>
<p>{e(settings)}</p>
<table><tr><th>first-step loss</th><td>{first:.4f}</td></tr>
<tr><th>mean loss over the last 20% ({tail} step{"s" if tail > 1 else ""})</th><td>{last:.4f}</td></tr>
<tr><th>verdict</th><td><span class='badge {outcome}'>{outcome.upper()}</span> {e(verdict)}</td></tr></table>
<figure class='graph-box'><figcaption>Loss per step (light) and its moving average over {max(1, len(losses) // 20)}
step(s) (dark).</figcaption>{loss_svg(losses)}</figure>
</body></html>
"""


def write_loss_page(path: Path, losses: Sequence[float], settings: str, first: float, last: float, tail: int) -> None:
    """Write the page atomically."""
    from ..report import versions_line

    write_atomic(path, loss_html(losses, settings, first, last, tail, versions_line()))

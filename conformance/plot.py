"""A small PNG line chart, written with zlib and struct only.

``conformance train --plot`` draws the loss curve. A plotting library would
be a heavy dependency for one picture, so this module rasterises the chart
itself: a white canvas, light grid lines at round values, axes, the series as
2-pixel polylines, and tick labels in a built-in 3x5 pixel digit font. The
PNG is 8-bit RGB, no interlace, one IDAT chunk (PNG spec, ISO/IEC 15948).
"""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path
from typing import Sequence

RGB = tuple[int, int, int]

WHITE: RGB = (255, 255, 255)
BLACK: RGB = (0, 0, 0)
GRID: RGB = (225, 225, 225)
LIGHT_BLUE: RGB = (160, 190, 230)
DARK_BLUE: RGB = (20, 70, 160)

# 3x5 glyphs, one string of 15 pixels per character, row by row ("#" is ink).
_FONT = {
    "0": "####.##.##.####",
    "1": ".#.##..#..#.###",
    "2": "###..#####..###",
    "3": "###..####..####",
    "4": "#.##.####..#..#",
    "5": "####..###..####",
    "6": "####..####.####",
    "7": "###..#..#..#..#",
    "8": "####.#####.####",
    "9": "####.####..####",
    ".": "............#..",
    "-": "......###......",
}
_SCALE = 2  # font pixels per glyph pixel


class Canvas:
    """An RGB raster, row 0 at the top."""

    def __init__(self, width: int, height: int, background: RGB = WHITE) -> None:
        self.width = width
        self.height = height
        self.rows = [bytearray(bytes(background) * width) for _ in range(height)]

    def set(self, x: int, y: int, color: RGB) -> None:
        """Paint one pixel; pixels outside the canvas are ignored."""
        if 0 <= x < self.width and 0 <= y < self.height:
            self.rows[y][3 * x : 3 * x + 3] = bytes(color)

    def line(self, x0: int, y0: int, x1: int, y1: int, color: RGB, thickness: int = 1) -> None:
        """A straight line (Bresenham), ``thickness`` pixels wide."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        error = dx + dy
        while True:
            for ox in range(thickness):
                for oy in range(thickness):
                    self.set(x0 + ox, y0 + oy, color)
            if x0 == x1 and y0 == y1:
                return
            doubled = 2 * error
            if doubled >= dy:
                error += dy
                x0 += sx
            if doubled <= dx:
                error += dx
                y0 += sy

    def text(self, x: int, y: int, label: str, color: RGB = BLACK) -> None:
        """Draw digits, '.' and '-' with the top-left corner at (x, y)."""
        for character in label:
            glyph = _FONT.get(character)
            if glyph is not None:
                for index, pixel in enumerate(glyph):
                    if pixel == "#":
                        gx, gy = index % 3, index // 3
                        for ox in range(_SCALE):
                            for oy in range(_SCALE):
                                self.set(x + gx * _SCALE + ox, y + gy * _SCALE + oy, color)
            x += 4 * _SCALE

    def png(self) -> bytes:
        """The canvas as PNG bytes."""

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)  # 8-bit RGB
        raw = b"".join(b"\x00" + bytes(row) for row in self.rows)  # filter type 0 on every row
        return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def text_width(label: str) -> int:
    """Width in pixels of ``label`` in the built-in font."""
    return len(label) * 4 * _SCALE - _SCALE


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) covering [low, high]."""
    if not high > low:
        high = low + 1.0
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _label(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:.{decimals}f}"


def line_chart(series: Sequence[tuple[Sequence[float], RGB]], width: int = 800, height: int = 450) -> bytes:
    """PNG bytes of one or more series against their index (0, 1, 2, ...), sharing both axes."""
    values = [v for points, _ in series for v in points if math.isfinite(v)]
    if not values:
        raise ValueError("line_chart needs at least one finite value")
    length = max(len(points) for points, _ in series)
    y_ticks = nice_ticks(min(values), max(values))
    y_low, y_high = min(y_ticks[0], min(values)), max(y_ticks[-1], max(values))
    if y_high == y_low:
        y_high = y_low + 1.0
    x_ticks = [t for t in nice_ticks(0, max(1, length - 1)) if float(t).is_integer()]
    y_step = y_ticks[1] - y_ticks[0] if len(y_ticks) > 1 else 1.0
    labels = [_label(t, y_step) for t in y_ticks]
    left = 20 + max(text_width(label) for label in labels)
    right, top, bottom = width - 20, 20, height - 40
    canvas = Canvas(width, height)

    def px(i: float) -> int:
        return left + round((right - left) * i / max(1, length - 1))

    def py(v: float) -> int:
        return bottom - round((bottom - top) * (v - y_low) / (y_high - y_low))

    for tick, label in zip(y_ticks, labels):
        y = py(tick)
        canvas.line(left, y, right, y, GRID)
        canvas.text(left - 10 - text_width(label), y - 5, label)
    for tick in x_ticks:
        x = px(tick)
        canvas.line(x, top, x, bottom, GRID)
        label = str(int(tick))
        canvas.text(x - text_width(label) // 2, bottom + 10, label)
    canvas.line(left, top, left, bottom, BLACK)
    canvas.line(left, bottom, right, bottom, BLACK)
    for points, color in series:
        previous = None
        for i, v in enumerate(points):
            if not math.isfinite(v):
                previous = None
                continue
            point = (px(i), py(v))
            if previous is not None:
                canvas.line(*previous, *point, color, thickness=2)
            previous = point
    return canvas.png()


def moving_average(points: Sequence[float], window: int) -> list[float]:
    """The mean of each point and up to ``window - 1`` points before it."""
    out = []
    total = 0.0
    for i, v in enumerate(points):
        total += v
        if i >= window:
            total -= points[i - window]
        out.append(total / min(i + 1, window))
    return out


def write_loss_plot(path: Path, losses: Sequence[float]) -> None:
    """Write the loss curve (each step, light) and its moving average (dark) as a PNG."""
    window = max(1, len(losses) // 20)
    path.write_bytes(line_chart([(losses, LIGHT_BLUE), (moving_average(losses, window), DARK_BLUE)]))

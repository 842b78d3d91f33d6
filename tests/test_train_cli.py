"""``conformance train``: a short run shows the loss falling; bad input is one line and exit 2; the PNG is valid."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from conformance.plot import line_chart, moving_average, nice_ticks
from reference.corpus import CorpusError, read_corpus

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")


def train(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "train", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    assert (depth, color) == (8, 2)
    return width, height


def test_a_short_training_run_lowers_the_loss_and_writes_the_plot_and_the_page(tmp_path):
    plot, page = tmp_path / "loss.png", tmp_path / "loss.html"
    result = train("--steps", "10", "--plot", str(plot), "--html", str(page))
    assert result.returncode == 0, result.stderr
    first = float(re.search(r"first-step loss:\s+([0-9.]+)", result.stdout).group(1))
    last = float(re.search(r"mean loss over the last 20% \(2 steps\):\s+([0-9.]+)", result.stdout).group(1))
    assert last < first - 0.2, result.stdout
    assert "nodes/s" in result.stdout
    assert result.stderr == "", "no progress bar when stderr is not a terminal"
    assert _png_size(plot.read_bytes()) == (800, 450)
    text = page.read_text()
    # The page states the same two losses and draws every step (10 points) and the moving average.
    assert f"<td>{first:.4f}</td>" in text and f"<td>{last:.4f}</td>" in text and "PASSED" in text
    assert [len(points.split()) for points in re.findall(r"points='([^']*)'", text)] == [10, 10]


def test_a_bad_character_in_the_corpus_is_one_line_naming_the_file_and_line(tmp_path):
    corpus = tmp_path / "names.txt"
    corpus.write_text("emma\n\nolivia\nann-marie\n")
    result = train("--corpus", str(corpus), "--steps", "1")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"conformance: error: {corpus}:4: character '-' in 'ann-marie' is not a letter a-z (one document per line, letters only)"
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--corpus", "no/such/corpus.txt"], "no/such/corpus.txt: no such corpus file"),
        (["--steps", "0"], "--steps must be at least 1, got 0"),
        (["--plot", "no/such/folder/loss.png"], "folder no/such/folder does not exist"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message):
    result = train(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_an_empty_corpus_file_is_rejected(tmp_path):
    corpus = tmp_path / "empty.txt"
    corpus.write_text("\n  \n")
    with pytest.raises(CorpusError, match="the corpus is empty"):
        read_corpus(corpus)


def test_a_user_corpus_is_stripped_lowercased_and_skips_blank_lines(tmp_path):
    corpus = tmp_path / "names.txt"
    corpus.write_text("  Emma \n\nOLIVIA\n")
    assert read_corpus(corpus) == ["emma", "olivia"]


def test_the_line_chart_is_a_valid_png_with_the_curve_drawn():
    data = line_chart([([3.3, 3.0, 2.5, 2.6, 2.0], (20, 70, 160))], width=200, height=120)
    assert _png_size(data) == (200, 120)
    idat = data.index(b"IDAT")
    (length,) = struct.unpack(">I", data[idat - 4 : idat])
    raw = zlib.decompress(data[idat + 4 : idat + 4 + length])
    assert len(raw) == 120 * (1 + 3 * 200)
    assert bytes((20, 70, 160)) in raw
    assert data.endswith(b"IEND\xaeB`\x82")


def test_ticks_are_round_and_cover_the_range():
    assert nice_ticks(2.03, 3.51) == [2.5, 3.0, 3.5]
    assert nice_ticks(0, 99) == [0, 20, 40, 60, 80]
    assert moving_average([1.0, 3.0, 5.0], 2) == [1.0, 2.0, 4.0]

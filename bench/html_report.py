"""How big the HTML report of the full corpus is, and how long headless Chromium takes to open it.

    .venv/bin/python bench/html_report.py [--repeat 5]

Two reports, each written by ``conformance run --html``: the full corpus against every
built-in adapter that is available here (the issue's figure), and the full corpus against
the broken engine ``merge-edges`` (adapters/broken), which fails many cases, the LLM ones among
them, so nearly every graph and neighbourhood cut is exercised. For each: the file size,
and the seconds from asking Chromium to open the file to its load event (the median and
the slowest of ``--repeat`` opens, each in a fresh page load), with the date and the
machine. Absolute figures: the requirement is under 5 MB and under 2 s.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from chromium import Chromium, find_chromium  # noqa: E402

CLI = str(Path(sys.executable).parent / "conformance")
OUT = ROOT / "build/html-report"
PYTHON = os.path.relpath(sys.executable, ROOT)
REPORTS = {
    "every built-in adapter": ["run"],
    "broken engine merge-edges": ["run", "--command", f"{PYTHON} adapters/broken/adapter.py merge-edges"],
}


def machine() -> str:
    """The CPU, core count, and the browser's and dot's versions."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    browser, _ = find_chromium()
    version = subprocess.run([browser or "true", "--version"], capture_output=True, text=True).stdout.strip()
    dot = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr.strip()
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; {version}; {dot}"


def main() -> int:
    """Write each report, measure it, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="opens per report (default 5)")
    args = parser.parse_args()
    print(f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {machine()}")
    for name, command in REPORTS.items():
        path = OUT / f"{name.replace(' ', '-')}.html"
        started = time.perf_counter()
        done = subprocess.run([CLI, *command, "--html", str(path)], cwd=ROOT, capture_output=True, text=True)
        took = time.perf_counter() - started
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()
        if not path.exists():
            print(f"{name}: no report written (exit {done.returncode}): {summary}")
            return 1
        opens = []
        with Chromium() as browser:
            for _ in range(args.repeat):
                opens.append(browser.open(path))
            sections = browser.evaluate("document.querySelectorAll('section.result').length")
            graphs = browser.evaluate("document.querySelectorAll('svg.graph').length")
        size = path.stat().st_size
        print(
            f"{name}: {summary}; run and report {took:.1f} s; {size / 1e6:.2f} MB, {sections} sections, {graphs} graphs; "
            f"open to load event: median {statistics.median(opens):.2f} s, slowest {max(opens):.2f} s ({args.repeat} opens)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

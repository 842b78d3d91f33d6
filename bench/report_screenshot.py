"""The README's picture of a real HTML report: run the command it names, open the page in headless Chromium, save a PNG.

    make report-screenshot        # writes docs/html-report.png

The report is of the broken engine ``stale`` (adapters/broken) on the seed cases, the
command shown under the picture in README.md; the PNG is the top of the page (the
adapters, the matrix, the filters and the first failure with its graph).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from chromium import Chromium  # noqa: E402

CLI = str(Path(sys.executable).parent / "conformance")
#: The command README.md shows under the picture (run from the checkout's root).
PYTHON = os.path.relpath(sys.executable, ROOT)  # .venv/bin/python in a checkout
COMMAND = [
    "run",
    "--command",
    f"{PYTHON} adapters/broken/adapter.py stale",
    "--case",
    "seed/*",
    "--html",
    "build/html-report/stale.html",
]
PICTURE = ROOT / "docs/html-report.png"


def main() -> int:
    """Write the report, then its screenshot."""
    done = subprocess.run([CLI, *COMMAND], cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        print(done.stdout + done.stderr, file=sys.stderr)
        return done.returncode
    with Chromium(width=1280, height=1400) as browser:
        browser.open(ROOT / COMMAND[-1])
        browser.screenshot(PICTURE)
    print(f"wrote {PICTURE.relative_to(ROOT)} from `conformance {shlex.join(COMMAND)}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())

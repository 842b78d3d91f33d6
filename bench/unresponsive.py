"""How long a run against a faulty adapter takes with the default timeouts, beside a healthy adapter's run.

Usage: python bench/unresponsive.py

Each fake of tests/fakes/unresponsive_adapter.py runs through the real CLI
(`conformance run --command ...`) on the whole canonical corpus with no timeout
option, so the figures are what a porter whose adapter has that fault sees.
The baseline is the python adapter's run of the same corpus, in the same run.
Printed as a Markdown table for the README.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "fakes" / "unresponsive_adapter.py"
CLI = str(Path(sys.executable).with_name("conformance"))
FAULTS = {
    "healthy (python adapter, the baseline)": None,
    "never answers hello (stdout not flushed)": "silent-hello",
    "answers hello, never a run (results not flushed)": "hang-run",
    "answers hello, then stops reading stdin": "deaf",
    "starts a child that holds stdout, then exits": "orphan",
    "hangs on one case only": "hang-one",
}


def measure(mode: str | None, folder: Path) -> tuple[float, int, dict]:
    """Seconds, exit code and the adapter's JSON report entry."""
    command = f"{sys.executable} {ROOT / 'adapters/python/adapter.py'}"
    if mode is not None:
        command = f"{sys.executable} {FAKE} {mode} bench-token" + (" seed/reused-square" if mode == "hang-one" else "")
    report = folder / f"{mode}.json"
    started = time.monotonic()
    out = subprocess.run([CLI, "run", "--command", command, "--json", str(report)], capture_output=True, text=True, cwd=folder)
    seconds = time.monotonic() - started
    entry = json.loads(report.read_text())["adapters"][0]
    return seconds, out.returncode, entry


def main() -> None:
    """Measure every fault and print the table."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        baseline = None
        for label, mode in FAULTS.items():
            seconds, code, entry = measure(mode, Path(tmp))
            baseline = baseline or seconds
            verdict = "given up on as unresponsive" if entry.get("down") else f"{entry['errors']} error result(s)"
            rows.append(
                f"| {label} | {seconds:.1f} s | {seconds / baseline:.1f} | {code} | {verdict} | "
                f"{entry['passed']} passed, {entry['not_run']} not run |"
            )
    print("| adapter | run time | vs healthy | exit | diagnosis | results |")
    print("|---|---:|---:|---:|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

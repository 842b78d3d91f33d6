"""Minimal reproducers for every catalogue mutant: their size, how many failures got one, and the run's time.

Runs ``conformance run --json`` on the canonical corpus (without the cases that need the ``repeat``
feature, which the broken engines do not declare) once with the python adapter (the clean baseline,
best of 3) and once per bug of the catalogue through ``adapters/broken``, shrinking on (the default).
For each bug: the failed (case, level) results, how many got a reproducer, the largest reproducer's
steps, the notes of those without one, and the run's time against the clean one. The goal (issue 33):
every failure has a reproducer of at most 8 steps or says why not, and no run takes over 3x the clean.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.fixture import load_corpus  # noqa: E402
from conformance.mutants import BUGS  # noqa: E402

CLI = str(Path(sys.executable).parent / "conformance")
#: The reproducer size the issue asks for at most.
MOST_STEPS = 8


def timed(folder: Path, name: str, *args: str) -> tuple[float, dict]:
    """Seconds one ``conformance run`` takes, from the start of the process to its exit, and its JSON report."""
    report = folder / f"{name}.json"
    start = time.perf_counter()
    subprocess.run([CLI, "run", "--json", str(report), *args], cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - start, json.loads(report.read_text())


def main() -> None:
    """Time the clean run and every broken one; print a Markdown table and the bugs that miss a goal."""
    cases = [arg for f in load_corpus() if "repeat" not in f.features for arg in ("--case", f.id)]
    misses = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        clean = min(timed(folder, "clean", "--adapter", "python", *cases)[0] for _ in range(3))
        rows = {}
        for bug in BUGS:
            seconds, report = timed(folder, bug, "--command", f"{sys.executable} adapters/broken/adapter.py {bug}", *cases)
            failed = [r for r in report["results"] if r["outcome"] == "failed"]
            shrunk = [r["reproducer"] for r in failed if "reproducer" in r]
            largest = max((r["steps"] for r in shrunk), default=0)
            notes = [note for adapter in report["adapters"] for note in adapter.get("reproducer_notes") or ()]
            rows[bug] = (seconds, len(failed), len(shrunk), largest)
            if len(shrunk) < len(failed) and not notes:
                misses.append(f"{bug}: {len(failed) - len(shrunk)} failure(s) without a reproducer and no note")
            if largest > MOST_STEPS:
                misses.append(f"{bug}: a reproducer of {largest} steps")
            if seconds > 3 * clean:
                misses.append(f"{bug}: {seconds / clean:.1f}x the clean run")
    times = [row[0] for row in rows.values()]
    worst = max(rows, key=lambda bug: rows[bug][0])
    failures = sum(row[1] for row in rows.values())
    shrunk = sum(row[2] for row in rows.values())
    print("| run | seconds | vs clean |")
    print("|---|---:|---:|")
    print(f"| clean (python adapter, best of 3) | {clean:.1f} | 1.0 |")
    print(
        f"| median of the {len(rows)} broken engines | {statistics.median(times):.1f} | {statistics.median(times) / clean:.1f} |"
    )
    print(f"| worst: `{worst}` | {rows[worst][0]:.1f} | {rows[worst][0] / clean:.1f} |")
    print()
    print(f"{shrunk} of {failures} failed results got a reproducer; the largest has {max(r[3] for r in rows.values())} steps")
    short = [f"{bug} {row[2]}/{row[1]}" for bug, row in rows.items() if row[2] < row[1]]
    if short:
        print("with failures left without a reproducer (each says why in its notes): " + ", ".join(short))
    for line in misses:
        print(f"MISS {line}")


if __name__ == "__main__":
    main()

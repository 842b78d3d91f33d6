"""How long a broken port waits for its report: every bug of the catalogue against a clean run.

Runs ``conformance run`` on the canonical corpus (without the cases that need the ``repeat``
feature, which the broken engines do not declare) once with the python adapter
(the clean baseline) and once per bug through ``adapters/broken``; the broken
runs include the diagnosis of every failed result. Prints the baseline, the
median and the worst broken run as ratios to it.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.fixture import load_corpus  # noqa: E402
from conformance.mutants import BUGS  # noqa: E402

CLI = str(Path(sys.executable).parent / "conformance")


def timed(*args: str) -> float:
    """Seconds one ``conformance run`` takes, from the start of the process to its exit."""
    start = time.perf_counter()
    subprocess.run([CLI, "run", *args], cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> None:
    """Time the clean run and every broken one; print a Markdown table."""
    # The cases every run can run: the broken engines do not declare ``repeat``, so the million-node chain
    # (seconds on the Python reference) would be in the clean run only.
    cases = [arg for f in load_corpus() if "repeat" not in f.features for arg in ("--case", f.id)]
    clean = min(timed("--adapter", "python", *cases) for _ in range(3))
    broken = {bug: timed("--command", f"{sys.executable} adapters/broken/adapter.py {bug}", *cases) for bug in BUGS}
    worst = max(broken, key=broken.__getitem__)
    print("| run | seconds | vs clean |")
    print("|---|---:|---:|")
    print(f"| clean (python adapter, best of 3) | {clean:.1f} | 1.0 |")
    median = statistics.median(broken.values())
    print(f"| median of the {len(broken)} broken engines | {median:.1f} | {median / clean:.1f} |")
    print(f"| worst: `{worst}` | {broken[worst]:.1f} | {broken[worst] / clean:.1f} |")


if __name__ == "__main__":
    main()

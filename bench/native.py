"""The Rust and Go bench binaries, shared by the benchmark scripts.

Each binary reads a program file (a JSON array of steps, the fixture format),
runs it without building observations and prints one JSON line:
``{"engine", "nodes", "forward_seconds", "backward_seconds"}``, and optionally
``"peak_rss_delta_bytes"`` (Go) or ``"rss_delta_bytes"`` (Rust): the growth of the
resident set over the run, and
``"cold_forward_seconds"``, ``"cold_backward_seconds"`` (every binary runs the program
twice: the first run, in memory just returned to the system or never used, is cold; the
second, timed as forward/backward, reuses the memory the first left behind, as a training
loop's steps after the first do).

A name ending in ``-minimal`` is a language's minimal tape engine (bench/minimal/),
the limit baseline its port is shown against: ``go-minimal`` for ``go``, ``rust-minimal``
for ``rust``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def native_binaries() -> dict[str, list[str]]:
    """The Rust and Go bench binaries, built here (when stale) if their toolchains exist."""
    found: dict[str, list[str]] = {}
    if shutil.which("cargo"):
        subprocess.run(
            ["cargo", "build", "--release", "--quiet", "--bin", "scalar-bench"], cwd=ROOT / "adapters/rust", check=True
        )
        found["rust"] = [str(ROOT / "adapters/rust/target/release/scalar-bench")]
    if shutil.which("go"):
        subprocess.run(["go", "build", "-o", "bin/bench", "./cmd/bench"], cwd=ROOT / "adapters/go", check=True)
        found["go"] = [str(ROOT / "adapters/go/bin/bench")]
        subprocess.run(["go", "build", "-o", "bin/minimal", "."], cwd=ROOT / "bench/minimal/go", check=True)
        found["go-minimal"] = [str(ROOT / "bench/minimal/go/bin/minimal")]
    if shutil.which("cargo"):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT / "bench/minimal/rust", check=True)
        found["rust-minimal"] = [str(ROOT / "bench/minimal/rust/target/release/minimal-bench")]
    return found


def rss_delta(timing: dict[str, Any]) -> int | None:
    """The resident-set growth a bench binary reports, under either of its names."""
    value = timing.get("peak_rss_delta_bytes", timing.get("rss_delta_bytes"))
    return None if value is None else int(value)


def time_native(command: list[str], steps: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    """Run a bench binary on the steps (JSON-ready, non-finite floats as strings) and return its timing line."""
    path = folder / "program.json"
    path.write_text(json.dumps(steps))
    out = subprocess.run([*command, str(path)], capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def fastest(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest (forward + backward) of a bench binary's runs, with the cold times of the fastest cold run.

    Warm and cold are each the best of the same runs: a cold run is one pass and the
    slower for it, so on a shared machine one run's is mostly noise, and taking it from
    the run whose warm pass was fastest would make the cold row the least repeatable.
    """
    best = min(runs, key=lambda t: float(t["forward_seconds"]) + float(t["backward_seconds"]))
    if "cold_forward_seconds" not in best:
        return best
    best_cold = min(runs, key=lambda t: float(t["cold_forward_seconds"]) + float(t["cold_backward_seconds"]))
    return {
        **best,
        "cold_forward_seconds": best_cold["cold_forward_seconds"],
        "cold_backward_seconds": best_cold["cold_backward_seconds"],
    }


def best_native(command: list[str], steps: list[dict[str, Any]], folder: Path, repeat: int) -> dict[str, Any]:
    """The fastest of ``repeat`` runs of a bench binary on the steps, warm and cold each (``fastest``)."""
    return fastest([time_native(command, steps, folder) for _ in range(repeat)])


def cold(timing: dict[str, Any]) -> dict[str, Any] | None:
    """The timing of a binary's cold first run, if it reports one."""
    if "cold_forward_seconds" not in timing:
        return None
    return {**timing, "forward_seconds": timing["cold_forward_seconds"], "backward_seconds": timing["cold_backward_seconds"]}


def minimal_of(name: str) -> str:
    """The minimal engine a native row is shown against: ``go`` -> ``go-minimal``, ``go, cold`` -> ``go-minimal, cold``."""
    base, comma, variant = name.partition(", ")
    return f"{base}-minimal{comma}{variant}"

"""The Rust and Go bench binaries, shared by the benchmark scripts.

Each binary reads a program file (a JSON array of steps, the fixture format),
runs it without building observations and prints one JSON line:
``{"engine", "nodes", "forward_seconds", "backward_seconds"}``, and optionally
``rss_delta_bytes``, the growth of its resident set over the run. A
``<language>-minimal`` binary is that language's limit baseline (a minimal
tape engine kept in bench/minimal/, not a port).
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
    if shutil.which("cargo"):
        # The limit baseline (bench/minimal/rust): a minimal tape engine, not the port.
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT / "bench/minimal/rust", check=True)
        found["rust-minimal"] = [str(ROOT / "bench/minimal/rust/target/release/minimal-bench")]
    return found


def minimal_of(name: str) -> str | None:
    """The limit baseline a bench binary is measured against (``rust`` -> ``rust-minimal``), or None for a baseline."""
    return None if name.endswith("-minimal") else f"{name}-minimal"


def best_native(command: list[str], steps: list[dict[str, Any]], folder: Path, runs: int) -> dict[str, Any]:
    """The fastest of ``runs`` runs of a bench binary on the steps (the program file is written once)."""
    path = folder / "program.json"
    path.write_text(json.dumps(steps))
    timings = []
    for _ in range(runs):
        out = subprocess.run([*command, str(path)], capture_output=True, text=True, check=True, timeout=600)
        timings.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return min(timings, key=lambda t: float(t["forward_seconds"]) + float(t["backward_seconds"]))


def time_native(command: list[str], steps: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    """Run a bench binary on the steps (JSON-ready, non-finite floats as strings) and return its timing line."""
    path = folder / "program.json"
    path.write_text(json.dumps(steps))
    out = subprocess.run([*command, str(path)], capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

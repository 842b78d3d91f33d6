"""The three mutation tools, driven and read back: cosmic-ray (reference), cargo-mutants (Rust), gremlins (Go).

Each tool mutates a copy of its engine under ``build/mutate/`` (never the worktree's own
files) and judges each mutant with ``bench/mutate/judge.py`` (the corpus, nothing else).
``results(engine)`` reads what the tool recorded back as ``Mutant`` rows; ``reproduce``
writes one mutant into a fresh copy again, for the rechecks on the whole corpus and the
fuzzer (``bench/mutate/run.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from judge import MEMORY_LIMIT

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = ROOT / "build" / "mutate"
TOOLS_VENV = ROOT / "build" / "mutate-venv"
COSMIC_RAY = "8.7.0"
CARGO_MUTANTS = "27.1.0"
GREMLINS = "v0.6.0"
#: The reference's engine files: the node and backward, the pass record, the errors, the op table, the rounding.
REFERENCE_FILES = ("node.py", "record.py", "errors.py", "ops.py", "crmath.py")
#: The Rust port's engine files (its wire, program runner, GPT and binaries are not mutated).
RUST_FILES = ("backward.rs", "ops.rs", "error.rs", "scalar.rs", "tape.rs", "record.rs")
#: Files of the Go module gremlins leaves alone: everything but the engine package ``autograd``.
GO_EXCLUDE = "^(cmd|program|wire|gpt|internal)/"


@dataclass
class Mutant:
    """One mutant as a tool made and judged it; ``key`` names it stably across runs (equivalent.toml)."""

    engine: str
    file: str
    line: int
    column: int
    operator: str
    status: str  # killed, survived, timeout, unviable, not-covered
    recipe: dict[str, object] = field(default_factory=dict)
    text: str = ""
    key: str = ""
    full: Optional[bool] = None  # survived the whole corpus too (None: not rechecked)
    fuzz: Optional[bool] = None  # the default fuzz run found it (None: not fuzzed)


def env_for_tools() -> dict[str, str]:
    """The environment the tests of the Rust and Go mutants need to find the judge, single-threaded where it can."""
    return dict(
        os.environ,
        MUTATE_PYTHON=sys.executable,
        MUTATE_JUDGE=str(HERE / "judge.py"),
        MUTATE_BRIDGE=str(HERE / "bridge.py"),
        MUTATE_MEMORY_LIMIT=str(MEMORY_LIMIT),
        GOFLAGS="-p=1",
        GOMAXPROCS="1",
    )


def setup() -> None:
    """Install the three tools from their registries when they are missing (PyPI, crates.io, the Go module proxy)."""
    if not (TOOLS_VENV / "bin" / "cosmic-ray").exists():
        print(f"== installing cosmic-ray {COSMIC_RAY} into {TOOLS_VENV}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(TOOLS_VENV)], check=True)
        subprocess.run([str(TOOLS_VENV / "bin" / "pip"), "install", "--quiet", f"cosmic-ray=={COSMIC_RAY}"], check=True)
    if shutil.which("cargo"):
        version = subprocess.run(["cargo", "mutants", "--version"], capture_output=True, text=True).stdout
        if CARGO_MUTANTS not in version:
            print(f"== installing cargo-mutants {CARGO_MUTANTS} (a few minutes)", flush=True)
            subprocess.run(["cargo", "install", "cargo-mutants", "--locked", "--version", CARGO_MUTANTS, "-j", "1"], check=True)
    if shutil.which("go") and not gremlins_binary().exists():
        print(f"== installing gremlins {GREMLINS}", flush=True)
        subprocess.run(["go", "install", f"github.com/go-gremlins/gremlins/cmd/gremlins@{GREMLINS}"], check=True)


def gremlins_binary() -> Path:
    """Where ``go install`` puts gremlins."""
    gopath = subprocess.run(["go", "env", "GOPATH"], capture_output=True, text=True).stdout.strip()
    return Path(gopath or Path.home() / "go") / "bin" / "gremlins"


def fresh_copy(engine: str, destination: Path) -> Path:
    """A clean copy of the engine's sources at ``destination`` (build outputs kept, for incremental builds)."""
    if engine == "reference":
        shutil.rmtree(destination / "reference", ignore_errors=True)
        destination.mkdir(parents=True, exist_ok=True)
        shutil.copytree(ROOT / "reference", destination / "reference", ignore=shutil.ignore_patterns("__pycache__"))
    elif engine == "rust":
        destination.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(destination / "src", ignore_errors=True)
        shutil.copytree(ROOT / "adapters" / "rust" / "src", destination / "src")
        for name in ("Cargo.toml", "Cargo.lock"):
            shutil.copy(ROOT / "adapters" / "rust" / name, destination / name)
        (destination / "tests").mkdir(exist_ok=True)
        for old in (destination / "tests").iterdir():
            old.unlink()
        shutil.copy(HERE / "rust_corpus.rs", destination / "tests" / "corpus.rs")
    else:
        shutil.rmtree(destination, ignore_errors=True)
        shutil.copytree(ROOT / "adapters" / "go", destination, ignore=shutil.ignore_patterns("bin", "*_test.go"))
        shutil.copy(HERE / "go_corpus_test.go", destination / "cmd" / "adapter" / "corpus_test.go")
    return destination


def run_tool(engine: str, rust_files: Optional[tuple[str, ...]] = None) -> None:
    """Run the engine's mutation tool over a fresh copy, every mutant judged by the quick corpus run.

    ``rust_files`` narrows cargo-mutants to some of ``RUST_FILES`` (default: all of them).
    """
    env = env_for_tools()
    if engine == "reference":
        source = fresh_copy("reference", BUILD / "reference-src")
        config = BUILD / "reference.toml"
        paths = ", ".join(f'"reference/{name}"' for name in REFERENCE_FILES)
        judge = f"{sys.executable} {HERE / 'judge.py'} reference --source . --quick"
        config.write_text(
            f'[cosmic-ray]\nmodule-path = [{paths}]\ntimeout = 300.0\nexcluded-modules = []\ntest-command = "{judge}"\n'
            '\n[cosmic-ray.distributor]\nname = "local"\n'
        )
        session = BUILD / "reference.sqlite"
        session.unlink(missing_ok=True)
        cosmic_ray = str(TOOLS_VENV / "bin" / "cosmic-ray")
        subprocess.run([cosmic_ray, "init", str(config), str(session)], cwd=source, check=True, env=env)
        subprocess.run([cosmic_ray, "exec", str(config), str(session)], cwd=source, check=True, env=env)
    elif engine == "rust":
        source = fresh_copy("rust", BUILD / "rust-src")
        files = [arg for name in (rust_files or RUST_FILES) for arg in ("-f", f"src/{name}")]
        shutil.rmtree(BUILD / "rust-out", ignore_errors=True)
        command = ["cargo", "mutants", "-d", str(source), "-o", str(BUILD / "rust-out"), "-j", "1", *files]
        command += ["--minimum-test-timeout", "60", "--", "--test", "corpus"]
        subprocess.run(command, env=env)  # exits non-zero when a mutant survives
    else:
        source = fresh_copy("go", BUILD / "go-src")
        # gremlins' limit is a multiple of its coverage run's time, which a loaded machine overruns: a larger one.
        command = [str(gremlins_binary()), "unleash", "--workers", "1", "--integration", "--coverpkg", "./..."]
        command += ["--timeout-coefficient", "10"]
        command += ["-E", GO_EXCLUDE, "-o", str(BUILD / "go-results.json"), "."]
        subprocess.run(command, cwd=source, env=env, check=True)


def results(engine: str) -> list[Mutant]:
    """The mutants the tool recorded in its last run, each with its stable key."""
    if engine == "reference":
        mutants = _cosmic_ray_results()
    elif engine == "rust":
        mutants = _cargo_mutants_results()
    else:
        mutants = _gremlins_results()
    seen: dict[str, int] = {}
    for mutant in sorted(mutants, key=lambda m: (m.file, m.line, m.column, m.operator)):
        lines = (ROOT / mutant.file).read_text().splitlines()
        mutant.text = lines[mutant.line - 1].strip() if 0 < mutant.line <= len(lines) else ""
        key = f"{mutant.file} | {mutant.text} | {mutant.operator}"
        seen[key] = seen.get(key, 0) + 1
        mutant.key = key if seen[key] == 1 else f"{key} | #{seen[key]}"
    return mutants


def _cosmic_ray_results() -> list[Mutant]:
    dump_command = [str(TOOLS_VENV / "bin" / "cosmic-ray"), "dump", str(BUILD / "reference.sqlite")]
    dump = subprocess.run(dump_command, capture_output=True, text=True, check=True).stdout
    mutants = []
    for line in dump.splitlines():
        job, result = json.loads(line)
        (mutation,) = job["mutations"]
        outcome = (result or {}).get("test_outcome")
        status = {"killed": "killed", "survived": "survived", "incompetent": "unviable"}.get(outcome or "", "not-run")
        start_line, start_column = mutation["start_pos"]
        recipe = {k: mutation[k] for k in ("module_path", "operator_name", "occurrence")}
        # The mutated line, from the tool's diff, names the change (NumberReplacer makes two at one place).
        diff = (result or {}).get("diff", "").splitlines()
        added = [row[1:].strip() for row in diff if row.startswith("+") and not row.startswith("+++")]
        operator = f"{mutation['operator_name']} -> {added[0]}" if added else mutation["operator_name"]
        mutants.append(Mutant("reference", mutation["module_path"], start_line, start_column, operator, status, recipe))
    return mutants


def _cargo_mutants_results() -> list[Mutant]:
    outcomes = json.loads((BUILD / "rust-out" / "mutants.out" / "outcomes.json").read_text())
    mutants = []
    words = {"CaughtMutant": "killed", "MissedMutant": "survived", "Timeout": "timeout", "Unviable": "unviable"}
    for outcome in outcomes["outcomes"]:
        scenario = outcome["scenario"]
        if not isinstance(scenario, dict) or "Mutant" not in scenario:
            continue  # the baseline
        mutant = scenario["Mutant"]
        start = mutant["span"]["start"]
        operator = mutant["name"].split(": ", 1)[-1]  # "replace + with - in sweep", without the place
        recipe = {"diff": outcome.get("diff_path") or "", "file": mutant["file"]}
        status = words.get(outcome["summary"], outcome["summary"])
        path = f"adapters/rust/{mutant['file']}"
        mutants.append(Mutant("rust", path, start["line"], start["column"], operator, status, recipe))
    return mutants


def _gremlins_results() -> list[Mutant]:
    report = json.loads((BUILD / "go-results.json").read_text())
    words = {"KILLED": "killed", "LIVED": "survived", "TIMED OUT": "timeout", "NOT VIABLE": "unviable"}
    mutants = []
    for entry in report["files"]:
        for mutation in entry["mutations"]:
            status = words.get(mutation["status"], "not-covered")
            recipe = {"file": entry["file_name"], "type": mutation["type"]}
            recipe.update(line=mutation["line"], column=mutation["column"])
            path = f"adapters/go/{entry['file_name']}"
            operator = f"{mutation['type']} at column {mutation['column']}"
            mutants.append(Mutant("go", path, mutation["line"], mutation["column"], operator, status, recipe))
    return mutants

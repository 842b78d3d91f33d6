"""Automatic mutation testing of the engines with the corpus as the only test (``make mutate``).

Usage::

    python bench/mutate/run.py [--engine reference|rust|go ...] [--rust-file NAME ...] [--collect-only] [--no-fuzz] [--json FILE]

For each engine: its mutation tool (``bench/mutate/mutators.py``) mutates a copy of the
engine, and each mutant is judged by the corpus without the million-node chain
(``bench/mutate/judge.py``); each mutant that survives is built again and run on the
whole corpus, and then by the fuzzer's default run (``conformance fuzz``, 200
examples, seed 0). Survivors of both that ``bench/mutate/equivalent.toml`` lists are
equivalent (no program can observe them, each with its reason); any other survivor
fails the run. Prints the table of the README's "Mutation score" and the survivors.
``--collect-only`` reads the tools' last results instead of running them again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge import EXPECTED, SOCKET, adapter_command, judge, limited  # noqa: E402
from mutators import BUILD, HERE, ROOT, RUST_FILES, TOOLS_VENV, Mutant, fresh_copy, results, run_tool, setup  # noqa: E402

from conformance.tomlfile import load_toml  # noqa: E402

ENGINES = ("reference", "rust", "go")
EQUIVALENT = HERE / "equivalent.toml"
CONFORMANCE = Path(sys.executable).parent / "conformance"
#: What one default fuzz run may take before it counts as not finding the mutant.
FUZZ_TIMEOUT = 600.0


class ListError(Exception):
    """A malformed equivalent.toml; the message names the file and the entry."""


def load_equivalents(path: Path = EQUIVALENT) -> dict[str, str]:
    """The reviewed list: mutant key to the one-line reason no program can observe it."""
    if not path.exists():
        return {}
    data = load_toml(path, ListError)
    found = {}
    for index, entry in enumerate(data.get("equivalent", [])):
        if not isinstance(entry.get("mutant"), str) or not isinstance(entry.get("why"), str) or not entry["why"].strip():
            raise ListError(f"{path}: equivalent entry {index}: needs a string 'mutant' and a non-empty 'why'")
        found[entry["mutant"]] = entry["why"]
    return found


def reproduce(mutant: Mutant) -> Optional[str]:
    """Write the mutant into a recheck copy and build it; the adapter command, or None when it does not build."""
    where = BUILD / "recheck" / mutant.engine
    source = fresh_copy(mutant.engine, where)
    recipe = mutant.recipe
    if mutant.engine == "reference":
        cosmic_ray = str(TOOLS_VENV / "bin" / "cosmic-ray")
        step = [cosmic_ray, "apply", str(recipe["module_path"]), str(recipe["operator_name"]), str(recipe["occurrence"])]
        subprocess.run(step, cwd=source, check=True, capture_output=True)
        return shlex.join(adapter_command("reference", source))
    if mutant.engine == "rust":
        diff = BUILD / "rust-out" / "mutants.out" / str(recipe["diff"])
        subprocess.run(["patch", "--quiet", str(recipe["file"]), "-i", str(diff)], cwd=source, check=True)
        # The debug profile, as cargo-mutants built it for the corpus test (and a faster build than release).
        build = ["cargo", "build", "--quiet", "-j", "1", "--bin", "scalar-adapter"]
        if subprocess.run(build, cwd=source, capture_output=True).returncode:
            return None
        return shlex.join(limited(source / "target" / "debug" / "scalar-adapter"))
    apply_gremlin(source / str(recipe["file"]), int(str(recipe["line"])), int(str(recipe["column"])), str(recipe["type"]))
    if subprocess.run(["go", "build", "-o", "bin/adapter", "./cmd/adapter"], cwd=source, capture_output=True).returncode:
        return None
    return shlex.join(limited(source / "bin" / "adapter"))


#: gremlins' token replacements (its internal/engine/mappings.go), by mutation type.
GREMLIN_TOKENS = {
    "ARITHMETIC_BASE": {"+": "-", "*": "/", "/": "*", "%": "*", "-": "+"},
    "CONDITIONALS_BOUNDARY": {">=": ">", ">": ">=", "<=": "<", "<": "<="},
    "CONDITIONALS_NEGATION": {"==": "!=", ">=": "<", ">": "<=", "<=": ">", "<": ">=", "!=": "=="},
    "INCREMENT_DECREMENT": {"--": "++", "++": "--"},
    "INVERT_NEGATIVES": {"-": "+"},
    "INVERT_LOGICAL": {"&&": "||", "||": "&&"},
    "INVERT_ASSIGNMENTS": {"+=": "-=", "*=": "/=", "/=": "*=", "-=": "+="},
    "REMOVE_SELF_ASSIGNMENTS": {"+=": "=", "-=": "=", "*=": "=", "/=": "="},
    "INVERT_LOOPCTRL": {"break": "continue", "continue": "break"},
}


def apply_gremlin(path: Path, line: int, column: int, kind: str) -> None:
    """Replace the operator token at (line, column) as gremlins does for ``kind``."""
    lines = path.read_text().split("\n")
    text = lines[line - 1]
    at = column - 1
    table = GREMLIN_TOKENS[kind]
    token = max((t for t in table if text.startswith(t, at)), key=len)
    lines[line - 1] = text[:at] + table[token] + text[at + len(token) :]
    path.write_text("\n".join(lines))


def full_corpus(mutant: Mutant, command: str, selection: str) -> bool:
    """True when the mutant passes the whole corpus, the million-node chain included.

    ``selection`` is ``slow`` when the tool's quick run saw this same corpus (then only the
    cases it left out need to run), else ``all``.
    """
    return judge(mutant.engine, BUILD / "recheck" / mutant.engine, selection, command) == 0


def default_fuzz(mutant: Mutant, command: str) -> bool:
    """True when the fuzzer's default run (200 examples, seed 0) finds a divergence on the mutant."""
    fuzz = [str(CONFORMANCE), "fuzz", "--command", command]
    if mutant.engine in EXPECTED:
        fuzz += ["--expected-failures", str(EXPECTED[mutant.engine])]
    try:
        run = subprocess.run(fuzz, cwd=BUILD / "recheck" / mutant.engine, capture_output=True, text=True, timeout=FUZZ_TIMEOUT)
    except subprocess.TimeoutExpired:
        return False
    return "DIVERGENCE" in run.stdout


def corpus_digest() -> str:
    """A digest of the fixture files: a cached verdict holds only for the corpus it was reached on."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "fixtures").rglob("*.json")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def judge_survivors(mutants: list[Mutant], fuzz: bool, equivalents: Optional[dict[str, str]] = None) -> None:
    """Recheck every quick-run survivor on the whole corpus, then fuzz what the whole corpus misses.

    Verdicts are kept in ``build/mutate/verdicts-ENGINE.json``, the corpus's per corpus
    digest and the fuzzer's (which reads no fixture) once, so a second pass (or one running
    beside the tool, as the tool adds survivors) rechecks only what is new. The survivors
    not listed as equivalent go first: they are the ones the fuzzer must find.
    """
    if not mutants:
        return
    engine = mutants[0].engine
    digest = corpus_digest()
    stamp = BUILD / f"{engine}.corpus"
    selection = "slow" if stamp.exists() and stamp.read_text() == digest else "all"
    path = BUILD / f"verdicts-{engine}.json"
    cache: dict[str, dict[str, Any]] = json.loads(path.read_text()) if path.exists() else {}
    known, found = cache.setdefault(digest, {}), cache.setdefault("fuzz", {})
    listed = equivalents or {}
    for mutant in sorted(mutants, key=lambda m: (m.key in listed, m.status == "timeout")):
        # A tool's timeout is rechecked too: on a loaded machine a slow run is not always a hang.
        if mutant.status not in ("survived", "timeout"):
            continue
        if mutant.key not in known or (fuzz and known[mutant.key] == "survived" and mutant.key not in found):
            command = reproduce(mutant)
            if command is None:
                known[mutant.key] = "unviable"
            else:
                known[mutant.key] = "survived" if full_corpus(mutant, command, selection) else "killed"
                if fuzz and known[mutant.key] == "survived" and mutant.key not in found:
                    found[mutant.key] = default_fuzz(mutant, command)
                    print(f"  survivor: {mutant.key}  (default fuzz: {'found' if found[mutant.key] else 'missed'})", flush=True)
            path.write_text(json.dumps(cache, indent=1) + "\n")
        mutant.status = known[mutant.key]
        mutant.full = mutant.status == "survived"
        mutant.fuzz = found.get(mutant.key) if mutant.full else None


def row(engine: str, mutants: list[Mutant], equivalents: dict[str, str]) -> dict[str, int]:
    """The table's counts for one engine."""
    survivors = [m for m in mutants if m.status == "survived"]
    return {
        "generated": len(mutants),
        "killed by the corpus": sum(m.status in ("killed", "timeout") for m in mutants),
        "unviable": sum(m.status == "unviable" for m in mutants),
        "not covered": sum(m.status == "not-covered" for m in mutants),
        "corpus survivors": len(survivors),
        "of them found by the default fuzz": sum(bool(m.fuzz) for m in survivors),
        "equivalent": sum(m.key in equivalents for m in survivors),
        "survived": sum(m.key not in equivalents for m in survivors),
    }


def table(rows: dict[str, dict[str, int]]) -> str:
    """The Markdown table of the README."""
    columns = list(next(iter(rows.values())))
    lines = ["| engine | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for engine, counts in rows.items():
        lines.append(f"| {engine} | " + " | ".join(str(counts[c]) for c in columns) + " |")
    return "\n".join(lines)


def main() -> int:
    """Run the tools, recheck and fuzz the survivors, print the table; 1 when a non-equivalent survivor remains."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument(
        "--engine", action="append", choices=ENGINES, help="engine to mutate (default: each one whose toolchain is here)"
    )
    parser.add_argument("--collect-only", action="store_true", help="read the tools' last results, do not run them")
    parser.add_argument(
        "--rust-file",
        action="append",
        choices=RUST_FILES,
        help="mutate only this file of the Rust port (repeatable; default: every one of RUST_FILES)",
    )
    parser.add_argument("--no-fuzz", action="store_true", help="do not fuzz the survivors")
    parser.add_argument("--json", type=Path, default=BUILD / "report.json", help="where to write every mutant and verdict")
    args = parser.parse_args()
    engines = args.engine or [e for e in ENGINES if e == "reference" or shutil.which({"rust": "cargo", "go": "go"}[e])]
    try:
        equivalents = load_equivalents(EQUIVALENT)
    except ListError as error:
        print(f"mutate: {error}", file=sys.stderr)
        return 2
    BUILD.mkdir(parents=True, exist_ok=True)
    if not args.collect_only:
        setup()
    server = None
    if not SOCKET.exists():  # one is running already when a collect-only pass runs beside the tools
        server = subprocess.Popen([sys.executable, str(HERE / "judge.py"), "serve"])
        for _ in range(600):
            if SOCKET.exists():
                break
            time.sleep(0.1)
    rows: dict[str, dict[str, int]] = {}
    every: list[Mutant] = []
    try:
        for engine in engines:
            started = time.monotonic()
            if not args.collect_only:
                print(f"== {engine}: mutating and judging each mutant by the corpus", flush=True)
                (BUILD / f"{engine}.corpus").write_text(corpus_digest())  # the corpus the quick run sees
                run_tool(engine, tuple(args.rust_file or ()) or None)
            mutants = results(engine)
            print(f"== {engine}: rechecking the survivors on the whole corpus, then the default fuzz run", flush=True)
            judge_survivors(mutants, fuzz=not args.no_fuzz, equivalents=equivalents)
            rows[engine] = row(engine, mutants, equivalents)
            print(f"== {engine}: done in {time.monotonic() - started:.0f} s", flush=True)
            every += mutants
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    args.json.write_text(json.dumps([asdict(m) for m in every], indent=1) + "\n")
    print()
    print(table(rows))
    survivors = {m.key for m in every if m.status == "survived"}
    prefixes = tuple({"reference": "reference/", "rust": "adapters/rust/", "go": "adapters/go/"}[e] for e in engines)
    stale = [key for key in equivalents if key.startswith(prefixes) and key not in survivors]
    if stale:
        print(f"\n{len(stale)} entr(ies) of {EQUIVALENT.relative_to(ROOT)} name no survivor of this run (killed, or gone):")
        for key in stale:
            print(f"  {key}")
    unexplained = [m for m in every if m.status == "survived" and m.key not in equivalents]
    if unexplained:
        print(f"\n{len(unexplained)} surviving mutant(s) neither killed nor listed in {EQUIVALENT.relative_to(ROOT)}:")
        for mutant in unexplained:
            print(f"  {mutant.key}")
        return 1
    print("\nevery surviving mutant is listed as equivalent")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The fuzzer's default run against the observable survivors of the corpus as it was (README "Mutation score").

Usage::

    python bench/mutate/fuzz_baseline.py [--engine reference|rust|go ...] [--examples N]

``bench/mutate/baseline-survivors.txt`` lists every mutant that survived the corpus before
``conformance/cases/survivors.py``; those marked ``killed`` are the observable ones (the
others are equivalent). Each is written again into a fresh copy of its engine from its key
alone (the line's code and the tool's change: no tool needs to run), built, and run by
``conformance fuzz`` with its defaults (200 examples, seed 0) and the port's expected
failures. Prints one line per mutant (found or missed, at which example, how long the run
took) and the figure; exit 1 when the default run misses one.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge import EXPECTED, adapter_command  # noqa: E402
from mutators import BUILD, HERE, fresh_copy  # noqa: E402

BASELINE = HERE / "baseline-survivors.txt"
CONFORMANCE = Path(sys.executable).parent / "conformance"
#: gremlins' token changes of the baseline's Go survivors, by mutation type.
GO_CHANGES = {"INVERT_NEGATIVES": ("-", "+"), "ARITHMETIC_BASE": ("-", "+")}


def observable(engines: list[str]) -> list[tuple[str, str]]:
    """(engine, key) of every baseline survivor that a survivor case kills."""
    found = []
    for line in BASELINE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        engine, _, _, fate, key = line.split(maxsplit=4)
        if fate == "killed" and engine in engines:
            found.append((engine, key))
    return found


def mutate(engine: str, key: str, source: Path) -> None:
    """Write the mutant named by ``key`` into the copy at ``source``."""
    file, original, operator = (part.strip() for part in key.split(" | ")[:3])
    path = source / file if engine == "reference" else source / Path(file).relative_to(f"adapters/{engine}")
    lines = path.read_text().split("\n")
    (at,) = [index for index, text in enumerate(lines) if text.strip() == original]
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    if engine == "reference":
        lines[at] = indent + operator.split(" -> ", 1)[1].strip()
    elif engine == "rust":
        old, new = re.fullmatch(r"replace (\S+) with (\S+) in .*", operator).groups()  # type: ignore[union-attr]
        assert lines[at].count(f" {old} ") == 1, key
        lines[at] = lines[at].replace(f" {old} ", f" {new} ")
    else:
        kind, column = re.fullmatch(r"(\w+) at column (\d+)", operator).groups()  # type: ignore[union-attr]
        old, new = GO_CHANGES[kind]
        column_at = int(column) - 1
        assert lines[at][column_at : column_at + len(old)] == old, key
        lines[at] = lines[at][:column_at] + new + lines[at][column_at + len(old) :]
    path.write_text("\n".join(lines))


def build(engine: str, source: Path) -> str:
    """Build the mutated copy's adapter (release, as a user runs it); its command."""
    if engine == "rust":
        subprocess.run(["cargo", "build", "--release", "--quiet", "-j", "1", "--bin", "scalar-adapter"], cwd=source, check=True)
    elif engine == "go":
        subprocess.run(["go", "build", "-o", "bin/adapter", "./cmd/adapter"], cwd=source, check=True)
    return shlex.join(adapter_command(engine, source))


def main() -> int:
    """Fuzz each observable baseline survivor once with the defaults; 1 when one is missed."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--engine", action="append", choices=["reference", "rust", "go"])
    parser.add_argument("--examples", type=int, help="override the default budget (default: fuzz's own)")
    args = parser.parse_args()
    mutants = observable(args.engine or ["reference", "rust"])
    found = 0
    for engine, key in mutants:
        source = fresh_copy(engine, BUILD / "baseline" / engine)
        mutate(engine, key, source)
        command = build(engine, source)
        fuzz = [str(CONFORMANCE), "fuzz", "--command", command]
        if engine in EXPECTED:
            fuzz += ["--expected-failures", str(EXPECTED[engine])]
        if args.examples:
            fuzz += ["--examples", str(args.examples)]
        started = time.monotonic()
        run = subprocess.run(fuzz, cwd=source, capture_output=True, text=True)
        seconds = time.monotonic() - started
        hit = "DIVERGENCE" in run.stdout
        found += hit
        at = re.search(r"found after (\d+) example", run.stdout)
        where = f" at example {at.group(1)}" if at else ""
        print(f"{'found ' if hit else 'MISSED'} {engine:9} {seconds:5.1f} s{where}  {key}", flush=True)
    print(f"\nthe default fuzz run found {found} of {len(mutants)}")
    return 0 if found == len(mutants) else 1


if __name__ == "__main__":
    sys.exit(main())

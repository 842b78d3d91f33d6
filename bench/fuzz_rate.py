"""Examples per second of differential fuzzing, per adapter, printed as a Markdown table.

Usage: python bench/fuzz_rate.py [--examples N] [--seed S] [ADAPTER ...]

Every registered adapter that is available here (default: python, rust, go) is
fuzzed for the same seed and example count. The rate counts programs run on the
reference and the adapter, including drawing them, so it is what a user of
``conformance fuzz`` sees. The go adapter skips the ``order`` level: its tape
order is a valid topological order but not the canonical one. The CLI's
modules are imported first so that a seed draws the same programs as
``conformance fuzz --seed S`` does.
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import conformance.cli  # noqa: E402, F401 - hypothesis draws constants from loaded sources: load what the CLI loads
from conformance.fuzz import fuzz  # noqa: E402
from conformance.launch import open_adapter  # noqa: E402
from conformance.registry import load_registry  # noqa: E402

SKIP = {"go": ["order"]}


def main() -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapters", nargs="*", default=["python", "rust", "go"])
    parser.add_argument("--examples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    registry = load_registry()
    rows = []
    for name in args.adapters:
        opened = open_adapter(registry[name], timeout=30)
        why = opened.unavailable or opened.build_failure
        if why or opened.transport is None:
            rows.append(f"| {name} | unavailable: {(why or '').splitlines()[0]} | | | |")
            continue
        try:
            result = fuzz(opened.transport, examples=args.examples, seed=args.seed, skip=SKIP.get(name))
        finally:
            opened.close()
        found = "none" if result.divergence is None else f"at example {result.first_found_at}"
        rows.append(f"| {name} | {result.calls} | {result.seconds:.2f} | {result.rate:.0f} | {found} |")
    print(f"Fuzzing rate, seed {args.seed}, {args.examples} examples, Python {platform.python_version()}:\n")
    print("| adapter | programs | seconds | examples/s | divergence |")
    print("|---|---:|---:|---:|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

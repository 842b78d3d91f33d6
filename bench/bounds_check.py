"""The derived bounds against correct variant engines and the catalogue of mistakes.

For every variant of ``conformance.variants`` (a correct port that rounds differently:
glibc libm, fused multiply-adds, reversed or shuffled sums; under ``numeric`` also an
accurate sech^2 and autograd's ``-g*x/y**2``), fuzz ``--examples`` programs in its
profile and count the divergences (the bounds are sound when there are none), then run
the whole corpus. When PyTorch is installed, its adapter is fuzzed under ``numeric`` too.
Last, the catalogue of mistakes against the corpus under each profile: how many the
bounds still catch. Prints Markdown tables for the README.

    python bench/bounds_check.py [--examples 10000] [--seed 0]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

from conformance.compare import compare_level
from conformance.fixture import load_corpus, replayable
from conformance.fuzz import fuzz
from conformance.mutants import BUGS, MutantEngine
from conformance.transport import SubprocessTransport
from conformance.variants import VARIANTS, VariantEngine, VariantTransport

ROOT = Path(__file__).resolve().parent.parent


def corpus_failures(engine: VariantEngine, profile: str, declared: frozenset[str]) -> int:
    """How many (case, level) results of the corpus fail on this variant, at the levels its hello declares.

    A variant that sums in another order declares neither ``order`` nor ``errors`` (an error's
    fields can name the partial sums of the contract's order), as tests/test_bounds.py checks it.
    """
    failed = 0
    for fixture in replayable(load_corpus()):
        observations = engine.run(fixture.program)
        for level in fixture.levels:
            if level not in declared:
                continue
            failed += bool(compare_level(fixture, observations, level, limit=1, profile=profile)[0])
    return failed


def mutants_surviving(profile: str) -> list[str]:
    """The catalogue's bugs (but the recursive sort, caught through the protocol) that no fixture catches."""
    corpus = sorted(replayable(load_corpus()), key=lambda f: f.size)
    surviving = []
    for bug in BUGS:
        if bug == "recursive-topo":
            continue
        for fixture in corpus:
            try:
                observations = MutantEngine(bug).run(fixture.program)
            except Exception:  # noqa: BLE001 - a crash is a kill
                break
            if any(compare_level(fixture, observations, level, limit=1, profile=profile)[0] for level in fixture.levels):
                break
        else:
            surviving.append(bug)
    return surviving


def main() -> None:
    """Run every check and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"fuzzing {args.examples} programs per variant (seed {args.seed}), then the corpus\n")
    print("| variant | profile | fuzz programs | distinct divergences | seconds | corpus results failed |")
    print("|---|---|---:|---:|---:|---:|")
    for variant, (profile, _) in VARIANTS.items():
        started = time.monotonic()
        transport = VariantTransport(variant, args.seed)
        result = fuzz(transport, examples=args.examples, seed=args.seed, shrink=False, keep_going=True)
        seconds = time.monotonic() - started
        divergences = len(result.divergences)
        failed = corpus_failures(VariantEngine(variant, args.seed), profile, transport.hello.levels)
        print(f"| {variant} | {profile} | {result.examples} | {divergences} | {seconds:.0f} | {failed} |", flush=True)
        if result.divergence is not None:
            for divergence in result.divergences:
                print(divergence.describe(), file=sys.stderr)
    if importlib.util.find_spec("torch") is not None:
        transport = SubprocessTransport([sys.executable, str(ROOT / "adapters" / "torch" / "adapter.py")], timeout=30)
        try:
            result = fuzz(transport, examples=args.examples, seed=args.seed, shrink=False, keep_going=True, profile="numeric")
        finally:
            transport.close()
        print(
            f"| torch adapter | numeric | {result.examples} | {len(result.divergences)} | {result.seconds:.0f} | "
            "see `conformance run --adapter torch` |"
        )
    else:
        print("\n(torch is not installed: its adapter was not fuzzed)")
    print("\n| profile | catalogue bugs | caught by the corpus | not caught |")
    print("|---|---:|---:|---|")
    total = len(BUGS) - 1
    for profile in ("contract", "numeric"):
        surviving = mutants_surviving(profile)
        print(f"| {profile} | {total} | {total - len(surviving)} | {', '.join(f'`{b}`' for b in surviving) or 'none'} |")


if __name__ == "__main__":
    main()

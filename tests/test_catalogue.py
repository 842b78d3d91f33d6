"""Every deliberately broken engine, run behind the protocol, fails the corpus and is named by the diagnosis."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.fixture import load_corpus
from conformance.mutants import BUGS
from conformance.runner import run_adapter
from conformance.transport import SubprocessTransport

ROOT = Path(__file__).resolve().parent.parent
CORPUS = load_corpus()


@pytest.mark.parametrize("bug", list(BUGS))
def test_the_corpus_catches_the_bug_and_the_diagnosis_names_it(bug):
    transport = SubprocessTransport([sys.executable, str(ROOT / "adapters/broken/adapter.py"), bug], timeout=60)
    try:
        run = run_adapter(f"broken-{bug}", transport, CORPUS, [])
    finally:
        transport.close()
    unexpected = run.unexpected
    assert unexpected, f"the corpus does not catch {bug}"
    named = [r for r in unexpected if BUGS[bug] in r.diagnosis]
    assert named, f"{bug}: no failure is diagnosed as {BUGS[bug]!r}; first: {unexpected[0].message}"
    # The diagnosis is specific: the bug's own description is the one most often given.
    counts = {}
    for result in unexpected:
        for hint in result.diagnosis:
            counts[hint] = counts.get(hint, 0) + 1
    assert max(counts, key=counts.get) == BUGS[bug]

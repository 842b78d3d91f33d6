"""Every deliberately broken engine fails the corpus, and the diagnosis names it.

The whole catalogue runs in-process (``catalogue_score``); a few bugs also run
behind the protocol through ``adapters/broken``, as a porter's engine would.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.commands.list_cases import catching_cases
from conformance.compare import compare_level
from conformance.diagnose import catalogue_score
from conformance.fixture import load_corpus, replayable
from conformance.mutants import BUGS, MutantEngine
from conformance.runner import run_adapter
from conformance.transport import SubprocessTransport

ROOT = Path(__file__).resolve().parent.parent
CORPUS = load_corpus()
SCORES = {score.bug: score for score in catalogue_score(CORPUS)}


@pytest.mark.parametrize("bug", list(BUGS))
def test_the_corpus_kills_every_bug_of_the_catalogue(bug):
    assert SCORES[bug].killed_by is not None, f"no case of the corpus catches {bug}: {BUGS[bug]}"


def test_the_catalogue_is_large_and_the_diagnosis_names_nine_bugs_in_ten_first():
    assert len(BUGS) >= 40
    unnamed = sorted(bug for bug, score in SCORES.items() if score.named_first_at is None)
    assert len(unnamed) <= len(BUGS) // 10, f"never named first: {unnamed}"


@pytest.mark.parametrize("bug", ["assign", "stale", "partial-commit", "untracked-edges-skipped", "recursive-topo"])
def test_behind_the_protocol_the_bug_fails_and_is_named(bug):
    transport = SubprocessTransport([sys.executable, str(ROOT / "adapters/broken/adapter.py"), bug], timeout=60)
    try:
        run = run_adapter(f"broken-{bug}", transport, CORPUS, [])
    finally:
        transport.close()
    assert run.unexpected, f"the corpus does not catch {bug}"
    assert any(result.diagnosis[:1] == (BUGS[bug],) for result in run.unexpected), run.unexpected[0].message


#: Bug -> the fixtures whose description says they catch it, read as ``conformance list --bugs`` reads them.
NAMED = catching_cases(CORPUS)


@pytest.mark.parametrize("bug", list(BUGS))
def test_every_bug_is_killed_by_a_fixture_whose_description_names_it(bug):
    fixtures = {f.id: f for f in replayable(CORPUS)}  # the million-node chain is run behind the protocol only
    assert NAMED.get(bug), f"no fixture's description names {bug} ({BUGS[bug]}): add it to a case's catches"
    assert any(case in fixtures for case in NAMED[bug]), f"only fixtures too large to replay in-process name {bug}"
    for case in NAMED[bug]:
        if case not in fixtures:
            continue
        fixture = fixtures[case]
        try:
            observations = MutantEngine(bug).run(fixture.program)
        except Exception:  # noqa: BLE001 - an engine that crashes on the case is caught (as an adapter error)
            continue
        failing = [level for level in fixture.levels if compare_level(fixture, observations, level, limit=1)[0]]
        assert failing, f"{case} says it catches {bug}, but that engine passes it at every level"


def test_a_description_names_only_bugs_of_the_catalogue():
    assert set(NAMED) <= set(BUGS)

"""The diagnosis under the adapter's declarations: variants make only the checks the engine makes, on its levels."""

from __future__ import annotations

import pytest
from inprocess import EngineTransport

from conformance.diagnose import DIAGNOSIS_MAX_STEPS, Diagnoser
from conformance.fixture import load_corpus
from conformance.mutants import BUGS, Bug, MutantEngine
from conformance.program import DECLARABLE_OPS
from conformance.protocol import ERROR_KINDS, FEATURES, Level, Profile
from conformance.runner import AdapterSession, Outcome, run_adapter
from conformance.transport import Handshake

CORPUS = [fixture for fixture in load_corpus() if fixture.size <= DIAGNOSIS_MAX_STEPS]
#: What most real engines declare: compared numerically, no typed errors, values and gradients only.
REAL = Handshake(
    "real-engine",
    "0",
    "python",
    frozenset(DECLARABLE_OPS),
    frozenset({Level.VALUES, Level.GRADIENTS}),
    frozenset(FEATURES),
    frozenset(),
    profile=Profile.NUMERIC,
)


def real_engine(bug):
    """The catalogue's mistake in an engine that checks nothing the contract checks: it computes on (inf, nan)."""
    engine = MutantEngine(bug, unchecked=ERROR_KINDS)
    return EngineTransport(bug, lambda program, records: engine.run(program, records), REAL)


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_every_catalogue_mistake_that_still_fails_under_real_engine_declarations_is_named(bug):
    adapter_run = run_adapter(bug, real_engine(bug), CORPUS, [])
    failed = [r for r in adapter_run.results if r.outcome in (Outcome.FAILED, Outcome.ERROR)]
    if not failed:
        pytest.skip(f"{bug}: no failure without typed errors, trace and order (the mistake shows only there)")
    named = {hint for r in adapter_run.results for hint in r.diagnosis}
    assert BUGS[bug] in named, (bug, [r.case for r in failed])
    assert adapter_run.explanation is not None and adapter_run.explanation.line() == (
        f"one known mistake explains every failure: {BUGS[bug]}"
    )


def test_without_the_declarations_pows_derivative_at_c_0_is_not_named():
    """The issue's case: c * a^(c-1) at c = 0 gives nan in an engine with error_kinds []; the contract's variant raises."""

    class Undeclared(Diagnoser):
        def declare(self, hello):  # the diagnosis as it was: every variant makes every check
            pass

    bug = Bug.POW_DERIVATIVE_AT_C_0
    for diagnoser, named in ((Undeclared(), False), (Diagnoser(), True)):
        session = AdapterSession(bug, real_engine(bug), [], diagnoser=diagnoser)
        results = [result for fixture in CORPUS for result in session.run_case(fixture)]
        assert any(r.outcome == Outcome.FAILED for r in results)
        assert (BUGS[bug] in {hint for r in results for hint in r.diagnosis}) is named

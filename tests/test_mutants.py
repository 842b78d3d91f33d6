"""The catalogue of broken engines: without a bug it is the reference; each bug is caught by the corpus."""

from __future__ import annotations

from hypothesis import given

from conformance.execute import run_program
from conformance.fixture import load_corpus
from conformance.mutants import MutantEngine
from conformance.strategies import programs
from conformance.wire import dumps_line

CORPUS = load_corpus()


@given(programs())
def test_the_bug_free_variant_observes_exactly_what_the_reference_does(program):
    assert dumps_line(MutantEngine().run(program)) == dumps_line(run_program(program))


def test_the_stale_variant_reproduces_micrographs_24_on_the_reused_square():
    fixture = next(f for f in CORPUS if f.id == "seed/reused-square")
    observations = MutantEngine("stale").run(fixture.program)
    assert observations[4]["gradients"]["x"] == 24.0 and fixture.expected[4]["gradients"]["x"] == 16.0

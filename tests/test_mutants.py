"""The catalogue of broken engines: without a bug it is the reference; each bug is caught by the corpus."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.compare import compare_level
from conformance.execute import run_program
from conformance.fixture import load_corpus, replayable
from conformance.mutants import MutantEngine
from conformance.strategies import programs
from conformance.variants import VariantEngine
from conformance.wire import dumps_line, float_bits_equal

CORPUS = replayable(load_corpus())  # in-process replays: without the million-node chain


@given(programs())
def test_the_bug_free_variant_observes_exactly_what_the_reference_does(program):
    assert dumps_line([o.to_json() for o in MutantEngine().run(program)]) == dumps_line(
        [o.to_json() for o in run_program(program)]
    )


def test_the_stale_variant_reproduces_micrographs_24_on_the_reused_square():
    fixture = next(f for f in CORPUS if f.id == "seed/reused-square")
    observations = MutantEngine("stale").run(fixture.program)
    assert observations[4].gradients["x"] == 24.0 and fixture.expected[4].gradients["x"] == 16.0


def test_a_port_with_the_platforms_libm_passes_the_whole_corpus_though_its_bits_differ():
    differing = 0
    for fixture in CORPUS:
        observations = VariantEngine("libm").run(fixture.program)
        for level in fixture.levels:
            found, _ = compare_level(fixture, observations, level, limit=1)
            assert not found, f"{fixture.id} [{level}]: {found[0].describe()}"
        got = dict(_floats(observations))
        differing += sum(not float_bits_equal(value, got[path]) for path, value in _floats(fixture.expected) if path in got)
    # The test means something only if libm really differs from the correctly rounded reference
    # somewhere: the ops/*/libm-rounding points were chosen where glibc does.
    if differing == 0:
        pytest.skip("this platform's libm is correctly rounded at every point of the corpus")


def _floats(data, path=""):
    """Every float in a JSON-like structure by its path (non-finite strings as floats)."""
    from conformance.compare import as_float

    if isinstance(data, dict):
        for key, value in data.items():
            yield from _floats(value, f"{path}.{key}")
    elif isinstance(data, (list, tuple)):
        for index, value in enumerate(data):
            yield from _floats(value, f"{path}[{index}]")
    elif isinstance(data, float) or (isinstance(data, str) and as_float(data) is not None):
        yield path, as_float(data)

"""Every op of the reference's table (reference.ops.OPS) has every piece the kit needs.

A new op is a row in reference/ops.py, a row in the harness's table (conformance/optable.py),
its Node method and its contract row (docs/contributing.md); this is the one named test that
fails, with the missing piece in its message, when one of them is forgotten. The generated pieces (the
fixture schema, hello's op list, the special-operands cases) follow the table by
themselves and are checked by `regen --check` and tests/test_fixtures.py.
"""

from __future__ import annotations

import math

import pytest

from conformance.bounds import derive_bounds
from conformance.contract import load_rules
from conformance.fixture import load_corpus
from conformance.generate import all_cases
from conformance.mutants import BUGS, WRONG_DERIVATIVES
from conformance.optable import HARNESS_OPS
from conformance.serve import PYTHON_OPS
from conformance.variants import VariantEngine
from reference.node import Node
from reference.ops import IEEE_EXACT_OPS, OPS

CORPUS = {fixture.id: fixture for fixture in load_corpus()}
RULE_IDS = {rule.id for rule in load_rules()}
CASES = all_cases()


@pytest.mark.parametrize("name", list(OPS))
def test_every_op_has_every_piece(name):
    op = OPS[name]
    missing = []
    row = HARNESS_OPS.get(name)
    if row is None:
        missing.append(f"conformance/optable.py: a row HarnessOp({name!r}, ...) in HARNESS_OPS")
    else:
        points = [point.label for point in row.points]
        if not points:
            missing.append(f"conformance/optable.py: the points of {name}'s row")
        if row.python is None and not op.takes_exponent:
            missing.append(f"conformance/optable.py: the Python spelling (python) of {name}'s row")
        if name not in IEEE_EXACT_OPS and row.libm is None:
            missing.append(f"conformance/optable.py: the libm rule of the inexact op {name}'s row")
        if name not in IEEE_EXACT_OPS and "libm-rounding" not in points:
            missing.append(f"conformance/optable.py: a libm-rounding point of the inexact op {name}")
    if not any(f"wrong-derivative-{name}" in case.catches for case in CASES):
        missing.append(f"a case that catches wrong-derivative-{name} (a point's catches in conformance/optable.py)")
    if not callable(getattr(Node, name, None)):
        missing.append(f"reference/node.py: a Node.{name} method")
    if f"op.{name}" not in RULE_IDS:
        missing.append(f"docs/contract.md: a row **`op.{name}`** in section 4's op table")
    assert not missing, f"op {name!r} lacks: " + "; ".join(missing)


def test_the_harness_table_has_a_row_for_every_op_of_the_reference_and_no_other():
    assert list(HARNESS_OPS) == list(OPS)
    assert all(HARNESS_OPS[name].op is OPS[name] for name in OPS)


@pytest.mark.parametrize("name", list(OPS))
def test_everything_derived_from_the_row_follows_it(name):
    # What the other modules take from the row: a wrong derivative the catalogue names and a case catches,
    # the spelling, and the point cases of the corpus.
    row = HARNESS_OPS[name]
    assert WRONG_DERIVATIVES[name] is row.wrong_derivative and f"wrong-derivative-{name}" in BUGS
    if row.python is not None:
        assert PYTHON_OPS[name] is row.python
    for point in row.points:
        assert f"ops/{name}/{point.label}" in CORPUS, f"ops/{name}/{point.label} is not generated"
    for error in row.errors:
        assert CORPUS[error.id].expected[-1].error is not None, f"{error.id} does not fail"


@pytest.mark.parametrize("name", list(OPS))
def test_every_op_has_an_interval_rule_under_both_profiles(name):
    # bounds.py raises "no interval rule for op" for an op it does not know: every ops/NAME/ case derives.
    cases = [fixture for fixture in CORPUS.values() if fixture.id.startswith(f"ops/{name}/")]
    assert cases, f"no case of the corpus uses {name}"
    for fixture in cases:
        for profile in ("contract", "numeric"):
            derive_bounds(fixture.program, profile)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(set(OPS) - IEEE_EXACT_OPS))
def test_every_inexact_op_has_a_libm_variant_that_differs_at_its_libm_rounding_point(name):
    # The libm variant (conformance/variants.py) must take the platform's function for every inexact op, or the
    # corpus's tolerance for that op is never exercised; its libm-rounding point is where glibc differs.
    fixture = CORPUS[f"ops/{name}/libm-rounding"]
    libm = VariantEngine("libm").run(fixture.program)
    reference = fixture.expected
    created = next(index for index, step in enumerate(fixture.program) if step.op == name)
    assert libm[created].value is not None and reference[created].value is not None
    assert math.isfinite(libm[created].value)
    assert libm[created].value != reference[created].value, (
        f"the libm variant computes {name} at its libm-rounding point exactly as the reference does: "
        "either conformance/variants.py has no libm rule for it or the point is not one where glibc rounds differently"
    )

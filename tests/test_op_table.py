"""Every op of the reference's table (reference.ops.OPS) has every piece the kit needs.

A new op is a row in reference/ops.py plus a few hand-written pieces elsewhere
(docs/contributing.md, "Adding an op"); this is the one named test that fails, with the
missing piece in its message, when one of them is forgotten. The generated pieces (the
fixture schema, hello's op list, the special-operands cases) follow the table by
themselves and are checked by `regen --check` and tests/test_fixtures.py.
"""

from __future__ import annotations

import math

import pytest

from conformance.bounds import derive_bounds
from conformance.cases.families import OP_POINTS
from conformance.contract import load_rules
from conformance.fixture import load_corpus
from conformance.generate import all_cases
from conformance.mutants import WRONG_DERIVATIVES, Bug
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
    if not callable(getattr(Node, name, None)):
        missing.append(f"reference/node.py: a Node.{name} method")
    if name not in WRONG_DERIVATIVES:
        missing.append(f"conformance/mutants.py: WRONG_DERIVATIVES[{name!r}]")
    if f"wrong-derivative-{name}" not in {str(bug) for bug in Bug}:
        missing.append(f"conformance/mutants.py: a Bug member 'wrong-derivative-{name}'")
    if not op.takes_exponent and name not in PYTHON_OPS:
        missing.append(f"conformance/serve.py: PYTHON_OPS[{name!r}], its Python spelling")
    points = [label for op_name, label, _, _ in OP_POINTS if op_name == name]
    if not points:
        missing.append(f"conformance/cases/families.py: OP_POINTS for {name}")
    if not any(f"wrong-derivative-{name}" in case.catches for case in CASES):
        missing.append(f"a case that says it catches wrong-derivative-{name} (OP_CATCHES in conformance/cases/families.py)")
    if f"op.{name}" not in RULE_IDS:
        missing.append(f"docs/contract.md: a row **`op.{name}`** in section 4's op table")
    if name not in IEEE_EXACT_OPS and "libm-rounding" not in points:
        missing.append(f"conformance/cases/families.py: a libm-rounding point for the inexact op {name}")
    assert not missing, f"op {name!r} lacks: " + "; ".join(missing)


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

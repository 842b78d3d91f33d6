"""The canonical fixtures themselves: schema-valid, current, deterministic, complete and small."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conformance.fixture import FIXTURES_DIR, fixture_paths, load_corpus, schema_path
from conformance.fixture_schema import fixture_schema_text
from conformance.generate import all_cases, compare, generate
from conformance.program import DECLARABLE_OPS
from conformance.wire import loads
from reference import ERROR_KINDS
from reference.ops import IEEE_EXACT_OPS, OPS

CORPUS = load_corpus()


def test_every_fixture_validates_against_the_json_schema():
    schema = json.loads(schema_path().read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for path in fixture_paths():
        errors = list(validator.iter_errors(loads(path.read_text())))
        assert not errors, f"{path}: {errors[0].message}"


def test_committed_fixtures_equal_what_the_reference_generates():
    drift = compare(generate(all_cases()))
    assert drift.clean, f"stale {drift.stale} missing {drift.missing} extra {drift.extra}: run `conformance regen`"


def test_generation_is_deterministic_byte_for_byte():
    assert generate(all_cases()) == generate(all_cases())


def test_every_case_id_is_its_path_and_the_schema_file_is_not_a_case():
    for fixture in CORPUS:
        assert fixture.path == FIXTURES_DIR / f"{fixture.id}.json"
    assert all(path.name != "fixture.schema.json" for path in fixture_paths())


def test_the_corpus_covers_every_op_and_every_error_kind():
    ops = {op for fixture in CORPUS for op in fixture.ops}
    assert ops == set(DECLARABLE_OPS)
    kinds = {obs.error.kind for fixture in CORPUS for obs in fixture.expected if obs.error is not None}
    assert kinds == set(ERROR_KINDS)


def test_the_corpus_has_the_required_shapes():
    ids = {fixture.id for fixture in CORPUS}
    for required in [
        "seed/reused-square",
        "seed/detach",
        "seed/exp-tanh",
        "seed/error-constant-output",
        "seed/error-infinite-seed",
        "seed/error-overflowing-stored-gradient",
        "repeated/x-mul-x",
        "repeated/x-add-x",
        "repeated/x-sub-x",
        "repeated/x-div-x",
        "repeated/cube",
        "structure/diamond",
        "structure/fan-out-1000",
        "structure/deep-chain-10000",
        "structure/unreachable-consumer",
        "structure/two-outputs-shared-leaves",
        "structure/backward-from-leaf",
        "structure/backward-from-intermediate",
        "structure/zero-grad-partial",
        "structure/detach-tracked",
        "structure/detach-constant",
        "errors/untracked-output-all-constant",
        "seeds/zero",
        "seeds/negative-one",
        "seeds/half",
        "seeds/overflow-1e300",
        "ops/relu/negative-zero",
        "ops/pow/c-half",
        "ops/pow/negative-base-c-3",
        "ops/tanh/saturated",
        "ops/exp/near-overflow",
        "ops/log/near-zero",
    ]:
        assert required in ids, required


def test_exact_policy_is_only_used_for_ieee_exact_ops():
    for fixture in CORPUS:
        if fixture.comparison.mode == "exact":
            assert set(fixture.ops) <= {*IEEE_EXACT_OPS, "detach"}, fixture.id


def test_the_fan_out_case_has_a_thousand_unmerged_edges_and_is_still_exact():
    fixture = next(f for f in CORPUS if f.id == "structure/fan-out-1000")
    assert fixture.comparison.mode == "exact"
    assert fixture.expected[-1].gradients["x"] == 3000.0


def test_fixtures_stay_a_few_megabytes():
    # The corpus travels in the wheel. About 4 MB of cases, plus the per-float bounds of two
    # profiles (about half as much again, most of it for the two LLM cases).
    total = sum(path.stat().st_size for path in Path(FIXTURES_DIR).rglob("*.json"))
    assert total < 7_000_000, total


@pytest.mark.parametrize("fixture", CORPUS, ids=lambda f: f.id)
def test_error_cases_fail_at_a_single_point(fixture):
    # A backward expected to fail must fail on exactly one node, whatever the traversal order:
    # the failure is the only contribution/adjoint/sum in the program that is non-finite.
    for obs in fixture.expected:
        if obs.error is not None and obs.error.kind in ("non-finite-contribution", "non-finite-pass-adjoint"):
            assert {"consumer", "operand", "node"} & set(obs.error.fields())


def test_the_fixture_schema_is_the_one_regen_makes_from_the_op_table():
    # fixtures/fixture.schema.json is generated (conformance.fixture_schema), so a new op reaches it without a hand
    # edit; its step shapes follow each op's arity and exponent in reference.ops.OPS.
    assert schema_path().read_text(encoding="utf-8") == fixture_schema_text()
    schema = json.loads(schema_path().read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    steps = jsonschema.Draft202012Validator({**schema["$defs"]["step"], "$defs": schema["$defs"]})
    for name, op in OPS.items():
        step: dict[str, object] = {"id": "r", "op": name, "operands": ["a"] * op.arity}
        if op.takes_exponent:
            step["exponent"] = 2.0
        assert steps.is_valid(step), name
        assert not steps.is_valid({**step, "operands": ["a"] * (op.arity + 1)}), name
    assert not steps.is_valid({"id": "r", "op": "cbrt", "operands": ["a"]})

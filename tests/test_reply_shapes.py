"""The shape of each observation in a reply: the quick test for a run that went well agrees with the full one."""

from __future__ import annotations

import itertools

import pytest

from conformance.fixture import FIXTURES_DIR, load_fixture
from conformance.program import parse_program
from conformance.protocol import (
    _SHAPE_FIELDS,
    OBSERVATION_SHAPES,
    ErrorInfo,
    Observation,
    PassRecord,
    ProtocolError,
    Result,
    _shape_problem,
    decode_reply,
    encode_result,
    shape_problem,
    step_kind,
)

PROGRAM = parse_program(
    [
        {"id": "x", "op": "variable", "value": 2.0},
        {"id": "y", "op": "mul", "operands": ["x", "x"]},
        {"op": "backward", "output": "y"},
        {"op": "zero_grad", "output": "y"},
    ],
    "shapes",
)
PRESENT = {
    "value": 4.0,
    "tracked": True,
    "error": ErrorInfo("non-finite-value", operation="mul", value=float("inf")),
    "gradients": {"x": 4.0},
    "pass_": PassRecord(1.0, []),
}


@pytest.mark.parametrize("error", [PRESENT["error"], ErrorInfo("non-finite-seed", seed=float("inf"))], ids=["bad-kind", "good"])
@pytest.mark.parametrize("step", PROGRAM, ids=lambda step: step.op)
def test_every_combination_of_fields_gets_the_same_verdict_both_ways(step, error):
    """The fast path and the careful one agree, and a shape passes exactly when OBSERVATION_SHAPES lists it."""
    assert set(PRESENT) == {name for _, name in _SHAPE_FIELDS}, "give a new observation field a value in PRESENT"
    wire = dict((name, wire) for wire, name in _SHAPE_FIELDS)
    present = {**PRESENT, "error": error}
    verdicts = set()
    for count in range(len(present) + 1):
        for names in itertools.combinations(present, count):
            observation = Observation(**{name: present[name] for name in names})
            verdict = shape_problem(step, observation)
            assert verdict == _shape_problem(step, observation), names
            listed = frozenset(wire[name] for name in names) in OBSERVATION_SHAPES[step_kind(step)]
            assert (verdict is None) == (listed and (error is not PRESENT["error"] or "error" not in names)), names
            verdicts.add(verdict is None)
    assert verdicts == {True, False}  # each step kind has shapes it takes and shapes it refuses


def test_a_reply_with_a_misshapen_observation_names_the_step_and_the_shapes():
    line = (
        b'{"type":"result","case":"shapes","observations":[{"value":2.0,"tracked":true},'
        b'{"value":4.0,"tracked":true,"gradients":{"x":4.0}},{"gradients":{"x":4.0,"y":1.0}},{"gradients":{}}]}'
    )
    with pytest.raises(ProtocolError) as error:
        decode_reply(line, "shapes", PROGRAM)
    assert "at $.observations[1]" in str(error.value)
    assert "is observed as {tracked, value} or {error}, got {gradients, tracked, value}" in str(error.value)
    good = line.replace(b',"gradients":{"x":4.0}}', b"}")
    assert [o.value for o in decode_reply(good, "shapes", PROGRAM)] == [2.0, 4.0, None, None]


def test_a_reply_names_non_finite_floats_and_keeps_the_nulls_of_untracked_nodes():
    # An untracked node's record as the reference gives it (its pass_adjoint and stored_gradient are None).
    constants = load_fixture(FIXTURES_DIR / "structure" / "constants-untracked.json")
    records = [o.pass_ for o in constants.expected if o.pass_ is not None]
    untracked = next(node for node in records[0].nodes if not node.tracked)
    assert untracked.pass_adjoint is None and untracked.stored_gradient is None
    finite = Result("shapes", [Observation(gradients={}, pass_=PassRecord(1.0, [untracked]))])
    assert b'"pass_adjoint":null,"stored_gradient":null' in encode_result(finite)
    assert decode_reply(encode_result(finite), "shapes", PROGRAM[2:3])[0].pass_ == finite.observations[0].pass_
    for value, text in ((float("inf"), b'"inf"'), (float("-inf"), b'"-inf"'), (float("nan"), b'"nan"')):
        line = encode_result(Result("shapes", [Observation(value=value, tracked=True)]))
        assert line == b'{"type":"result","case":"shapes","observations":[{"value":' + text + b',"tracked":true}]}'
        overflowing = Result(
            "shapes", [Observation(gradients={}, pass_=PassRecord(1.0, [untracked])), Observation(value=value, tracked=True)]
        )
        assert b'"value":' + text in encode_result(overflowing)

"""Repeated steps (contract rule program.repeat) and the run request's ``records``.

A repeated step builds a chain of n nodes from one line: the way the corpus reaches a
million nodes without a million-line fixture or a reply too large for the protocol.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conformance.cases.case import Case, CaseError
from conformance.execute import run_program
from conformance.fixture import load_corpus
from conformance.generate import build_fixture
from conformance.program import ProgramError, features_used, parse_program, program_size
from conformance.protocol import run_request
from conformance.runner import run_adapter
from conformance.transport import CASE_TIMEOUT, SubprocessTransport, case_timeout

ROOT = Path(__file__).resolve().parent.parent


def program(*steps):
    return parse_program(list(steps), "test")


X = {"id": "x", "op": "variable", "value": 0.5}
C = {"id": "c", "op": "constant", "value": 0.25}


def test_a_repeated_step_observes_exactly_what_its_steps_written_out_observe():
    repeated = program(X, C, {"id": "y", "op": "add", "operands": ["x", "c"], "repeat": 3}, {"op": "backward", "output": "y"})
    written_out = program(
        X,
        C,
        {"id": "y[1]", "op": "add", "operands": ["x", "c"]},
        {"id": "y[2]", "op": "add", "operands": ["y[1]", "c"]},
        {"id": "y", "op": "add", "operands": ["y[2]", "c"]},
        {"op": "backward", "output": "y"},
    )
    short, long = run_program(repeated), run_program(written_out)
    assert short[2].value == long[4].value == 1.25
    # One observation for the step, and only the program's own ids in the gradients.
    assert len(short) == 4
    assert short[3].gradients == {"x": 1.0, "y": 1.0}
    assert long[5].gradients == {"x": 1.0, "y[1]": 1.0, "y[2]": 1.0, "y": 1.0}
    assert program_size(repeated) == 6 and features_used(repeated) == ["repeat"]


def test_an_error_names_an_inner_node_of_the_chain_by_its_index():
    steps = program(
        {"id": "x", "op": "variable", "value": 1e-300},
        {"id": "c", "op": "constant", "value": 1e150},
        {"id": "y", "op": "mul", "operands": ["x", "c"], "repeat": 3},
        {"op": "backward", "output": "y", "seed": 1e300},
    )
    observations = run_program(steps)
    assert observations[2].value == pytest.approx(1e150)
    error = observations[3].error
    assert error is not None and error.kind == "non-finite-contribution"
    assert (error.consumer, error.slot, error.operand) == ("y", 0, "y[2]")


def test_a_failed_application_fails_the_step_and_creates_no_id():
    steps = program(
        {"id": "x", "op": "variable", "value": 1.0},
        {"id": "e", "op": "exp", "operands": ["x"], "repeat": 5},
    )
    observations = run_program(steps)
    assert observations[1].error is not None and observations[1].error.kind == "non-finite-result"


@pytest.mark.parametrize(
    "step, message",
    [
        ({"id": "y", "op": "add", "operands": ["x", "x"], "repeat": 0}, "field 'repeat' must be a whole number from 1"),
        ({"id": "y", "op": "add", "operands": ["x", "x"], "repeat": "3"}, "field 'repeat' must be a whole number"),
        ({"id": "y", "op": "add", "operands": ["x", "x"], "repeat": True}, "field 'repeat' must be a whole number"),
        ({"id": "y", "op": "add", "operands": ["x", "x"], "repeat": 10**8}, "from 1 to 10000000"),
        ({"id": "y", "op": "variable", "value": 1.0, "repeat": 2}, "unexpected field 'repeat'"),
        ({"id": "y", "op": "detach", "operands": ["x"], "repeat": 2}, "unexpected field 'repeat'"),
        ({"op": "backward", "output": "x", "repeat": 2}, "unexpected field 'repeat'"),
    ],
)
def test_a_bad_repeat_is_refused_naming_step_and_field(step, message):
    with pytest.raises(ProgramError, match="step 1") as error:
        program(X, step)
    assert message in str(error.value)


def test_no_other_step_may_take_the_name_of_an_inner_node():
    with pytest.raises(ProgramError, match=r"step 2 \(y\[2\]\): field 'id': 'y\[2\]' names a node of the repeated step 'y'"):
        program(X, {"id": "y", "op": "neg", "operands": ["x"], "repeat": 3}, {"id": "y[2]", "op": "neg", "operands": ["x"]})
    with pytest.raises(ProgramError, match=r"step 2 \(y\): field 'repeat': its node y\[1\] would take an id"):
        program(X, {"id": "y[1]", "op": "neg", "operands": ["x"]}, {"id": "y", "op": "neg", "operands": ["x"], "repeat": 3})
    # y[3] is not a node of a 3-step chain (that one is y itself): allowed.
    program(X, {"id": "y", "op": "neg", "operands": ["x"], "repeat": 3}, {"id": "y[3]", "op": "neg", "operands": ["x"]})


def test_the_request_says_records_false_only_when_it_is_false():
    steps = program(X, {"op": "backward", "output": "x"})
    assert b'"records"' not in run_request("c", steps)
    assert json.loads(run_request("c", steps, records=False))["records"] is False


def test_a_long_program_gets_a_longer_case_timeout():
    chain = program(X, C, {"id": "y", "op": "add", "operands": ["x", "c"], "repeat": 1_000_000})
    assert case_timeout(CASE_TIMEOUT, chain) == pytest.approx(CASE_TIMEOUT + 40.0, abs=0.01)
    assert case_timeout(CASE_TIMEOUT, program(X)) == pytest.approx(CASE_TIMEOUT, abs=0.01)


@pytest.mark.parametrize(
    "steps, levels, message",
    [
        ([X, {"id": "y", "op": "mul", "operands": ["x", "x"], "repeat": 4}], None, "may use only add, sub, neg, relu, not mul"),
        (
            [X, {"id": "v", "op": "variable", "value": 0.25}, {"id": "y", "op": "add", "operands": ["x", "v"], "repeat": 4}],
            None,
            "'v' is an operand 4 times",
        ),
        ([X, C, {"id": "y", "op": "add", "operands": ["x", "c"], "repeat": 4}], ("values", "trace"), "cannot compare trace"),
    ],
)
def test_the_generator_refuses_a_repeated_case_it_cannot_compare_exactly(steps, levels, message):
    case = Case("test/repeat", "a chain", program(*steps, {"op": "backward", "output": "y"}), "test", levels=levels)
    with pytest.raises(CaseError, match=message):
        build_fixture(case)


def test_the_million_node_chain_holds_the_closed_form_values():
    # Independent of the reference: x + n * c with n = 10^6 is exact in binary, and dy/dx is 1.
    fixture = next(f for f in load_corpus() if f.id == "structure/deep-chain-1000000")
    assert fixture.features == ("repeat",) and program_size(fixture.program) == 1_000_004
    assert fixture.expected[2].value == 0.5 + 0.25 * 1_000_000
    assert fixture.expected[3].gradients == {"x": 1.0, "y": 1.0}
    assert fixture.expected[4].gradients == {"x": 0.0, "y": 0.0}
    assert all(not bounds for bounds in fixture.bounds["numeric"])


def test_an_adapter_without_the_feature_is_never_sent_the_chain():
    fixture = next(f for f in load_corpus() if f.id == "structure/deep-chain-1000000")
    # The catalogue's broken engines declare only the seed feature: the case is unsupported, with the reason.
    transport = SubprocessTransport([sys.executable, str(ROOT / "adapters/broken/adapter.py"), "assign"])
    try:
        run = run_adapter("broken", transport, [fixture], [])
    finally:
        transport.close()
    assert {result.outcome for result in run.results} == {"unsupported"}
    assert "repeat" in run.results[0].message

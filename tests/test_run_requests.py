"""The adapter side's two ways of reading a run request agree (conformance/serve.py).

The harness's own requests take the typed way (``protocol.decode_run_request``); any other line the
careful way (``wire.loads`` and ``parse_program``), which names the mistake. The law: a line the typed
way takes is one the careful way accepts, with the same steps; a line the careful way rejects is one
the typed way leaves to it.
"""

from __future__ import annotations

import io
import json
from typing import Any, Optional

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bad_input import BAD_PROGRAMS

from conformance.program import Program, ProgramError, parse_program, program_hash, program_to_json
from conformance.protocol import decode_run_request, run_request
from conformance.reference_adapter import HELLO, run_case
from conformance.serve import serve
from conformance.strategies import programs
from conformance.wire import to_json_ready


def careful(line: bytes) -> Optional[Program]:
    """The careful way: the steps, or None when the program is rejected."""
    try:
        return parse_program(json.loads(line)["program"], "case c")
    except ProgramError:
        return None


@settings(max_examples=200, deadline=None)
@given(programs())
def test_the_harness_requests_take_the_typed_way_and_read_the_same_steps(program):
    for records in (True, False):
        line = run_request("c", program, records)
        read = careful(line)  # every request reads back as its program, non-finite numbers too (compared as text)
        assert read is not None and program_hash(read) == program_hash(program)
        typed = decode_run_request(line)
        finite = "inf" not in line.decode() and "nan" not in line.decode()
        assert (typed is not None) == finite, line  # non-finite numbers are strings on the wire: the careful way
        if typed is not None:
            assert (typed.case, typed.program, typed.records) == ("c", program, records)


#: Ways a step can go wrong, or be written in a way the harness never writes.
EDITS: list[tuple[str, Any]] = [
    ("value", 2),
    ("value", "inf"),
    ("value", None),
    ("value", True),
    ("value", 1e999),
    ("operands", []),
    ("operands", ["nowhere"]),
    ("operands", ["x", "nowhere"]),
    ("exponent", 2.0),
    ("exponent", None),
    ("seed", None),
    ("seed", 2.0),
    ("repeat", 0),
    ("repeat", 3),
    ("repeat", True),
    ("output", "x"),
    ("id", ""),
    ("id", "x"),
    ("id", "y[1]"),
    ("op", "cbrt"),
    ("op", "add"),
    ("op", "detach"),
    ("op", "zero_grad"),
    ("args", ["x"]),
]


@st.composite
def edited_programs(draw: Any) -> list[dict[str, Any]]:
    """A valid program's plain data with one to three of its steps edited, removed or duplicated."""
    steps = program_to_json(draw(programs(max_steps=8)))
    for _ in range(draw(st.integers(1, 3))):
        index = draw(st.integers(0, len(steps) - 1))
        how = draw(st.sampled_from(["edit", "edit", "edit", "drop-field", "drop-step", "duplicate"]))
        step = dict(steps[index])
        if how == "edit":
            field, value = draw(st.sampled_from(EDITS))
            step[field] = value
            steps[index] = step
        elif how == "drop-field":
            step.pop(draw(st.sampled_from(sorted(step))))
            steps[index] = step
        elif how == "drop-step":
            del steps[index]
            if not steps:
                steps = [{"id": "x", "op": "variable", "value": 1.0}]
        else:
            steps.insert(index, step)
    return steps


@settings(max_examples=500, deadline=None)
@given(edited_programs(), st.sampled_from([{}, {"records": False}]))
def test_a_line_the_typed_way_takes_is_one_the_careful_way_reads_alike(steps, extra):
    line = msgspec.json.encode(to_json_ready({"type": "run", "case": "c", "program": steps, **extra}))  # as the harness writes
    typed = decode_run_request(line)
    expected = careful(line)
    if typed is not None:
        assert expected is not None, steps
        assert typed.program == expected
    # Lines written by hand (spaces, other key orders) are read the careful way.
    spaced = json.dumps({"type": "run", "case": "c", "program": to_json_ready(steps)}).encode()
    assert decode_run_request(spaced) is None


#: A program with a step of every shape: leaves, detach, pow, a repeated binary op, backward with a seed, zero_grad.
EVERY_SHAPE: list[dict[str, Any]] = [
    {"id": "x", "op": "variable", "value": 0.5},
    {"id": "c", "op": "constant", "value": 0.25},
    {"id": "d", "op": "detach", "operands": ["x"]},
    {"id": "p", "op": "pow", "operands": ["x"], "exponent": 2.0},
    {"id": "y", "op": "add", "operands": ["p", "c"], "repeat": 3},
    {"id": "z", "op": "tanh", "operands": ["y"]},
    {"op": "backward", "output": "z", "seed": 0.5},
    {"op": "zero_grad", "output": "z"},
]


def _variants(steps: list[dict[str, Any]]):
    """Every program one edit (of EDITS), one dropped field, one dropped step or one swap away from ``steps``."""
    for index, step in enumerate(steps):
        for field, value in EDITS:
            yield [*steps[:index], {**step, field: value}, *steps[index + 1 :]]
        for field in step:
            yield [*steps[:index], {k: v for k, v in step.items() if k != field}, *steps[index + 1 :]]
        yield steps[:index] + steps[index + 1 :]
        if index + 1 < len(steps):
            yield [*steps[:index], steps[index + 1], step, *steps[index + 2 :]]


def test_every_one_edit_variant_of_every_step_shape_is_read_alike():
    taken = 0
    for steps in _variants(EVERY_SHAPE):
        line = msgspec.json.encode(to_json_ready({"type": "run", "case": "c", "program": steps}))
        typed, expected = decode_run_request(line), careful(line)
        if typed is not None:
            taken += 1
            assert typed.program == expected, steps
    assert taken > 20  # the law is tested on lines the typed way takes, not only on ones it leaves


def _serve(lines: list[str]) -> list[dict[str, Any]]:
    out = io.StringIO()
    serve(HELLO, run_case, io.StringIO("".join(line + "\n" for line in lines)), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_bad_program_gets_its_error_naming_step_and_field_through_serve():
    lines = [json.dumps({"type": "run", "case": f"bad/{n}", "program": steps}) for n, (steps, _) in enumerate(BAD_PROGRAMS)]
    replies = _serve(lines)
    assert [reply["type"] for reply in replies] == ["error"] * len(BAD_PROGRAMS)
    for n, (reply, (_, message)) in enumerate(zip(replies, BAD_PROGRAMS)):
        assert reply["case"] == f"bad/{n}"
        assert reply["message"].startswith(f"case bad/{n}: step ")
        assert message in reply["message"]


def test_serve_answers_typed_and_careful_requests_alike():
    program = parse_program(
        [
            {"id": "x", "op": "variable", "value": 2.0},
            {"id": "y", "op": "mul", "operands": ["x", "x"]},
            {"op": "backward", "output": "y"},
        ],
        "test",
    )
    typed = run_request("c", program).decode()
    assert decode_run_request(typed.encode()) is not None
    by_hand = json.dumps(json.loads(typed), indent=None, separators=(", ", ": "))  # the same request, spaced
    assert decode_run_request(by_hand.encode()) is None
    first, second = _serve([typed, by_hand])
    assert first == second
    assert first["observations"][2]["gradients"] == {"x": 4.0, "y": 1.0}

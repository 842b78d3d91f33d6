"""The Diagnoser: each catalogue variant runs once per program, and what one run simulated no other run sees."""

from __future__ import annotations

from dataclasses import replace

import msgspec

from conformance import diagnose as diagnose_module
from conformance.cases.case import Case
from conformance.diagnose import Diagnoser
from conformance.generate import build_fixture
from conformance.mutants import BUGS, MutantEngine
from conformance.program import parse_program
from conformance.runner import AdapterSession


def _fixture(value: float, case_id: str = "test/square"):
    program = parse_program(
        [
            {"id": "x", "op": "variable", "value": value},
            {"id": "y", "op": "mul", "operands": ["x", "x"]},
            {"op": "backward", "output": "y"},
        ],
        "test",
    )
    return build_fixture(Case(case_id, "x * x", program, "test"))


def _count_runs(monkeypatch) -> list[str]:
    """The bug of every catalogue variant the diagnose module runs from now on, in order."""
    runs: list[str] = []

    class Counting(MutantEngine):
        def run(self, program):
            runs.append(self.bug)
            return super().run(program)

    monkeypatch.setattr(diagnose_module, "MutantEngine", Counting)
    return runs


def test_a_diagnoser_runs_each_variant_once_per_program_however_often_it_is_asked(monkeypatch):
    runs = _count_runs(monkeypatch)
    fixture = _fixture(3.0)
    observations = MutantEngine("assign").run(fixture.program)
    diagnoser = Diagnoser()
    first = diagnoser.diagnose(fixture, observations, "gradients")
    again = diagnoser.diagnose(fixture, observations, "values")
    assert BUGS["assign"] in first and again == []
    assert len(runs) == len(set(runs)) == len(BUGS) - 1  # every variant once; recursive-topo is named from errors


def test_two_diagnosers_share_nothing_they_simulated():
    # Two fixtures under one id and no program hash: a memory shared by two runs would answer the second from the first.
    three, five = _fixture(3.0), _fixture(5.0)
    three, five = (replace(f, provenance={}) for f in (three, five))
    simulated_three = Diagnoser().simulate(three, "assign")
    simulated_five = Diagnoser().simulate(five, "assign")
    assert simulated_three is not None and simulated_five is not None
    assert simulated_three[1].value == 9.0 and simulated_five[1].value == 25.0


def test_a_diagnoser_that_is_full_forgets_and_starts_again(monkeypatch):
    runs = _count_runs(monkeypatch)
    diagnoser = Diagnoser(max_entries=2)
    fixture = _fixture(3.0)
    for bug in ("assign", "stale", "assign", "seed-ignored", "assign"):
        diagnoser.simulate(fixture, bug)
    assert runs == ["assign", "stale", "seed-ignored", "assign"]


def test_every_adapter_session_has_a_diagnoser_of_its_own():
    one = AdapterSession("one", transport=None, expected=[])  # type: ignore[arg-type]
    two = AdapterSession("two", transport=None, expected=[])  # type: ignore[arg-type]
    shared = Diagnoser()
    assert one.diagnoser is not two.diagnoser
    assert AdapterSession("three", transport=None, expected=[], diagnoser=shared).diagnoser is shared  # type: ignore[arg-type]


def test_a_one_op_case_whose_values_agree_shows_the_local_derivative_the_engines_gradient_implies():
    from conformance.diagnose import implied_derivative
    from conformance.fixture import load_corpus
    from conformance.mutants import MutantEngine

    fixture = next(f for f in load_corpus() if f.id == "ops/tanh/libm-rounding")
    observations = MutantEngine("wrong-derivative-tanh").run(fixture.program)
    line = implied_derivative(fixture, observations)
    engine_grad = observations[2].gradients["a"]
    assert line == (
        f"tanh's local derivative for slot 0 (a) at a = 0.906: the engine's is {engine_grad!r}, the contract's "
        "0.4827415251282827 (the values agree, and the gradient of a over the seed is that derivative)"
    )
    hints = Diagnoser().diagnose(fixture, observations, "gradients")
    assert hints[0] == BUGS["wrong-derivative-tanh"] and hints[-1] == line  # the catalogue's name first
    assert implied_derivative(fixture, list(fixture.expected)) is None  # nothing differs: nothing implied


def test_no_derivative_is_implied_where_the_values_differ_or_the_case_has_more_than_one_op():
    from conformance.diagnose import implied_derivative
    from conformance.fixture import load_corpus
    from conformance.mutants import MutantEngine

    corpus = {f.id: f for f in load_corpus()}
    repeated = corpus["repeated/x-mul-x"]  # one op, but its operand in both slots: the gradient sums two derivatives
    assert implied_derivative(repeated, MutantEngine("wrong-derivative-mul").run(repeated.program)) is None
    two_ops = corpus["repeated/cube"]
    assert sum(1 for s in two_ops.program if s.creates and s.op not in ("variable", "constant")) > 1
    assert implied_derivative(two_ops, MutantEngine("wrong-derivative-mul").run(two_ops.program)) is None
    wrong_value = corpus["ops/tanh/libm-rounding"]
    observations = list(wrong_value.expected)
    observations[1] = msgspec.structs.replace(observations[1], value=0.5)
    assert implied_derivative(wrong_value, observations) is None


def _case(steps):
    return build_fixture(Case("t/case", "a case", parse_program(steps, "test"), "test"))


def test_the_exceptions_a_python_engine_raises_are_named_where_the_case_has_the_op_that_explains_them():
    from conformance.diagnose import diagnose_error

    pow_at_zero = _case(
        [
            {"id": "a", "op": "variable", "value": 0.0},
            {"id": "p", "op": "pow", "operands": ["a"], "exponent": 0.0},
            {"op": "backward", "output": "p"},
        ]
    )
    raised = "ZeroDivisionError: 0.0 cannot be raised to a negative power"
    assert diagnose_error(raised, pow_at_zero).startswith(BUGS["pow-derivative-at-c-0"])
    division = _case(
        [
            {"id": "a", "op": "variable", "value": 1e200},
            {"id": "b", "op": "variable", "value": 1e200},
            {"id": "q", "op": "div", "operands": ["a", "b"]},
            {"op": "backward", "output": "q"},
        ]
    )
    overflow = "OverflowError: (34, 'Numerical result out of range')"
    assert diagnose_error(overflow, division).startswith(BUGS["div-derivative-squared"])
    assert "ZeroDivisionError" in diagnose_error("ZeroDivisionError: float division by zero", division)
    assert "outside its domain" in diagnose_error("ValueError: math domain error", pow_at_zero)
    # Without the case, or with a message that says nothing of the kind, nothing is named.
    assert diagnose_error(raised) is None and diagnose_error("KeyError: 'n2'", division) is None
    assert diagnose_error("RecursionError: maximum recursion depth exceeded") == BUGS["recursive-topo"]

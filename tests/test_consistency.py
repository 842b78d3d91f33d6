"""A diagnosis consistent with the whole run: no mistake is named that a case the engine passed contradicts."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import msgspec
from inprocess import EngineTransport

from conformance.compare import compare_level
from conformance.diagnose import DIAGNOSIS_MAX_STEPS, Diagnoser
from conformance.execute import run_program
from conformance.fixture import load_corpus
from conformance.html import write_report
from conformance.mutants import BUGS, Bug, MutantEngine
from conformance.report import details_text, markdown, to_json
from conformance.runner import Outcome, run_adapter

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")
BROKEN = f"{sys.executable} {ROOT / 'adapters/broken/adapter.py'}"
#: Every case the catalogue replays (the large ones would only slow the test: they are never replayed).
CORPUS = [fixture for fixture in load_corpus() if fixture.size <= DIAGNOSIS_MAX_STEPS]
BY_ID = {fixture.id: fixture for fixture in CORPUS}
ADD = BUGS["wrong-derivative-add"]


def run(name, engine):
    return run_adapter(name, EngineTransport(name, engine), CORPUS, [])


def named_anywhere(adapter_run):
    return {hint for r in adapter_run.results for hint in r.diagnosis}


def test_every_name_left_is_one_whose_variant_passes_every_result_the_engine_passed():
    adapter_run = run("assign", MutantEngine(Bug.ASSIGN).run)
    diagnoser = Diagnoser()
    passed = [r for r in adapter_run.results if r.outcome == Outcome.PASSED]
    names = named_anywhere(adapter_run)
    assert names, "the catalogue's own mistake must still be named"
    for description in names:
        bug = next(b for b, d in BUGS.items() if d == description)
        for result in passed:
            fixture = BY_ID[result.case]
            simulated = diagnoser.simulate(fixture, bug)
            if simulated is not None:
                assert not compare_level(fixture, simulated, result.level, limit=1)[0], (description, result.case)


def test_a_catalogue_mistake_is_the_one_explanation_and_the_names_it_contradicts_are_set_aside(tmp_path):
    adapter_run = run("assign", MutantEngine(Bug.ASSIGN).run)
    explanation = adapter_run.explanation
    assert explanation is not None
    assert explanation.line() == f"one known mistake explains every failure: {BUGS[Bug.ASSIGN]}"
    # Seen case by case, a wrong derivative for add reproduces some of assign's failures; the add cases it passed refute it.
    (add,) = [each for each in explanation.set_aside if each.description == ADD]
    assert next(r for r in adapter_run.results if r.case == add.case and r.level == add.level).outcome == Outcome.PASSED
    assert ADD not in named_anywhere(adapter_run)
    # Every report carries it: the terminal's details, JSON and Markdown.
    assert f"DIAGNOSIS assign: {explanation.line()}" in details_text([adapter_run])
    assert f"DIAGNOSIS assign: {add.describe()}" in details_text([adapter_run])
    data = to_json([adapter_run])["adapters"][0]["explanation"]
    assert data["summary"] == explanation.line() and {"mistake": ADD, "case": add.case, "level": add.level} in data["set_aside"]
    assert f"assign: {explanation.line()}." in markdown([adapter_run])
    write_report([adapter_run], CORPUS, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert html.escape(explanation.line()) in page and html.escape(add.describe()) in page


def test_a_mistake_outside_the_catalogue_gets_no_name_that_a_passing_case_contradicts():
    """The add derivative is wrong only in programs of more than six steps: a walk-dependent mistake."""
    wrong_add = MutantEngine("wrong-derivative-add")

    def engine(program, records):
        if len(program) > 6:
            return wrong_add.run(program, records)
        return run_program(program, record_pass=records)

    adapter_run = run("walk", engine)
    explanation = adapter_run.explanation
    assert explanation is not None and explanation.wrong > 0
    passed_add = [r for r in adapter_run.results if r.case.startswith("ops/add/") and r.outcome == Outcome.PASSED]
    assert passed_add, "the small add cases pass: the mistake shows only in longer programs"
    assert ADD not in named_anywhere(adapter_run)
    assert any(each.description == ADD for each in explanation.set_aside)
    assert explanation.line() is not None and not explanation.line().startswith("one known mistake")


def test_a_run_with_nothing_wrong_has_no_explanation_line():
    adapter_run = run("reference", lambda program, records: run_program(program, record_pass=records))
    assert adapter_run.explanation is not None and adapter_run.explanation.line() is None
    assert "DIAGNOSIS" not in details_text([adapter_run])


def test_the_pytest_summary_explains_the_session_and_its_json_report_drops_contradicted_names(pytester, tmp_path):
    report = tmp_path / "report.json"
    result = pytester.runpytest_subprocess(
        "--conformance-command",
        f"{BROKEN} assign",
        "--conformance-case",
        "ops/add/*",
        "--conformance-case",
        "repeated/*",
        "--conformance-json",
        str(report),
        "-q",
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"DIAGNOSIS broken-assign: one known mistake explains every failure: {BUGS[Bug.ASSIGN]}"])
    data = json.loads(report.read_text())
    assert data["adapters"][0]["explanation"]["summary"].startswith("one known mistake explains every failure")
    assert all(ADD not in r.get("diagnosis", []) for r in data["results"])


def test_an_engine_in_single_precision_gets_one_line_saying_so(tmp_path):
    report = tmp_path / "report.json"
    command = f"{sys.executable} {ROOT / 'tests/fakes/float32_adapter.py'}"
    out = subprocess.run(
        [CLI, "run", "--command", command, "--case", "ops/*", "--case", "seeds/*", "--json", report],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 1, out.stderr[-2000:]
    explanation = json.loads(report.read_text())["adapters"][0]["explanation"]
    assert explanation["wrong"] > 10 and explanation["single_precision"] == explanation["wrong"]
    line = explanation["precision"]
    assert line.startswith(f"every differing float of the {explanation['wrong']} failure(s) is the contract's value")
    assert "this engine computes in single precision" in line
    assert f"DIAGNOSIS float32-fake: {line}" in out.stdout


def test_a_wrong_answer_that_is_not_float32_rounding_is_not_called_single_precision():
    adapter_run = run("assign", MutantEngine(Bug.ASSIGN).run)
    assert adapter_run.explanation is not None and adapter_run.explanation.precision_line() is None


def test_a_float64_formula_that_underflows_early_is_not_called_single_precision():
    # scipy's expit(-740), autograd's sigmoid, is 1 / (1 + exp(740)) = 0.0 where the contract's is 4.2e-322 (seen on
    # autograd 1.9.1 with scipy): a difference single precision would also make, and yet a float64 engine's.
    def engine(program, records):
        observations = run_program(program, record_pass=records)
        return [
            msgspec.structs.replace(seen, value=0.0)
            if step.op == "sigmoid" and seen.value is not None and 0.0 < seen.value < 1e-300
            else seen
            for step, seen in zip(program, observations)
        ]

    adapter_run = run("early-underflow", engine)
    wrong = [r for r in adapter_run.results if r.outcome == Outcome.FAILED]
    assert wrong and all(r.single_precision and not r.float32_rounding for r in wrong), wrong
    assert adapter_run.explanation is not None and adapter_run.explanation.precision_line() is None


def test_an_engine_that_raises_in_pows_derivative_at_c_0_gets_that_mistake_named_on_the_case():
    from conformance.transport import AdapterFault

    def engine(program, records):
        if any(step.op == "pow" and step.exponent == 0.0 for step in program):
            raise AdapterFault("the adapter reported an error: ZeroDivisionError: 0.0 cannot be raised to a negative power")
        return run_program(program, record_pass=records)

    adapter_run = run("raises", engine)
    errors = [r for r in adapter_run.results if r.outcome == Outcome.ERROR]
    assert errors and all(r.diagnosis and r.diagnosis[0].startswith(BUGS[Bug.POW_DERIVATIVE_AT_C_0]) for r in errors)

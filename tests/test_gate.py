"""The gate is never green by accident: something must have been compared, and every pass compared a field."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.compare import compare_fields
from conformance.coverage import coverage_line, nothing_compared
from conformance.execute import run_program
from conformance.fixture import FIXTURES_DIR, load_corpus
from conformance.program import DECLARABLE_OPS
from conformance.protocol import FEATURES, LEVELS, Observation, Profile
from conformance.runner import NOTHING_TO_COMPARE, AdapterRun, Outcome, Result, engine_name, run_adapter, run_case
from conformance.transport import DirectTransport, Handshake

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")
PARTIAL = f"{sys.executable} {ROOT / 'tests/fakes/partial_adapter.py'}"
CORPUS = load_corpus(FIXTURES_DIR)


def conformance(*args, cwd=ROOT):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_every_level_of_every_fixture_compares_at_least_one_field_of_the_reference_answer():
    # The audit: a level a fixture lists must check something, under either profile; the reference's own
    # answer is what a correct engine sends, so a level comparing nothing there compares nothing anywhere.
    empty = [
        (fixture.id, str(level), str(profile))
        for fixture in CORPUS
        for level in fixture.levels
        for profile in Profile
        if compare_fields(fixture, list(fixture.expected), level, profile=profile).compared == 0
    ]
    assert empty == []


def test_a_failed_creation_lists_values_but_not_errors_and_a_failed_backward_lists_errors_but_not_gradients():
    by_id = {fixture.id: fixture for fixture in CORPUS}
    assert "errors" not in by_id["errors/non-finite-leaf-variable"].levels
    assert "gradients" not in by_id["errors/failure-in-the-middle"].levels
    assert "errors" in by_id["errors/failure-in-the-middle"].levels


class Engine(DirectTransport):
    """The reference in-process, under any hello; ``silent`` answers every step with an empty observation."""

    def __init__(self, *, levels=tuple(LEVELS), ops=DECLARABLE_OPS, error_kinds=None, trace="full", silent=False):
        kinds = {} if error_kinds is None else {"error_kinds": frozenset(error_kinds)}
        self.hello = Handshake(
            "engine", "0", "python", frozenset(ops), frozenset(levels), frozenset(FEATURES), trace=trace, **kinds
        )
        self.silent = silent

    def handshake(self):
        return self.hello

    def run(self, case, program, timeout=None, *, records=True):
        if self.silent:
            return [Observation() for _ in program]
        return run_program(program, record_pass=records)

    def close(self):
        pass


SMALL = [fixture for fixture in CORPUS if fixture.size < 1000]


@pytest.mark.parametrize(
    "engine",
    [
        Engine(),
        Engine(levels=("values", "errors"), error_kinds=("non-finite-leaf", "non-finite-result")),
        Engine(levels=("values", "gradients", "trace"), trace="nodes"),
        Engine(ops=("add", "mul")),
    ],
    ids=["full", "values-and-two-error-kinds", "node-traces", "add-and-mul-only"],
)
def test_every_passed_result_compared_at_least_one_field(engine):
    run = run_adapter("engine", engine, SMALL, [])
    passed = [r for r in run.results if r.outcome == Outcome.PASSED]
    assert passed, "the engine should pass something"
    assert [(r.case, r.level) for r in passed if r.compared < 1] == []
    assert all(r.outcome in (Outcome.PASSED, Outcome.UNSUPPORTED) for r in run.results)


def test_an_engine_that_checks_nothing_and_declares_only_errors_passes_nothing():
    # It used to get "errors: 11 passed": creation-error cases listed errors, where nothing is compared.
    run = run_adapter("engine", Engine(levels=("errors",), silent=True), SMALL, [])
    assert run.count(Outcome.PASSED) == 0
    assert run.count(Outcome.FAILED, "errors") > 0


def test_a_level_whose_comparison_compares_nothing_is_unsupported_with_the_reason_not_passed():
    fixture = next(f for f in CORPUS if f.id == "errors/non-finite-leaf-variable")
    padded = dataclasses.replace(fixture, levels=(*fixture.levels, "errors"))  # as the old generator listed it
    results = {r.level: r for r in run_case("engine", Engine(), Engine().hello, padded, [])}
    assert results["values"].outcome == Outcome.PASSED and results["values"].compared > 0
    assert results["errors"].outcome == Outcome.UNSUPPORTED
    assert results["errors"].message == NOTHING_TO_COMPARE


def test_the_coverage_line_counts_compared_results_and_names_the_unsupported_reasons():
    run = run_adapter("engine", Engine(levels=("values", "gradients", "errors")), SMALL, [])
    line = coverage_line(run)
    compared = sum(1 for r in run.results if r.outcome == Outcome.PASSED)
    assert line.startswith(f"compared {compared} of {len(run.results)} (case, level) results; ")
    assert "unsupported: no trace (" in line and "no order (" in line


def test_nothing_compared_says_what_the_hello_declared_and_what_the_cases_use():
    cases = [f for f in SMALL if f.id.startswith("seed/")]
    run = run_adapter("engine", Engine(levels=()), cases, [])
    line = nothing_compared(run, cases)
    assert line is not None and "\n" not in line
    assert line.startswith(f"NOTHING COMPARED engine: 0 of {len(run.results)} (case, level) results were compared")
    assert "levels none" in line and "at levels values, gradients, errors, trace, order" in line
    assert "--allow-nothing-compared" in line
    assert nothing_compared(run_adapter("engine", Engine(), cases, []), cases) is None


def test_a_level_filter_that_keeps_no_level_of_the_cases_is_named_as_the_reason():
    cases = [f for f in SMALL if f.id == "errors/non-finite-leaf-variable"]
    run = AdapterRun("engine", handshake=Engine().hello)
    line = nothing_compared(run, cases, levels=["order"], allow="--conformance-allow-nothing-compared")
    assert line is not None and "the level filter (order) keeps none of the levels" in line
    assert "--conformance-allow-nothing-compared" in line


def test_an_ad_hoc_adapter_takes_its_engines_name_kept_unique():
    hello = Engine().hello
    assert engine_name(hello, "command", ["python"]) == "engine"
    assert engine_name(hello, "command", ["engine"]) == "engine (command)"
    assert engine_name(hello, "command", ["engine", "engine (command)"]) == "engine (command 2)"
    assert engine_name(None, "command", []) == "command"


def test_a_run_in_which_the_adapter_compared_nothing_exits_1_with_one_line_saying_why(tmp_path):
    command = f"{PARTIAL} --hello-extra " + json.dumps(json.dumps({"levels": []}))
    reports = ["--json", tmp_path / "r.json", "--junit", tmp_path / "r.xml", "--markdown", tmp_path / "r.md"]
    out = conformance("run", "--command", command, "--case", "seed/*", *reports, "--html", tmp_path / "r.html")
    assert out.returncode == 1, out.stdout + out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("NOTHING COMPARED")]
    assert len(lines) == 1
    assert lines[0].startswith("NOTHING COMPARED partial: 0 of 24 (case, level) results were compared")
    assert "Its hello declares ops add," in lines[0] and "levels none" in lines[0]
    coverage = "compared 0 of 24 (case, level) results; 24 unsupported: no errors (12), no values (3), no gradients (3)"
    assert f"partial: {coverage}" in out.stdout
    assert "closest agreeing float" not in out.stdout  # nothing passed: no float agreed
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["adapters"][0]["coverage"]["compared"] == 0 and report["adapters"][0]["coverage"]["results"] == 24
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    assert suite.find("properties/property[@name='coverage']").get("value").startswith(coverage)
    assert coverage in suite.find("system-out").text
    assert coverage in (tmp_path / "r.md").read_text()
    assert coverage in (tmp_path / "r.html").read_text()
    allowed = conformance("run", "--command", command, "--case", "seed/*", "--allow-nothing-compared")
    assert allowed.returncode == 0 and "NOTHING COMPARED partial" in allowed.stdout


def test_an_adapter_declaring_no_op_fails_when_the_selection_needs_ops():
    command = f"{PARTIAL} --hello-extra " + json.dumps(json.dumps({"ops": []}))
    out = conformance("run", "--command", command, "--case", "repeated/*")
    assert out.returncode == 1
    assert "Its hello declares ops none;" in out.stdout and "unsupported: no op " in out.stdout


def test_a_run_that_compared_something_reports_its_coverage_and_passes():
    out = conformance("run", "--command", f"{PARTIAL} --levels values,gradients", "--case", "seed/*")
    assert out.returncode == 0, out.stdout
    coverage = "compared 6 of 24 (case, level) results; 18 unsupported: no errors (12), no trace (3), no order (3)"
    assert f"partial: {coverage}" in out.stdout
    assert "NOTHING COMPARED" not in out.stdout


def test_a_build_command_runs_once_before_the_run_and_a_failed_build_fails_it_with_its_output(tmp_path):
    python = f"{sys.executable} {ROOT / 'adapters/python/adapter.py'}"
    out = conformance("run", "--command", python, "--build", "echo built >> build.log", "--case", "seed/*", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "build.log").read_text() == "built\n"
    assert "building with `echo built >> build.log`" in out.stderr
    failed = conformance("run", "--command", python, "--build", "echo no compiler here; exit 7", "--case", "seed/*", cwd=tmp_path)
    assert failed.returncode == 1
    assert "BUILD FAILED command: build command `echo no compiler here; exit 7` failed with status 7" in failed.stdout
    assert "no compiler here" in failed.stdout
    alone = conformance("run", "--adapter", "python", "--build", "true")
    assert alone.returncode == 2 and "--build is the build command of --command" in alone.stderr


def test_a_run_whose_results_are_errors_gets_no_nothing_compared_line_its_errors_say_why():
    cases = [f for f in SMALL if f.id.startswith("seed/")]
    run = AdapterRun("engine", handshake=Engine().hello)
    run.results = [Result("engine", f.id, level, Outcome.ERROR, "adapter exited") for f in cases for level in f.levels]
    assert nothing_compared(run, cases) is None
    assert coverage_line(run).endswith(f"; {len(run.results)} error(s), no answer to compare")


def test_a_failed_creation_is_unsupported_not_failed_on_an_engine_without_the_errors_level():
    # Such a case no longer lists errors (its error is compared at values), yet it still expects a typed error.
    cases = [f for f in CORPUS if f.id == "errors/non-finite-leaf-variable"]
    assert "errors" not in cases[0].levels
    run = run_adapter("engine", Engine(levels=("values", "gradients"), silent=True), cases, [])
    assert {r.outcome for r in run.results} == {Outcome.UNSUPPORTED}
    assert {r.message for r in run.results} == {"expects typed errors, and the adapter does not declare the errors level"}

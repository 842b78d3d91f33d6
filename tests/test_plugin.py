"""The pytest plugin, tested by running pytest itself (pytester)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
PYTHON_ADAPTER = f"{sys.executable} {ROOT / 'adapters/python/adapter.py'}"
BROKEN = f"{sys.executable} {ROOT / 'adapters/broken/adapter.py'}"


def test_a_correct_adapter_passes_one_test_per_case_with_a_subtest_per_level(pytester):
    result = pytester.runpytest_subprocess("--conformance-command", PYTHON_ADAPTER, "--conformance-case", "seed/*", "-q")
    result.assert_outcomes(passed=6)
    result.stdout.re_match_lines([r".*6 passed, \d+ subtests passed.*"])
    # The summary names the engine and the profile its floats were compared under (docs/contract.md section 9).
    result.stdout.fnmatch_lines(["reference: reference * (python), profile contract, closest agreeing float: *"])


def test_a_broken_adapter_fails_with_the_step_path_and_diagnosis(pytester):
    result = pytester.runpytest_subprocess(
        "--conformance-command", f"{BROKEN} stale", "--conformance-case", "seed/reused-square", "-q"
    )
    assert result.ret == 1
    output = result.stdout.str()
    assert "failed: step 4: observations[4].gradients.x: expected 16.0, got 24.0" in output
    assert "likely bug: a second backward re-propagates stale intermediate gradients" in output


def test_expected_failures_are_xfails_and_stale_entries_fail(pytester, tmp_path):
    listed = tmp_path / "expected.toml"
    listed.write_text(
        "".join(
            f'[[expected]]\ncase = "repeated/x-mul-x"\nlevel = "{level}"\nreason = "edges merged on purpose"\n'
            for level in ("gradients", "trace", "order")
        )
    )
    broken = pytester.runpytest_subprocess(
        "--conformance-command",
        f"{BROKEN} merge-edges",
        "--conformance-case",
        "repeated/x-mul-x",
        "--conformance-expected-failures",
        str(listed),
        "-q",
        "-rx",
    )
    assert broken.ret == 0
    broken.stdout.fnmatch_lines(["*expected failure: edges merged on purpose*"])
    healthy = pytester.runpytest_subprocess(
        "--conformance-command",
        PYTHON_ADAPTER,
        "--conformance-case",
        "repeated/x-mul-x",
        "--conformance-expected-failures",
        str(listed),
        "-q",
    )
    assert healthy.ret == 1
    healthy.stdout.fnmatch_lines(["*unexpected pass*remove the stale entry*"])


def test_unsupported_cases_are_skipped_with_the_reason(pytester):
    result = pytester.runpytest_subprocess(
        "--conformance-adapter", "micrograd", "--conformance-case", "ops/exp/zero", "-q", "-rs"
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*unsupported: needs op exp*"])


def test_it_runs_under_xdist_and_writes_junit_xml(pytester, tmp_path):
    junit = tmp_path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--conformance-adapter", "python", "--conformance-case", "repeated/*", "-n", "2", f"--junitxml={junit}", "-q"
    )
    result.assert_outcomes(passed=5)
    assert junit.read_text().count("<testcase") >= 5
    result.stdout.fnmatch_lines(["python: reference * (python), profile contract, *"])  # gathered from the workers


def test_an_unknown_adapter_is_a_usage_error(pytester):
    result = pytester.runpytest_subprocess("--conformance-adapter", "nosuch")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--conformance-adapter 'nosuch' is not registered*"])


def test_settings_come_from_the_ini_file_when_not_on_the_command_line(pytester):
    pytester.makeini(f"[pytest]\nconformance_command = {PYTHON_ADAPTER}\n")
    result = pytester.runpytest_subprocess("--conformance-case", "seed/detach", "-q")
    result.assert_outcomes(passed=1)


def test_unreviewed_expected_failures_xfail_with_a_warning_line_in_the_summary_and_the_json(pytester, tmp_path):
    listed = tmp_path / "expected.toml"
    listed.write_text(
        "".join(
            f'[[expected]]\ncase = "repeated/x-mul-x"\nlevel = "{level}"\nreason = "merged"\n'
            + ('bug = "merge-edges"\nunreviewed = true\n' if level == "order" else "")
            for level in ("gradients", "trace", "order")
        )
    )
    report = tmp_path / "report.json"
    result = pytester.runpytest_subprocess(
        "--conformance-command",
        f"{BROKEN} merge-edges",
        "--conformance-case",
        "repeated/x-mul-x",
        "--conformance-expected-failures",
        str(listed),
        "--conformance-json",
        str(report),
        "-q",
    )
    assert result.ret == 0
    warning = f"1 expected failure in {listed} is an unreviewed draft: review its reason, then delete its `unreviewed = true`"
    assert result.stdout.str().count(f"WARNING broken-merge-edges: {warning}") == 1
    assert json.loads(report.read_text())["adapters"][0]["warning"] == warning


PARTIAL = f"{sys.executable} {ROOT / 'tests/fakes/partial_adapter.py'}"
DECLARES_NO_LEVEL = f"{PARTIAL} --hello-extra " + json.dumps(json.dumps({"levels": []}))


def test_a_session_in_which_the_adapter_compared_nothing_fails_with_one_line_saying_why(pytester):
    result = pytester.runpytest_subprocess("--conformance-command", DECLARES_NO_LEVEL, "--conformance-case", "seed/*", "-q")
    assert result.ret == 1  # not 0: every test was skipped, and nothing was compared
    output = result.stdout.str()
    assert output.count("NOTHING COMPARED partial: 0 of 24 (case, level) results were compared") == 1
    assert "levels none" in output and "--conformance-allow-nothing-compared" in output
    assert "partial: compared 0 of 24 (case, level) results; 24 unsupported:" in output
    allowed = pytester.runpytest_subprocess(
        "--conformance-command",
        DECLARES_NO_LEVEL,
        "--conformance-case",
        "seed/*",
        "--conformance-allow-nothing-compared",
        "true",
        "-q",
    )
    assert allowed.ret == 0


def test_a_level_filter_that_leaves_nothing_to_compare_fails_the_session(pytester):
    result = pytester.runpytest_subprocess(
        "--conformance-command",
        PYTHON_ADAPTER,
        "--conformance-case",
        "errors/non-finite-leaf-variable",
        "--conformance-level",
        "order",
        "-q",
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(["NOTHING COMPARED reference: the level filter (order) keeps none of the levels*"])


def test_the_plugin_with_no_adapter_says_what_it_needs_instead_of_no_tests_ran(pytester):
    result = pytester.runpytest_subprocess("-q")
    assert result.ret == 4  # a usage error, not exit 5
    result.stdout.fnmatch_lines(
        ["conformance: error: the conformance plugin has no adapter to run: give --conformance-command CMD*"]
    )
    assert "found no ini file" in result.stdout.str()
    pytester.makeini("[pytest]\nconformance_fixtures = fixtures\n")  # settings, but no adapter
    configured = pytester.runpytest_subprocess("-q")
    assert configured.ret == 4
    configured.stderr.fnmatch_lines(["*the conformance plugin has no adapter to run*only --conformance-fixtures is set*"])


def test_paths_in_the_ini_file_are_read_from_its_folder_not_the_current_one(pytester, monkeypatch):
    corpus = pytester.path / "corpus"
    (corpus / "repeated").mkdir(parents=True)
    (corpus / "fixture.schema.json").write_text((ROOT / "fixtures/fixture.schema.json").read_text())
    (corpus / "repeated/x-mul-x.json").write_text((ROOT / "fixtures/repeated/x-mul-x.json").read_text())
    (pytester.path / "expected.toml").write_text(
        "".join(
            f'[[expected]]\ncase = "repeated/x-mul-x"\nlevel = "{level}"\nreason = "merged"\n'
            for level in ("gradients", "trace", "order")
        )
    )
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        f'conformance_command = "{BROKEN} merge-edges"\n'
        'conformance_fixtures = "corpus"\n'
        'conformance_expected_failures = "expected.toml"\n'
        'conformance_json = "out/report.json"\n'
    )
    (pytester.path / "out").mkdir()
    engine = pytester.mkdir("engine")
    monkeypatch.chdir(engine)
    result = pytester.runpytest_subprocess("-q")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1, xfailed=3)  # the one case of the ini's corpus, its failures listed
    report = json.loads((pytester.path / "out/report.json").read_text())
    assert report["adapters"][0]["name"] == "broken-merge-edges"
    assert not (engine / "out").exists()


def test_errors_from_the_plugin_name_the_plugins_options(pytester):
    result = pytester.runpytest_subprocess("--conformance-command", PYTHON_ADAPTER, "--conformance-case", "no/such/*")
    assert result.ret == 4
    error = result.stderr.str()
    assert "--conformance-case no/such/*" in error and "--conformance-allow-empty accepts that" in error
    assert "--case " not in error and "(--allow-empty" not in error


def test_a_build_command_runs_once_before_the_session_and_its_failure_is_a_clear_error(pytester):
    pytester.makeini(f"[pytest]\nconformance_command = {PYTHON_ADAPTER}\nconformance_build = echo built >> build.log\n")
    result = pytester.runpytest_subprocess("--conformance-case", "seed/*", "-q")
    result.assert_outcomes(passed=6)
    assert (pytester.path / "build.log").read_text() == "built\n"
    failing = pytester.runpytest_subprocess(
        "--conformance-case", "seed/*", "--conformance-build", "echo cannot find engine.c; exit 3", "-q"
    )
    assert failing.ret == 4
    failing.stderr.fnmatch_lines(
        ["*--conformance-build / conformance_build: build command `echo cannot find engine.c; exit 3` failed with status 3*"]
    )
    assert "cannot find engine.c" in failing.stderr.str()

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
    result.stdout.fnmatch_lines(["command: reference * (python), profile contract, closest agreeing float: *"])


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
    assert result.stdout.str().count(f"WARNING command: {warning}") == 1
    assert json.loads(report.read_text())["adapters"][0]["warning"] == warning

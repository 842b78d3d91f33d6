"""Expected-failure files: their fields, how a bad one is reported, and the micrograd list's bug names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.expected import ExpectedError, load_expected
from conformance.mutants import BUGS

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")
BROKEN = f"{sys.executable} {ROOT / 'adapters/broken/adapter.py'}"
PYTHON = f"{sys.executable} {ROOT / 'adapters/python/adapter.py'}"
MICROGRAD_EXPECTED = ROOT / "adapters" / "micrograd" / "expected-failures.toml"


def conformance(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, cwd=ROOT)


def entry(**fields):
    return "[[expected]]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in fields.items())


def test_an_entry_may_name_the_catalogue_bug_it_stands_for(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text(entry(case="seed/*", level="*", reason="stale on purpose", bug="stale"))
    (loaded,) = load_expected(path)
    assert loaded.bug == "stale" and loaded.matches("seed/reused-square", "gradients")


@pytest.mark.parametrize(
    "bug, message",
    [
        ("stael", 'entry 2 ([[expected]] case = "b"): field "bug": "stael" is not a bug of the catalogue (did you mean "stale"'),
        ("no-such-mistake", 'entry 2 ([[expected]] case = "b"): field "bug": "no-such-mistake" is not a bug of the catalogue ('),
        (3, 'entry 2 ([[expected]] case = "b"): field "bug": expected a string naming a bug of the catalogue, got 3'),
    ],
)
def test_a_bug_that_is_not_in_the_catalogue_names_the_file_entry_and_field(tmp_path, bug, message):
    path = tmp_path / "expected.toml"
    path.write_text(entry(case="a", level="*", reason="r") + "\n" + entry(case="b", level="*", reason="r", bug=bug))
    with pytest.raises(ExpectedError) as raised:
        load_expected(path)
    assert str(raised.value).startswith(f"{path}: {message}")


def test_a_bad_bug_on_the_command_line_is_one_clear_line_and_exit_2(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text(entry(case="a", level="*", reason="r", bug="stael"))
    for command in ("run", "fuzz"):
        out = conformance(command, "--command", f"{BROKEN} stale", "--expected-failures", path)
        assert out.returncode == 2, out.stdout
        assert out.stderr.startswith(f'conformance: error: {path}: entry 1 ([[expected]] case = "a"): field "bug": "stael"')
        assert "`conformance list --bugs` lists them" in out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.splitlines()) == 1


@pytest.mark.skipif(subprocess.run([sys.executable, "-c", "import micrograd"]).returncode != 0, reason="needs micrograd")
def test_every_bug_the_micrograd_list_names_is_what_the_diagnosis_names_for_its_cases(tmp_path):
    report = tmp_path / "report.json"
    assert conformance("run", "--adapter", "micrograd", "--json", report).returncode == 0
    results = json.loads(report.read_text())["results"]
    entries = load_expected(MICROGRAD_EXPECTED)
    assert {e.bug for e in entries} >= {"stale", "relu-keeps-negative-zero", "recursive-topo", "div-by-reciprocal"}
    for listed in entries:
        covered = [r for r in results if r["outcome"] == "xfailed" and listed.matches(r["case"], r["level"])]
        assert covered, listed
        for result in covered:
            if listed.bug is None:
                assert not any(text in BUGS.values() for text in result.get("diagnosis", [])), result
            else:
                assert BUGS[listed.bug] in result["diagnosis"], result


def test_update_expected_writes_new_entries_as_unreviewed_drafts_and_every_run_warns_until_reviewed(tmp_path):
    listed, report, matrix = tmp_path / "expected.toml", tmp_path / "report.json", tmp_path / "matrix.md"
    command = ("run", "--command", f"{BROKEN} merge-edges", "--case", "repeated/x-*", "--expected-failures", listed)
    drafted = conformance(*command, "--update-expected")
    assert drafted.returncode == 0, drafted.stderr
    entries = load_expected(listed)
    assert entries and all(e.unreviewed for e in entries)
    # The draft reason is the diagnosis: several bugs reproduce x + x (each is named), only merged edges the rest.
    (add,) = [e for e in entries if e.case == "repeated/x-add-x" and e.level == "gradients"]
    assert add.bug == "assign" and add.reason.startswith(f"{BUGS['assign']}; or ") and BUGS["merge-edges"] in add.reason
    assert {e.bug for e in entries} == {"assign", "merge-edges"}
    warning = (
        f"{len(entries)} expected failures in {listed} are unreviewed drafts: "
        "review each reason, then delete its `unreviewed = true`"
    )
    assert drafted.stdout.count(warning) == 1
    # The drafts xfail, so the gate is green while they are reviewed, but every report says so.
    gated = conformance(*command, "--json", report, "--markdown", matrix)
    assert gated.returncode == 0 and f"WARNING broken-merge-edges: {warning}" in gated.stdout
    (adapter,) = json.loads(report.read_text())["adapters"]
    assert adapter["xfailed"] == len(entries) and adapter["warning"] == warning
    assert adapter["unreviewed_expected_failures"] == len(entries) and adapter["expected_failures"] == str(listed)
    assert warning in matrix.read_text()
    # Reviewing one entry (the flag deleted, the reason rewritten) is kept by the next update; the rest stay drafts.
    text = listed.read_text()
    first = text.index("unreviewed = true\n")
    head = text[:first]
    reason = head[head.rindex('reason = "') : head.rindex('bug = "')]
    listed.write_text(head.replace(reason, 'reason = "reviewed: walked once"\n') + text[first + len("unreviewed = true\n") :])
    redrafted = conformance(*command, "--update-expected")
    reviewed = [e for e in load_expected(listed) if not e.unreviewed]
    assert [e.reason for e in reviewed] == ["reviewed: walked once"] and reviewed[0].bug == entries[0].bug
    assert f"{len(entries) - 1} expected failures in {listed} are unreviewed drafts" in redrafted.stdout
    # Every flag deleted: no warning, anywhere.
    listed.write_text(listed.read_text().replace("unreviewed = true\n", ""))
    clean = conformance(*command, "--json", report)
    assert clean.returncode == 0 and "unreviewed" not in clean.stdout
    (adapter,) = json.loads(report.read_text())["adapters"]
    assert adapter["unreviewed_expected_failures"] == 0 and "warning" not in adapter


def test_a_draft_without_a_diagnosis_takes_the_first_difference_as_its_reason(tmp_path):
    listed = tmp_path / "expected.toml"
    fake = ROOT / "tests" / "fakes" / "fault_adapter.py"
    out = conformance(
        "run", "--command", f"{sys.executable} {fake} error-reply", "--case", "seed/reused-square",
        "--expected-failures", listed, "--update-expected",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (first, *_) = load_expected(listed)
    assert first.unreviewed and first.bug is None
    assert first.reason == "the adapter could not run the case: unsupported step kind"


def test_an_unreviewed_flag_that_is_not_a_boolean_names_the_file_entry_and_field(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text(entry(case="a", level="*", reason="r", unreviewed="yes"))
    with pytest.raises(
        ExpectedError, match=r'entry 1 \(\[\[expected\]\] case = "a"\): field "unreviewed": expected true or false, got "yes"'
    ):
        load_expected(path)


LEVEL_3 = (
    'entry 3 ([[expected]] case = "ops/exp/*"): field "level": '
    'expected one of values, gradients, errors, trace, order or "*", got 3'
)

MALFORMED = {
    "a single [expected] table": (
        '[expected]\ncase = "seed/*"\nlevel = "*"\nreason = "r"\n',
        "[expected] is a single table: write each entry as [[expected]], with double brackets",
    ),
    "expected = 3": ("expected = 3\n", '"expected" must be a list of [[expected]] tables, got 3'),
    'expected = ["x"]': ('expected = ["x"]\n', 'entry 1: expected an [[expected]] table, got "x"'),
    "a misspelt table name": (
        '[[expect]]\ncase = "seed/*"\nlevel = "*"\nreason = "r"\n',
        'unknown top-level key "expect" (did you mean [[expected]]? an expected-failures file has only [[expected]] entries)',
    ),
    "a level that is a number": (
        entry(case="seed/*", level="*", reason="r")
        + entry(case="ops/log/*", level="values", reason="r")
        + entry(case="ops/exp/*", level=3, reason="r"),
        LEVEL_3,
    ),
    "a misspelt field": (
        entry(case="seed/*", level="*", resaon="r"),
        'entry 1 ([[expected]] case = "seed/*"): unknown field "resaon" (did you mean "reason"? fields: case, level,',
    ),
    "a missing reason": (entry(case="seed/*", level="*"), 'entry 1 ([[expected]] case = "seed/*"): field "reason" is missing'),
    "a case that is not a string": (
        entry(case=["seed/*"], level="*", reason="r"),
        'entry 1: field "case": expected a non-empty string, got an array',
    ),
    "an empty reason": (
        entry(case="seed/*", level="values", reason=" "),
        'entry 1 ([[expected]] case = "seed/*"): field "reason": expected a non-empty string, got " "',
    ),
    "a case pattern that matches no case": (
        entry(case="seed/*", level="*", reason="r") + entry(case="sead/reused-square", level="*", reason="r"),
        'entry 2 ([[expected]] case = "sead/reused-square"): field "case": the pattern matches none of the',
    ),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_every_mistake_in_an_expected_failures_file_is_one_line_naming_file_entry_and_field_and_exit_2(tmp_path, name):
    text, message = MALFORMED[name]
    path = tmp_path / "expected-failures.toml"
    path.write_text(text)
    out = conformance("run", "--command", f"{BROKEN} stale", "--case", "seed/*", "--expected-failures", path)
    assert out.returncode == 2, out.stdout
    assert out.stderr.startswith(f"conformance: error: {path}: {message}"), out.stderr
    assert len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_case_pattern_that_matches_no_case_offers_the_close_ones(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text(entry(case="sead/reused-square", level="*", reason="r"))
    out = conformance("run", "--command", f"{BROKEN} stale", "--expected-failures", path)
    assert out.returncode == 2 and out.stderr.rstrip().endswith("; close: seed/reused-square"), out.stderr


def test_an_entry_for_a_case_of_the_corpus_that_the_run_does_not_select_is_not_an_error(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text(entry(case="structure/deep-chain-*", level="*", reason="outside this run"))
    out = conformance("run", "--command", PYTHON, "--case", "seed/detach", "--expected-failures", path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_level_that_is_not_a_level_is_named_with_the_levels_there_are(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text(MALFORMED["a level that is a number"][0])
    with pytest.raises(ExpectedError) as raised:
        load_expected(path)
    assert str(raised.value) == f"{path}: {LEVEL_3}"


pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    "name", ["a single [expected] table", 'expected = ["x"]', "a misspelt table name", "a case pattern that matches no case"]
)
def test_the_pytest_plugin_reports_a_malformed_expected_failures_file_as_a_usage_error_not_an_internal_error(
    pytester, tmp_path, name
):
    text, message = MALFORMED[name]
    path = tmp_path / "expected-failures.toml"
    path.write_text(text)
    result = pytester.runpytest_subprocess(
        "--conformance-command", f"{BROKEN} stale", "--conformance-case", "seed/*",
        "--conformance-expected-failures", str(path),
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {path}: {message}" in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_list_bugs_names_every_bug_of_the_catalogue_with_what_it_is_and_the_cases_that_catch_it():
    out = conformance("list", "--bugs")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    cases = set(conformance("list").stdout.split())
    for bug, description in BUGS.items():
        (at,) = [index for index, line in enumerate(lines) if line.split()[:1] == [bug]]
        assert lines[at].endswith(description)
        caught = lines[at + 1].split("caught by: ")[1].split(", ")
        assert caught and set(caught) <= cases, (bug, caught)
    assert lines[-1] == f'{len(BUGS)} bugs; an expected-failures entry names one as `bug = "NAME"`'

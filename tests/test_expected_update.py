"""--update-expected keeps what people wrote; a listed pass says whether its entry is stale or too broad; a creation
that should have failed shows what came back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformance.compare import compare_level
from conformance.expected import load_expected
from conformance.expected_update import Observed, update_expected
from conformance.fixture import load_corpus
from conformance.mutants import MutantEngine

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")
BROKEN = f"{sys.executable} {ROOT / 'adapters/broken/adapter.py'}"
PYTHON = f"{sys.executable} {ROOT / 'adapters/python/adapter.py'}"

REVIEWED = """\
# Expected failures of our engine. Reviewed by Ann, 2026-12-01.
# Ask her before you delete one.

# pow walks its exponent edge: issue 12
[[expected]]
case = "ops/pow/*"  # every pow case
level = "*"
reason = "pow's exponent edge is walked"

# this one was fixed last week
[[expected]]
case = "seed/detach"
level = "values"
reason = "detach copied the value"

# kept: outside this run
[[expected]]
case = "structure/deep-chain-*"
level = "errors"
reason = "recursion"
# (the million-node chain overflows the stack)

# typo'd case: nothing matches it any more
[[expected]]
case = "ops/powr/*"
level = "*"
reason = "gone"

# end of the reviewed list
"""


def conformance(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, cwd=ROOT)


def test_a_rewrite_keeps_the_header_comments_and_reasons_removes_stale_entries_narrows_broad_ones_and_adds_drafts(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text(REVIEWED)
    observed = [
        Observed("ops/pow/a", "values", failed=False),
        Observed("ops/pow/a", "gradients", failed=True, reason="x"),
        Observed("ops/pow/b", "values", failed=False),
        Observed("ops/pow/b", "gradients", failed=True, reason="x"),
        Observed("seed/detach", "values", failed=False),
        Observed("seed/other", "gradients", failed=True, reason="the seed is ignored", bug="seed-ignored"),
    ]
    cases = {"ops/pow/a", "ops/pow/b", "seed/detach", "seed/other", "structure/deep-chain-10"}
    update = update_expected(path, load_expected(path), observed, "a new file's header", cases)
    text = path.read_text()
    assert text.startswith(
        "# Expected failures of our engine. Reviewed by Ann, 2026-12-01.\n# Ask her before you delete one.\n\n"
    )
    # The too broad entry is narrowed in place: its comments, inline comment and reason stay.
    assert (
        '# pow walks its exponent edge: issue 12\n[[expected]]\ncase = "ops/pow/*"  # every pow case\nlevel = "gradients"\n'
        in text
    )
    assert "pow's exponent edge is walked" in text
    # The stale entry and the one matching no case go, with their comments; the one outside the run stays with its own.
    assert "detach copied the value" not in text and "fixed last week" not in text
    assert "ops/powr" not in text and "typo'd case" not in text
    assert '# kept: outside this run\n[[expected]]\ncase = "structure/deep-chain-*"' in text
    assert "# (the million-node chain overflows the stack)" in text and text.rstrip().endswith("# end of the reviewed list")
    assert update.notes == [
        "narrowed entry 1 (case ops/pow/*, level *): it also covered levels that pass (values); "
        "now case ops/pow/*, level gradients",
        "removed entry 2 (case seed/detach, level values): every result it covers passed",
        "removed entry 4 (case ops/powr/*, level *): its case pattern matches no case of the corpus",
    ]
    assert update.added == 1
    entries = load_expected(path)
    assert entries == update.entries
    assert [(e.case, e.level, e.unreviewed, e.bug) for e in entries] == [
        ("ops/pow/*", "gradients", False, None),
        ("structure/deep-chain-*", "errors", False, None),
        ("seed/other", "gradients", True, "seed-ignored"),
    ]


def test_a_rewrite_with_nothing_to_change_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "expected.toml"
    text = REVIEWED.replace('level = "*"\nreason = "pow', 'level = "gradients"\nreason = "pow')
    path.write_text(text)
    cases = {"ops/pow/a", "seed/detach", "structure/deep-chain-10", "ops/powr/x"}
    update_expected(path, load_expected(path), [Observed("ops/pow/a", "gradients", failed=True)], "", cases)
    assert path.read_text() == text


def test_a_pattern_that_fails_at_some_cases_and_passes_at_others_is_narrowed_to_the_failing_cases(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text('[[expected]]\ncase = "ops/*"\nlevel = "values"\nreason = "r"\n')
    observed = [Observed("ops/a", "values", failed=True), Observed("ops/b", "values", failed=False)]
    update = update_expected(path, load_expected(path), observed, "", {"ops/a", "ops/b"})
    assert [(e.case, e.level, e.reason) for e in load_expected(path)] == [("ops/a", "values", "r")]
    assert update.notes == [
        "narrowed entry 1 (case ops/*, level values): it also covered cases that pass (ops/b); now case ops/a, level values"
    ]


def test_update_expected_from_the_cli_keeps_comments_says_what_it_removed_and_leaves_a_green_gate(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text(
        '# header kept\n\n# why x*x fails\n[[expected]]\ncase = "repeated/x-mul-x"\nlevel = "*"\nreason = "merged"\n\n'
        '# stale\n[[expected]]\ncase = "seed/detach"\nlevel = "values"\nreason = "never failed"\n'
    )
    command = ("run", "--command", f"{BROKEN} merge-edges", "--case", "repeated/x-mul-x", "--case", "seed/detach")
    updated = conformance(*command, "--expected-failures", path, "--update-expected")
    assert updated.returncode == 0, updated.stderr
    assert f"command: {path}: removed entry 2 (case seed/detach, level values): every result it covers passed" in updated.stderr
    narrowed = "narrowed entry 1 (case repeated/x-mul-x, level *): it also covered levels that pass (values); now case"
    assert f"command: {path}: {narrowed} repeated/x-mul-x, level gradients, trace, order" in updated.stderr
    text = path.read_text()
    assert text.startswith("# header kept\n\n# why x*x fails\n[[expected]]\n") and "never failed" not in text
    gated = conformance(*command, "--expected-failures", path)
    assert gated.returncode == 0, gated.stdout


def test_a_listed_pass_beside_listed_failures_of_the_same_case_says_the_entry_is_too_broad_and_names_the_passing_levels(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text('[[expected]]\ncase = "repeated/x-mul-x"\nlevel = "*"\nreason = "merged"\n')
    out = conformance("run", "--command", f"{BROKEN} merge-edges", "--case", "repeated/x-mul-x", "--expected-failures", path)
    assert out.returncode == 1
    assert (
        "but passed: entry 1 (case repeated/x-mul-x, level *) also covers levels that pass: values "
        "(it fails at gradients, trace, order); narrow its level"
    ) in out.stdout
    assert "remove the stale entry" not in out.stdout


def test_a_listed_pass_of_an_entry_that_covers_nothing_failing_says_it_is_stale(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text('[[expected]]\ncase = "repeated/x-mul-x"\nlevel = "*"\nreason = "merged"\n')
    out = conformance("run", "--command", PYTHON, "--case", "repeated/x-mul-x", "--expected-failures", path)
    assert out.returncode == 1
    assert (
        "entry 1 (case repeated/x-mul-x, level *) covers no level of repeated/x-mul-x that fails: remove the stale entry"
        in out.stdout
    )


def test_a_creation_that_should_have_failed_shows_the_value_that_came_back_and_the_error_expected():
    (fixture,) = [f for f in load_corpus() if f.id == "errors/non-finite-leaf-variable"]
    observations = MutantEngine("leaf-unchecked").run(fixture.program)
    differences, _ = compare_level(fixture, observations, "values")
    text = differences[0].describe()
    assert 'got {"value": "inf", "tracked": true}' in text or 'got {"value": "-inf", "tracked": true}' in text, text
    assert "should have failed with non-finite-leaf, but returned a value" in text
    assert "got nothing" not in text


def test_after_a_run_each_stale_or_too_broad_entry_gets_one_line_judged_over_every_case_it_covers(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text(
        '[[expected]]\ncase = "repeated/x-*"\nlevel = "*"\nreason = "merged"\n\n'
        '[[expected]]\ncase = "seed/*"\nlevel = "values"\nreason = "never failed"\n\n'
        '[[expected]]\ncase = "repeated/cube"\nlevel = "gradients"\nreason = "merged, and right"\n'
    )
    command = ("run", "--command", f"{BROKEN} merge-edges", "--case", "repeated/*", "--case", "seed/detach")
    out = conformance(*command, "--expected-failures", path)
    assert out.returncode == 1
    notes = [line for line in out.stderr.splitlines() if line.startswith(f"command: {path}: ")]
    assert notes == [
        f"command: {path}: entry 1 (case repeated/x-*, level *) also covers levels that pass (values): "
        "narrow it to case repeated/x-*, level gradients, trace, order (--update-expected does)",
        f"command: {path}: entry 2 (case seed/*, level values) is stale (every result it covers passed): remove it",
    ]


pytest_plugins = ["pytester"]


def test_the_pytest_plugin_says_an_entry_is_too_broad_in_the_failure_and_in_the_summary(pytester, tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text('[[expected]]\ncase = "repeated/x-mul-x"\nlevel = "*"\nreason = "merged"\n')
    result = pytester.runpytest_subprocess(
        "--conformance-command", f"{BROKEN} merge-edges", "--conformance-case", "repeated/x-mul-x",
        "--conformance-expected-failures", str(path),
    )  # fmt: skip
    assert result.ret == 1
    output = result.stdout.str()
    assert "entry 1 (case repeated/x-mul-x, level *) also covers levels that pass: values" in output
    assert (
        f"broken-merge-edges: {path}: entry 1 (case repeated/x-mul-x, level *) also covers levels that pass (values): "
        "narrow it to case repeated/x-mul-x, level gradients, trace, order (--update-expected does)"
    ) in output


def test_a_file_of_comments_only_such_as_a_starters_keeps_them_above_the_new_drafts(tmp_path):
    path = tmp_path / "expected.toml"
    template = (ROOT / "conformance" / "starters" / "python" / "expected-failures.toml").read_text()
    path.write_text(template)
    update = update_expected(path, [], [Observed("seed/detach", "values", failed=True, reason="r")], "unused header", None)
    text = path.read_text()
    assert text.startswith(template.rstrip("\n")) and "unused header" not in text
    assert [(e.case, e.unreviewed) for e in load_expected(path)] == [("seed/detach", True)] and update.added == 1


def test_an_inline_array_of_entries_is_rewritten_as_tables_and_the_output_says_what_was_not_kept(tmp_path):
    path = tmp_path / "expected.toml"
    path.write_text('# kept\nexpected = [{case = "seed/detach", level = "values", reason = "r"}]\n')
    update = update_expected(path, load_expected(path), [Observed("seed/detach", "values", failed=True)], "", None)
    assert path.read_text().startswith("# kept\n\n[[expected]]\n")
    assert update.notes == ["its entries were an inline array: rewritten as [[expected]] tables, without the comments inside it"]
    assert [(e.case, e.reason) for e in load_expected(path)] == [("seed/detach", "r")]

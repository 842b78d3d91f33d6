"""docs/contract.md is the ground truth: its rule map cannot rot, and it agrees with the reference.

Each rule of the contract names the fixtures that exercise it; these tests
hold the map to the corpus in both directions, hold the contract's tables to
the reference's op table and error kinds, and check that a failing result in
a report points at the rules its case exercises.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.bounds import FORMULA_ULPS, LIBM_ULPS
from conformance.contract import ContractError, contract_path, load_rules, parse_rules, rules_for_case
from conformance.fixture import FIXTURES_DIR, fixture_ids
from reference.errors import ERROR_KINDS
from reference.ops import OPS

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = (ROOT / "docs" / "contract.md").read_text()
RULES = load_rules()


def test_the_contract_is_the_one_in_the_checkout():
    assert contract_path() == ROOT / "docs" / "contract.md"


def test_every_rule_names_fixtures_that_exist():
    known = fixture_ids(FIXTURES_DIR)
    missing = {rule.id: [case for case in rule.fixtures if case not in known] for rule in RULES}
    assert {rule: cases for rule, cases in missing.items() if cases} == {}
    assert all(rule.fixtures for rule in RULES)


def test_every_fixture_is_named_by_a_rule():
    named = {case for rule in RULES for case in rule.fixtures}
    assert sorted(fixture_ids(FIXTURES_DIR) - named) == []


def test_rule_ids_mentioned_in_the_text_are_defined():
    defined = {rule.id for rule in RULES}
    prefixes = {rule_id.split(".")[0] for rule_id in defined}
    mentioned = {
        name
        for name in re.findall(r"`([a-z][a-z0-9-]*\.[a-z0-9.-]+)`", CONTRACT)
        if name.split(".")[0] in prefixes and "/" not in name
    }
    assert sorted(mentioned - defined) == []


def test_the_op_table_is_the_reference_op_table_in_its_order():
    rows = [rule.id.removeprefix("op.") for rule in RULES if re.fullmatch(r"op\.[a-z]+", rule.id)]
    assert rows == list(OPS)


@pytest.mark.parametrize("kind", list(ERROR_KINDS))
def test_every_error_kind_is_written_with_its_fields_in_order(kind):
    fields = ", ".join(ERROR_KINDS[kind].field_names)
    written = re.sub(r"\s+", " ", CONTRACT)
    assert f"`{kind} {{{fields}}}`" in written or f"`{kind}` {{{fields}}}" in written.replace("`{", "{")


def test_the_stated_error_budgets_are_the_generators():
    assert f"within **{LIBM_ULPS} ulps** of the true function value" in CONTRACT
    assert f"another formula within **{FORMULA_ULPS} ulps** of the exact result" in CONTRACT


def test_a_duplicate_rule_or_one_without_fixtures_is_a_clear_error():
    with pytest.raises(ContractError, match=r"x\.md:3: rule a\.b is already defined at line 1"):
        parse_rules("**`a.b`** One. Fixtures: `c/d`.\n\n**`a.b`** Two. Fixtures: `c/e`.\n", "x.md")
    with pytest.raises(ContractError, match=r"x\.md:1: rule a\.b names no fixture"):
        parse_rules("**`a.b`** One rule, no list.\n", "x.md")


def test_table_rows_are_rules_with_their_header_as_words():
    text = (
        "| rule | op | value | fixtures |\n|---|---|---|---|\n"
        "| **`op.add`** | `add(a, b)` | `a + b` | `ops/add/x`, `ops/add/y` |\n"
    )
    (rule,) = parse_rules(text)
    assert rule.fixtures == ("ops/add/x", "ops/add/y")
    assert rule.summary == "op add(a, b); value a + b"


def test_a_case_points_at_its_most_specific_rules_then_its_level():
    ids = [rule.id for rule in rules_for_case("errors/contribution-checked-before-accumulation", "errors")]
    assert ids[0] == "backward.check-order"
    assert ids[-1] == "level.errors"


def test_list_rules_prints_the_map_and_fails_on_a_missing_fixture(tmp_path):
    done = subprocess.run([sys.executable, "-m", "conformance", "list", "--rules"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"{len(RULES)} rules in" in done.stdout
    assert "  backward.fresh-pass  " in done.stdout
    # A corpus that lacks a named fixture: the map says which one, and the command fails.
    (tmp_path / "seed").mkdir()
    (tmp_path / "seed" / "reused-square.json").write_text((FIXTURES_DIR / "seed" / "reused-square.json").read_text())
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "list", "--rules", "--fixtures", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "repeated/x-mul-x   <- no such fixture" in done.stdout


def test_a_failing_result_names_the_rule_it_breaks(tmp_path):
    report = tmp_path / "report.json"
    command = f"{sys.executable} {ROOT / 'adapters/broken/adapter.py'} merge-edges"
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--command", command, "--case", "repeated/x-mul-x", "--json", str(report)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "graph.edges-never-merged (section 1)" in done.stdout
    failed = [r for r in json.loads(report.read_text())["results"] if r["outcome"] == "failed"]
    assert failed and all("graph.edges-never-merged" in r["rules"] for r in failed)


def test_no_file_in_the_repository_points_at_the_brief():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    naming = [
        path for path in tracked if (ROOT / path).is_file() and "DESIGN" + ".md" in (ROOT / path).read_text(errors="replace")
    ]
    assert naming == []


def test_the_readme_lists_every_plugin_option_and_ini_key():
    from conformance.pytest_plugin import options_markdown

    assert options_markdown() in (ROOT / "README.md").read_text()


def test_a_difference_in_the_sign_of_zero_is_named_as_such_not_as_an_ulp_distance():
    command = f"{sys.executable} {ROOT / 'adapters/broken/adapter.py'} signed-zero-lost"
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--command", command, "--case", "ops/neg/positive-zero"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "expected -0.0, got 0.0; only the sign of zero differs" in done.stdout
    assert "ulp apart" not in done.stdout

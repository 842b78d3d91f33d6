"""A port's own cases and fixtures: folders without a schema, several folders in one run, regen --cases.

Each test drives the CLI in-process (``conformance.cli.main``) on folders in
tmp_path, the way a port's repository holds them; the kit's own fixtures are
only read.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.fixture import FIXTURES_DIR, SCHEMA_NAME, fixture_paths

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = f"{sys.executable} -m conformance.reference_adapter"
CASES = len(fixture_paths(FIXTURES_DIR))

CASE_FILE = """
[[case]]
id = "my-port/square-at-three"
description = "x*x at 3: value 9, gradient 6."
program = [
  { id = "x", op = "variable", value = 3.0 },
  { id = "y", op = "mul", operands = ["x", "x"] },
  { op = "backward", output = "y" },
]
"""


def schemaless_copy(tmp_path: Path, *ids: str) -> Path:
    """A hand-made subset of the kit's corpus, as a port copies it: the fixtures only, no schema."""
    folder = tmp_path / "subset"
    for case in ids:
        target = folder / f"{case}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES_DIR / f"{case}.json", target)
    assert not (folder / SCHEMA_NAME).exists()
    return folder


def own_cases(tmp_path: Path, text: str = CASE_FILE, name: str = "mine.toml") -> Path:
    folder = tmp_path / "conformance-cases"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    return folder


def test_run_list_and_explain_read_a_fixtures_folder_that_has_no_schema(tmp_path, capsys):
    folder = schemaless_copy(tmp_path, "seed/reused-square", "ops/add/ordinary")
    assert main(["list", "--fixtures", str(folder)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("2 cases")
    assert main(["explain", "seed/reused-square", "--fixtures", str(folder)]) == 0
    assert "stored gradients" in capsys.readouterr().out
    assert main(["run", "--command", REFERENCE, "--fixtures", str(folder)]) == 0
    assert "0 failed, 0 errors" in capsys.readouterr().out


def test_the_word_kit_names_the_kits_corpus_beside_a_ports_own_folder(tmp_path, capsys):
    folder = schemaless_copy(tmp_path, "seed/reused-square")
    (folder / "seed" / "reused-square.json").rename(folder / "seed" / "renamed.json")
    text = (folder / "seed" / "renamed.json").read_text().replace('"seed/reused-square"', '"seed/renamed"')
    (folder / "seed" / "renamed.json").write_text(text)
    assert main(["list", "--fixtures", "kit", "--fixtures", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"{CASES + 1} cases") and "seed/renamed " in out
    assert main(["run", "--command", REFERENCE, "--fixtures", "kit", "--fixtures", str(folder), "--case", "seed/re*"]) == 0
    assert "running 2 case(s)" in capsys.readouterr().err


def test_a_case_id_in_two_fixtures_folders_is_a_usage_error_naming_both(tmp_path, capsys):
    folder = schemaless_copy(tmp_path, "seed/reused-square")
    for command in (["list"], ["run", "--command", REFERENCE], ["explain", "seed/reused-square"]):
        assert main([*command, "--fixtures", "kit", "--fixtures", str(folder)]) == 2
        err = capsys.readouterr().err
        assert f"case 'seed/reused-square' is in two fixtures folders, {FIXTURES_DIR} and {folder}" in err


def test_a_missing_folder_among_several_or_one_given_twice_is_a_usage_error(tmp_path, capsys):
    assert main(["list", "--fixtures", "kit", "--fixtures", str(tmp_path / "nope")]) == 2
    assert f"the fixtures folder {tmp_path / 'nope'} does not exist" in capsys.readouterr().err
    assert main(["list", "--fixtures", "kit", "--fixtures", str(FIXTURES_DIR)]) == 2
    assert f"the fixtures folder {FIXTURES_DIR} is given twice" in capsys.readouterr().err


def test_regen_cases_writes_then_checks_exactly_the_ports_own_fixtures(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cases = own_cases(tmp_path)
    assert main(["regen", "--cases", "conformance-cases"]) == 0  # --fixtures defaults to ./conformance-fixtures
    fixture = tmp_path / "conformance-fixtures" / "my-port" / "square-at-three.json"
    assert fixture.exists() and "missing: my-port/square-at-three.json" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "conformance-fixtures").rglob("*")) == ["my-port", "square-at-three.json"]
    # Checked with the folders spelt another way (absolute): the same text, so the same verdict.
    check = ["regen", "--check", "--cases", str(cases), "--fixtures", str(tmp_path / "conformance-fixtures")]
    assert main(check) == 0
    assert "fixtures are up to date (1 files in" in capsys.readouterr().out
    fixture.write_text(fixture.read_text().replace("9.0", "9.5"))
    (tmp_path / "conformance-fixtures" / "stray.json").write_text("{}")
    assert main(check) == 1
    captured = capsys.readouterr()
    assert "stale: my-port/square-at-three.json" in captured.out and "extra: stray.json" in captured.out
    assert "1 stale, 0 missing, 1 extra" in captured.err and "missing: ops/" not in captured.out
    (tmp_path / "conformance-fixtures" / "stray.json").unlink()
    gate = ["run", "--command", REFERENCE, "--fixtures", "kit", "--fixtures", "conformance-fixtures", "--case", "my-port/*"]
    assert main(gate) == 1
    capsys.readouterr()
    assert main(["regen", "--cases", "conformance-cases"]) == 0
    assert "wrote 1 and removed 0 fixture file(s)" in capsys.readouterr().out
    assert main(gate) == 0


def test_regen_cases_reads_what_fuzz_save_wrote_and_regenerates_the_same_fixture(tmp_path, capsys):
    cases, fixtures = tmp_path / "conformance-cases", tmp_path / "conformance-fixtures"
    bug = f"{sys.executable} {ROOT / 'adapters' / 'broken' / 'adapter.py'} detach-edge"
    args = ["fuzz", "--command", bug, "--examples", "300", "--save", "--cases-dir", str(cases), "--fixtures", str(fixtures)]
    assert main(args) == 1
    out = capsys.readouterr().out
    (saved,) = fixtures.rglob("*.json")
    text = saved.read_text()
    assert main(["regen", "--check", "--cases", str(cases), "--fixtures", str(fixtures)]) == 0, capsys.readouterr()
    saved.unlink()
    assert main(["regen", "--cases", str(cases), "--fixtures", str(fixtures)]) == 0
    assert saved.read_text() == text
    rerun = re.search(r"^re-run it: conformance (.*)$", out, re.M)
    assert rerun is not None and f"--fixtures {fixtures}" in rerun.group(1)
    assert main(shlex.split(rerun.group(1))) == 1  # the saved case fails the broken engine again, no schema needed


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("single.toml", '[case]\nid = "a/b"\ndescription = "x"\nprogram = []\n', "written [[case]] (double brackets)"),
        ("misspelt.toml", '[[cases]]\nid = "a/b"\n', "unexpected table or key 'cases'"),
        ("empty.toml", "# nothing yet\n", "no [[case]] table"),
        ("field.toml", CASE_FILE.replace("description =", 'level = "values"\ndescription ='), "unexpected field 'level'"),
        ("kit.toml", CASE_FILE.replace("my-port/square-at-three", "seed/reused-square"), "is a case of the kit's corpus too"),
        ("badid.toml", CASE_FILE.replace("my-port/square-at-three", "My Port/x"), "at id:"),
        ("program.toml", CASE_FILE.replace('operands = ["x", "x"]', 'operands = ["x", "z"]'), "conformance-cases/program.toml"),
        ("0123456789ab.json", '[{"id": "x", "op": "variable", "value": 1.0}]', "the program's hash starts"),
        ("fixture.json", (FIXTURES_DIR / "seed" / "detach.json").read_text(), "conformance-cases/fixture.json"),
    ],
)
def test_a_bad_case_file_is_one_line_naming_the_file(tmp_path, capsys, name, text, message):
    cases = own_cases(tmp_path, text, name)
    assert main(["regen", "--check", "--cases", str(cases), "--fixtures", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_two_files_defining_one_case_id_is_an_error_naming_both(tmp_path, capsys):
    own_cases(tmp_path, CASE_FILE, "a.toml")
    cases = own_cases(tmp_path, CASE_FILE, "b.toml")
    assert main(["regen", "--cases", str(cases), "--fixtures", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "'my-port/square-at-three' is defined twice" in err and "conformance-cases/a.toml" in err
    assert not (tmp_path / "out").exists()


def test_regen_cases_refuses_the_kits_corpus_a_missing_folder_and_an_empty_one(tmp_path, capsys):
    cases = own_cases(tmp_path)
    for target in ("kit", str(FIXTURES_DIR)):
        assert main(["regen", "--check", "--cases", str(cases), "--fixtures", target]) == 2
        assert "is the kit's corpus" in capsys.readouterr().err
    assert main(["regen", "--cases", str(tmp_path / "nope")]) == 2
    assert "--cases" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["regen", "--cases", str(tmp_path / "empty")]) == 2
    assert "no case file" in capsys.readouterr().err


def test_the_hand_written_case_of_docs_fixtures_md_is_generated_checked_and_passes(tmp_path, capsys):
    text = (ROOT / "docs" / "fixtures.md").read_text()
    block = re.search(r"<!-- own-case-example -->\n```toml\n(.*?)```", text, re.S)
    assert block, "docs/fixtures.md has no own-case-example block"
    cases = own_cases(tmp_path, block.group(1), "my-port.toml")
    fixtures = tmp_path / "conformance-fixtures"
    assert main(["regen", "--cases", str(cases), "--fixtures", str(fixtures)]) == 0
    assert main(["regen", "--check", "--cases", str(cases), "--fixtures", str(fixtures)]) == 0
    capsys.readouterr()
    assert main(["run", "--command", REFERENCE, "--fixtures", str(fixtures)]) == 0
    assert "0 failed, 0 errors" in capsys.readouterr().out
    assert len(list(fixtures.rglob("*.json"))) == 2

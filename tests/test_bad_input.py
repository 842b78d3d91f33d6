"""Bad programs, fixtures and case files give one clear error naming file, step and field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cases.case import CaseError
from conformance.fixture import FixtureBug, load_fixture
from conformance.generate import load_toml_cases
from conformance.program import ProgramError, parse_program

ROOT = Path(__file__).resolve().parent.parent

BAD_PROGRAMS = [
    ([{"id": "y", "op": "mul", "operands": ["x", "x"]}], "step 0 (y): field 'operands[0]': unknown id 'x'"),
    (
        [{"id": "x", "op": "variable", "value": 1}, {"id": "x", "op": "constant", "value": 2}],
        "step 1 (x): field 'id': id 'x' is already used",
    ),
    (
        [{"id": "x", "op": "variable", "value": 1}, {"id": "y", "op": "cbrt", "operands": ["x"]}],
        "step 1: field 'op': unknown operation 'cbrt'",
    ),
    (
        [{"id": "x", "op": "variable", "value": 1}, {"id": "y", "op": "pow", "operands": ["x"], "exponent": "inf"}],
        "step 1 (y): field 'exponent' must be a finite constant",
    ),
    ([{"id": "x", "op": "variable", "value": "two"}], "step 0 (x): field 'value': expected a number"),
    (
        [{"id": "x", "op": "variable", "value": 1}, {"op": "backward", "output": "x", "seed": "1"}],
        "step 1: field 'seed': expected a number",
    ),
    (
        [{"id": "x", "op": "variable", "value": 1}, {"op": "backward", "output": "z"}],
        "step 1 (backward): field 'output': unknown id 'z'",
    ),
    (
        [{"id": "x", "op": "variable", "value": 1}, {"id": "y", "op": "add", "operands": ["x"]}],
        "step 1 (y): field 'operands': add takes",
    ),
    ([{"id": "x", "op": "variable", "value": True}], "step 0 (x): field 'value': expected a number, got true"),
    ([{"id": "x", "op": "variable", "value": 1, "colour": 3}], "step 0 (variable): unexpected field 'colour'"),
]


@pytest.mark.parametrize("steps, message", BAD_PROGRAMS, ids=[m for _, m in BAD_PROGRAMS])
def test_a_bad_program_is_rejected_naming_the_step_and_field(steps, message):
    with pytest.raises(ProgramError) as caught:
        parse_program(steps, "cases/my.toml: case 'c'")
    assert str(caught.value).startswith("cases/my.toml: case 'c': ")
    assert message in str(caught.value)


def _fixture(tmp_path: Path, text: str, name: str = "bad/case.json") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "fixture.schema.json").write_text((ROOT / "fixtures/fixture.schema.json").read_text())
    path.write_text(text)
    return path


def _good() -> dict:
    return json.loads((ROOT / "fixtures/seed/reused-square.json").read_text()) | {"id": "bad/case"}


def test_a_fixture_that_is_not_json_is_a_fixture_bug_naming_the_file(tmp_path):
    path = _fixture(tmp_path, "{not json")
    with pytest.raises(FixtureBug, match=r"bad/case.json: not valid JSON"):
        load_fixture(path, tmp_path)


def test_a_fixture_against_the_schema_names_the_json_path(tmp_path):
    data = _good()
    data["program"][1]["operands"] = ["x"]
    path = _fixture(tmp_path, json.dumps(data))
    with pytest.raises(FixtureBug, match=r"bad/case.json: at program/1"):
        load_fixture(path, tmp_path)


def test_a_fixture_naming_an_unknown_id_names_the_step(tmp_path):
    data = _good()
    data["program"][2]["operands"] = ["square", "cube"]
    path = _fixture(tmp_path, json.dumps(data))
    with pytest.raises(FixtureBug, match=r"program: step 2 \(loss\): field 'operands\[1\]': unknown id 'cube'"):
        load_fixture(path, tmp_path)


def test_a_fixture_whose_id_disagrees_with_its_path_is_a_fixture_bug(tmp_path):
    data = _good() | {"id": "elsewhere/case"}
    path = _fixture(tmp_path, json.dumps(data))
    with pytest.raises(FixtureBug, match="field 'id' is 'elsewhere/case'"):
        load_fixture(path, tmp_path)


def test_a_case_file_with_a_string_for_a_number_names_file_case_step_and_field(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('[[case]]\nid = "a/b"\ndescription = "d"\nprogram = [{ id = "x", op = "variable", value = "2" }]\n')
    with pytest.raises(CaseError, match=r"mine.toml: case 'a/b': step 0 \(x\): field 'value': expected a number"):
        load_toml_cases(path)


def test_regen_check_lists_stale_missing_and_extra_and_changes_nothing(tmp_path):
    import shutil

    root = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", root)
    (root / "seed/detach.json").write_text("{}\n")
    (root / "repeated/cube.json").unlink()
    (root / "extra").mkdir()
    (root / "extra/old.json").write_text("{}\n")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    cli = Path(sys.executable).parent / "conformance"
    out = subprocess.run([cli, "regen", "--check", "--fixtures", root], capture_output=True, text=True)
    assert out.returncode == 1
    assert "stale: seed/detach.json" in out.stdout
    assert "missing: repeated/cube.json" in out.stdout
    assert "extra: extra/old.json" in out.stdout
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    fixed = subprocess.run([cli, "regen", "--fixtures", root], capture_output=True, text=True)
    assert fixed.returncode == 0
    assert subprocess.run([cli, "regen", "--check", "--fixtures", root], capture_output=True).returncode == 0
    assert not (root / "extra").exists()
    assert not list(root.rglob("*.tmp"))

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
        ("stael", "entry 1: field 'bug': 'stael' is not a bug of the catalogue (did you mean 'stale'?"),
        ("no-such-mistake", "entry 1: field 'bug': 'no-such-mistake' is not a bug of the catalogue (known: "),
        (3, "entry 1: field 'bug' must be a string naming a bug of the catalogue, not 3"),
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
        assert out.stderr.startswith(f"conformance: error: {path}: entry 0: field 'bug': 'stael'")
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

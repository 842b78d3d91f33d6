"""The kit installed from its wheel works from an empty folder outside the checkout, and never passes vacuously."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest
from installed import ROOT, venv, wheel

from conformance.fixture import FIXTURES_DIR, fixture_paths, load_corpus

CASES = len(load_corpus())


def run(command: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def kit() -> Path:
    return venv()


def reference_adapter(kit: Path) -> str:
    return f"{kit / 'python'} -m conformance.reference_adapter"


def test_the_wheel_carries_the_corpus_the_schema_and_the_docs_byte_for_byte():
    with zipfile.ZipFile(wheel()) as archive:
        names = set(archive.namelist())
        for path in [*fixture_paths(FIXTURES_DIR), FIXTURES_DIR / "fixture.schema.json"]:
            name = "conformance/fixtures/" + path.relative_to(FIXTURES_DIR).as_posix()
            assert name in names, f"{name} is not in the wheel"
            assert archive.read(name) == path.read_bytes(), f"{name} differs from the checkout's"
        for doc in ("contract.md", "protocol.md", "fixtures.md", "protocol.schema.json"):
            name = f"conformance/docs/{doc}"
            assert name in names and archive.read(name) == (ROOT / "docs" / doc).read_bytes(), name
        assert not any(n.startswith("tests/") or n.startswith("adapters/") for n in names)


def test_list_run_and_regen_check_work_from_an_empty_folder(kit, tmp_path):
    listing = run([str(kit / "conformance"), "list"], tmp_path)
    assert listing.returncode == 0 and listing.stdout.rstrip().endswith(f"{CASES} cases")
    version = run([str(kit / "conformance"), "--version"], tmp_path)
    assert "fixture format" in version.stdout and "the installed package" in version.stdout
    out = run([str(kit / "conformance"), "run", "--command", reference_adapter(kit), "--json", "report.json"], tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert " 0 failed, 0 errors" in out.stdout
    assert (tmp_path / "report.json").exists()
    rules = run([str(kit / "conformance"), "list", "--rules"], tmp_path)
    assert rules.returncode == 0 and "conformance/docs/contract.md; they name" in rules.stdout, rules.stdout[-500:]
    contract = run([str(kit / "conformance"), "docs", "contract"], tmp_path)
    assert contract.returncode == 0 and contract.stdout.startswith("# The semantic contract")
    docs = run([str(kit / "conformance"), "docs"], tmp_path)
    assert "protocol.schema.json" in docs.stdout.split(), docs.stdout
    schema = run([str(kit / "conformance"), "docs", "protocol.schema.json", "--path"], tmp_path)
    located = Path(schema.stdout.strip())
    assert schema.returncode == 0 and located.read_text() == (ROOT / "docs" / "protocol.schema.json").read_text()
    assert "site-packages" in located.parts
    check = run([str(kit / "conformance"), "regen", "--check"], tmp_path)
    assert check.returncode == 0 and "fixtures are up to date" in check.stdout
    write = run([str(kit / "conformance"), "regen"], tmp_path)
    assert write.returncode == 2 and "installed package" in write.stderr and "Traceback" not in write.stderr


def test_the_pytest_plugin_collects_every_case_from_an_empty_folder(kit, tmp_path):
    out = run(
        [str(kit / "python"), "-m", "pytest", "--conformance-command", reference_adapter(kit), "-n", "2", "-q",
         "--junitxml=conformance.xml", "-p", "no:cacheprovider"],
        tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:]
    assert f"{CASES} passed" in out.stdout
    assert (tmp_path / "conformance.xml").read_text().count("<testcase") >= CASES


def test_a_missing_fixtures_folder_or_an_empty_selection_fails_naming_the_folder(kit, tmp_path):
    missing = tmp_path / "no-such-fixtures"
    cli = run([str(kit / "conformance"), "run", "--command", reference_adapter(kit), "--fixtures", str(missing)], tmp_path)
    assert cli.returncode == 2 and f"the fixtures folder {missing} has no fixture files (it does not exist)" in cli.stderr
    none = run([str(kit / "conformance"), "run", "--command", reference_adapter(kit), "--case", "nosuch/*"], tmp_path)
    assert none.returncode == 2 and "--case nosuch/* matches none of the" in none.stderr
    plugin = run(
        [str(kit / "python"), "-m", "pytest", "--conformance-command", reference_adapter(kit),
         "--conformance-fixtures", str(missing), "-p", "no:cacheprovider"],
        tmp_path,
    )  # fmt: skip
    assert plugin.returncode != 0 and "skipped" not in plugin.stdout
    assert str(missing) in plugin.stdout + plugin.stderr
    empty = run(
        [str(kit / "python"), "-m", "pytest", "--conformance-command", reference_adapter(kit),
         "--conformance-case", "nosuch/*", "-p", "no:cacheprovider"],
        tmp_path,
    )  # fmt: skip
    assert empty.returncode != 0 and "matches none of the" in empty.stdout + empty.stderr


def test_the_checkout_is_not_touched_by_building_the_wheel():
    wheel()
    # What setuptools would leave in the checkout's build/ (lib, bdist.*, temp.*). build/ holds other tools'
    # work too: the HTML report's screenshots (tests/test_html_report.py) and `make mutate`'s copies and venv.
    build = ROOT / "build"
    left = [p for p in build.iterdir() if p.name.startswith(("lib", "bdist.", "temp."))] if build.exists() else []
    assert not left

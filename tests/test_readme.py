"""README's quick start for a porter, run line by line exactly as written.

The block between the ``porter-quick-start`` markers is executed in an empty
folder outside the checkout, in a fresh virtual environment, with ``KIT`` set
to the kit's wheel. The one line that is prose for a human (connect the hooks
to your engine) is done by copying in the tiny correct engine the starter
tests use.

A second check runs a port's own regression work from the installed wheel:
``fuzz --save`` writes into the port's folder and leaves site-packages as it
was, its re-run command works on the schema-less folder it wrote, and a case
written by hand (docs/fixtures.md's example) is generated, checked and run
beside the canonical corpus, by the CLI and by the pytest plugin.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from installed import ROOT, venv, wheel

from conformance.fixture import load_corpus

ENGINE = ROOT / "tests" / "starters" / "python" / "engine_hooks.py"


def quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- porter-quick-start[^>]*-->\n```sh\n(.*?)```\n<!-- /porter-quick-start -->", text, re.S)
    assert block, "README.md has no porter-quick-start block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_quick_start_works_as_written(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    port = tmp_path / "my-port"
    port.mkdir()
    env = {
        **os.environ,
        "KIT": str(wheel()),
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("PYTHONPATH", None)
    lines = quick_start()
    assert any(line.startswith("pip install ") for line in lines)
    outputs = {}
    for line in lines:
        if line.startswith("#"):
            assert "engine_hooks.py" in line
            shutil.copyfile(ENGINE, port / "conformance-adapter" / "engine_hooks.py")
            continue
        done = subprocess.run(["bash", "-c", line], cwd=port, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr
        outputs[line.split()[0]] = done.stdout
    assert " 0 failed, 0 errors" in outputs["conformance"]
    cases = len(load_corpus())
    assert f"{cases} passed" in outputs["pytest"]
    junit = ET.parse(port / "conformance.xml").getroot()
    suite = junit if junit.tag == "testsuite" else junit.find("testsuite")
    assert suite is not None and int(suite.get("tests")) >= cases and int(suite.get("failures")) == 0
    # The gate is never green by accident, from the installed kit too: an adapter declaring no level fails it.
    (port / "declares_nothing.py").write_text(
        "from conformance.serve import serve\n"
        "hello = {'engine': {'name': 'nothing', 'version': '0', 'language': 'python'},\n"
        "         'ops': [], 'levels': [], 'features': []}\n"
        "serve(hello, lambda program: [])\n"
    )
    command = "python3 declares_nothing.py"
    for line in (f'conformance run --command "{command}"', f'pytest -p no:cacheprovider --conformance-command "{command}"'):
        done = subprocess.run(["bash", "-c", line], cwd=port, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 1, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert "NOTHING COMPARED nothing: 0 of " in done.stdout and "Traceback" not in done.stderr


def _package_digest(site: Path) -> str:
    """A hash of every file of the installed kit's packages (bytecode caches aside) and of site-packages' listing."""
    digest = hashlib.sha256("\n".join(sorted(p.name for p in site.iterdir())).encode())
    for package in ("conformance", "reference"):
        for path in sorted((site / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(path.relative_to(site).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_an_installed_kit_keeps_a_ports_own_cases_and_fixtures_in_the_ports_folder(tmp_path):
    kit = venv()
    site = Path(next((kit.parent / "lib").glob("python*/site-packages")))
    before = _package_digest(site)
    port = tmp_path / "my-port"
    port.mkdir()
    shutil.copyfile(ROOT / "adapters" / "broken" / "adapter.py", port / "broken_adapter.py")
    env = {**os.environ, "PATH": f"{kit}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)

    def sh(line: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["bash", "-c", line], cwd=port, env=env, capture_output=True, text=True, timeout=900)
        assert "Traceback" not in done.stderr + done.stdout, f"{line}\n{done.stderr[-3000:]}"
        return done

    help_text = sh("conformance fuzz --help").stdout
    assert "./conformance-cases" in help_text and "./conformance-fixtures" in help_text
    fuzzed = sh("conformance fuzz --command 'python broken_adapter.py detach-edge' --examples 300 --save")
    assert fuzzed.returncode == 1 and "saved case regressions/" in fuzzed.stdout, fuzzed.stdout[-2000:]
    assert len(list((port / "conformance-cases").glob("*.json"))) == 1
    assert len(list((port / "conformance-fixtures" / "regressions").glob("*.json"))) == 1
    assert not (port / "conformance-fixtures" / "fixture.schema.json").exists()
    rerun = re.search(r"^re-run it: (conformance run .*)$", fuzzed.stdout, re.M)
    assert rerun is not None, fuzzed.stdout[-2000:]
    again = sh(rerun.group(1))  # the schema-less folder runs; the saved case fails the broken engine again
    assert again.returncode == 1 and "FAILED" in again.stdout, again.stdout[-2000:]
    inside = site / "conformance" / "fixtures"
    refused = sh(f"conformance fuzz --command 'python broken_adapter.py stale' --examples 300 --save --fixtures {inside}")
    assert refused.returncode == 2 and "inside the installed kit's environment" in refused.stderr

    example = re.search(r"<!-- own-case-example -->\n```toml\n(.*?)```", (ROOT / "docs" / "fixtures.md").read_text(), re.S)
    assert example is not None
    (port / "conformance-cases" / "my-port.toml").write_text(example.group(1))
    written = sh("conformance regen --cases conformance-cases")
    assert written.returncode == 0 and "wrote 2 and removed 0" in written.stdout, written.stdout + written.stderr
    checked = sh("conformance regen --check --cases conformance-cases --fixtures conformance-fixtures")
    assert checked.returncode == 0 and "fixtures are up to date (3 files" in checked.stdout, checked.stdout + checked.stderr
    reference = f"{kit / 'python'} -m conformance.reference_adapter"
    gate = sh(f"conformance run --command '{reference}' --fixtures kit --fixtures conformance-fixtures")
    assert gate.returncode == 0 and " 0 failed, 0 errors" in gate.stdout, gate.stdout[-2000:]
    assert f"running {len(load_corpus()) + 3} case(s)" in gate.stderr
    plugin = sh(
        f"python -m pytest -p no:cacheprovider --conformance-command '{reference}' --conformance-fixtures kit "
        "--conformance-fixtures conformance-fixtures --conformance-case 'my-port/*'"
    )
    assert plugin.returncode == 0 and "2 passed" in plugin.stdout, plugin.stdout[-2000:]
    assert _package_digest(site) == before

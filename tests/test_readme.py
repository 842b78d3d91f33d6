"""README's quick start for a porter, run line by line exactly as written.

The block between the ``porter-quick-start`` markers is executed in an empty
folder outside the checkout, in a fresh virtual environment, with ``KIT`` set
to the kit's wheel. The one line that is prose for a human (connect the hooks
to your engine) is done by copying in the tiny correct engine the starter
tests use.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

from installed import ROOT, wheel

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

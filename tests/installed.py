"""The kit as a porter gets it: a wheel built from this checkout, installed into a fresh virtual environment.

Built once per test process (and once per xdist worker that asks), in a temporary folder outside the
checkout; no test touches the checkout's own .venv for it.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# ".venv*": the set-up's .venv and make engines' .venv-engines, which holds gigabytes once torch is in it.
_SKIP = shutil.ignore_patterns(".git", ".venv*", "target", "bin", "build", "*.egg-info", "__pycache__", ".hypothesis", "*_cache")


def _folder(prefix: str) -> Path:
    """A new temporary folder, removed when the test process ends (every test that uses it has run by then)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@cache
def wheel() -> Path:
    """The kit's wheel, built from a copy of the checkout (a build writes into its source folder)."""
    work = _folder("kit-wheel-")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=_SKIP)
    out = work / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    (found,) = out.glob("scalar_conformance-*.whl")
    return found


@cache
def venv() -> Path:
    """A fresh virtual environment with the wheel installed with its pytest extra; returns its bin folder."""
    folder = _folder("kit-venv-") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    subprocess.run(
        [str(folder / "bin" / "python"), "-m", "pip", "install", "-q", f"{wheel()}[pytest]"],
        check=True,
        capture_output=True,
        text=True,
    )
    return folder / "bin"

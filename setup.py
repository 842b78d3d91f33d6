"""Build hook: the wheel carries the canonical corpus and the porter's docs as package data.

The corpus lives at the repository root (``fixtures/``), where the Rust and Go
ports read it from disk, and the docs in ``docs/``. A built wheel gets copies
at ``conformance/fixtures/`` and ``conformance/docs/``, found at run time next
to the package (``conformance.fixture.default_fixtures_dir``), so an installed
kit runs its full corpus from any folder. An editable install needs no copy:
it reads the checkout itself. Everything else is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: The docs a porter needs without the repository.
DOCS = ("contract.md", "protocol.md", "protocol.schema.json", "fixtures.md", "fuzzing.md", "broken-engines.md", "starting.md")


class BuildWithCorpus(build_py):
    """build_py, plus the corpus and the docs copied into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        package = Path(self.build_lib) / "conformance"
        target = package / "fixtures"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(ROOT / "fixtures", target)
        (package / "docs").mkdir(parents=True, exist_ok=True)
        for name in DOCS:
            if (ROOT / "docs" / name).exists():
                shutil.copy2(ROOT / "docs" / name, package / "docs" / name)


setup(cmdclass={"build_py": BuildWithCorpus})

"""The HTML report: one self-contained page a person looks at, with the computation graph of every failure.

``write_report`` writes it for a run (``conformance run --html``, the pytest
plugin's ``--conformance-html``); ``page`` lays out the page, ``failure`` one
failing (case, level), ``graph`` and ``draw`` the graph and its picture, and
``style`` the stylesheet and filter script the kit's pages share.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from ..errors import UsageError
from ..fixture import Fixture
from ..runner import AdapterRun
from .page import write_html


def check_target(path: Path, option: str) -> None:
    """Refuse, before any work, a report path that cannot be a file: a folder, or below a file (UsageError)."""
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give the report file's path")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"{option} {path}: {parent} is a file, not a folder")


def write_report(runs: list[AdapterRun], fixtures: list[Fixture], path: Path) -> None:
    """Write the HTML report of a run, atomically; ``fixtures`` are the run's cases (their programs and expectations).

    A file that cannot be written is a UsageError naming it (nothing half-written is left).
    """
    from ..report import versions_line

    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        write_html(runs, {fixture.id: fixture for fixture in fixtures}, path, versions_line(), date)
    except OSError as error:
        raise UsageError(f"cannot write the HTML report {path}: {error.strerror or error}") from None

"""The HTML report: one self-contained page a person looks at, with the computation graph of every failure.

``write_report`` writes it for a run (``conformance run --html``, the pytest
plugin's ``--conformance-html``); ``page`` lays out the page, ``failure`` one
failing (case, level), ``graph`` and ``draw`` the graph and its picture, and
``style`` the stylesheet and filter script the kit's pages share.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from ..fixture import Fixture
from ..runner import AdapterRun
from .page import write_html


def write_report(runs: list[AdapterRun], fixtures: list[Fixture], path: Path) -> None:
    """Write the HTML report of a run, atomically; ``fixtures`` are the run's cases (their programs and expectations)."""
    from ..report import versions_line

    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    write_html(runs, {fixture.id: fixture for fixture in fixtures}, path, versions_line(), date)

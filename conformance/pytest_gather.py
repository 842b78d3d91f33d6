"""The pytest plugin's gathering side: every conformance result, collected in the controlling pytest process.

Each generated test attaches its results to its report's user properties (``PROPERTY``), so that they reach
the controlling process also from xdist workers; ``Gatherer`` reads them there, rebuilds one ``AdapterRun``
per adapter, fails the session when an adapter compared nothing, and writes the terminal summary and the
JSON and HTML reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Protocol

import pytest

from .expected import ExpectedError, load_expected
from .fixture import Fixture
from .program import Program
from .protocol import Observation, observations_from_data
from .registry import AdapterConfig
from .runner import AdapterRun, Result, engine_name
from .transport import Handshake

#: The user property a conformance test's results travel in.
PROPERTY = "conformance-results"


def _unreviewed(adapter: AdapterConfig) -> tuple[str, int]:
    """The adapter's expected-failures file and how many of its entries are unreviewed drafts."""
    path = adapter.expected_failures_path()
    if path is None:
        return "", 0
    try:
        entries = load_expected(path)
    except ExpectedError:  # reported where the tests loaded it
        return str(path), 0
    return str(path), sum(entry.unreviewed for entry in entries)


def _expected_notes(adapter: Optional[AdapterConfig], results: list[Result]) -> list[str]:
    """One line per entry of the adapter's expected-failures file that the results show stale or too broad."""
    path = adapter.expected_failures_path() if adapter is not None else None
    try:
        entries = load_expected(path)
    except ExpectedError:  # reported where the tests loaded it
        return []
    from .expected_update import observed_results, run_notes

    return [f"{path}: {note}" for note in run_notes(entries, observed_results(results))]


def _observations(data: dict[str, Any], programs: dict[str, Program]) -> Optional[tuple[Observation, ...]]:
    """A gathered wrong answer's observations, decoded again (None when the result carries none)."""
    raw = data.get("observations")
    program = programs.get(data["case"])
    if raw is None or program is None:
        return None
    return tuple(observations_from_data(raw, program))


class Settings(Protocol):
    """What the gathering side reads of the plugin's settings (the plugin's session state has these)."""

    adapters: list[AdapterConfig]
    fixtures: list[Fixture]
    levels: Optional[list[str]]
    json_path: Optional[Path]
    html_path: Optional[Path]
    allow_nothing_compared: bool


class Gatherer:
    """Gathers every conformance result in the controlling pytest process, also from xdist workers.

    Registered as a plugin object by pytest_configure, so its state belongs to one pytest run.
    """

    def __init__(self, state: Settings) -> None:
        self.state = state
        # Keyed by (adapter, case, level): every subtest's report carries its test's user properties again.
        self.results: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.downs: dict[str, str] = {}
        self.hellos: dict[str, dict[str, Any]] = {}
        self.ran: dict[str, set[str]] = {}
        """The cases each adapter's tests ran (skipped ones too; an unavailable adapter's are not)."""
        self.nothing: list[str] = []
        """One line per adapter that compared nothing (``coverage.nothing_compared``), set when the session ends."""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Read the results a test attached to its report's user properties."""
        if report.when != "call":
            return
        for name, value in report.user_properties:
            if name == PROPERTY:
                data = json.loads(str(value))
                self.ran.setdefault(data["adapter"], set()).add(data["case"])
                for result in data["results"]:
                    self.results[(result["adapter"], result["case"], result["level"])] = result
                if data["down"]:
                    self.downs[data["adapter"]] = data["down"]
                if data.get("hello"):
                    self.hellos[data["adapter"]] = data["hello"]

    def runs(self) -> list[AdapterRun]:
        """The gathered results as one AdapterRun per adapter, an ad hoc command called by its engine's name."""
        return list(self._gathered().values())

    def _gathered(self) -> dict[str, AdapterRun]:
        """The gathered runs by the adapter's own name (``command`` for the ad hoc one)."""
        runs: dict[str, AdapterRun] = {name: self._run(name) for name in self.ran}
        programs = {fixture.id: fixture.program for fixture in self.state.fixtures}
        for data in self.results.values():
            run = runs.setdefault(data["adapter"], self._run(data["adapter"]))
            run.results.append(Result.from_json(data, _observations(data, programs)))
        adapters = {adapter.name: adapter for adapter in self.state.adapters}
        for run in runs.values():
            if run.name in adapters:
                run.expected_failures, run.unreviewed = _unreviewed(adapters[run.name])
            if run.name in adapters and adapters[run.name].ad_hoc:  # called by its engine's name from hello, not "command"
                run.rename(engine_name(run.handshake, run.name, [name for name in runs if name != run.name]))
        return runs

    def _explain(self, runs: list[AdapterRun]) -> None:
        """Take back each name the rest of the session contradicts, and explain each run's wrong answers together.

        The workers named the mistakes case by case; only here are all of an adapter's results in one place.
        """
        from .consistency import explain_run
        from .diagnose import Diagnoser

        cases = {fixture.id: fixture for fixture in self.state.fixtures}
        for run in runs:
            if run.handshake is not None:
                diagnoser = Diagnoser()
                diagnoser.declare(run.handshake)
                run.results, run.explanation = explain_run(
                    run.results, cases, diagnoser, run.handshake.profile, edges=run.handshake.trace == "full"
                )

    def _run(self, name: str) -> AdapterRun:
        """An adapter's run with no results yet, and its hello as gathered."""
        run = AdapterRun(name)
        hello = self.hellos.get(name)
        if hello is not None:
            run.handshake = Handshake.from_json(hello)
        return run

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fail the session when an adapter compared nothing (unless allowed), with one line per such adapter."""
        if getattr(session.config, "workerinput", None) is not None:
            return
        from .coverage import nothing_compared

        cases = {fixture.id: fixture for fixture in self.state.fixtures}
        for name, run in self._gathered().items():
            if name in self.downs:
                continue  # its own diagnosis fails the session
            line = nothing_compared(
                run,
                [cases[case] for case in self.ran.get(name, ()) if case in cases],
                levels=self.state.levels,
                allow="--conformance-allow-nothing-compared",
                filters="--conformance-case and --conformance-level",
            )
            if line is not None:
                self.nothing.append(line)
        if self.nothing and not self.state.allow_nothing_compared:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        """The counts per adapter and level, each dead adapter's diagnosis once, and the JSON report on request."""
        if getattr(config, "workerinput", None) is not None:
            return
        from .report import diagnosis_lines, matrix_text, warning_lines, write_json

        gathered = self._gathered()  # by the adapter's own name; each run keeps its engine's name for the reports
        runs = list(gathered.values())
        if not runs:
            return
        self._explain(runs)
        terminalreporter.section("conformance")
        for line in matrix_text(runs).splitlines():
            terminalreporter.write_line(line)
        for line in warning_lines(runs):
            terminalreporter.write_line(line, yellow=True)
        adapters = {adapter.name: adapter for adapter in self.state.adapters}
        for own, run in gathered.items():  # each stale or too broad expected failure, judged over every case of the session
            for note in _expected_notes(adapters.get(own), run.results):
                terminalreporter.write_line(f"{run.name}: {note}", yellow=True)
        for line in diagnosis_lines(runs):
            terminalreporter.write_line(line)
        for diagnosis in self.downs.values():
            terminalreporter.write_line("")
            terminalreporter.write_line("ADAPTER DOWN " + diagnosis)
        for line in self.nothing:
            terminalreporter.write_line("")
            terminalreporter.write_line(line, red=not self.state.allow_nothing_compared)
        if self.state.json_path is not None:
            write_json(runs, self.state.json_path)
            terminalreporter.write_line(f"conformance JSON report: {self.state.json_path}")
        if self.state.html_path is not None:
            from .errors import UsageError
            from .html import write_report

            try:
                write_report(runs, self.state.fixtures, self.state.html_path)
                terminalreporter.write_line(f"conformance HTML report: {self.state.html_path}")
            except UsageError as error:
                terminalreporter.write_line(f"conformance: error: {error}", red=True)

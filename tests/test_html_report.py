"""The HTML report as a person meets it: written by `conformance run --html`, opened in headless Chromium.

One run of deliberately broken engines (adapters/broken), an expected failure, a stale
expected-failure entry and an engine that writes a `<script>` to its stderr is reported
once; the browser test opens the page, keeps a screenshot under build/html-report/ (the
CI artifact path) and checks the DOM against the JSON report of the same run. The tests
without a browser check the page's text: the table in place of the picture where dot is
missing, the walk-through of `explain --html`, the pytest plugin's report, a bad path.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.fixture import Fixture, load_corpus
from conformance.html import write_report
from conformance.runner import AdapterRun, run_adapter
from conformance.transport import SubprocessTransport

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from chromium import Chromium, find_chromium  # noqa: E402

CLI = str(Path(sys.executable).parent / "conformance")
BROKEN = ROOT / "adapters/broken/adapter.py"
ARTIFACTS = ROOT / "build/html-report"
CASES = ["seed/*", "structure/diamond", "llm/one-document", "errors/failure-in-the-middle"]
#: What the noisy engine writes to stderr: markup that would run if the report did not escape it.
NOISE = "<script>window.pwned = 1; document.title = 'pwned'</script><img src=x onerror=\"window.pwned = 2\">"

pytest_plugins = ["pytester"]
#: The pictures need Graphviz's dot; without it the report draws tables (tested below on its own).
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz's dot is not installed (.ci/run installs graphviz when run as root)"
)


def _registry(folder: Path) -> Path:
    noisy = folder / "noisy_adapter.py"
    noisy.write_text(
        "import runpy, sys\n"
        f"sys.stderr.write({NOISE!r} + '\\n')\nsys.stderr.flush()\n"
        f"sys.argv = [{str(BROKEN)!r}, 'seed-ignored']\n"
        f"runpy.run_path({str(BROKEN)!r}, run_name='__main__')\n"
    )
    (folder / "stale-expected.toml").write_text(
        '[[expected]]\ncase = "seed/reused-square"\nlevel = "gradients"\nreason = "known: stale gradients"\n'
    )
    (folder / "python-expected.toml").write_text(
        '[[expected]]\ncase = "seed/detach"\nlevel = "values"\nreason = "a stale entry: this passes"\n'
    )
    registry = folder / "adapters.toml"
    registry.write_text(
        f'[adapter.stale]\ncommand = "{{python}} {BROKEN} stale"\nexpected_failures = "stale-expected.toml"\n'
        f'[adapter.merge-edges]\ncommand = "{{python}} {BROKEN} merge-edges"\n'
        f'[adapter.noisy]\ncommand = "{{python}} {noisy}"\n'
        f'[adapter.python]\ncommand = "{{python}} {ROOT / "adapters/python/adapter.py"}"\n'
        'expected_failures = "python-expected.toml"\n'
    )
    return registry


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The HTML and JSON reports of one run with failures, xfails, an xpass and a noisy stderr."""
    folder = tmp_path_factory.mktemp("html")
    cases = [arg for case in CASES for arg in ("--case", case)]
    adapters = [arg for name in ("stale", "merge-edges", "noisy", "python") for arg in ("--adapter", name)]
    html, data = folder / "report.html", folder / "report.json"
    registry = _registry(folder)
    command = [CLI, "run", "--registry", str(registry), *adapters, *cases, "--html", str(html), "--json", str(data)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1, done.stdout + done.stderr
    return html, json.loads(data.read_text())


def _sections(text: str) -> list[str]:
    return re.findall(r"<section .*?</section>", text, flags=re.S)


@needs_dot
def test_every_failure_has_its_graph_with_exactly_one_marked_node_or_edge(report):
    html, data = report
    text = html.read_text()
    failing = [r for r in data["results"] if r["outcome"] in ("failed", "xfailed")]
    graphs = [s for s in _sections(text) if "data-outcome='failed'" in s or "data-outcome='xfailed'" in s]
    assert len(graphs) == len(failing) > 10
    for section in graphs:
        assert section.count("<svg") == 1
        assert len(re.findall(r'class="(?:node|edge) focus"', section)) == 1, section[:300]
    assert "likely bug:" in text and "known: stale gradients" in text and "a stale entry: this passes" in text


def test_a_big_graph_shows_the_neighbourhood_of_the_difference_and_states_the_full_size(report):
    text = report[0].read_text()
    # merge-edges fails the LLM case: its graph has thousands of nodes, the page shows a few.
    found = re.search(r"the (\d+) nodes within a few hops of \w+, of 3445 nodes and 5748 operand edges", text)
    assert found and int(found.group(1)) <= 40


def test_adapter_stderr_is_shown_as_text_never_as_markup(report):
    text = report[0].read_text()
    assert "&lt;script&gt;window.pwned = 1;" in text
    assert "<script>window.pwned" not in text and "<img src=x" not in text


def _assign_run() -> tuple[AdapterRun, list[Fixture]]:
    """The broken engine assign on seed/reused-square, run in this process."""
    fixtures = [f for f in load_corpus() if f.id == "seed/reused-square"]
    transport = SubprocessTransport([sys.executable, str(BROKEN), "assign"], timeout=60)
    try:
        return run_adapter("assign", transport, fixtures, []), fixtures
    finally:
        transport.close()


def test_an_engine_name_and_version_with_markup_are_shown_as_text(tmp_path):
    run, fixtures = _assign_run()
    assert run.handshake is not None
    run.handshake = dataclasses.replace(run.handshake, name="<script>window.pwned = 3</script>", version="1'><b>2")
    write_report([run], fixtures, tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    assert "&lt;script&gt;window.pwned = 3&lt;/script&gt;" in text and "1&#x27;&gt;&lt;b&gt;2" in text
    assert "<script>window.pwned" not in text and "<b>2" not in text


def test_without_dot_the_graph_is_a_table_with_the_marked_row_and_the_reason(tmp_path, monkeypatch):
    run, fixtures = _assign_run()
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot here
    write_report([run], fixtures, tmp_path / "r.html")
    sections = _sections((tmp_path / "r.html").read_text())
    assert sections and all("<svg" not in s for s in sections)
    for section in sections:
        assert "Graphviz&#x27;s dot is not on PATH" in section
        assert section.count("<tr class='focus'>") == 1


@needs_dot
def test_explain_html_draws_the_graph_after_each_backward(tmp_path):
    out = subprocess.run([CLI, "explain", "seed/reused-square", "--html", tmp_path / "w.html"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "w.html").read_text()
    assert text.count("<svg") == 3  # three backwards
    assert "pass adjoint 8.0" in text and "contribution 4.0" in text and ' focus"' not in text


def test_a_report_path_below_a_file_is_a_usage_error_before_anything_runs(tmp_path):
    (tmp_path / "file").write_text("")
    out = subprocess.run(
        [CLI, "run", "--adapter", "python", "--html", tmp_path / "file/r.html"], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 2
    assert "--html" in out.stderr and "is a file, not a folder" in out.stderr and "Traceback" not in out.stderr


@needs_dot
def test_the_pytest_plugin_writes_the_same_report_under_xdist(pytester, tmp_path):
    html = tmp_path / "r.html"
    result = pytester.runpytest_subprocess(
        "--conformance-command",
        f"{sys.executable} {BROKEN} stale",
        "--conformance-case",
        "seed/reused-square",
        "--conformance-html",
        str(html),
        "-n",
        "2",
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"conformance HTML report: {html}"])
    sections = _sections(html.read_text())
    assert len(sections) == 3  # gradients, trace, order
    assert all(len(re.findall(r'class="(?:node|edge) focus"', s)) == 1 for s in sections)


BROWSER, WHY_NOT = find_chromium()


@needs_dot
@pytest.mark.skipif(BROWSER is None, reason=f"the browser test needs headless Chromium: {WHY_NOT}")
def test_in_chromium_the_counts_highlights_and_filters_are_what_the_run_found(report):
    html, data = report
    with Chromium() as browser:
        seconds = browser.open(html)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.screenshot(ARTIFACTS / "report.png", full_page=True)
        assert seconds < 10
        # Nothing an adapter wrote ran as script.
        assert browser.evaluate("window.pwned === undefined && document.title === 'Conformance report'")
        shown = browser.evaluate("[...document.querySelectorAll('pre.stderr')].map(p => p.textContent).join('\\n')")
        assert "<script>window.pwned = 1;" in shown
        # The matrix shows the JSON report's counts.
        cells = browser.evaluate(
            "[...document.querySelectorAll('#matrix tr[data-adapter] td.count')].map(td =>"
            " [td.parentElement.dataset.adapter, td.parentElement.dataset.level, td.dataset.outcome, +td.textContent])"
        )
        expected = {
            (a["name"], level, outcome): count
            for a in data["adapters"]
            for level, counts in a["levels"].items()
            for outcome, count in counts.items()
        }
        assert cells and all(expected[(a, level, o)] == n for a, level, o, n in cells)
        assert {(a, level) for a, level, _, _ in cells} == {(a, level) for (a, level, _), n in expected.items() if n}
        # Every failing section has one picture with exactly one marked element, drawn and visible.
        marks = browser.evaluate(
            "[...document.querySelectorAll('section[data-outcome=failed], section[data-outcome=xfailed]')].map(s =>"
            " [s.querySelectorAll('svg').length, s.querySelectorAll('svg .focus').length,"
            " s.querySelector('svg .focus') ? s.querySelector('svg .focus').getBoundingClientRect().width : 0])"
        )
        failing = sum(1 for r in data["results"] if r["outcome"] in ("failed", "xfailed"))
        assert len(marks) == failing and all(svgs == 1 and focus == 1 and width > 0 for svgs, focus, width in marks)
        # The filters change what is visible.
        visible = "[...document.querySelectorAll('section.result')].filter(s => s.checkVisibility()).map(s => s.dataset.outcome)"
        before = browser.evaluate(visible)
        assert "failed" in before and "xfailed" in before and "xpassed" in before
        browser.click("#filters input[name=outcome][value=failed]")
        after = browser.evaluate(visible)
        assert "failed" not in after and len(after) == len(before) - before.count("failed")
        browser.click("#filters input[name=adapter][value=stale]")
        rows = browser.evaluate("[...document.querySelectorAll('#matrix tr[data-adapter]')].filter(r => r.checkVisibility())")
        assert rows is not None
        adapters = browser.evaluate(
            "[...document.querySelectorAll('#matrix tr[data-adapter]')].filter(r => r.checkVisibility())"
            ".map(r => r.dataset.adapter)"
        )
        assert adapters and "stale" not in adapters
        assert "xfailed" not in browser.evaluate(visible)  # the stale adapter's xfail went with it
        assert browser.evaluate("document.getElementById('shown').textContent").endswith("sections shown")


def test_an_adapter_without_trace_or_errors_sees_only_the_fields_it_declared_and_nan_is_called_nan(tmp_path):
    from inprocess import EngineTransport

    from conformance.execute import run_program
    from conformance.mutants import MutantEngine
    from conformance.program import DECLARABLE_OPS
    from conformance.protocol import observations_from_data
    from conformance.transport import Handshake

    fixtures = [f for f in load_corpus() if f.id in ("seed/reused-square", "ops/tanh/libm-rounding")]
    hello = Handshake("leafy", "0", "python", frozenset(DECLARABLE_OPS), frozenset({"values", "gradients"}), frozenset({"seed"}))
    hello = dataclasses.replace(hello, error_kinds=frozenset())
    assign = MutantEngine("assign")

    def engine(program, records):
        if any(step.op == "tanh" for step in program):  # tanh's gradient comes back as nan
            raw = [o.to_json() for o in run_program(program, record_pass=False)]
            raw[-1]["gradients"]["a"] = "nan"
            return observations_from_data(raw, program)
        return assign.run(program, False)

    run = run_adapter("leafy", EngineTransport("leafy", engine, hello), fixtures, [])
    assert run.count("failed") == 2 and run.handshake is not None and run.handshake.partial() == []
    write_report([run], fixtures, tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    tables = re.findall(r"<table class='sides'>.*?</table>", text, re.S)
    assert len(tables) == 2
    assert all("pass." not in table and "error." not in table for table in tables)
    assert "nan (no distance)" in text and "errors: 0 of" not in text

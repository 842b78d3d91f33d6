"""An unresponsive adapter ends the run in bounded time, with one adapter-level diagnosis and no process left behind.

Each fake (tests/fakes/unresponsive_adapter.py) runs through the real CLI beside the healthy python adapter,
on the whole corpus. The bounds asserted here are generous; the figures measured with the default
timeouts are in the README (bench/unresponsive.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conformance.fixture import load_corpus

ROOT = Path(__file__).resolve().parent.parent
FAKE = Path(__file__).parent / "fakes" / "unresponsive_adapter.py"
CLI = str(Path(sys.executable).with_name("conformance"))
CORPUS_SIZE = len(load_corpus())


def leftovers(token: str) -> list[str]:
    """Command lines of live processes that carry the token."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if token in cmdline and "zombie" not in state:
            found.append(cmdline)
    return found


def run_fake(
    mode: str, tmp_path: Path, *extra: str, target: str = ""
) -> tuple[subprocess.CompletedProcess[str], dict, float, str]:
    token = f"token-{uuid.uuid4().hex}"
    command = f"{sys.executable} {FAKE} {mode} {token} {target}".strip()
    report = tmp_path / "report.json"
    started = time.monotonic()
    out = subprocess.run(
        [CLI, "run", "--command", command, "--adapter", "python", "--json", str(report), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    seconds = time.monotonic() - started
    return out, json.loads(report.read_text()), seconds, token


def adapter_entry(report: dict, name: str) -> dict:
    return next(a for a in report["adapters"] if a["name"] == name)


# An ad hoc command is called by its engine's name once it answered hello ("unresponsive"), else "command".
@pytest.mark.parametrize(
    "mode, extra, bound, hint, name",
    [
        ("silent-hello", (), 60, "did the adapter flush stdout after each reply?", "command"),
        ("hang-run", ("--timeout", "2"), 60, "did the adapter flush stdout after each reply?", "unresponsive"),
        ("deaf", ("--timeout", "2"), 60, "did the adapter flush stdout after each reply?", "unresponsive"),
        ("orphan", (), 60, "must wait for it", "command"),
    ],
)
def test_a_dead_adapter_is_given_up_on_with_one_diagnosis_and_the_others_are_fully_reported(
    mode, extra, bound, hint, name, tmp_path
):
    out, report, seconds, token = run_fake(mode, tmp_path, *extra)
    assert out.returncode == 1, out.stderr
    assert seconds < bound
    assert "Traceback" not in out.stdout + out.stderr
    assert out.stdout.count(f"ADAPTER DOWN {name}") == 1
    assert "is unresponsive: 3 timeouts or failed starts in a row" in out.stdout
    assert hint in out.stdout
    if mode == "silent-hello":  # or a start slower than the handshake timeout: the option, and building first
        assert "--handshake-timeout SECONDS" in out.stdout and "build it first (`--build CMD`)" in out.stdout
    assert "unresponsive adapter starting" in out.stdout  # the stderr tail is in the diagnosis
    fake = adapter_entry(report, name)
    assert fake["down"]["not_run"] == fake["not_run"] > 0
    not_run = {r["message"] for r in report["results"] if r["adapter"] == name and r["outcome"] == "not-run"}
    assert not_run == {f"not run: {name} is unresponsive (see the adapter's diagnosis)"}
    assert fake["errors"] <= 3 * 5  # at most the three faulted cases, each at every level
    python = adapter_entry(report, "python")
    assert python["failed"] == python["errors"] == python["not_run"] == 0
    assert python["passed"] > CORPUS_SIZE  # every case of the healthy adapter still ran
    assert leftovers(token) == []


def test_a_hang_on_one_case_is_charged_to_that_case_and_the_run_goes_on(tmp_path):
    out, report, seconds, token = run_fake("hang-one", tmp_path, "--timeout", "2", target="seed/reused-square")
    assert out.returncode == 1 and seconds < 60
    fake = adapter_entry(report, "unresponsive")  # the engine's name from its hello
    assert "down" not in fake and fake["not_run"] == 0
    errors = [r for r in report["results"] if r["adapter"] == "unresponsive" and r["outcome"] == "error"]
    assert {r["case"] for r in errors} == {"seed/reused-square"}
    assert "timed out after 2 s waiting for the adapter during case seed/reused-square" in errors[0]["message"]
    assert "stuck on seed/reused-square" in errors[0]["message"]
    assert fake["passed"] > CORPUS_SIZE
    assert leftovers(token) == []


def test_the_whole_run_budget_reports_what_did_not_run(tmp_path):
    out, report, seconds, token = run_fake("hang-run", tmp_path, "--timeout", "30", "--max-time", "3")
    assert out.returncode == 1 and seconds < 30
    assert "the run's --max-time budget of 3 s ran out" in out.stdout
    python = adapter_entry(report, "python")
    assert python["not_run"] > 0 and python["passed"] == 0
    assert leftovers(token) == []


def test_failures_and_adapter_lines_show_while_the_run_goes_on_without_a_terminal(tmp_path):
    out, _, _, _ = run_fake("hang-one", tmp_path, "--timeout", "1", target="seed/reused-square")
    lines = out.stderr.splitlines()
    live = "ERROR command seed/reused-square [values, gradients, trace, order]: timed out after 1 s"
    assert any(line.startswith(live) for line in lines)
    assert any(line.startswith("command: finished in ") for line in lines)
    assert any(line.startswith("python: finished in ") and "passed" in line for line in lines)
    assert "\r" not in out.stderr


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_an_interrupted_run_kills_the_adapter_and_still_writes_the_partial_report(signum, code, tmp_path):
    token = f"token-{uuid.uuid4().hex}"
    report = tmp_path / "report.json"
    stuck = tmp_path / "stuck"
    process = subprocess.Popen(
        [CLI, "run", "--command", f"{sys.executable} {FAKE} hang-one {token} seed/reused-square", "--json", str(report)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "UNRESPONSIVE_STUCK_FILE": str(stuck)},
    )
    deadline = time.monotonic() + 60
    while not stuck.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(token), "the adapter should be running, stuck on seed/reused-square"
    time.sleep(0.3)  # into the hang on seed/reused-square
    os.kill(process.pid, signum)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == code, stderr
    assert "Traceback" not in stdout + stderr
    data = json.loads(report.read_text())
    entry = adapter_entry(data, "unresponsive")
    assert entry["interrupted"].startswith("interrupted")
    assert entry["passed"] > 0 and entry["not_run"] > 0
    assert leftovers(token) == []


def test_the_pytest_plugin_fails_a_dead_adapter_fast_with_the_same_diagnosis(tmp_path):
    token = f"token-{uuid.uuid4().hex}"
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path),
         "--conformance-command", f"{sys.executable} {FAKE} silent-hello {token}", "--conformance-handshake-timeout", "1"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 1 and time.monotonic() - started < 60
    assert out.stdout.count("ADAPTER DOWN command is unresponsive") == 1
    assert "did the adapter flush stdout after each reply?" in out.stdout
    assert "not run: command is unresponsive" in out.stdout
    assert leftovers(token) == []

"""The conformance CLI as a user meets it: exit codes, the matrix, reports, the registry, expected failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.fixture import FIXTURES_DIR, load_corpus

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")
BROKEN = f"{sys.executable} {ROOT / 'adapters/broken/adapter.py'}"


def conformance(*args, cwd=ROOT):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_the_python_adapter_passes_every_level_and_exits_0(tmp_path):
    out = conformance(
        "run",
        "--adapter",
        "python",
        "--json",
        tmp_path / "r.json",
        "--junit",
        tmp_path / "r.xml",
        "--markdown",
        tmp_path / "r.md",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "python   order" in out.stdout and " 0 failed" in out.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    (adapter,) = report["adapters"]
    assert adapter["name"] == "python" and adapter["available"] is True
    assert adapter["failed"] == 0 and adapter["passed"] > 300
    assert {"passed", "failed", "unsupported", "xfailed", "xpassed"} <= set(adapter)
    assert {"case", "adapter", "outcome", "message"} <= set(report["results"][0])
    suites = ET.parse(tmp_path / "r.xml").getroot()
    assert suites.find("testsuite").get("failures") == "0"
    assert "| python | values |" in (tmp_path / "r.md").read_text()


def test_a_broken_engine_fails_the_gate_with_exit_1_and_a_diagnosis():
    out = conformance("run", "--command", f"{BROKEN} assign", "--case", "seed/*")
    assert out.returncode == 1
    # An ad hoc command is called by the engine's name from its hello, not "command".
    assert "FAILED broken-assign seed/reused-square [gradients]" in out.stdout
    assert "step 3: observations[3].gradients.x: expected 8.0, got 2.0" in out.stdout
    assert "likely bug: contributions assigned instead of added" in out.stdout


def test_usage_errors_exit_2_with_one_clear_line():
    out = conformance("run", "--adapter", "nosuch")
    assert out.returncode == 2
    assert "--adapter 'nosuch' is not registered" in out.stderr and "Traceback" not in out.stderr
    assert conformance("run", "--shard", "3/2").returncode == 2
    assert conformance("run", "--adapter", "python", "--case", "no/such/*").returncode == 2


def test_a_malformed_registry_names_the_file_adapter_and_field(tmp_path):
    (tmp_path / "adapters").mkdir()
    registry = tmp_path / "adapters" / "adapters.toml"
    registry.write_text('[adapter.mine]\ncommand = "./x"\nrequires = { tools = "cargo" }\n')
    out = conformance("run", "--registry", registry)
    assert out.returncode == 2
    assert f"{registry}: adapter 'mine': field 'requires.tools' must be a list of strings" in out.stderr
    registry.write_text("[adapter.mine\n")
    out = conformance("run", "--registry", registry)
    assert out.returncode == 2 and "not valid TOML" in out.stderr and "Traceback" not in out.stderr


def test_an_adapter_with_missing_requirements_is_reported_unavailable_not_failed(tmp_path):
    (tmp_path / "adapters").mkdir()
    registry = tmp_path / "adapters" / "adapters.toml"
    registry.write_text(
        '[adapter.ghost]\ncommand = "ghost-adapter"\nrequires = { tools = ["no-such-toolchain-xyz"] }\n'
        '[adapter.nomod]\ncommand = "x"\nrequires = { modules = ["no_such_module_xyz"] }\n'
    )
    out = conformance("run", "--registry", registry, "--json", tmp_path / "r.json")
    assert out.returncode == 0
    assert "ghost: unavailable: no-such-toolchain-xyz is not on PATH" in out.stdout
    assert "nomod: unavailable: Python module no_such_module_xyz is not installed" in out.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert [(a["name"], a["available"], a["reason"]) for a in report["adapters"]][0] == (
        "ghost",
        False,
        "no-such-toolchain-xyz is not on PATH",
    )


def test_expected_failures_turn_failures_into_xfails_and_stale_entries_into_failures(tmp_path):
    expected = tmp_path / "expected.toml"
    command = f"{BROKEN} merge-edges"
    out = conformance("run", "--command", command, "--case", "repeated/*", "--expected-failures", expected, "--update-expected")
    assert out.returncode == 0
    text = expected.read_text()
    assert 'case = "repeated/x-mul-x"' in text and "operand edges to one node merged" in text
    assert conformance("run", "--command", command, "--case", "repeated/*", "--expected-failures", expected).returncode == 0
    # The same list against a correct engine: every entry is now stale.
    out = conformance(
        "run",
        "--adapter",
        "python",
        "--command",
        f"{sys.executable} {ROOT / 'adapters/python/adapter.py'}",
        "--case",
        "repeated/*",
        "--expected-failures",
        expected,
    )
    assert out.returncode == 1
    assert "UNEXPECTED PASS reference repeated/x-mul-x" in out.stdout and "remove the stale entry" in out.stdout


def test_a_malformed_expected_failures_file_is_a_usage_error(tmp_path):
    expected = tmp_path / "expected.toml"
    expected.write_text('[[expected]]\ncase = "x"\nlevel = "speed"\nreason = "r"\n')
    out = conformance("run", "--command", f"{BROKEN} assign", "--expected-failures", expected)
    assert out.returncode == 2
    assert (
        f'{expected}: entry 1 ([[expected]] case = "x"): field "level": expected one of values, gradients, errors' in out.stderr
    )


def test_shards_split_the_cases_without_overlap(tmp_path):
    seen = []
    for k in (1, 2, 3):
        conformance("run", "--adapter", "python", "--shard", f"{k}/3", "--json", tmp_path / f"{k}.json")
        seen.append({r["case"] for r in json.loads((tmp_path / f"{k}.json").read_text())["results"]})
    assert not (seen[0] & seen[1]) and not (seen[1] & seen[2])
    assert len(seen[0] | seen[1] | seen[2]) == len(conformance("list").stdout.splitlines()) - 1


def test_micrograd_runs_faithfully_with_its_divergences_listed():
    out = conformance("run", "--adapter", "micrograd", "--case", "seed/*", "--case", "structure/deep-chain-*")
    assert out.returncode == 0, out.stdout
    assert "xfailed" in out.stdout
    # The classic: after two backwards micrograd's x gradient is 24 where the contract says 16.
    strict = conformance(
        "run", "--command", f"{sys.executable} {ROOT / 'adapters/micrograd/adapter.py'}", "--case", "seed/reused-square"
    )
    assert "expected 16.0, got 24.0" in strict.stdout
    assert "likely bug: a second backward re-propagates stale intermediate gradients" in strict.stdout


def test_list_and_explain():
    listing = conformance("list", "--case", "seed/*").stdout
    assert "seed/reused-square" in listing and "ops=add,mul" in listing
    walk = conformance("explain", "seed/reused-square").stdout
    assert "consumer  slot  operand  local derivative  upstream  contribution" in walk
    assert "square    1     x        2.0               2.0       4.0" in walk
    assert "stored gradients: x 16.0, square 4.0, loss 2.0" in walk
    missing = conformance("explain", "reused-square")
    assert missing.returncode == 2 and "did you mean seed/reused-square" in missing.stderr


def test_progress_shows_on_a_terminal_and_stays_quiet_otherwise():
    import os
    import pty
    import select

    plain = conformance("run", "--adapter", "python", "--case", "ops/*")
    assert "\r" not in plain.stderr and "\x1b[K" not in plain.stderr
    master, slave = pty.openpty()
    process = subprocess.Popen([CLI, "run", "--adapter", "python", "--case", "ops/*"], stdout=slave, stderr=slave, cwd=ROOT)
    os.close(slave)
    seen = b""
    while select.select([master], [], [], 30)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed when the process exited
            break
        if not chunk:
            break
        seen += chunk
    assert process.wait(timeout=60) == 0
    # A short run shows only the final count (the display waits half a second before it starts).
    ops_cases = len([f for f in load_corpus(FIXTURES_DIR) if f.id.startswith("ops/")])
    assert f"\r\x1b[Kpython: {ops_cases}/{ops_cases}".encode() in seen


def test_a_broken_fixture_is_a_fixture_bug_and_the_other_cases_still_run(tmp_path):
    import shutil

    root = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", root)
    (root / "seed/detach.json").write_text('{"format": 1, "id": "seed/detach"}')
    out = conformance("run", "--adapter", "python", "--fixtures", root, "--case", "seed/*")
    assert out.returncode == 2
    assert "FIXTURE BUG" in out.stdout and "seed/detach.json: fixture format 1, but this kit reads format 3" in out.stdout
    (root / "seed/detach.json").write_text('{"format": 3, "id": "seed/detach"}')
    out = conformance("run", "--adapter", "python", "--fixtures", root, "--case", "seed/*")
    assert out.returncode == 2
    assert "seed/detach.json: at (top level): 'description' is a required property" in out.stdout


def test_a_fixture_of_the_previous_format_says_what_changed(tmp_path):
    import shutil

    root = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", root)
    path = root / "seed/detach.json"
    path.write_text(path.read_text().replace('"format": 3', '"format": 2').replace('"operands"', '"args"'))
    out = conformance("run", "--adapter", "python", "--fixtures", root, "--case", "seed/*")
    assert out.returncode == 2
    assert "seed/detach.json: fixture format 2, but this kit reads format 3" in out.stdout
    assert "steps name their 'operands' (was 'args')" in out.stdout
    assert "no adapter is blamed" in out.stdout
    import re

    assert re.search(r"python\s+values\s+5\s+0\s", out.stdout)  # the five sound seed cases ran and passed


def test_the_largest_distance_names_the_case_and_level_it_was_seen_at():
    from conformance.report import matrix_text
    from conformance.runner import AdapterRun, Result
    from conformance.transport import Handshake

    run = AdapterRun("port", handshake=Handshake("port", "1", "c", frozenset(), frozenset(), frozenset()))
    run.results = [
        Result("port", "ops/add/ordinary", "values", "passed"),
        Result("port", "ops/tanh/ordinary", "trace", "passed", largest_share=0.5),
        Result("port", "ops/exp/ordinary", "values", "passed", largest_share=0.25),
    ]
    assert "profile contract" in matrix_text([run])
    assert "closest agreeing float: 0.5 of its bound (at ops/tanh/ordinary [trace])" in matrix_text([run])
    run.results = [Result("port", "ops/add/ordinary", "values", "passed", compared=2)]
    assert "closest agreeing float: every float the same bits" in matrix_text([run])
    # Said only when it is true: with no result passed, no float agreed.
    run.results = [Result("port", "ops/add/ordinary", "values", "failed", compared=2)]
    assert "closest agreeing float" not in matrix_text([run])


def test_a_reader_that_stops_early_ends_the_command_quietly():
    # `conformance explain llm/two-documents | head -1`: the pipe closes after the first line.
    process = subprocess.Popen([CLI, "explain", "llm/two-documents"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"llm/two-documents: ")
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_a_run_that_ends_before_its_first_adapter_runs_leaves_no_process(tmp_path):
    # The first adapter starts while the corpus loads; a selection of no case then ends the command.
    pid_file = tmp_path / "pid"
    script = tmp_path / "adapter.py"
    # An adapter still busy starting (it has not read its input yet) when the command ends: ended by the harness.
    script.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    out = conformance("run", "--command", f"{sys.executable} {script}", "--case", "no/such-case")
    assert out.returncode == 2 and "conformance: error:" in out.stderr and "Traceback" not in out.stderr
    for _ in range(50):  # it was started before the corpus was read (and written its pid by now, or soon)
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.1)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)

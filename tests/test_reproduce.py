"""A minimal reproducer for every failed (case, level): the case's program shrunk against the adapter."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from inprocess import EngineTransport

from conformance.execute import run_program
from conformance.fixture import load_corpus
from conformance.fuzz import examine
from conformance.mutants import BUGS, MutantEngine
from conformance.program import program_to_json
from conformance.report import details_text, markdown, to_json
from conformance.reproduce import _pruned, difference_kind, reproduce_run
from conformance.runner import Outcome, run_adapter
from conformance.strategies import programs
from conformance.transport import SubprocessTransport

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")
BROKEN = f"{sys.executable} {ROOT / 'adapters/broken/adapter.py'}"
#: The cases a broken engine can run (they do not declare ``repeat``), the large ones included.
CORPUS = [fixture for fixture in load_corpus() if "repeat" not in fixture.features]
BY_ID = {fixture.id: fixture for fixture in CORPUS}
#: The issue's goal for the catalogue's mistakes.
MOST_STEPS = 8
#: Why a fault for the graph's depth gets no reproducer, as the run's note ends.
DEEP = (
    "the engine faulted there for the graph's depth (a recursive topological sort: deep graphs exhaust the stack), "
    "which only a program about as deep shows"
)


def reference(program, records):
    return run_program(program, record_pass=records)


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_every_failure_of_every_catalogue_mistake_gets_a_reproducer_of_at_most_8_steps_that_fails_the_same_way(bug):
    """Through the broken engines' real adapter (a subprocess), as a porter's engine would be run."""
    transport = SubprocessTransport(f"{BROKEN} {bug}")
    try:
        adapter_run = run_adapter(bug, transport, CORPUS, [])
        failed = [r for r in adapter_run.results if r.outcome == Outcome.FAILED]
        found, notes = reproduce_run(adapter_run.results, transport, BY_ID, "contract", seconds=120)
        check_reproducers(transport, failed, found, notes)
    finally:
        transport.close()


def check_reproducers(transport, failed, found, notes):
    # A step's fault for the graph's depth (recursive-topo's RecursionError on the deep chain, protocol 2.1) shows
    # only on a program about as deep: no reproducer is sought for it, and the run's note says so.
    deep = [r for r in failed if "RecursionError" in str(r.first_difference.actual)]
    named = ", ".join(f"{r.case} [{r.level}]" for r in deep)
    assert notes == ([f"no smaller program is sought for {named}: {DEEP}"] if deep else [])
    failed = [r for r in failed if r not in deep]
    assert set(found) == {(r.case, r.level) for r in failed}
    clean = EngineTransport("reference", reference)
    for result in failed:
        reproducer = found[result.case, result.level]
        assert len(reproducer.program) <= MOST_STEPS, (result.case, result.level, len(reproducer.program))
        again = examine(transport, reproducer.program, (result.level,), "contract")
        # It fails the level the case failed, with a first difference about the same field, and the
        # reference passes it: a divergence of the engine, not of the harness.
        assert again is not None and again.fault is None and again.level == result.level
        assert difference_kind(again.difference) == difference_kind(result.first_difference)
        assert examine(clean, reproducer.program, (result.level,), "contract") is None


def test_a_large_case_that_fails_is_reproduced_in_a_few_steps_taken_from_it():
    """The LLM step and the 10,000-deep chain: over 1,000 steps, never diagnosed, and still explained."""
    bug = "wrong-derivative-mul"
    transport = EngineTransport(bug, MutantEngine(bug).run)
    large = [BY_ID["llm/one-document"], BY_ID["structure/deep-chain-10000"]]
    adapter_run = run_adapter(bug, transport, large, [])
    found, notes = reproduce_run(adapter_run.results, transport, BY_ID, "contract", seconds=60)
    failed = [r for r in adapter_run.results if r.outcome == Outcome.FAILED]
    assert failed and notes == []
    for result in failed:
        reproducer = found[result.case, result.level]
        assert reproducer.shared_from is None and reproducer.original_steps > 1000
        assert len(reproducer.program) <= MOST_STEPS
        # Taken from the case: every operation of the reproducer is one of the case's (by op and exponent).
        ops = {(s.op, s.exponent) for s in BY_ID[result.case].program}
        assert all((s.op, s.exponent) in ops for s in reproducer.program if s.operands and not s.id.startswith("sum"))


def test_a_failure_left_without_a_reproducer_says_why():
    bug = "wrong-derivative-mul"
    transport = EngineTransport(bug, MutantEngine(bug).run)
    adapter_run = run_adapter(bug, transport, CORPUS, [])
    found, notes = reproduce_run(adapter_run.results, transport, BY_ID, "contract", seconds=0.05)
    failed = [r for r in adapter_run.results if r.outcome == Outcome.FAILED]
    assert len(found) < len(failed)
    assert any("got no minimal reproducer" in note and "--shrink-seconds" in note for note in notes)


@settings(max_examples=60, deadline=None)
@given(programs())
def test_pruning_keeps_every_backward_and_zero_grad_and_every_node_a_kept_step_names(program):
    pruned = _pruned(program)
    assert [s for s in pruned if s.id is None] == [s for s in program if s.id is None]
    created = {s.id for s in pruned if s.id is not None}
    for step in pruned:
        assert set(step.operands) <= created and (step.output is None or step.output in created)
    run_program(pruned, record_pass=True)  # still a program the reference runs


def run_cli(*args, cwd=ROOT):
    return subprocess.run([CLI, "run", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_cli_shows_each_reproducer_saves_it_and_its_rerun_command_fails_the_same_way(tmp_path):
    command = f"{BROKEN} wrong-derivative-mul"
    cases = ["--case", "ops/mul/*", "--case", "llm/one-document"]
    report = tmp_path / "report.json"
    done = run_cli("--command", command, *cases, "--json", str(report), "--reproducers", str(tmp_path / "repro"))
    assert done.returncode == 1, done.stderr
    assert "minimal reproducer: " in done.stdout and "Traceback" not in done.stderr
    data = json.loads(report.read_text())
    failed = [r for r in data["results"] if r["outcome"] == "failed"]
    assert failed and all(r["reproducer"]["steps"] <= MOST_STEPS for r in failed)
    llm = [r for r in failed if r["case"] == "llm/one-document"]
    # Too large to diagnose, the LLM case is answered by the reproducer of a smaller case that it fails like.
    assert llm and llm[0]["reproducer"]["shrunk_from"]["case"].startswith("ops/mul/")
    rerun = llm[0]["reproducer"]["rerun"]
    assert rerun.startswith("conformance run --command ")
    argv = shlex.split(rerun)
    again = subprocess.run([CLI, *argv[1:], "--no-shrink"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and f"[{llm[0]['level']}]" in again.stdout
    # The saved fixtures are the reference's: the reference passes every one of them.
    fixtures = str(tmp_path / "repro" / "fixtures")
    clean = run_cli("--adapter", "python", "--fixtures", fixtures)
    assert clean.returncode == 0, clean.stdout


def test_no_shrink_turns_it_off_and_a_file_for_the_reproducers_folder_is_a_usage_error(tmp_path):
    command = f"{BROKEN} wrong-derivative-mul"
    report = tmp_path / "report.json"
    done = run_cli("--command", command, "--case", "ops/mul/*", "--json", str(report), "--no-shrink")
    assert done.returncode == 1 and "minimal reproducer" not in done.stdout
    assert not any("reproducer" in r for r in json.loads(report.read_text())["results"])
    taken = tmp_path / "taken"
    taken.write_text("")
    refused = run_cli("--command", command, "--case", "ops/mul/*", "--reproducers", str(taken))
    assert refused.returncode == 2 and "is a file, not a folder; nothing was run" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_every_report_carries_the_reproducer(tmp_path):
    bug = "wrong-derivative-add"
    transport = EngineTransport(bug, MutantEngine(bug).run)
    fixtures = [BY_ID["seed/reused-square"]]
    adapter_run = run_adapter(bug, transport, fixtures, [])
    adapter_run.reproducers, adapter_run.reproducer_notes = reproduce_run(
        adapter_run.results, transport, BY_ID, "contract", seconds=30
    )
    own = next(r for r in adapter_run.reproducers.values() if r.shared_from is None and len(r.program) < r.original_steps)
    text = details_text([adapter_run])
    assert f"minimal reproducer: {len(own.program)} of the case's {own.original_steps} steps" in text
    assert all(step.describe() in text for step in own.program)
    data = to_json([adapter_run])
    entry = next(r for r in data["results"] if (r["case"], r["level"]) == (own.case, own.level))
    assert entry["reproducer"]["program"] == program_to_json(own.program)
    # The other levels of the case point at it instead of printing it again.
    assert f"minimal reproducer: the {len(own.program)} steps shown at {own.case} [{own.level}] fail this level too" in text
    assert f"`{own.case}` [{own.level}], {len(own.program)} steps" in markdown([adapter_run])
    from conformance.html import write_report

    write_report([adapter_run], fixtures, tmp_path / "report.html")
    assert "<pre class='reproducer'>" in (tmp_path / "report.html").read_text()

"""Declared engine shapes: stored gradients on leaves only (PyTorch without retain_grad), single precision."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from inprocess import EngineTransport

from conformance.diagnose import DIAGNOSIS_MAX_STEPS
from conformance.execute import run_program
from conformance.fixture import load_corpus
from conformance.handshake import Handshake
from conformance.html.page import render
from conformance.mutants import BUGS, MutantEngine
from conformance.program import DECLARABLE_OPS
from conformance.protocol import FEATURES, GradientScope, Level, Observation, Precision
from conformance.report import markdown, matrix_text, to_json
from conformance.runner import Outcome, run_adapter
from conformance.transport import AdapterFault

CORPUS = [fixture for fixture in load_corpus() if fixture.size <= DIAGNOSIS_MAX_STEPS]
LEVELS = frozenset({Level.VALUES, Level.GRADIENTS, Level.ERRORS})
LEAVES = Handshake("leafy", "0", "python", frozenset(DECLARABLE_OPS), LEVELS, frozenset(FEATURES), gradients=GradientScope.LEAVES)


def leaves_only(run):
    """An engine that forgets every stored gradient but the variables' (as tensor engines do)."""

    def engine(program, records):
        variables = {step.id for step in program if step.op == "variable"}
        out = []
        for observation in run(program, records):
            if observation.gradients is not None:
                kept = {k: v for k, v in observation.gradients.items() if k in variables}
                observation = Observation(error=observation.error, gradients=kept, pass_=observation.pass_)
            out.append(observation)
        return out

    return engine


def test_a_correct_leaves_only_engine_passes_when_it_declares_it_and_every_report_says_so():
    engine = leaves_only(lambda program, records: run_program(program, record_pass=records))
    adapter_run = run_adapter("leafy", EngineTransport("leafy", engine, LEAVES), CORPUS, [])
    assert [r for r in adapter_run.results if r.outcome in (Outcome.FAILED, Outcome.ERROR)] == []
    assert adapter_run.count(Outcome.PASSED, Level.GRADIENTS) > 20
    said = "gradients: leaves only (stored gradients compared on variables alone)"
    assert said in to_json([adapter_run])["adapters"][0]["partial"]
    assert said in markdown([adapter_run])
    assert said in matrix_text([adapter_run])
    assert html.escape(said, quote=True) in render([adapter_run], {f.id: f for f in CORPUS}, "versions", "date")
    # Without the declaration every non-leaf gradient is "got nothing".
    undeclared = replace(LEAVES, gradients=GradientScope.ALL)
    plain = run_adapter("leafy", EngineTransport("leafy", engine, undeclared), CORPUS, [])
    failed = [r for r in plain.results if r.outcome == Outcome.FAILED]
    assert failed and any("no stored gradient reported for a tracked node" in r.message for r in failed)


@pytest.mark.parametrize("bug", ["wrong-derivative-mul", "assign", "stale", "detach-edge"])
def test_a_leaves_only_engines_real_gradient_bug_is_found_and_named(bug):
    engine = leaves_only(MutantEngine(bug).run)
    adapter_run = run_adapter(bug, EngineTransport(bug, engine, LEAVES), CORPUS, [])
    failed = [r for r in adapter_run.results if r.outcome == Outcome.FAILED]
    assert failed, bug
    assert not any("no stored gradient reported" in r.message for r in failed)  # only real differences
    assert BUGS[bug] in {hint for r in failed for hint in r.diagnosis}


def test_leaves_with_the_trace_level_is_a_handshake_error_that_says_why():
    hello = {
        "type": "hello",
        "protocol": 2,
        "engine": {"name": "e", "version": "0", "language": "python"},
        "ops": ["add"],
        "levels": ["values", "gradients", "trace"],
        "gradients": "leaves",
    }
    with pytest.raises(AdapterFault, match="'leaves' cannot be declared with the trace level"):
        Handshake.parse(hello)
    with pytest.raises(AdapterFault, match="field 'gradients': 'some' is not one of 'all', 'leaves'"):
        Handshake.parse({**hello, "levels": ["values"], "gradients": "some"})


ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")


def float32_run(tmp_path, *mode):
    report = tmp_path / f"float32{'-'.join(mode)}.json"
    command = " ".join([sys.executable, str(ROOT / "tests/fakes/float32_adapter.py"), *mode])
    args = [CLI, "run", "--command", command, "--case", "ops/*", "--case", "seed/*", "--json", str(report), "--no-shrink"]
    subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    return json.loads(report.read_text())


def test_a_float32_engine_that_declares_its_precision_is_compared_as_float32_and_says_so(tmp_path):
    undeclared = float32_run(tmp_path)
    failed = [r for r in undeclared["results"] if r["outcome"] == "failed"]
    assert len(failed) > 20 and all(r.get("single_precision") for r in failed)
    declared = float32_run(tmp_path, "declared")
    assert {r["outcome"] for r in declared["results"]} == {"passed"}
    said = "precision: float32 (a float agrees also as the contract's value in single precision)"
    assert said in declared["adapters"][0]["partial"]


def test_float32_rounding_is_not_a_licence_for_other_wrong_floats():
    """Declared float32, an engine whose add derivative is wrong still fails: 1 is not 2 in any precision."""
    hello = replace(LEAVES, gradients=GradientScope.ALL, precision=Precision.FLOAT32)
    engine = MutantEngine("wrong-derivative-add").run
    adapter_run = run_adapter("f32", EngineTransport("f32", engine, hello), CORPUS, [])
    failed = [r for r in adapter_run.results if r.outcome == Outcome.FAILED]
    assert failed and BUGS["wrong-derivative-add"] in {hint for r in failed for hint in r.diagnosis}

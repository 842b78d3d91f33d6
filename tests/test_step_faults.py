"""Protocol 2.1: a step the engine raised at is one difference, the steps that do not depend on it are still compared."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.program import parse_program
from conformance.protocol import Observation, ProtocolError, decode_reply
from conformance.serve import by_steps

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")
FAKE = f"{sys.executable} {ROOT / 'tests/fakes/step_fault_adapter.py'}"
PROGRAM = parse_program(
    [
        {"id": "x", "op": "variable", "value": 2.0},
        {"id": "y", "op": "log", "operands": ["x"]},
        {"id": "z", "op": "mul", "operands": ["y", "x"]},
        {"id": "w", "op": "mul", "operands": ["x", "x"]},
        {"op": "backward", "output": "z"},
        {"op": "backward", "output": "w"},
    ],
    "test",
)


def run_json(tmp_path, mode, *cases):
    report = tmp_path / f"{mode}.json"
    args = [CLI, "run", "--command", f"{FAKE} {mode}", "--json", str(report), "--no-shrink"]
    for case in cases:
        args += ["--case", case]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr  # the harness's own; the adapter's tracebacks are shown on purpose
    return done, json.loads(report.read_text())


def by_level(report, case):
    return {r["level"]: r for r in report["results"] if r["case"] == case}


def test_by_steps_turns_an_exception_into_that_steps_fault_and_skips_only_what_depends_on_it():
    def start(records):
        made = {}

        def hook(step):
            if step.op == "log":
                raise ZeroDivisionError("this engine's log divides by zero")
            made[step.id or step.output] = True
            return {"value": 1.0, "tracked": True} if step.id else {"gradients": {}}

        return hook

    observations = by_steps(start)(PROGRAM, True)
    assert observations[1] == Observation(fault="ZeroDivisionError: this engine's log divides by zero")
    assert observations[2] == Observation(skipped=1)  # z uses y
    assert observations[3] == {"value": 1.0, "tracked": True}  # w does not: it runs
    assert observations[4] == Observation(skipped=2)  # backward from z names z, skipped itself: its step is named
    assert observations[5] == {"gradients": {}}


def reply(observations):
    return json.dumps({"type": "result", "case": "c", "observations": observations}).encode()


def test_a_skipped_step_must_name_an_earlier_faulted_or_skipped_step_that_it_uses():
    good = [{"value": 2.0, "tracked": True}, {"fault": "E"}, {"skipped": 1}, {"value": 4.0, "tracked": True}]
    good += [{"skipped": 2}, {"gradients": {"x": 4.0}}]
    assert decode_reply(reply(good), "c", PROGRAM)[4].skipped == 2
    wrong = {
        "names a step that neither faulted nor was skipped": good[:4] + [{"skipped": 3}] + good[5:],
        "whose id (w) this step does not use": good[:3] + [{"fault": "E"}, {"skipped": 3}] + good[5:],
        "must name an earlier step": good[:4] + [{"skipped": 4}] + good[5:],
        "a fault observation carries no other field, got value beside it": good[:1] + [{"fault": "E", "value": 1.0}] + good[2:],
        "its message is empty": good[:1] + [{"fault": " "}] + good[2:],
    }
    for problem, observations in wrong.items():
        with pytest.raises(ProtocolError, match=re.escape(problem)):
            decode_reply(reply(observations), "c", PROGRAM)


def test_a_refused_creation_is_the_first_difference_and_what_depends_on_it_is_not_comparable(tmp_path):
    done, report = run_json(tmp_path, "refuse-exp", "seed/exp-tanh")
    results = by_level(report, "seed/exp-tanh")
    assert results["values"]["outcome"] == "failed"
    message = results["values"]["message"]
    assert message.startswith("step 2: observations[2]: expected a value (1.587431271429835), got fault ValueError: exp of ")
    # The backward names y, which the engine never made: not comparable, and said so, never passed.
    assert results["gradients"]["outcome"] == "unsupported"
    said = "not comparable, as the adapter skipped them: step 2 (y = exp(t)) faulted: ValueError"
    assert said in results["gradients"]["message"]
    assert "the adapter could not run the case" not in done.stdout


def test_a_step_that_raises_fails_its_levels_and_the_levels_that_do_not_compare_it_still_pass(tmp_path):
    done, report = run_json(tmp_path, "raise-in-backward", "seed/exp-tanh", "seed/reused-square")
    exp_tanh = by_level(report, "seed/exp-tanh")
    assert exp_tanh["values"]["outcome"] == "passed"  # every value was answered, and right
    for level in ("gradients", "trace", "order"):
        assert exp_tanh[level]["outcome"] == "failed"
        assert "got fault RuntimeError: backward through exp is not implemented" in exp_tanh[level]["message"]
    assert {r["outcome"] for r in by_level(report, "seed/reused-square").values()} == {"passed"}


def test_a_skipped_step_naming_the_wrong_step_is_a_protocol_error_that_names_it(tmp_path):
    done, report = run_json(tmp_path, "skip-wrong", "seed/exp-tanh")
    results = by_level(report, "seed/exp-tanh")
    assert {r["outcome"] for r in results.values()} == {"error"}
    assert "skipped: 0 names a step that neither faulted nor was skipped (x = variable(0.5))" in results["values"]["message"]


def test_micrograd_raising_in_one_step_loses_that_steps_levels_only_and_the_cause_is_named(tmp_path):
    pytest.importorskip("micrograd")
    report = tmp_path / "micrograd.json"
    args = [CLI, "run", "--adapter", "micrograd", "--json", str(report), "--no-shrink"]
    args += ["--case", "ops/pow/zero-base-c-0", "--case", "structure/deep-chain-10000"]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout
    data = json.loads(report.read_text())
    for case, raised, cause in (
        ("ops/pow/zero-base-c-0", "ZeroDivisionError", "0.0 ** -1.0 raises ZeroDivisionError"),
        ("structure/deep-chain-10000", "RecursionError", "a recursive topological sort"),
    ):
        results = by_level(data, case)
        assert results["values"]["outcome"] == "passed", case  # it used to be an error for the whole case
        assert results["gradients"]["outcome"] == "xfailed"
        assert f"got fault {raised}" in results["gradients"]["message"]
        assert any(cause in hint for hint in results["gradients"]["diagnosis"]), results["gradients"]


def test_torch_answers_a_step_it_raises_at_with_that_steps_fault_and_runs_on():
    """PyTorch (optional; checked where it is installed) raising in one backward: that step's fault, the rest runs."""
    pytest.importorskip("torch", reason="torch is optional and never installed by the set-up")
    program = [
        {"id": "c", "op": "constant", "value": 2.0},
        {"id": "y", "op": "mul", "operands": ["c", "c"]},
        {"op": "backward", "output": "y"},  # torch: RuntimeError, y does not require grad
        {"id": "x", "op": "variable", "value": 4.0},
        {"id": "r", "op": "sqrt", "operands": ["x"]},
        {"op": "backward", "output": "r"},
    ]
    requests = [{"type": "hello", "protocol": 2}, {"type": "run", "case": "t", "program": program}, {"type": "shutdown"}]
    done = subprocess.run(
        [sys.executable, str(ROOT / "adapters/torch/adapter.py")],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=120,
    )
    hello, result = done.stdout.splitlines()
    observations = decode_reply(result.encode(), "t", parse_program(program, "test"))
    assert observations[2].fault is not None and observations[2].fault.startswith("RuntimeError: "), observations[2]
    assert observations[4] == Observation(value=2.0, tracked=True)
    assert observations[5].gradients == {"x": 0.25, "r": 1.0}

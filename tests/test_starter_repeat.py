"""Repeated steps and ``records`` in the starters' protocol loop, seen through the Python starter.

The loop (the file a porter does not edit) runs a step with ``"repeat": n`` by calling the porter's
``apply`` hook n times, so every engine behind a starter gets the million-node chain. These tests
talk to the Python starter, filled with the correct test engine, line by line: one observation per
repeated step, inner nodes out of every gradients map, ``y[k]`` where an error names an inner node,
program errors for a bad repeat or an id clash, and no pass record under ``"records": false``. The
last one runs an engine with a recursive topological sort and shows the million-node chain is what
catches it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from test_starters import ENGINES, init, run_json

X_TIMES_C = [
    {"id": "x", "op": "variable", "value": 1e-300},
    {"id": "c", "op": "constant", "value": 1e100},
    {"id": "y", "op": "mul", "operands": ["x", "c"], "repeat": 3},
]


def python_starter(folder: Path, engine: str | None = None) -> Path:
    """The Python starter written by `conformance init` into folder, its hooks the test engine (or engine's text)."""
    assert init(folder, "python").returncode == 0
    hooks = folder / "conformance-adapter" / "engine_hooks.py"
    hooks.write_text(engine if engine is not None else (ENGINES / "python" / "engine_hooks.py").read_text())
    return folder / "conformance-adapter" / "adapter.py"


def talk(adapter: Path, *requests: dict[str, Any]) -> list[dict[str, Any]]:
    """The adapter's reply to each request, hello first."""
    lines = "".join(json.dumps(r) + "\n" for r in ({"type": "hello"}, *requests, {"type": "shutdown"}))
    out = subprocess.run([sys.executable, str(adapter)], input=lines, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def run(case: str, program: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"type": "run", "case": case, "program": program, **extra}


def test_the_loop_declares_repeat_itself_though_the_config_block_lists_only_seed(tmp_path):
    adapter = python_starter(tmp_path)
    assert 'FEATURES = ["seed"]' in (adapter.parent / "engine_hooks.py").read_text()
    (hello,) = talk(adapter)
    assert hello["features"] == ["seed", "repeat"]


def test_a_repeated_step_is_one_observation_and_its_inner_nodes_stay_out_of_the_gradients(tmp_path):
    program = [*X_TIMES_C, {"op": "backward", "output": "y"}, {"op": "zero_grad", "output": "y"}]
    _, result = talk(python_starter(tmp_path), run("chain", program, records=False))
    assert result == {
        "type": "result",
        "case": "chain",
        "observations": [
            {"value": 1e-300, "tracked": True},
            {"value": 1e100, "tracked": False},
            {"value": 1e-300 * 1e100 * 1e100 * 1e100, "tracked": True},
            {"gradients": {"x": 1e300, "y": 1.0}},
            {"gradients": {"x": 0.0, "y": 0.0}},
        ],
    }


def test_an_error_naming_an_inner_node_names_it_id_k(tmp_path):
    # Seed 1e150: y -> y[2] contributes 1e250, then y[2] -> y[1] overflows: both ends are inner nodes.
    inner = [*X_TIMES_C, {"op": "backward", "output": "y", "seed": 1e150}]
    # Seed 1e300: the first edge, y -> y[2], overflows already.
    last = [*X_TIMES_C, {"op": "backward", "output": "y", "seed": 1e300}]
    _, first, second = talk(python_starter(tmp_path), run("inner", inner, records=False), run("last", last))
    error = first["observations"][3]["error"]
    assert (error["kind"], error["consumer"], error["slot"], error["operand"]) == ("non-finite-contribution", "y[2]", 0, "y[1]")
    assert first["observations"][3]["gradients"] == {"x": 0.0, "y": 0.0}
    error = second["observations"][3]["error"]
    assert (error["consumer"], error["operand"]) == ("y", "y[2]")


def test_a_failing_application_ends_the_step_with_its_error_and_creates_no_id(tmp_path):
    program = [
        {"id": "x", "op": "variable", "value": 1e200},
        {"id": "y", "op": "mul", "operands": ["x", "x"], "repeat": 5},  # x * x overflows at once
        {"id": "z", "op": "neg", "operands": ["x"], "repeat": 2},
        {"op": "backward", "output": "z"},
    ]
    _, result = talk(python_starter(tmp_path), run("fails", program))
    assert result["observations"][1] == {"error": {"kind": "non-finite-result", "operation": "mul", "value": "inf"}}
    assert result["observations"][2] == {"value": 1e200, "tracked": True}
    assert result["observations"][3]["gradients"] == {"x": 1.0, "z": 1.0}


def test_a_bad_repeat_or_an_id_clash_with_an_inner_node_is_an_error_reply_saying_which(tmp_path):
    x = {"id": "x", "op": "variable", "value": 1.0}
    cases = {
        "zero": ([x, {"id": "y", "op": "neg", "operands": ["x"], "repeat": 0}], "field 'repeat' must be a whole number"),
        "half": ([x, {"id": "y", "op": "neg", "operands": ["x"], "repeat": 1.5}], "got 1.5"),
        "leaf": ([{**x, "repeat": 2}], "field 'repeat' is only for an operation step"),
        "after": (
            [x, {"id": "y", "op": "neg", "operands": ["x"], "repeat": 3}, {"id": "y[2]", "op": "neg", "operands": ["x"]}],
            "step 2 ('y[2]'): field 'id': 'y[2]' names a node of the repeated step 'y'",
        ),
        "before": (
            [x, {"id": "y[2]", "op": "neg", "operands": ["x"]}, {"id": "y", "op": "neg", "operands": ["x"], "repeat": 3}],
            "step 2 ('y'): field 'repeat': its node y[2] would take an id an earlier step uses",
        ),
    }
    # y[3] is not a node of a three-node chain (its last node is y itself), so it is a free id.
    fine = [x, {"id": "y", "op": "neg", "operands": ["x"], "repeat": 3}, {"id": "y[3]", "op": "neg", "operands": ["y"]}]
    requests = [run(name, program) for name, (program, _) in cases.items()]
    _, *replies, result = talk(python_starter(tmp_path), *requests, run("fine", fine))
    for reply, (name, (_, message)) in zip(replies, cases.items()):
        assert reply["type"] == "error" and reply["case"] == name, reply
        assert reply["message"].startswith("ProgramError: ") and message in reply["message"], reply
    assert result["type"] == "result" and result["observations"][2] == {"value": 1.0, "tracked": True}


def test_records_false_leaves_out_the_pass_record_that_the_trace_levels_otherwise_get(tmp_path):
    program = [{"id": "x", "op": "variable", "value": 2.0}, {"op": "backward", "output": "x"}]
    _, without, default = talk(python_starter(tmp_path), run("without", program, records=False), run("default", program))
    assert without["observations"][1] == {"gradients": {"x": 1.0}}
    assert set(default["observations"][1]) == {"gradients", "pass"}


RECURSIVE_TOPOLOGY = """    @staticmethod
    def _topology(output: Node) -> list[Node]:
        # Recursive depth-first post-order: under this limit it survives 10,000 nodes, not a million.
        import sys

        sys.setrecursionlimit(50_000)
        order: list[Node] = []
        seen: set[Node] = set()

        def visit(node: Node) -> None:
            if node not in seen:
                seen.add(node)
                for operand in node.operands:
                    visit(operand)
                order.append(node)

        visit(output)
        return order

"""


def test_an_engine_with_a_recursive_topological_sort_is_caught_by_the_million_node_chain_alone(tmp_path):
    source = (ENGINES / "python" / "engine_hooks.py").read_text()
    start, end = source.index("    @staticmethod\n    def _topology"), source.index("    def backward")
    python_starter(tmp_path, source[:start] + RECURSIVE_TOPOLOGY + source[end:])
    command = 'conformance run --command "python3 conformance-adapter/adapter.py" --case "structure/deep-chain-*"'
    out, report = run_json(tmp_path, f"{command} --expected-failures conformance-adapter/expected-failures.toml")
    assert out.returncode == 1
    outcomes = {(r["case"], r["level"]): r["outcome"] for r in report["results"]}
    assert outcomes == {
        ("structure/deep-chain-10000", "values"): "passed",
        ("structure/deep-chain-10000", "gradients"): "passed",
        ("structure/deep-chain-1000000", "values"): "passed",
        ("structure/deep-chain-1000000", "gradients"): "failed",
    }, outcomes
    # The starter speaks protocol 2.1: the RecursionError is the backward step's fault, so every
    # value of the chain is still compared and only the gradients level fails, at that step.
    (failure,) = [r for r in report["results"] if r["outcome"] == "failed"]
    assert "RecursionError" in failure["message"], failure
    assert any("recursive" in hint for hint in failure.get("diagnosis", ())), failure

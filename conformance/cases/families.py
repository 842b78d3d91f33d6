"""Case families written as code: every op at its points, and shapes too large for TOML.

Each family returns ``Case`` objects whose ``generator`` names the function
that built them, so a fixture's provenance says where it came from.
"""

from __future__ import annotations

from typing import Any

from ..optable import HARNESS_OPS
from ..program import parse_program
from .case import Case


def _program(steps: list[dict[str, Any]], name: str) -> Any:
    return parse_program(steps, name)


def op_point_cases() -> list[Case]:
    """One case per (op, point) of the harness's op table: build the operands as variables, apply the op, backward.

    The points are each row's ``points`` (conformance/optable.py); an inexact op's ``libm-rounding``
    points are inputs where glibc's function (or sigmoid in the stable form from glibc's exp) is not
    correctly rounded: they show that a libm port passes inside the tolerance.
    """
    cases = []
    for op, row in HARNESS_OPS.items():
        for point in row.points:
            operands, exponent, label = point.operands, point.exponent, point.label
            names = ["a", "b"][: len(operands)]
            steps: list[dict[str, Any]] = [{"id": n, "op": "variable", "value": v} for n, v in zip(names, operands)]
            step: dict[str, Any] = {"id": "r", "op": op, "operands": names}
            if exponent is not None:
                step["exponent"] = exponent
            steps += [step, {"op": "backward", "output": "r"}]
            shown = ", ".join(repr(v) for v in operands) + ("" if exponent is None else f"; {exponent!r}")
            cases.append(
                Case(
                    f"ops/{op}/{label}",
                    f"{op}({shown}): value and local derivative{'s' if len(operands) > 1 else ''} at this point.",
                    _program(steps, f"ops/{op}/{label}"),
                    "conformance.cases.families:op_point_cases",
                    catches=point.catches,
                )
            )
    return cases


def op_error_cases() -> list[Case]:
    """One case per creation error of the harness's op table (each row's ``errors``): the operands as variables, then the op."""
    cases = []
    for op, row in HARNESS_OPS.items():
        for error in row.errors:
            names = ["x", "w"][: len(error.operands)]
            steps: list[dict[str, Any]] = [{"id": n, "op": "variable", "value": v} for n, v in zip(names, error.operands)]
            step: dict[str, Any] = {"id": "y", "op": op, "operands": names}
            if error.exponent is not None:
                step["exponent"] = error.exponent
            steps.append(step)
            cases.append(
                Case(error.id, error.description, _program(steps, error.id), "conformance.cases.families:op_error_cases")
            )
    return cases


def fan_out_case(uses: int = 1000) -> Case:
    """One node used ``uses`` times: y_i = x*3, summed by a balanced tree of adds."""
    steps: list[dict[str, Any]] = [
        {"id": "x", "op": "variable", "value": 1.5},
        {"id": "three", "op": "constant", "value": 3.0},
    ]
    level = []
    for i in range(uses):
        steps.append({"id": f"y{i}", "op": "mul", "operands": ["x", "three"]})
        level.append(f"y{i}")
    depth = 0
    while len(level) > 1:
        depth += 1
        merged = []
        for j in range(0, len(level) - 1, 2):
            name = f"s{depth}_{j // 2}"
            steps.append({"id": name, "op": "add", "operands": [level[j], level[j + 1]]})
            merged.append(name)
        if len(level) % 2:
            merged.append(level[-1])
        level = merged
    steps.append({"op": "backward", "output": level[0]})
    return Case(
        f"structure/fan-out-{uses}",
        f"x is an operand of {uses} products summed by a tree of adds: {uses} edges to x, none merged; gradient {3 * uses}.",
        _program(steps, "fan-out"),
        "conformance.cases.families:fan_out_case",
        levels=("values", "gradients") if uses > 100 else None,
    )


def deep_chain_case(depth: int = 10_000) -> Case:
    """A chain of ``depth`` nodes alternating +x and *(-1): deep enough to break recursive sorts."""
    steps: list[dict[str, Any]] = [
        {"id": "x", "op": "variable", "value": 0.5},
        {"id": "m", "op": "constant", "value": -1.0},
    ]
    previous = "x"
    for i in range(depth):
        name = f"n{i}"
        if i % 2 == 0:
            steps.append({"id": name, "op": "add", "operands": [previous, "x"]})
        else:
            steps.append({"id": name, "op": "mul", "operands": [previous, "m"]})
        previous = name
    steps += [{"op": "backward", "output": previous}, {"op": "zero_grad", "output": previous}]
    return Case(
        f"structure/deep-chain-{depth}",
        f"A chain {depth} nodes deep (alternately +x and *(-1)): backward and zero_grad must not recurse.",
        _program(steps, "deep-chain"),
        "conformance.cases.families:deep_chain_case",
        levels=("values", "gradients"),
        catches=("recursive-topo",),
    )


def million_chain_case(length: int = 1_000_000) -> Case:
    """A chain ``length`` nodes deep as one repeated step: y = y + c from x (c a constant)."""
    steps: list[dict[str, Any]] = [
        {"id": "x", "op": "variable", "value": 0.5},
        {"id": "c", "op": "constant", "value": 0.25},
        {"id": "y", "op": "add", "operands": ["x", "c"], "repeat": length},
        {"op": "backward", "output": "y"},
        {"op": "zero_grad", "output": "y"},
    ]
    return Case(
        f"structure/deep-chain-{length}",
        f"A chain {length:,} nodes deep, written as one repeated step (y = y + c, {length:,} times, starting from x): "
        "backward and zero_grad must not recurse (a recursive sort that survives 10,000 nodes can still overflow a "
        "native stack here); x's gradient is 1. Needs the repeat feature.",
        _program(steps, "million-chain"),
        "conformance.cases.families:million_chain_case",
        levels=("values", "gradients"),
        catches=("recursive-topo",),
    )


def small_mlp_case() -> Case:
    """A two-input neuron layer with tanh and relu: the shape micrograd users train."""
    steps: list[dict[str, Any]] = [
        {"id": "x1", "op": "constant", "value": 0.5},
        {"id": "x2", "op": "constant", "value": -1.25},
        {"id": "w1", "op": "variable", "value": 0.3},
        {"id": "w2", "op": "variable", "value": -0.7},
        {"id": "b", "op": "variable", "value": 0.1},
        {"id": "p1", "op": "mul", "operands": ["w1", "x1"]},
        {"id": "p2", "op": "mul", "operands": ["w2", "x2"]},
        {"id": "s", "op": "add", "operands": ["p1", "p2"]},
        {"id": "z", "op": "add", "operands": ["s", "b"]},
        {"id": "h", "op": "tanh", "operands": ["z"]},
        {"id": "r", "op": "relu", "operands": ["z"]},
        {"id": "o", "op": "mul", "operands": ["h", "r"]},
        {"id": "target", "op": "constant", "value": 0.25},
        {"id": "e", "op": "sub", "operands": ["o", "target"]},
        {"id": "loss", "op": "pow", "operands": ["e"], "exponent": 2.0},
        {"op": "backward", "output": "loss"},
        {"op": "zero_grad", "output": "loss"},
        {"op": "backward", "output": "loss"},
    ]
    return Case(
        "structure/neuron",
        "One neuron, tanh and relu of the same pre-activation, squared error: a training step's graph.",
        _program(steps, "neuron"),
        "conformance.cases.families:small_mlp_case",
    )


def cases() -> list[Case]:
    """Every family case."""
    return [
        *op_point_cases(),
        *op_error_cases(),
        fan_out_case(16),
        fan_out_case(1000),
        deep_chain_case(10_000),
        million_chain_case(),
        small_mlp_case(),
    ]

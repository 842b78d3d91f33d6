"""Case families written as code: every op at its points, and shapes too large for TOML.

Each family returns ``Case`` objects whose ``generator`` names the function
that built them, so a fixture's provenance says where it came from.
"""

from __future__ import annotations

from typing import Any, Optional

from ..program import parse_program
from .case import Case

#: Every op at ordinary points and at its edges: (op, label, operand values, exponent).
#: The ``libm-rounding`` points are inputs where glibc's exp, log, tanh or pow (or sigmoid in the
#: stable form from glibc's exp) is not correctly rounded: they show that a libm port passes inside
#: the tolerance. sigmoid's ``saturation-rounding`` is one too: 1 - 2**-53 where the stable form gives 1.0.
OP_POINTS: list[tuple[str, str, tuple[float, ...], Optional[float]]] = [
    ("add", "ordinary", (2.0, 3.0), None),
    ("add", "rounding", (0.1, 0.2), None),
    ("add", "signed-zeros", (-0.0, -0.0), None),
    ("sub", "ordinary", (5.0, 3.5), None),
    ("sub", "rounding", (0.3, 0.1), None),
    ("sub", "negative-zero", (-0.0, 0.0), None),
    ("mul", "ordinary", (3.0, -4.0), None),
    ("mul", "underflow-to-zero", (1e-200, 1e-200), None),
    ("mul", "negative-zero", (-0.0, 3.0), None),
    ("div", "ordinary", (1.0, 3.0), None),
    ("div", "negative", (-7.0, 2.0), None),
    ("div", "inexact-reciprocal", (1.75, 0.375), None),
    ("div", "divisor-derivative-rounding", (0.1, 0.3), None),
    ("div", "negative-zero", (0.0, -3.0), None),
    ("neg", "ordinary", (3.0,), None),
    ("neg", "positive-zero", (0.0,), None),
    ("neg", "negative-zero", (-0.0,), None),
    ("pow", "c-0", (2.5,), 0.0),
    ("pow", "c-1", (2.5,), 1.0),
    ("pow", "c-2", (2.5,), 2.0),
    ("pow", "c-minus-1", (2.5,), -1.0),
    ("pow", "c-half", (2.5,), 0.5),
    ("pow", "negative-base-c-3", (-2.0,), 3.0),
    ("pow", "negative-base-c-2", (-2.0,), 2.0),
    ("pow", "negative-base-c-minus-1", (-3.0,), -1.0),
    ("pow", "zero-base-c-0", (0.0,), 0.0),
    ("pow", "zero-base-c-2", (0.0,), 2.0),
    ("pow", "libm-rounding", (22.008,), 0.5),
    ("pow", "negative-zero-base-c-2", (-0.0,), 2.0),
    ("exp", "ordinary", (1.0,), None),
    ("exp", "zero", (0.0,), None),
    ("exp", "negative", (-2.5,), None),
    ("exp", "near-overflow", (709.0,), None),
    ("exp", "subnormal-result", (-740.0,), None),
    ("exp", "underflow-to-zero", (-800.0,), None),
    ("exp", "libm-rounding", (5.66,), None),
    ("log", "ordinary", (2.0,), None),
    ("log", "one", (1.0,), None),
    ("log", "near-zero", (1e-300,), None),
    ("log", "smallest-normal", (2.2250738585072014e-308,), None),
    ("log", "libm-rounding", (32.461,), None),
    ("tanh", "ordinary", (0.5,), None),
    ("tanh", "negative", (-2.0,), None),
    ("tanh", "zero", (0.0,), None),
    ("tanh", "tiny", (1e-17,), None),
    ("tanh", "negative-zero", (-0.0,), None),
    ("tanh", "libm-rounding", (0.906,), None),
    ("tanh", "saturated", (20.0,), None),
    ("tanh", "saturated-negative", (-20.0,), None),
    ("tanh", "near-saturation", (10.0,), None),
    ("relu", "positive", (1.5,), None),
    ("relu", "negative", (-1.5,), None),
    ("relu", "zero", (0.0,), None),
    ("relu", "negative-zero", (-0.0,), None),
    ("sigmoid", "ordinary", (0.5,), None),
    ("sigmoid", "zero", (0.0,), None),
    ("sigmoid", "negative-zero", (-0.0,), None),
    ("sigmoid", "negative", (-3.0,), None),
    ("sigmoid", "libm-rounding", (2.0,), None),
    ("sigmoid", "saturation-rounding", (37.0,), None),
    ("sigmoid", "saturated", (40.0,), None),
    ("sigmoid", "large-negative", (-40.0,), None),
    ("sigmoid", "subnormal-result", (-740.0,), None),
    ("sigmoid", "underflow-to-zero", (-746.0,), None),
    ("sqrt", "ordinary", (2.0,), None),
    ("sqrt", "perfect-square", (6.25,), None),
    ("sqrt", "one", (1.0,), None),
    ("sqrt", "subnormal", (5e-324,), None),
    ("sqrt", "huge", (1e308,), None),
]


#: The catalogue's bugs (conformance/mutants.py) each op point is written to catch.
OP_CATCHES: dict[str, tuple[str, ...]] = {
    "ops/relu/negative-zero": ("relu-derivative-at-zero", "relu-keeps-negative-zero"),
    "ops/relu/negative": ("wrong-derivative-relu",),
    "ops/mul/ordinary": ("wrong-derivative-mul",),
    "ops/div/ordinary": ("wrong-derivative-div",),
    "ops/div/inexact-reciprocal": ("div-by-reciprocal",),
    "ops/div/divisor-derivative-rounding": ("div-derivative-squared",),
    "ops/neg/ordinary": ("wrong-derivative-neg",),
    "ops/neg/positive-zero": ("signed-zero-lost",),
    "ops/pow/c-2": ("wrong-derivative-pow",),
    "ops/pow/zero-base-c-0": ("pow-derivative-at-c-0",),
    "ops/exp/ordinary": ("wrong-derivative-exp",),
    "ops/log/ordinary": ("wrong-derivative-log",),
    "ops/tanh/ordinary": ("wrong-derivative-tanh",),
    "ops/sigmoid/ordinary": ("wrong-derivative-sigmoid",),
    "ops/sqrt/ordinary": ("wrong-derivative-sqrt",),
}


def _program(steps: list[dict[str, Any]], name: str) -> Any:
    return parse_program(steps, name)


def op_point_cases() -> list[Case]:
    """One case per (op, point): build the operands as variables, apply the op, backward."""
    cases = []
    for op, label, operands, exponent in OP_POINTS:
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
                catches=OP_CATCHES.get(f"ops/{op}/{label}", ()),
            )
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
        fan_out_case(16),
        fan_out_case(1000),
        deep_chain_case(10_000),
        million_chain_case(),
        small_mlp_case(),
    ]

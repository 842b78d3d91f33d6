"""Families written from the corpus principles (issue 32), each found missing by tests/test_corpus_audit.py.

- ``position_cases``: each check backward makes (contribution, pass adjoint, accumulation)
  failing at the first, a middle and the last node of its walk, after a first backward has
  left a nonzero stored gradient on every node, so that a port committing as it goes (in
  either direction) changes some of them. The errors' numeric fields all differ.
- ``combination_cases``: each binary op with a tracked node, a constant, a detached copy
  or an untracked op result in each slot, then a backward and a zero_grad over them all.
- ``value_class_cases``: a pass adjoint and a stored gradient of exactly 0 on a node above
  nonzero ones, then zero_grad; a second and a third backward from other outputs.
- ``op_form_cases``: each op at a negative zero, the smallest subnormal and the largest
  finite values, in either slot.

The audit names what it needs by property, not by these ids: removing a family fails it.
"""

from __future__ import annotations

from typing import Any, Callable

from reference.ops import OPS

from ..program import parse_program
from .case import Case

_GENERATOR = "conformance.cases.principles"
LARGEST = 1.7976931348623157e308
SUBNORMAL = 5e-324


def _case(family: str, case_id: str, description: str, steps: list[dict[str, Any]]) -> Case:
    return Case(case_id, description, parse_program(steps, case_id), f"{_GENERATOR}:{family}")


Steps = list[dict[str, Any]]


def _chain(links: dict[int, Steps], length: int = 4) -> Steps:
    """n0 = variable(1.0), then n1 .. n<length>, each neg(previous) unless ``links`` gives its step."""
    steps: list[dict[str, Any]] = [{"id": "n0", "op": "variable", "value": 1.0}]
    for i in range(1, length + 1):
        steps += links.get(i, [{"id": f"n{i}", "op": "neg", "operands": [f"n{i - 1}"]}])
    return steps


_POSITIONS = ("first", "middle", "last")


def _accumulation(where: str) -> list[dict[str, Any]]:
    # n_i = mul(n_(i-1), c_i): the pass adjoint of n_i is the seed times c_(i+1) ... c_4. One factor
    # of 100 makes one node's adjoint 1e308 and every other 1e306; twice that (1e308 + 9e307) overflows.
    factors = {"first": (100.0, 1.0, 1.0, 1.0), "middle": (1.0, 0.01, 100.0, 1.0), "last": (1.0, 1.0, 1.0, 0.01)}[where]
    seed = 1e308 if where == "last" else 1e306
    links: dict[int, Steps] = {
        i: [
            {"id": f"c{i}", "op": "constant", "value": factor},
            {"id": f"n{i}", "op": "mul", "operands": [f"n{i - 1}", f"c{i}"]},
        ]
        for i, factor in enumerate(factors, 1)
    }
    return [
        *_chain(links),
        {"op": "backward", "output": "n4", "seed": seed},
        {"op": "backward", "output": "n4", "seed": seed * 0.9},
    ]


def _pass_adjoint(where: str) -> list[dict[str, Any]]:
    # The failing node receives 1e308 twice. First: n4 = add(n3, n3). Middle and last: n(k+1) = add(n_k, m)
    # with m = mul(n_k, 0.9), so the error's previous (1e308) and contribution (9e307) differ.
    links: dict[int, Steps]
    if where == "first":
        links = {4: [{"id": "n4", "op": "add", "operands": ["n3", "n3"]}]}
    else:
        k = 2 if where == "middle" else 0
        links = {
            k + 1: [
                {"id": "c", "op": "constant", "value": 0.9},
                {"id": "m", "op": "mul", "operands": [f"n{k}", "c"]},
                {"id": f"n{k + 1}", "op": "add", "operands": [f"n{k}", "m"]},
            ]
        }
    return [*_chain(links), {"op": "backward", "output": "n4", "seed": 0.5}, {"op": "backward", "output": "n4", "seed": 1e308}]


def _contribution(where: str) -> list[dict[str, Any]]:
    # The consumer mul(n_k, 10.0) receives upstream 1e308: its slot-0 contribution overflows.
    k = {"first": 3, "middle": 2, "last": 0}[where]
    links: dict[int, Steps] = {
        k + 1: [
            {"id": "ten", "op": "constant", "value": 10.0},
            {"id": f"n{k + 1}", "op": "mul", "operands": [f"n{k}", "ten"]},
        ]
    }
    return [*_chain(links), {"op": "backward", "output": "n4", "seed": 0.5}, {"op": "backward", "output": "n4", "seed": 1e308}]


_CHECKS: dict[str, tuple[str, Callable[[str], list[dict[str, Any]]]]] = {
    "accumulation": ("non-finite-accumulated-gradient", _accumulation),
    "pass-adjoint": ("non-finite-pass-adjoint", _pass_adjoint),
    "contribution": ("non-finite-contribution", _contribution),
}


def position_cases() -> list[Case]:
    """Each backward check failing at the first, a middle and the last node of its walk, other nodes holding gradients."""
    return [
        _case(
            "position_cases",
            f"errors/{kind}-at-{where}-node",
            f"A first backward leaves a stored gradient on every node of a chain; the second fails with {kind} at "
            f"the {where} node the {check} check walks. Every stored gradient must stay as the first backward left "
            "it (backward.atomic): a port that commits each node as it checks the next changes some of them.",
            build(where),
        )
        for check, (kind, build) in _CHECKS.items()
        for where in _POSITIONS
    ]


#: The binary ops of the op table, in its order (add, sub, mul, div).
_BINARY = tuple(name for name, op in OPS.items() if op.arity == 2)
#: One node of each operand kind: tracked, constant, detached copy, untracked op result.
_KINDS = {"tracked": ("x", "y"), "constant": ("c", "c"), "detached": ("d", "d"), "untracked-result": ("u", "u")}


def combination_cases() -> list[Case]:
    """Each binary op with every kind of operand in each slot, all summed into one output, backward and zero_grad."""
    cases = []
    for op in _BINARY:
        steps: list[dict[str, Any]] = [
            {"id": "x", "op": "variable", "value": 1.5},
            {"id": "y", "op": "variable", "value": -2.5},
            {"id": "c", "op": "constant", "value": 3.0},
            {"id": "d", "op": "detach", "operands": ["y"]},
            {"id": "u", "op": "neg", "operands": ["c"]},
        ]
        results = []
        for first, (a, _) in _KINDS.items():
            for second, (_, b) in _KINDS.items():
                name = f"{first}-{second}"
                steps.append({"id": name, "op": op, "operands": [a, b]})
                results.append(name)
        total = results[0]  # tracked-tracked: the sum is tracked from its first term on
        for index, name in enumerate(results[1:], 1):
            steps.append({"id": f"s{index}", "op": "add", "operands": [total, name]})
            total = f"s{index}"
        steps += [{"op": "backward", "output": total}, {"op": "zero_grad", "output": total}]
        cases.append(
            _case(
                "combination_cases",
                f"structure/{op}-operand-kinds",
                f"{op} with a tracked node, a constant, a detached copy and an untracked op result in each slot (16 "
                "nodes), summed into one output: backward, then zero_grad. Untracked operands get edges but no "
                "gradient; untracked results are reached and left alone.",
                steps,
            )
        )
    return cases


def value_class_cases() -> list[Case]:
    """Zero adjoints and gradients above nonzero ones; a second and third backward from other outputs."""
    zero: Steps = [
        {"id": "x", "op": "variable", "value": 1.5},
        {"id": "p", "op": "mul", "operands": ["x", "x"]},
        {"id": "z", "op": "constant", "value": 0.0},
        {"id": "q", "op": "mul", "operands": ["p", "z"]},
        {"id": "s", "op": "add", "operands": ["q", "x"]},
        {"op": "backward", "output": "s"},
        {"op": "zero_grad", "output": "s"},
        {"op": "backward", "output": "s", "seed": 2.0},
    ]
    others: Steps = [
        {"id": "x", "op": "variable", "value": 1.5},
        {"id": "y", "op": "variable", "value": -0.5},
        {"id": "a", "op": "mul", "operands": ["x", "y"]},
        {"id": "b", "op": "add", "operands": ["a", "x"]},
        {"id": "o", "op": "mul", "operands": ["b", "a"]},
        {"op": "backward", "output": "o"},
        {"op": "backward", "output": "b"},
        {"op": "backward", "output": "a", "seed": -2.0},
    ]
    return [
        _case(
            "value_class_cases",
            "structure/zero-adjoint-above-nonzero",
            "p = x*x reaches the output only through p * 0.0: its pass adjoint and stored gradient are exactly 0 "
            "while x below it gets 1. backward, zero_grad, backward: a port that stops its walk (or its zeroing) "
            "at a zero loses x's.",
            zero,
        ),
        _case(
            "value_class_cases",
            "structure/backward-from-other-outputs",
            "After backward(o), a second backward from b and a third from a (inside o's graph) accumulate into the "
            "shared nodes; fresh pass adjoints each time, never the stored gradients.",
            others,
        ),
    ]


#: The unary ops of the op table, in its order (pow with exponent 2): every op gets its special-operands case.
_UNARY = tuple(name for name, op in OPS.items() if op.arity == 1)


def op_form_cases() -> list[Case]:
    """Each op at -0.0, the smallest subnormal and the largest finite value, in either slot of a binary op."""
    specials = {"negative-zero": -0.0, "subnormal": SUBNORMAL, "largest": LARGEST}
    cases = []
    for op in (*_BINARY, *_UNARY):
        steps: list[dict[str, Any]] = [{"id": name, "op": "variable", "value": v} for name, v in specials.items()]
        steps.append({"id": "b", "op": "variable", "value": 1.5})
        for name in specials:
            pairs = [[name, "b"], ["b", name]] if op in _BINARY else [[name]]
            for slot, operands in enumerate(pairs):
                step: dict[str, Any] = {"id": f"r-{name}-{slot}", "op": op, "operands": operands}
                if OPS[op].takes_exponent:
                    step["exponent"] = 2.0
                steps.append(step)
        cases.append(
            _case(
                "op_form_cases",
                f"ops/{op}/special-operands",
                f"{op} at -0.0, 5e-324 and the largest finite value"
                + (", in each slot" if op in _BINARY else "")
                + ": the values, or the error where the result or a local derivative is not finite.",
                steps,
            )
        )
    return cases


#: The families, by function name (a fixture's provenance names its family).
FAMILIES: dict[str, Callable[[], list[Case]]] = {
    "position_cases": position_cases,
    "combination_cases": combination_cases,
    "value_class_cases": value_class_cases,
    "op_form_cases": op_form_cases,
}


def cases() -> list[Case]:
    """Every principles case."""
    return [case for family in FAMILIES.values() for case in family()]

"""Hypothesis strategies for random programs (docs/contract.md section 8).

``programs()`` draws valid programs: leaves, any subset of the ops, repeated
operands, shared subgraphs, detach, several outputs, seeds, repeated backward
and zero_grad, and inputs that can trigger every error kind. Creation steps
that fail at run time are dropped while drawing, so every later step names an
id that exists. Used by the property tests and by ``conformance fuzz``.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from hypothesis import strategies as st

import reference
from reference import EngineError, Node

from .program import DECLARABLE_OPS, Program, parse_program

#: Leaf values: ordinary numbers plus the edges that trigger overflow, underflow and zero.
LEAF_VALUES = st.one_of(
    # The last three are the only way to see non-finite-leaf.
    st.sampled_from(
        [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -2.5, 1e-300, 5e-324, 1e300, 1e308, -1e308, 709.0, 1000.0]
        # a quotient that is finite while the divisor's derivative -(r/b) is not: 1e290 / 1e-10
        + [1e290, 1e-10]
        + [float("inf"), float("-inf"), float("nan")]
    ),
    st.floats(min_value=-4.0, max_value=4.0, allow_nan=False, allow_infinity=False),
)
#: Seeds: ordinary ones, huge ones (whose contributions, sums and accumulated gradients overflow) and non-finite ones.
SEEDS = st.sampled_from([1.0, 0.0, -1.0, 0.5, 2.0, 1e300, 1e308, -1e308, 1e10, float("inf"), float("nan")])
#: The largest finite float: twice it overflows, and it minus itself is 0.
BIG = 1.7976931348623157e308
#: The contract's special operands (docs/contract.md): signed zeros, the smallest subnormals and the
#: smallest normal of both signs, the largest finite values, and the ones around them.
SPECIAL_VALUES = (0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -2.2250738585072014e-308, BIG, -BIG, 1.0, -1.0)
#: Seeds whose pass adjoints, repeated, overflow a stored gradient (while their difference is 0).
HUGE_SEEDS = (BIG, -BIG, 1e308, -1e308)
#: The special forms a "special" step draws (``programs``): each appends one to three steps.
SPECIAL_FORMS = ("divide-by-zero", "special-operand", "huge-backward")
EXPONENTS = st.sampled_from([0.0, 1.0, 2.0, 3.0, -1.0, 0.5, -0.5, 1.5])


@st.composite
def programs(
    draw: Any,
    ops: Sequence[str] = DECLARABLE_OPS,
    *,
    max_steps: int = 24,
    seeds: bool = True,
    extreme: bool = True,
    failures: bool = True,
) -> Program:
    """A random valid program over ``ops`` (a subset of the declarable ops).

    ``seeds=False`` keeps every backward at seed 1; ``extreme=False`` keeps leaf
    values ordinary (no overflow-triggering magnitudes, no non-finite seeds).
    ``failures=False`` leaves out every step that fails on the reference (a
    creation error or a failed backward), for engines that do not report typed
    errors; the backwards and zero_grads are then run while drawing, because
    whether a backward fails depends on the gradients stored before it.
    """
    values = LEAF_VALUES if extreme else st.floats(min_value=-3.0, max_value=3.0, allow_nan=False, allow_infinity=False)
    usable = [op for op in ops if op in DECLARABLE_OPS]
    steps: list[dict[str, Any]] = []
    nodes: dict[str, Node] = {}
    count = draw(st.integers(min_value=1, max_value=max_steps))
    for index in range(count):
        name = f"n{index}"
        kinds = ["leaf", "leaf", "op", "op", "op", "backward", "zero_grad", "again"] + ["special"] * (2 if extreme else 0)
        choice = draw(st.sampled_from(kinds))
        backwards = [step for step in steps if step["op"] == "backward"]
        if choice == "special" and nodes:
            _special(draw, name, usable, steps, nodes, seeds=seeds, failures=failures)
            continue
        if choice == "special":
            choice = "leaf"
        if choice == "again" and backwards:
            # The same backward once more: accumulation, stale intermediates, overflowing sums.
            if failures or _succeeds(nodes[backwards[-1]["output"]], backwards[-1]):
                steps.append(dict(backwards[-1]))
            continue
        if choice == "again":
            choice = "backward"
        if choice == "leaf" or not nodes or (choice == "op" and not usable):
            kind = draw(st.sampled_from(["variable", "variable", "constant"]))
            value = draw(values)
            step: dict[str, Any] = {"id": name, "op": kind, "value": value}
            node = _attempt(reference.variable if kind == "variable" else reference.constant, value)
        elif choice == "op":
            op = draw(st.sampled_from(usable))
            names = list(nodes)
            # Prefer recent nodes so graphs get deep, but allow any (shared subgraphs, repeats).
            pick = st.one_of(st.sampled_from(names[-3:]), st.sampled_from(names))
            if op == "detach":
                arg = draw(pick)
                step = {"id": name, "op": "detach", "operands": [arg]}
                node = nodes[arg].detach()
            else:
                arity = reference.OPS[op].arity
                args = [draw(pick) for _ in range(arity)]
                step = {"id": name, "op": op, "operands": args}
                exponent: Optional[float] = None
                if op == "pow":
                    exponent = draw(EXPONENTS)
                    step["exponent"] = exponent
                node = _attempt(reference.apply, op, tuple(nodes[a] for a in args), exponent)
        else:
            # Mostly a recent tracked node (a backward that can succeed), sometimes any node at all.
            tracked = [name for name, node in nodes.items() if node.tracked][-3:]
            output = draw(
                st.one_of(st.sampled_from(tracked), st.sampled_from(list(nodes))) if tracked else st.sampled_from(list(nodes))
            )
            step = {"op": choice, "output": output}
            if choice == "backward" and seeds and draw(st.booleans()):
                seed = draw(SEEDS if extreme else st.sampled_from([0.0, -1.0, 0.5, 2.0]))
                step["seed"] = seed
            if failures or _succeeds(nodes[output], step):
                steps.append(step)
            continue
        # A creation that fails at run time stays in the program (it tests the error) but is never named.
        if node is not None:
            nodes[name] = node
        if node is not None or failures:
            steps.append(step)
    if not any(step["op"] == "backward" for step in steps) and nodes:
        last = list(nodes)[-1]
        if failures:
            steps.append({"op": "backward", "output": last})
        else:
            tracked = [name for name, node in nodes.items() if node.tracked]
            if tracked and _succeeds(nodes[tracked[-1]], {"op": "backward", "output": tracked[-1]}):
                steps.append({"op": "backward", "output": tracked[-1]})
    return parse_program(steps, "generated program")


def _special(
    draw: Any, name: str, usable: list[str], steps: list[dict[str, Any]], nodes: dict[str, Node], *, seeds: bool, failures: bool
) -> None:
    """One special form, appended to ``steps``: the operands and steps the contract singles out.

    ``divide-by-zero``: x / +-0 with x of either sign, zero or huge (the sign of the infinity);
    ``special-operand``: an op with a fresh leaf of ``SPECIAL_VALUES`` in one slot;
    ``huge-backward``: backward with a seed near the largest float, often twice (an accumulation
    that overflows, whose difference does not).
    """
    form = draw(st.sampled_from(SPECIAL_FORMS))
    operating = [op for op in usable if op != "detach"]
    if form == "divide-by-zero" and "div" not in usable:
        form = "special-operand"
    if form == "special-operand" and not operating:
        form = "huge-backward"
    if form == "huge-backward":
        tracked = [node_name for node_name, node in nodes.items() if node.tracked][-3:]
        if not tracked or not seeds:
            return
        step: dict[str, Any] = {
            "op": "backward",
            "output": draw(st.sampled_from(tracked)),
            "seed": draw(st.sampled_from(HUGE_SEEDS)),
        }
        for _ in range(draw(st.integers(min_value=1, max_value=3))):
            if failures or _succeeds(nodes[step["output"]], step):
                steps.append(dict(step))
        return
    names = list(nodes)
    pick = st.one_of(st.sampled_from(names[-3:]), st.sampled_from(names))

    def leaf(slot: int, value: float) -> Optional[str]:
        kind = draw(st.sampled_from(["variable", "constant"]))
        made = _attempt(reference.variable if kind == "variable" else reference.constant, value)
        if made is None:
            return None
        nodes[f"{name}s{slot}"] = made
        steps.append({"id": f"{name}s{slot}", "op": kind, "value": value})
        return f"{name}s{slot}"

    if form == "divide-by-zero":
        op = "div"
        numerator = draw(st.one_of(pick, st.sampled_from([1.0, -1.0, 0.0, -0.0, BIG, -BIG, 5e-324])))
        first = numerator if isinstance(numerator, str) else leaf(0, numerator)
        args = [first, leaf(1, draw(st.sampled_from([0.0, -0.0])))]
    else:
        op = draw(st.sampled_from(operating))
        arity = reference.OPS[op].arity
        special = draw(st.integers(min_value=0, max_value=arity - 1))
        args = [leaf(slot, draw(st.sampled_from(SPECIAL_VALUES))) if slot == special else draw(pick) for slot in range(arity)]
    if any(arg is None for arg in args):
        return
    exponent: Optional[float] = draw(EXPONENTS) if op == "pow" else None
    step = {"id": name, "op": op, "operands": args}
    if exponent is not None:
        step["exponent"] = exponent
    node = _attempt(reference.apply, op, tuple(nodes[str(a)] for a in args), exponent)
    if node is not None:
        nodes[name] = node
    if node is not None or failures:
        steps.append(step)


def _attempt(make: Any, *args: Any) -> Optional[Node]:
    try:
        return make(*args)  # type: ignore[no-any-return]
    except EngineError:
        return None


def _succeeds(output: Node, step: dict[str, Any]) -> bool:
    # Run the gradient step on the drawn graph, so later steps see the stored gradients it leaves.
    try:
        if step["op"] == "zero_grad":
            output.zero_grad()
        else:
            output.backward(step.get("seed", 1.0))
    except EngineError:
        return False
    return True

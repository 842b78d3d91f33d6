"""Cases written for the mutants that survived the corpus (``make mutate``, bench/mutate/).

A mutation tool that does not know the corpus (cosmic-ray over ``reference/``,
cargo-mutants over the Rust port, gremlins over the Go port) changed one operator or
constant at a time, and the corpus as it was passed some of those mutants. Each case
here kills at least one of them; its description says which mistake it shows and
which mutant (tool, file, the line's code) it was written for. The mutants no program
can observe are listed, with the reason, in ``bench/mutate/equivalent.toml``.
"""

from __future__ import annotations

from typing import Any

from ..program import parse_program
from .case import Case

GENERATOR = "conformance.cases.survivors"
#: The largest finite float: twice it overflows, and it minus itself is 0.
BIG = 1.7976931348623157e308


def _case(case_id: str, description: str, steps: list[dict[str, Any]], function: str, **extra: Any) -> Case:
    return Case(case_id, description, parse_program(steps, case_id), f"{GENERATOR}:{function}", **extra)


def division_by_signed_zero() -> Case:
    """x / +-0 for both signs of x and of the zero: the error's value is an infinity whose sign is the product's."""
    steps: list[dict[str, Any]] = [
        {"id": "one", "op": "variable", "value": 1.0},
        {"id": "minus_one", "op": "variable", "value": -1.0},
        {"id": "zero", "op": "variable", "value": 0.0},
        {"id": "minus_zero", "op": "variable", "value": -0.0},
        {"id": "q_pos_pos", "op": "div", "operands": ["one", "zero"]},
        {"id": "q_pos_neg", "op": "div", "operands": ["one", "minus_zero"]},
        {"id": "q_neg_pos", "op": "div", "operands": ["minus_one", "zero"]},
        {"id": "q_neg_neg", "op": "div", "operands": ["minus_one", "minus_zero"]},
        {"id": "q_zero_zero", "op": "div", "operands": ["minus_zero", "zero"]},
    ]
    return _case(
        "survivors/division-by-signed-zero",
        "1/0, 1/-0, -1/0, -1/-0 and -0/0: each fails with non-finite-result, and its value is +inf, -inf, -inf, +inf "
        "and nan: the sign of the infinity is the sign of the exact quotient, the zero's sign included. Catches a "
        "division that drops the sign of a zero divisor, or of a negative dividend (cosmic-ray on reference/crmath.py "
        "ieee_div: `a == 0.0` as `a <= 0.0`, the sign test `!=` as `>`, `< 0` as `== 0` or `<= 0`).",
        steps,
        "division_by_signed_zero",
    )


def accumulation_overflow_without_record() -> Case:
    """The second backward's stored-gradient check fails where the pass record is not asked for."""
    steps: list[dict[str, Any]] = [
        {"id": "x", "op": "variable", "value": 1.0},
        {"id": "c", "op": "constant", "value": 1.0},
        {"id": "y", "op": "mul", "operands": ["x", "c"]},
        {"op": "backward", "output": "y", "seed": BIG},
        {"op": "backward", "output": "y", "seed": BIG},
        {"op": "backward", "output": "y", "seed": -BIG},
    ]
    return _case(
        "survivors/accumulation-overflow-without-record",
        f"y = x * 1, backward with seed {BIG!r} twice, then with its negative: the second pass fails with "
        "non-finite-accumulated-gradient (stored + pass adjoint overflows) and commits nothing, and the third "
        "brings every stored gradient back to 0. Compared on values, gradients and errors only, so the harness "
        "asks for no pass record and an engine's record-free fast path is the one that runs. Catches a fast path "
        "that tests stored - pass adjoint for finiteness instead of the sum (cargo-mutants on "
        "adapters/rust/src/backward.rs sweep: `grads + upstream` as `grads - upstream`).",
        steps,
        "accumulation_overflow_without_record",
        levels=("values", "gradients", "errors"),
    )


def large_finite_accumulation() -> Case:
    """Stored gradient and pass adjoint both 1e200: their sum is finite, their product is not."""
    steps: list[dict[str, Any]] = [
        {"id": "x", "op": "variable", "value": 1.0},
        {"id": "c", "op": "constant", "value": 1.0},
        {"id": "y", "op": "mul", "operands": ["x", "c"]},
        {"op": "backward", "output": "y", "seed": 1e200},
        {"op": "backward", "output": "y", "seed": 1e200},
    ]
    return _case(
        "survivors/large-finite-accumulation",
        "y = x * 1, backward with seed 1e200 twice: the second pass adds a pass adjoint of 1e200 to a stored "
        "gradient of 1e200, a finite 2e200, so it succeeds; compared with its pass record, so an engine's "
        "recording path is the one that runs. Catches an accumulation check that tests stored * pass adjoint "
        "(1e400, not finite) instead of the sum (cargo-mutants on adapters/rust/src/backward.rs "
        "TapeData::backward: `grads + upstream` as `grads * upstream`).",
        steps,
        "large_finite_accumulation",
    )


def huge_finite_results_and_derivatives() -> Case:
    """Values and local derivatives of 1.5e308: finite, though twice them is not."""
    steps: list[dict[str, Any]] = [
        {"id": "a", "op": "variable", "value": 1.5e308},
        {"id": "one", "op": "variable", "value": 1.0},
        {"id": "r", "op": "mul", "operands": ["a", "one"]},
        {"id": "s", "op": "mul", "operands": ["one", "a"]},
        {"op": "backward", "output": "r"},
    ]
    return _case(
        "survivors/huge-finite-results-and-derivatives",
        "a = 1.5e308: a * 1 and 1 * a are finite, with a local derivative of 1.5e308 in slot 1 and in slot 0, so "
        "both nodes are created, and backward from a * 1 gives 1 to a and 1.5e308 to the 1. Catches a creation "
        "check whose finiteness test overflows on a finite value or derivative, such as value + value for "
        "value - value (gremlins on adapters/go/autograd/graph.go: `value - value + (d0 - d0) + (d1 - d1)` with a "
        "`-` made `+`).",
        steps,
        "huge_finite_results_and_derivatives",
    )


def accumulation_overflow_at_the_first_node_without_record() -> Case:
    """A stored gradient overflows at the first node of the walk only, where no pass record is asked for."""
    steps: list[dict[str, Any]] = [
        {"id": "x", "op": "variable", "value": 1.0},
        {"id": "c", "op": "constant", "value": 1.5},
        {"id": "z", "op": "mul", "operands": ["x", "c"]},
        {"op": "backward", "output": "z", "seed": 1e308},
        {"id": "one", "op": "constant", "value": 1.0},
        {"id": "y", "op": "mul", "operands": ["x", "one"]},
        {"op": "backward", "output": "y", "seed": 1e308},
        {"op": "backward", "output": "x", "seed": 1e308},
    ]
    return _case(
        "survivors/accumulation-overflow-at-the-first-node-without-record",
        "z = x * 1.5, backward from z with seed 1e308 leaves 1.5e308 stored in x; then backward from y = x * 1 and "
        "from x itself, each with seed 1e308: only x's sum (2.5e308) overflows, and x is the first node of each walk "
        "(the leaf the post-order places first; the output itself in the last pass), so each pass fails with "
        "non-finite-accumulated-gradient and commits nothing while y's own sum is finite. Compared on values, "
        "gradients and errors only, so the record-free fast path runs. Catches a walk that stops before the first "
        "node of the topology and so never checks its sum (gremlins on adapters/go/autograd/backward.go sweep: "
        "`k >= 0` as `k > 0`; the default fuzz run found it, the corpus did not).",
        steps,
        "accumulation_overflow_at_the_first_node_without_record",
        levels=("values", "gradients", "errors"),
    )


def backward_as_the_tape_grows() -> Case:
    """backward after the tape has grown to 2, 4, 8 and 16 nodes: each pass's scratch space must cover the tape."""
    steps: list[dict[str, Any]] = [{"id": "x", "op": "variable", "value": 1.0}]
    previous = "x"
    for k in range(1, 16):
        steps.append({"id": f"y{k}", "op": "add", "operands": [previous, "x"]})
        previous = f"y{k}"
        if k + 1 in (2, 4, 8, 16):  # x and y1..yk: k + 1 nodes
            steps.append({"op": "backward", "output": previous})
    return _case(
        "survivors/backward-as-the-tape-grows",
        "y_k = y_(k-1) + x, with a backward from the newest node when the graph has 2, 4, 8 and 16 nodes: "
        "every pass sees a larger graph than the one before, so an engine that keeps per-pass scratch "
        "buffers must grow all of them together. Catches a scratch space whose visit marks grow past its "
        "pass adjoints, so that the size test on the marks skips a growth the adjoints needed (gremlins on "
        "adapters/go/autograd/backward.go grow: `size-len(s.mark)` as `size+len(s.mark)`; the default fuzz "
        "run found it, the corpus did not).",
        steps,
        "backward_as_the_tape_grows",
    )


def many_passes_on_one_graph() -> Case:
    """26 backward passes from one leaf: an engine's per-pass bookkeeping must not grow with the number of passes."""
    steps: list[dict[str, Any]] = [{"id": "x", "op": "variable", "value": 1.0}]
    steps += [{"op": "backward", "output": "x"} for _ in range(26)]
    return _case(
        "survivors/many-passes-on-one-graph",
        "x alone, and 26 backward passes from it: each adds 1, so x's gradient goes 1, 2, ... 26. The answers of an "
        "engine whose stored-gradient array doubles on every pass instead of growing to the tape's length are the "
        "same, but it allocates 2^26 floats by the last pass; bench/mutate/judge.py runs each mutant of a native "
        "port with 1 GiB of address space (the unmutated ports run the whole corpus in it), so that one runs out of "
        "memory here. Catches gremlins on adapters/go/autograd/graph.go syncGrads: `len(g.nodes) - len(g.grads)` as "
        "`len(g.nodes) + len(g.grads)`.",
        steps,
        "many_passes_on_one_graph",
    )


def sqrt_of_small_negatives() -> Case:
    """sqrt of negatives in [-1, 0): each is nan, a non-finite-result, as sqrt(-4) is."""
    steps: list[dict[str, Any]] = [
        {"id": "minus_quarter", "op": "variable", "value": -0.25},
        {"id": "minus_one", "op": "variable", "value": -1.0},
        {"id": "minus_tiny", "op": "variable", "value": -5e-324},
        {"id": "r_quarter", "op": "sqrt", "operands": ["minus_quarter"]},
        {"id": "r_one", "op": "sqrt", "operands": ["minus_one"]},
        {"id": "r_tiny", "op": "sqrt", "operands": ["minus_tiny"]},
    ]
    return _case(
        "survivors/sqrt-of-small-negatives",
        "sqrt(-0.25), sqrt(-1) and sqrt(-5e-324): each value is nan, so each fails with non-finite-result, as "
        "sqrt(-4) does (errors/non-finite-result-sqrt-negative). Catches a negative test that lets a negative operand "
        "above a wrong bound through to a root that raises or returns a number (cosmic-ray on reference/crmath.py "
        "ieee_sqrt: `a >= 0.0` as `a >= -1.0`, which sends -0.25 to math.sqrt, which raises; the default fuzz run "
        "found it, the corpus did not).",
        steps,
        "sqrt_of_small_negatives",
    )


def cases() -> list[Case]:
    """Every survivor case."""
    return [
        division_by_signed_zero(),
        accumulation_overflow_without_record(),
        large_finite_accumulation(),
        huge_finite_results_and_derivatives(),
        backward_as_the_tape_grows(),
        accumulation_overflow_at_the_first_node_without_record(),
        many_passes_on_one_graph(),
        sqrt_of_small_negatives(),
    ]

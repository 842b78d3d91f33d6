"""Independent oracles for the reference's gradients: central differences and MPFR forward mode.

The programs here are smooth and well-conditioned by construction: positive
values, and ops whose local derivatives are positive there (add, mul, exp,
log, tanh on small inputs, pow with a positive exponent), so the gradient is a
sum of positive products and its relative error stays within a few ulps per op.
"""

from __future__ import annotations

import math

import gmpy2
from hypothesis import given
from hypothesis import strategies as st

import reference
from conformance.wire import ulp_distance
from reference import gradcheck

HIGH = gmpy2.context(precision=256)


@st.composite
def smooth_programs(draw, max_ops=10):
    """A list of (op, operand indices, exponent) over a few positive inputs, values kept in range."""
    inputs = draw(st.lists(st.floats(min_value=0.5, max_value=2.0), min_size=1, max_size=3))
    values = list(inputs)
    ops = []
    for _ in range(draw(st.integers(min_value=1, max_value=max_ops))):
        op = draw(st.sampled_from(["add", "mul", "exp", "log", "tanh", "pow"]))
        i = draw(st.integers(min_value=0, max_value=len(values) - 1))
        j = draw(st.integers(min_value=0, max_value=len(values) - 1))
        a, b = values[i], values[j]
        exponent = None
        if op == "add":
            value = a + b
        elif op == "mul":
            value = a * b
        elif op == "exp" and a < 3.0:
            value = math.exp(a)
        elif op == "log" and a > 1.5:
            value = math.log(a)
        elif op == "tanh" and a < 1.0:
            value = math.tanh(a)
        elif op == "pow":
            exponent = draw(st.sampled_from([2.0, 3.0, 0.5, 1.5]))
            value = a**exponent
        else:
            continue
        if not 0.1 < value < 1e6:
            continue
        ops.append((op, (i, j)[: 2 if op in ("add", "mul") else 1], exponent))
        values.append(value)
    return inputs, ops


def evaluate(nodes, ops):
    nodes = list(nodes)
    for op, operands, exponent in ops:
        nodes.append(reference.apply(op, tuple(nodes[k] for k in operands), exponent))
    return nodes[-1]


def forward_mode(inputs, ops, wrt):
    """d(output)/d(input wrt) by dual numbers in 256-bit MPFR."""
    with gmpy2.context(HIGH):
        vals = [gmpy2.mpfr(x) for x in inputs]
        ders = [gmpy2.mpfr(1 if k == wrt else 0) for k in range(len(inputs))]
        for op, operands, exponent in ops:
            a, da = vals[operands[0]], ders[operands[0]]
            if op == "add":
                b, db = vals[operands[1]], ders[operands[1]]
                v, d = a + b, da + db
            elif op == "mul":
                b, db = vals[operands[1]], ders[operands[1]]
                v, d = a * b, da * b + a * db
            elif op == "exp":
                v = gmpy2.exp(a)
                d = v * da
            elif op == "log":
                v, d = gmpy2.log(a), da / a
            elif op == "tanh":
                v = gmpy2.tanh(a)
                d = (1 - v * v) * da
            else:
                c = gmpy2.mpfr(exponent)
                v, d = a**c, c * a ** (c - 1) * da
            vals.append(v)
            ders.append(d)
        return float(ders[-1])


@given(smooth_programs())
def test_gradients_match_high_precision_forward_mode_within_a_few_ulps(program):
    inputs, ops = program
    if not ops:
        return
    leaves = [reference.variable(x) for x in inputs]
    evaluate(leaves, ops).backward()
    for k, leaf in enumerate(leaves):
        exact = forward_mode(inputs, ops, k)
        if exact == 0.0:
            assert leaf.grad == 0.0
            continue
        # Each op adds at most a couple of roundings to every path; all terms are positive.
        assert ulp_distance(leaf.grad, exact) <= 4 * (len(ops) + 1), (leaf.grad, exact)


@given(smooth_programs())
def test_gradients_agree_with_central_differences(program):
    inputs, ops = program
    if not ops:
        return
    for check in gradcheck(lambda *leaves: evaluate(leaves, ops), inputs, tolerance=1e-6):
        assert check.passed, check

"""The op table: every operation's name, arity, value and local derivatives.

This is the single place where the reference's arithmetic is written down
(docs/contract.md section 4). Each rule takes the operands' forward values (and, for pow,
the constant exponent) and returns the result value together with one local
derivative per operand slot, evaluated from the forward values exactly as the
contract's formula is written, so the formula fixes the rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .crmath import cr_exp, cr_log, cr_pow, cr_sigmoid, cr_tanh, ieee_div, ieee_sqrt

#: A rule maps operand values (plus the exponent for pow) to (value, local derivatives).
Rule = Callable[..., tuple[float, tuple[float, ...]]]


@dataclass(frozen=True)
class Op:
    """One row of the op table.

    ``takes_exponent`` is true only for pow, whose exponent is a finite constant
    carried by the operation, not an operand node.
    """

    name: str
    arity: int
    takes_exponent: bool
    rule: Rule


def _add(a: float, b: float) -> tuple[float, tuple[float, ...]]:
    # d(a+b)/da = 1, d(a+b)/db = 1
    return a + b, (1.0, 1.0)


def _sub(a: float, b: float) -> tuple[float, tuple[float, ...]]:
    # d(a-b)/da = 1, d(a-b)/db = -1
    return a - b, (1.0, -1.0)


def _mul(a: float, b: float) -> tuple[float, tuple[float, ...]]:
    # d(ab)/da = b, d(ab)/db = a
    return a * b, (b, a)


def _div(a: float, b: float) -> tuple[float, tuple[float, ...]]:
    r = ieee_div(a, b)
    # d(a/b)/da = 1/b; d(a/b)/db = -a/b^2, written -(r/b) so it reuses the rounded quotient
    return r, (ieee_div(1.0, b), -ieee_div(r, b))


def _neg(a: float) -> tuple[float, tuple[float, ...]]:
    # d(-a)/da = -1
    return -a, (-1.0,)


def _pow(a: float, c: float) -> tuple[float, tuple[float, ...]]:
    # d(a^c)/da = c*a^(c-1); exactly 0 when c == 0, so 0^0 has derivative 0, not 0*inf
    r = cr_pow(a, c)
    return r, (0.0 if c == 0.0 else c * cr_pow(a, c - 1.0),)


def _exp(a: float) -> tuple[float, tuple[float, ...]]:
    r = cr_exp(a)
    # d(e^a)/da = e^a, the rounded result itself
    return r, (r,)


def _log(a: float) -> tuple[float, tuple[float, ...]]:
    # d(ln a)/da = 1/a
    return cr_log(a), (ieee_div(1.0, a),)


def _tanh(a: float) -> tuple[float, tuple[float, ...]]:
    t = cr_tanh(a)
    # d(tanh a)/da = 1 - tanh(a)^2, from the rounded t
    return t, (1.0 - t * t,)


def _relu(a: float) -> tuple[float, tuple[float, ...]]:
    # relu(a) = a for a > 0 else +0.0 (so relu(-0.0) is +0.0); derivative 1 where a > 0, else 0
    if a > 0.0:
        return a, (1.0,)
    return 0.0, (0.0,)


def _sigmoid(a: float) -> tuple[float, tuple[float, ...]]:
    s = cr_sigmoid(a)
    # d(sigmoid a)/da = s * (1 - s), from the rounded s: first 1 - s, then the product
    return s, (s * (1.0 - s),)


def _sqrt(a: float) -> tuple[float, tuple[float, ...]]:
    r = ieee_sqrt(a)
    # d(sqrt a)/da = 1 / (2 sqrt a), written 0.5 / r from the rounded root (+-inf at +-0, nan below 0)
    return r, (ieee_div(0.5, r),)


OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("add", 2, False, _add),
        Op("sub", 2, False, _sub),
        Op("mul", 2, False, _mul),
        Op("div", 2, False, _div),
        Op("neg", 1, False, _neg),
        Op("pow", 1, True, _pow),
        Op("exp", 1, False, _exp),
        Op("log", 1, False, _log),
        Op("tanh", 1, False, _tanh),
        Op("relu", 1, False, _relu),
        Op("sigmoid", 1, False, _sigmoid),
        Op("sqrt", 1, False, _sqrt),
    )
}
"""Every operation of the contract, keyed by name, in the contract's order."""

#: Operations whose value and derivatives are single IEEE-exact operations
#: (correctly rounded by every conforming platform without a libm).
IEEE_EXACT_OPS = frozenset({"add", "sub", "mul", "div", "neg", "relu", "sqrt"})

#: Leaf constructors, as named in programs and pass records.
LEAF_OPERATIONS = ("variable", "constant", "detached")

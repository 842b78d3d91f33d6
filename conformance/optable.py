"""The harness's op table: one row per op of the reference's table, with everything the kit needs of it.

``reference.ops.OPS`` is the engine's one place for an op (its arity, whether it takes an
exponent, its value and local derivatives). This table is the harness's: for each op, what
the kit derives its checks from, in one row beside it.

- ``interval``: the interval rule (``conformance.bounds``): the op's value and local
  derivatives as intervals holding every correct port's floats, around the contract's.
  C's Annex F special values, which every libm returns exactly, are points here.
- ``libm``: for an op the reference rounds correctly, the rule of a port that takes the
  platform's C library instead (``conformance.variants``' ``libm`` variant); None for an
  IEEE-exact op, which every platform computes as the contract does.
- ``wrong_derivative``: the local derivative a porter most often gets wrong, as the
  catalogue's ``wrong-derivative-NAME`` mistake (``conformance.mutants``).
- ``python``: the op as Python spells it on an operator-overloading engine's values
  (``conformance.serve.PYTHON_OPS``, where the Python adapters start); None for pow,
  whose exponent is taken apart.
- ``points``: the op's points (``conformance.cases.families``): each becomes the case
  ``ops/NAME/LABEL``, with the catalogue's mistakes it is written to catch; an inexact op
  has a ``libm-rounding`` point, where glibc rounds differently from the contract.
- ``errors``: the op's own creation errors, each a case ``errors/...`` of one creation.

A new op is a row of ``reference.ops.OPS`` and a row here (docs/contributing.md);
tests/test_op_table.py fails, naming the column, when a piece is missing.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any, Callable, Optional

from reference.crmath import cr_exp, cr_log, cr_pow, cr_sigmoid, cr_tanh, ieee_div
from reference.ops import OPS, Op

from .intervals import UNBOUNDED, Interval, Quantity, hull, pow_ends

#: (the interval arithmetic, the operands' quantities, the exponent, the contract's value and derivatives)
#: -> the value's quantity and one quantity per local derivative.
IntervalRule = Callable[
    [Interval, list[Quantity], Optional[float], float, tuple[float, ...]], tuple[Quantity, tuple[Quantity, ...]]
]
#: (operand values, the exponent) -> (value, local derivatives), as a port computing otherwise gives them.
LibmRule = Callable[[tuple[float, ...], Optional[float]], tuple[float, tuple[float, ...]]]
#: (operand values, the contract's value, the exponent) -> the wrong local derivatives.
WrongDerivative = Callable[[tuple[float, ...], float, Optional[float]], tuple[float, ...]]


@dataclass(frozen=True)
class Point:
    """One case of an op: ``ops/NAME/LABEL`` at these operands (and exponent, for pow)."""

    label: str
    operands: tuple[float, ...]
    exponent: Optional[float] = None
    catches: tuple[str, ...] = ()
    """The catalogue's mistakes (conformance/mutants.py) this point is written to catch."""


@dataclass(frozen=True)
class ErrorCase:
    """One creation of the op that fails: the case ``id`` at these operands, and what it shows."""

    id: str
    operands: tuple[float, ...]
    description: str
    exponent: Optional[float] = None


@dataclass(frozen=True)
class HarnessOp:
    """The harness's row for one op of ``reference.ops.OPS`` (the module docstring has each column)."""

    name: str
    interval: IntervalRule
    libm: Optional[LibmRule]
    wrong_derivative: WrongDerivative
    python: Optional[Callable[..., Any]]
    points: tuple[Point, ...]
    errors: tuple[ErrorCase, ...] = ()

    @property
    def op(self) -> Op:
        """The reference's row of the same op."""
        return OPS[self.name]


# -- the platform's math library -----------------------------------------------------------


def _odd_integer(c: float) -> bool:
    return float(c).is_integer() and abs(c) < 2.0**53 and int(c) % 2 == 1


def platform(function: Callable[..., float]) -> Callable[..., float]:
    """The platform's math function with the IEEE result (as C's libm returns it) where Python's math raises.

    pow keeps the sign of a negative base, or of a zero base, for an odd integer exponent.
    """

    def ieee(*args: float) -> float:
        try:
            return function(*args)
        except OverflowError:
            if function is math.pow and args[0] < 0.0 and _odd_integer(args[1]):
                return -math.inf
            return math.inf
        except (ValueError, ZeroDivisionError):
            if function is math.log and args[0] == 0.0:
                return -math.inf
            if function is math.pow and args[0] == 0.0 and args[1] < 0:
                return math.copysign(math.inf, args[0]) if _odd_integer(args[1]) else math.inf
            return math.nan

    return ieee


#: The platform's exp, log, tanh and pow (glibc here), with IEEE results where Python's math raises.
LIBM_EXP, LIBM_LOG, LIBM_TANH, LIBM_POW = (platform(f) for f in (math.exp, math.log, math.tanh, math.pow))


def libm_sigmoid(a: float) -> float:
    """sigmoid(a) from the platform's exp in the stable form the ports use (docs/contract.md section 4):
    ``1 / (1 + exp(-a))`` for a >= 0, ``e / (1 + e)`` with ``e = exp(a)`` below 0."""
    if a >= 0.0:
        return 1.0 / (1.0 + LIBM_EXP(-a))
    e = LIBM_EXP(a)
    return e / (1.0 + e)


def _libm_exp(a: tuple[float, ...], c: Optional[float]) -> tuple[float, tuple[float, ...]]:
    r = LIBM_EXP(a[0])
    return r, (r,)


def _libm_log(a: tuple[float, ...], c: Optional[float]) -> tuple[float, tuple[float, ...]]:
    return LIBM_LOG(a[0]), (ieee_div(1.0, a[0]),)


def _libm_tanh(a: tuple[float, ...], c: Optional[float]) -> tuple[float, tuple[float, ...]]:
    t = LIBM_TANH(a[0])
    return t, (1.0 - t * t,)


def _libm_sigmoid(a: tuple[float, ...], c: Optional[float]) -> tuple[float, tuple[float, ...]]:
    r = libm_sigmoid(a[0])
    return r, (r * (1.0 - r),)


def _libm_pow(a: tuple[float, ...], c: Optional[float]) -> tuple[float, tuple[float, ...]]:
    assert c is not None
    r = LIBM_POW(a[0], c)
    return r, (0.0 if c == 0.0 else c * LIBM_POW(a[0], c - 1.0),)


# -- interval rules ------------------------------------------------------------------------

_ONE, _MINUS_ONE = Quantity.point(1.0), Quantity.point(-1.0)


def _annex_f(iv: Interval, a: Quantity) -> bool:
    """Whether an Annex F special value applies: under ``contract``, at an operand every port has exactly.

    C (IEC 60559 bindings, Annex F.10) fixes ``tanh(+-0) = +-0``, ``log(1) = +0`` and
    ``pow(+-0, y) = +-0 or +0`` for ``y > 0``, so a port's libm has these bits and their sign:
    under ``contract`` they are points, whose sign of zero is compared. Under ``numeric``
    another formula (tanh from exp gives +0 at -0) may differ.
    """
    return not iv.numeric and a.is_point


def _add(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    return iv.add(x[0], x[1], v), (_ONE, _ONE)


def _sub(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    return iv.sub(x[0], x[1], v), (_ONE, _MINUS_ONE)


def _mul(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    return iv.mul(x[0], x[1], v), (x[1], x[0])


def _div(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    r = iv.div(x[0], x[1], v)
    return r, (iv.div(_ONE, x[1], d[0]), iv.negated(iv.div(r, x[1], -d[1])))


def _neg(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    return Quantity(v, -x[0].hi, -x[0].lo), (_MINUS_ONE,)


def _pow(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    assert c is not None
    a = x[0]
    if _annex_f(iv, a) and a.v == 0.0 and c > 0.0:
        # pow(+-0, c > 0): the derivative c * 0^(c-1) is exact where 0^(c-1) is a special case too
        power_v = cr_pow(a.v, c - 1.0)
        power = Quantity.point(power_v) if c - 1.0 > 0.0 else iv.libm(power_v, pow_ends(a, c - 1.0))
        return Quantity.point(v), (iv.scale(c, power, d[0]),)
    r = iv.libm(v, pow_ends(a, c))
    if c == 0.0:
        return r, (Quantity.point(0.0),)
    power = iv.libm(cr_pow(a.v, c - 1.0), pow_ends(a, c - 1.0))
    return r, (iv.scale(c, power, d[0]),)


def _exp(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    r = iv.libm(v, [cr_exp(x[0].lo), cr_exp(x[0].hi)], low=0.0)
    return r, (Quantity(d[0], r.lo, r.hi),)


def _log(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    a = x[0]
    if _annex_f(iv, a) and a.v == 1.0:
        return Quantity.point(v), (iv.div(_ONE, a, d[0]),)
    if a.lo <= 0.0:
        return hull(v, *UNBOUNDED), (hull(d[0], *UNBOUNDED),)
    return iv.libm(v, [cr_log(a.lo), cr_log(a.hi)]), (iv.div(_ONE, a, d[0]),)


def _tanh(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    a = x[0]
    if _annex_f(iv, a) and a.v == 0.0:
        return Quantity.point(v), (iv.one_minus_square(Quantity.point(v), d[0]),)
    t = iv.libm(v, [cr_tanh(a.lo), cr_tanh(a.hi)], low=-1.0, high=1.0)
    return t, (iv.one_minus_square(t, d[0]),)


def _relu(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    a = x[0]
    value = Quantity(v, max(a.lo, 0.0), max(a.hi, 0.0))
    slope = Quantity(d[0], 0.0 if a.lo <= 0.0 else 1.0, 1.0 if a.hi > 0.0 else 0.0)
    return value, (slope,)


def _sigmoid(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    s = iv.libm(v, [cr_sigmoid(x[0].lo), cr_sigmoid(x[0].hi)], low=0.0, high=1.0)
    return s, (iv.one_minus_times(s, d[0]),)


def _sqrt(
    iv: Interval, x: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
) -> tuple[Quantity, tuple[Quantity, ...]]:
    r = iv.sqrt(x[0], v)
    return r, (iv.div(Quantity.point(0.5), r, d[0]),)


# -- the table -----------------------------------------------------------------------------

HARNESS_OPS: dict[str, HarnessOp] = {
    row.name: row
    for row in (
        HarnessOp(
            "add",
            _add,
            None,
            lambda a, r, c: (1.0, 0.0),
            operator.add,
            (
                Point("ordinary", (2.0, 3.0)),
                Point("rounding", (0.1, 0.2)),
                Point("signed-zeros", (-0.0, -0.0)),
            ),
        ),
        HarnessOp(
            "sub",
            _sub,
            None,
            lambda a, r, c: (1.0, 1.0),
            operator.sub,
            (
                Point("ordinary", (5.0, 3.5)),
                Point("rounding", (0.3, 0.1)),
                Point("negative-zero", (-0.0, 0.0)),
            ),
        ),
        HarnessOp(
            "mul",
            _mul,
            None,
            lambda a, r, c: (a[0], a[1]),
            operator.mul,
            (
                Point("ordinary", (3.0, -4.0), catches=("wrong-derivative-mul",)),
                Point("underflow-to-zero", (1e-200, 1e-200)),
                Point("negative-zero", (-0.0, 3.0)),
            ),
        ),
        HarnessOp(
            "div",
            _div,
            None,
            lambda a, r, c: (ieee_div(1.0, a[1]), ieee_div(r, a[1])),
            operator.truediv,
            (
                Point("ordinary", (1.0, 3.0), catches=("wrong-derivative-div",)),
                Point("negative", (-7.0, 2.0)),
                Point("inexact-reciprocal", (1.75, 0.375), catches=("div-by-reciprocal",)),
                Point("divisor-derivative-rounding", (0.1, 0.3), catches=("div-derivative-squared",)),
                Point("negative-zero", (0.0, -3.0)),
            ),
        ),
        HarnessOp(
            "neg",
            _neg,
            None,
            lambda a, r, c: (1.0,),
            operator.neg,
            (
                Point("ordinary", (3.0,), catches=("wrong-derivative-neg",)),
                Point("positive-zero", (0.0,), catches=("signed-zero-lost",)),
                Point("negative-zero", (-0.0,)),
            ),
        ),
        HarnessOp(
            "pow",
            _pow,
            _libm_pow,
            lambda a, r, c: (c * r,),  # type: ignore[operator]
            None,
            (
                Point("c-0", (2.5,), 0.0),
                Point("c-1", (2.5,), 1.0),
                Point("c-2", (2.5,), 2.0, catches=("wrong-derivative-pow",)),
                Point("c-minus-1", (2.5,), -1.0),
                Point("c-half", (2.5,), 0.5),
                Point("negative-base-c-3", (-2.0,), 3.0),
                Point("negative-base-c-2", (-2.0,), 2.0),
                Point("negative-base-c-minus-1", (-3.0,), -1.0),
                Point("zero-base-c-0", (0.0,), 0.0, catches=("pow-derivative-at-c-0",)),
                Point("zero-base-c-2", (0.0,), 2.0),
                Point("libm-rounding", (22.008,), 0.5),
                Point("negative-zero-base-c-2", (-0.0,), 2.0),
            ),
        ),
        HarnessOp(
            "exp",
            _exp,
            _libm_exp,
            lambda a, r, c: (a[0],),
            operator.methodcaller("exp"),
            (
                Point("ordinary", (1.0,), catches=("wrong-derivative-exp",)),
                Point("zero", (0.0,)),
                Point("negative", (-2.5,)),
                Point("near-overflow", (709.0,)),
                Point("subnormal-result", (-740.0,)),
                Point("underflow-to-zero", (-800.0,)),
                Point("libm-rounding", (5.66,)),
            ),
        ),
        HarnessOp(
            "log",
            _log,
            _libm_log,
            lambda a, r, c: (a[0],),
            operator.methodcaller("log"),
            (
                Point("ordinary", (2.0,), catches=("wrong-derivative-log",)),
                Point("one", (1.0,)),
                Point("near-zero", (1e-300,)),
                Point("smallest-normal", (2.2250738585072014e-308,)),
                Point("libm-rounding", (32.461,)),
            ),
        ),
        HarnessOp(
            "tanh",
            _tanh,
            _libm_tanh,
            lambda a, r, c: (1.0 - r,),
            operator.methodcaller("tanh"),
            (
                Point("ordinary", (0.5,), catches=("wrong-derivative-tanh",)),
                Point("negative", (-2.0,)),
                Point("zero", (0.0,)),
                Point("tiny", (1e-17,)),
                Point("negative-zero", (-0.0,)),
                Point("libm-rounding", (0.906,)),
                Point("saturated", (20.0,)),
                Point("saturated-negative", (-20.0,)),
                Point("near-saturation", (10.0,)),
            ),
        ),
        HarnessOp(
            "relu",
            _relu,
            None,
            lambda a, r, c: (1.0,),
            operator.methodcaller("relu"),
            (
                Point("positive", (1.5,)),
                Point("negative", (-1.5,), catches=("wrong-derivative-relu",)),
                Point("zero", (0.0,)),
                Point("negative-zero", (-0.0,), catches=("relu-derivative-at-zero", "relu-keeps-negative-zero")),
            ),
        ),
        HarnessOp(
            "sigmoid",
            _sigmoid,
            _libm_sigmoid,
            lambda a, r, c: (a[0] * (1.0 - a[0]),),
            operator.methodcaller("sigmoid"),
            (
                Point("ordinary", (0.5,), catches=("wrong-derivative-sigmoid",)),
                Point("zero", (0.0,)),
                Point("negative-zero", (-0.0,)),
                Point("negative", (-3.0,)),
                Point("libm-rounding", (2.0,)),
                # 1 - 2**-53, where the stable form from glibc's exp gives 1.0: a libm-rounding point too.
                Point("saturation-rounding", (37.0,)),
                Point("saturated", (40.0,)),
                Point("large-negative", (-40.0,)),
                Point("subnormal-result", (-740.0,)),
                Point("underflow-to-zero", (-746.0,)),
            ),
        ),
        HarnessOp(
            "sqrt",
            _sqrt,
            None,
            lambda a, r, c: (ieee_div(1.0, r),),
            operator.methodcaller("sqrt"),
            (
                Point("ordinary", (2.0,), catches=("wrong-derivative-sqrt",)),
                Point("perfect-square", (6.25,)),
                Point("one", (1.0,)),
                Point("subnormal", (5e-324,)),
                Point("huge", (1e308,)),
            ),
            (
                ErrorCase(
                    "errors/non-finite-result-sqrt-negative", (-4.0,), "sqrt(-4) is nan: non-finite-result, as log of a negative."
                ),
                ErrorCase(
                    "errors/non-finite-local-derivative-sqrt-zero",
                    (0.0,),
                    "sqrt(0.0) is +0.0 but its derivative 0.5 / +0.0 is +inf: non-finite-local-derivative, as pow(0; 0.5).",
                ),
                ErrorCase(
                    "errors/non-finite-local-derivative-sqrt-negative-zero",
                    (-0.0,),
                    "sqrt(-0.0) is -0.0 (IEEE), not nan, and its derivative 0.5 / -0.0 is -inf: non-finite-local-derivative.",
                ),
            ),
        ),
    )
}
"""The harness's row of every op, keyed by name, in the reference's order (``reference.ops.OPS``)."""

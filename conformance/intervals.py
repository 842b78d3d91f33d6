"""Outward-rounded interval arithmetic on the floats of a program, and the ulp budgets it uses.

``conformance.bounds`` replays a program with these intervals (its docstring says why and how);
the harness's op table (``conformance.optable``) writes each op's interval rule with them.
A ``Quantity`` is the contract's value of one float and an interval holding every value a
correct port can produce for it; ``Interval`` does the arithmetic under one profile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reference.crmath import cr_pow, ieee_sqrt

from .protocol import Profile

#: The ulp budget of a port's libm for exp, log, tanh and pow, and of its sigmoid in the stable form.
LIBM_ULPS = 4
#: Under ``numeric``: how far another formula for one operation may land from the exact result.
FORMULA_ULPS = 4

UNIT = 2.0**-53  # unit roundoff of binary64
TINY = 2.0**-1074  # the smallest subnormal: the absolute error floor of one rounding
_INF = math.inf


def down(x: float, steps: int = 1) -> float:
    """``x`` moved ``steps`` floats towards -inf."""
    for _ in range(steps):
        x = math.nextafter(x, -_INF)
    return x


def up(x: float, steps: int = 1) -> float:
    """``x`` moved ``steps`` floats towards +inf."""
    for _ in range(steps):
        x = math.nextafter(x, _INF)
    return x


@dataclass(frozen=True, slots=True)
class Quantity:
    """The contract's value ``v`` of one float and an interval ``[lo, hi]`` holding every port's value."""

    v: float
    lo: float
    hi: float

    @staticmethod
    def point(v: float) -> "Quantity":
        """A value every port computes bit for bit."""
        return Quantity(v, v, v)

    @property
    def is_point(self) -> bool:
        """Whether every port has exactly the contract's value."""
        return self.lo == self.v == self.hi

    @property
    def bounded(self) -> bool:
        """Whether the interval is finite (an unbounded one means the port could fail or overflow here)."""
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    def bound(self) -> float:
        """How far a port's value may be from the contract's: 0 for a point, inf when unbounded."""
        if not math.isfinite(self.v) or self.is_point:
            return 0.0
        if not self.bounded:
            return _INF
        return up(max(self.hi - self.v, self.v - self.lo, 0.0))

    def widened(self, steps: int) -> "Quantity":
        """The same value with ``steps`` more ulps of room on each side."""
        if steps == 0:
            return self
        return Quantity(self.v, down(min(self.lo, self.v), steps), up(max(self.hi, self.v), steps))


UNBOUNDED = (-_INF, _INF)


def hull(v: float, lo: float, hi: float) -> Quantity:
    """A quantity whose interval certainly holds ``v`` (nan ends make it unbounded)."""
    if math.isnan(lo) or math.isnan(hi):
        lo, hi = UNBOUNDED
    return Quantity(v, min(lo, v) if math.isfinite(v) else lo, max(hi, v) if math.isfinite(v) else hi)


class Interval:
    """Outward-rounded interval arithmetic on Quantities, under one profile."""

    def __init__(self, profile: Profile) -> None:
        self.numeric = profile == "numeric"
        self.formula_steps = FORMULA_ULPS if self.numeric else 0

    # IEEE-exact operations: a point when the operands are points (under contract), else the
    # exact range over the operand intervals, one ulp outward.
    def add(self, a: Quantity, b: Quantity, v: float) -> Quantity:
        if a.is_point and b.is_point and not self.numeric:
            return Quantity.point(v)
        return hull(v, down(a.lo + b.lo), up(a.hi + b.hi)).widened(self.formula_steps)

    def sub(self, a: Quantity, b: Quantity, v: float) -> Quantity:
        if a.is_point and b.is_point and not self.numeric:
            return Quantity.point(v)
        return hull(v, down(a.lo - b.hi), up(a.hi - b.lo)).widened(self.formula_steps)

    def mul(self, a: Quantity, b: Quantity, v: float) -> Quantity:
        if a.is_point and b.is_point and not self.numeric:
            return Quantity.point(v)
        products = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        if any(math.isnan(p) for p in products):
            return hull(v, *UNBOUNDED)
        return hull(v, down(min(products)), up(max(products))).widened(self.formula_steps)

    def div(self, a: Quantity, b: Quantity, v: float) -> Quantity:
        if a.is_point and b.is_point and not self.numeric:
            return Quantity.point(v)
        if b.lo <= 0.0 <= b.hi:
            return hull(v, *UNBOUNDED)
        quotients = [x / y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        if any(math.isnan(q) for q in quotients):
            return hull(v, *UNBOUNDED)
        return hull(v, down(min(quotients)), up(max(quotients))).widened(self.formula_steps)

    def sqrt(self, a: Quantity, v: float) -> Quantity:
        """The IEEE square root: exact on a point (under contract), else the root's range, one ulp outward."""
        if a.is_point and not self.numeric:
            return Quantity.point(v)
        if a.lo < 0.0:
            return hull(v, *UNBOUNDED)  # the port's operand may be negative: its root is nan
        return hull(v, down(ieee_sqrt(a.lo)), up(ieee_sqrt(a.hi))).widened(self.formula_steps)

    def scale(self, c: float, a: Quantity, v: float) -> Quantity:
        """``c * a`` for a constant ``c``."""
        return self.mul(Quantity.point(c), a, v)

    # Functions from a libm: the correctly rounded value at each end, LIBM_ULPS (+1 for the
    # reference's own rounding) outward, then the formula budget under numeric.
    def libm(self, v: float, ends: list[float], low: float = -_INF, high: float = _INF) -> Quantity:
        if any(not math.isfinite(e) for e in ends):
            return hull(v, *UNBOUNDED)
        lo = max(down(min(ends), LIBM_ULPS + 1), low)
        hi = min(up(max(ends), LIBM_ULPS + 1), high)
        return hull(v, lo, hi).widened(self.formula_steps)

    # Formulas of more than one rounding that several ops share.
    @staticmethod
    def negated(q: Quantity) -> Quantity:
        """``-q``, exactly."""
        return Quantity(-q.v, -q.hi, -q.lo)

    def one_minus_square(self, t: Quantity, v: float) -> Quantity:
        """``1 - t*t`` with t anywhere in its interval, rounded twice or fused into one FMA."""
        if not t.bounded:
            return hull(v, *UNBOUNDED)
        small = 0.0 if t.lo <= 0.0 <= t.hi else min(abs(t.lo), abs(t.hi))
        large = max(abs(t.lo), abs(t.hi))
        lo = down(1.0 - up(large * large))
        hi = up(1.0 - down(small * small))
        return hull(v, max(lo, 0.0), hi).widened(self.formula_steps)

    def one_minus_times(self, s: Quantity, v: float) -> Quantity:
        """``s * (1 - s)`` with s anywhere in its interval, each of the two operations rounded once."""
        if not s.bounded:
            return hull(v, *UNBOUNDED)
        # x * (1 - x) rises up to x = 0.5 and falls after it: its extremes are at the ends and at 0.5.
        points = [s.lo, s.hi] + ([0.5] if s.lo < 0.5 < s.hi else [])
        products = [x * (1.0 - x) for x in points]
        return hull(v, down(min(products), 3), up(max(products), 3)).widened(self.formula_steps)


def pow_ends(a: Quantity, c: float) -> list[float]:
    """x**c at every point of [a.lo, a.hi] where it can take its extremes; [inf] when it can blow up."""
    if c < 0 and a.lo <= 0.0 <= a.hi:
        return [_INF]
    if not float(c).is_integer() and a.lo < 0.0:
        return [_INF]
    points = [a.lo, a.hi] + ([0.0] if a.lo < 0.0 < a.hi else [])
    return [cr_pow(x, c) for x in points]

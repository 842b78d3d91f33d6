"""Error bounds for every compared float of a program, derived by interval evaluation.

A fixture records the contract's value of every float a step observes (docs/fixtures.md).
A correct port may still compute a slightly different float: its exp, log, tanh, sigmoid and
pow come from a libm that is not correctly rounded, its compiler may fuse a product and a sum
into one fused multiply-add, and it may add three or more contributions in another order.
Under the ``numeric`` profile (engines not written from the contract, docs/contract.md
section 9) it may also use any algebraically equal formula for a value, a local
derivative or a contribution.

``derive_bounds`` replays a program and carries, for every quantity, the contract's value
(computed exactly as the reference does, so the replay is checked against the fixture's
bits) together with an interval that contains every value such a port can produce. The
interval is propagated with outward rounding through every operation, so it is sound
however the port's own errors combine. The bound of a compared float is the larger
distance from the contract's value to an end of its interval: a port's value agrees when
``|expected - actual| <= bound``.

The budgets are stated once, here, and in docs/contract.md section 9:

- ``LIBM_ULPS``: a port's exp, log, tanh and pow are within this many ulps of the true
  function value at the port's own operand (glibc documents at most 1 to 2 ulps for them);
  so is its sigmoid, one exp, one add and one division in the stable form (at most about 3).
- Fused multiply-add wherever the contract has a product followed by a sum: ``1 - t*t``
  for tanh, and ``pass + upstream * local`` in backward. A contribution that enters a sum
  is therefore taken as the exact product, anywhere in ``[down(c), up(c)]``.
- Any summation order: a pass adjoint of n >= 3 contributions lies within
  ``2 * n * 2**-53 * sum(|contributions|)`` of their exact sum, so a sum that cancels to
  zero gets a bound proportional to the magnitudes that were summed.
- ``FORMULA_ULPS`` (``numeric`` only): every operation's value, local derivative and
  contribution may come from another formula within this many ulps of the exact result on
  the engine's own operands (``-g*x/y**2`` for div, an accurate sech^2 for tanh, ...).

Under ``contract`` the IEEE-exact operations (add, sub, mul, div, neg, relu, sqrt) applied to
values that every port has exactly (leaves, seeds, and results of such operations on them)
give the contract's bits: their bound is 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from reference.crmath import cr_exp, cr_log, cr_pow, cr_sigmoid, cr_tanh, ieee_sqrt
from reference.ops import OPS

from .program import LEAF_OPS, Program, observed_ids
from .protocol import Profile

#: The ulp budget of a port's libm for exp, log, tanh and pow, and of its sigmoid in the stable form.
LIBM_ULPS = 4
#: Under ``numeric``: how far another formula for one operation may land from the exact result.
FORMULA_ULPS = 4

_UNIT = 2.0**-53  # unit roundoff of binary64
_TINY = 2.0**-1074  # the smallest subnormal: the absolute error floor of one rounding
_INF = math.inf


def _down(x: float, steps: int = 1) -> float:
    for _ in range(steps):
        x = math.nextafter(x, -_INF)
    return x


def _up(x: float, steps: int = 1) -> float:
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
        return _up(max(self.hi - self.v, self.v - self.lo, 0.0))

    def widened(self, steps: int) -> "Quantity":
        """The same value with ``steps`` more ulps of room on each side."""
        if steps == 0:
            return self
        return Quantity(self.v, _down(min(self.lo, self.v), steps), _up(max(self.hi, self.v), steps))


_UNBOUNDED = (-_INF, _INF)


def _hull(v: float, lo: float, hi: float) -> Quantity:
    """A quantity whose interval certainly holds ``v`` (nan ends make it unbounded)."""
    if math.isnan(lo) or math.isnan(hi):
        lo, hi = _UNBOUNDED
    return Quantity(v, min(lo, v) if math.isfinite(v) else lo, max(hi, v) if math.isfinite(v) else hi)


class _Interval:
    """Outward-rounded interval arithmetic on Quantities, under one profile."""

    def __init__(self, profile: Profile) -> None:
        self.numeric = profile == "numeric"
        self.formula_steps = FORMULA_ULPS if self.numeric else 0

    # IEEE-exact operations: a point when the operands are points (under contract), else the
    # exact range over the operand intervals, one ulp outward.
    def add(self, a: Quantity, b: Quantity, v: float) -> Quantity:
        if a.is_point and b.is_point and not self.numeric:
            return Quantity.point(v)
        return _hull(v, _down(a.lo + b.lo), _up(a.hi + b.hi)).widened(self.formula_steps)

    def sub(self, a: Quantity, b: Quantity, v: float) -> Quantity:
        if a.is_point and b.is_point and not self.numeric:
            return Quantity.point(v)
        return _hull(v, _down(a.lo - b.hi), _up(a.hi - b.lo)).widened(self.formula_steps)

    def mul(self, a: Quantity, b: Quantity, v: float) -> Quantity:
        if a.is_point and b.is_point and not self.numeric:
            return Quantity.point(v)
        products = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        if any(math.isnan(p) for p in products):
            return _hull(v, *_UNBOUNDED)
        return _hull(v, _down(min(products)), _up(max(products))).widened(self.formula_steps)

    def div(self, a: Quantity, b: Quantity, v: float) -> Quantity:
        if a.is_point and b.is_point and not self.numeric:
            return Quantity.point(v)
        if b.lo <= 0.0 <= b.hi:
            return _hull(v, *_UNBOUNDED)
        quotients = [x / y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        if any(math.isnan(q) for q in quotients):
            return _hull(v, *_UNBOUNDED)
        return _hull(v, _down(min(quotients)), _up(max(quotients))).widened(self.formula_steps)

    def sqrt(self, a: Quantity, v: float) -> Quantity:
        """The IEEE square root: exact on a point (under contract), else the root's range, one ulp outward."""
        if a.is_point and not self.numeric:
            return Quantity.point(v)
        if a.lo < 0.0:
            return _hull(v, *_UNBOUNDED)  # the port's operand may be negative: its root is nan
        return _hull(v, _down(ieee_sqrt(a.lo)), _up(ieee_sqrt(a.hi))).widened(self.formula_steps)

    def scale(self, c: float, a: Quantity, v: float) -> Quantity:
        """``c * a`` for a constant ``c``."""
        return self.mul(Quantity.point(c), a, v)

    # Functions from a libm: the correctly rounded value at each end, LIBM_ULPS (+1 for the
    # reference's own rounding) outward, then the formula budget under numeric.
    def libm(self, v: float, ends: list[float], low: float = -_INF, high: float = _INF) -> Quantity:
        if any(not math.isfinite(e) for e in ends):
            return _hull(v, *_UNBOUNDED)
        lo = max(_down(min(ends), LIBM_ULPS + 1), low)
        hi = min(_up(max(ends), LIBM_ULPS + 1), high)
        return _hull(v, lo, hi).widened(self.formula_steps)


def _pow_ends(a: Quantity, c: float) -> list[float]:
    """x**c at every point of [a.lo, a.hi] where it can take its extremes; [inf] when it can blow up."""
    if c < 0 and a.lo <= 0.0 <= a.hi:
        return [_INF]
    if not float(c).is_integer() and a.lo < 0.0:
        return [_INF]
    points = [a.lo, a.hi] + ([0.0] if a.lo < 0.0 < a.hi else [])
    return [cr_pow(x, c) for x in points]


@dataclass
class _Node:
    value: Quantity
    operands: tuple[str, ...]
    locals: tuple[Quantity, ...]
    tracked: bool
    stored: Optional[Quantity]


#: One step's bounds: the path of each compared float under the step's observation
#: (``value``, ``gradients.ID``, ``pass.nodes[ID].pass_adjoint``, ``pass.edges[ID:SLOT].contribution``,
#: ``pass.edges[POSITION].after``, ``error.previous``, ...) -> (contract value, bound).
StepBounds = dict[str, tuple[float, float]]


def derive_bounds(program: Program, profile: Profile, records: bool = True) -> list[StepBounds]:
    """The bound of every compared float of every step of ``program`` under ``profile``.

    Backward's ``pass + upstream * local`` may always be one fused multiply-add here: the
    contract forbids that only in cases compared exactly, which get no ``contract`` bounds.
    ``records`` False leaves out the pass records' floats (for observations that keep none).
    """
    return _Replay(profile, records).run(program)


class _Replay:
    def __init__(self, profile: Profile, records: bool = True) -> None:
        self.records = records
        self.iv = _Interval(profile)
        self.numeric = profile == "numeric"
        self.nodes: dict[str, _Node] = {}
        self.order: list[str] = []  # creation order, for the gradients of every tracked node
        self.named: Optional[set[str]] = None  # the ids whose gradients are observed, when not all (observed_ids)

    def run(self, program: Program) -> list[StepBounds]:
        out: list[StepBounds] = []
        self.named = observed_ids(program)
        for step in program:
            bounds: StepBounds = {}
            if step.repeat is not None:
                for single in step.written_out():
                    if single.operands[0] not in self.nodes:
                        break  # a creation of the chain failed: so does the step
                    bounds = {}
                    self._create(single, bounds)
            elif step.id is not None:
                self._create(step, bounds)
            elif step.op == "zero_grad":
                for name in self._topology(step.output):  # type: ignore[arg-type]
                    node = self.nodes[name]
                    if node.tracked:
                        node.stored = Quantity.point(0.0)
                self._gradients(bounds)
            else:
                self._backward(step.output, 1.0 if step.seed is None else step.seed, bounds)  # type: ignore[arg-type]
                self._gradients(bounds)
            out.append(bounds)
        return out

    # -- creation ------------------------------------------------------------------------

    def _create(self, step: Any, bounds: StepBounds) -> None:
        if step.op in LEAF_OPS:
            if not math.isfinite(step.value):
                return
            self._add(step.id, _Node(Quantity.point(step.value), (), (), step.op == "variable", None))
        elif step.op == "detach":
            source = self.nodes[step.operands[0]]
            self._add(step.id, _Node(source.value, (), (), False, None))
        else:
            operands = [self.nodes[name] for name in step.operands]
            rule = OPS[step.op].rule
            values = [n.value.v for n in operands]
            v, locals_ = rule(values[0], step.exponent) if step.op == "pow" else rule(*values)
            if not math.isfinite(v) or not all(math.isfinite(d) for d in locals_):
                return  # the creation fails; its error carries no finite float
            value, derivatives = self._op(step.op, [n.value for n in operands], step.exponent, v, locals_)
            tracked = any(n.tracked for n in operands)
            self._add(step.id, _Node(value, tuple(step.operands), derivatives, tracked, None))
        bounds["value"] = self._entry(self.nodes[step.id].value)

    def _add(self, name: str, node: _Node) -> None:
        if node.tracked:
            node.stored = Quantity.point(0.0)
        self.nodes[name] = node
        self.order.append(name)

    def _op(
        self, op: str, operands: list[Quantity], c: Optional[float], v: float, d: tuple[float, ...]
    ) -> tuple[Quantity, tuple[Quantity, ...]]:
        """The value and local derivatives of one operation, as intervals around the contract's ``v`` and ``d``."""
        iv = self.iv
        one, minus_one = Quantity.point(1.0), Quantity.point(-1.0)
        a = operands[0]
        if op == "add":
            return iv.add(a, operands[1], v), (one, one)
        if op == "sub":
            return iv.sub(a, operands[1], v), (one, minus_one)
        if op == "mul":
            return iv.mul(a, operands[1], v), (operands[1], a)
        if op == "neg":
            return Quantity(v, -a.hi, -a.lo), (minus_one,)
        if op == "relu":
            value = Quantity(v, max(a.lo, 0.0), max(a.hi, 0.0))
            slope = Quantity(d[0], 0.0 if a.lo <= 0.0 else 1.0, 1.0 if a.hi > 0.0 else 0.0)
            return value, (slope,)
        if op == "div":
            r = iv.div(a, operands[1], v)
            return r, (iv.div(one, operands[1], d[0]), self._negated(iv.div(r, operands[1], -d[1])))
        if op == "sqrt":
            r = iv.sqrt(a, v)
            return r, (iv.div(Quantity.point(0.5), r, d[0]),)
        if self._exact_special(op, a, c):
            return self._special(op, a, c, v, d)
        if op == "exp":
            r = iv.libm(v, [cr_exp(a.lo), cr_exp(a.hi)], low=0.0)
            return r, (Quantity(d[0], r.lo, r.hi),)
        if op == "log":
            if a.lo <= 0.0:
                return _hull(v, *_UNBOUNDED), (_hull(d[0], *_UNBOUNDED),)
            return iv.libm(v, [cr_log(a.lo), cr_log(a.hi)]), (iv.div(one, a, d[0]),)
        if op == "tanh":
            t = iv.libm(v, [cr_tanh(a.lo), cr_tanh(a.hi)], low=-1.0, high=1.0)
            return t, (self._one_minus_square(t, d[0]),)
        if op == "sigmoid":
            s = iv.libm(v, [cr_sigmoid(a.lo), cr_sigmoid(a.hi)], low=0.0, high=1.0)
            return s, (self._one_minus_times(s, d[0]),)
        if op == "pow":
            assert c is not None
            r = iv.libm(v, _pow_ends(a, c))
            if c == 0.0:
                return r, (Quantity.point(0.0),)
            power = iv.libm(cr_pow(a.v, c - 1.0), _pow_ends(a, c - 1.0))
            return r, (iv.scale(c, power, d[0]),)
        raise ValueError(f"no interval rule for op {op!r}")

    def _exact_special(self, op: str, a: Quantity, c: Optional[float]) -> bool:
        """Whether a libm must return this result exactly: a zero result of C's Annex F special values.

        C (IEC 60559 bindings, Annex F.10) fixes ``tanh(+-0) = +-0``, ``log(1) = +0`` and
        ``pow(+-0, y) = +-0 or +0`` for ``y > 0``, so a port's libm has these bits and their sign:
        under ``contract`` they are points, whose sign of zero is compared. Under ``numeric``
        another formula (tanh from exp gives +0 at -0) may differ.
        """
        if self.numeric or not a.is_point:
            return False
        if op == "tanh":
            return a.v == 0.0
        if op == "log":
            return a.v == 1.0
        return op == "pow" and a.v == 0.0 and c is not None and c > 0.0

    def _special(
        self, op: str, a: Quantity, c: Optional[float], v: float, d: tuple[float, ...]
    ) -> tuple[Quantity, tuple[Quantity, ...]]:
        """The value (a point) and local derivatives of an Annex F special case (``_exact_special``)."""
        one = Quantity.point(1.0)
        if op == "tanh":
            return Quantity.point(v), (self._one_minus_square(Quantity.point(v), d[0]),)
        if op == "log":
            return Quantity.point(v), (self.iv.div(one, a, d[0]),)
        assert c is not None  # pow(+-0, c > 0): the derivative c * 0^(c-1) is exact where 0^(c-1) is a special case too
        exact = c - 1.0 > 0.0
        power = Quantity.point(cr_pow(a.v, c - 1.0)) if exact else self.iv.libm(cr_pow(a.v, c - 1.0), _pow_ends(a, c - 1.0))
        return Quantity.point(v), (self.iv.scale(c, power, d[0]),)

    @staticmethod
    def _negated(q: Quantity) -> Quantity:
        return Quantity(-q.v, -q.hi, -q.lo)

    def _one_minus_square(self, t: Quantity, v: float) -> Quantity:
        """``1 - t*t`` with t anywhere in its interval, rounded twice or fused into one FMA."""
        if not t.bounded:
            return _hull(v, *_UNBOUNDED)
        small = 0.0 if t.lo <= 0.0 <= t.hi else min(abs(t.lo), abs(t.hi))
        large = max(abs(t.lo), abs(t.hi))
        lo = _down(1.0 - _up(large * large))
        hi = _up(1.0 - _down(small * small))
        return _hull(v, max(lo, 0.0), hi).widened(self.iv.formula_steps)

    def _one_minus_times(self, s: Quantity, v: float) -> Quantity:
        """``s * (1 - s)`` with s anywhere in its interval, each of the two operations rounded once."""
        if not s.bounded:
            return _hull(v, *_UNBOUNDED)
        # x * (1 - x) rises up to x = 0.5 and falls after it: its extremes are at the ends and at 0.5.
        points = [s.lo, s.hi] + ([0.5] if s.lo < 0.5 < s.hi else [])
        products = [x * (1.0 - x) for x in points]
        return _hull(v, _down(min(products), 3), _up(max(products), 3)).widened(self.iv.formula_steps)

    # -- backward ------------------------------------------------------------------------

    def _topology(self, output: str) -> list[str]:
        """The canonical depth-first post-order from ``output`` (docs/contract.md section 7)."""
        order: list[str] = []
        seen = {output}
        stack = [(output, 0)]
        while stack:
            name, slot = stack[-1]
            operands = self.nodes[name].operands
            if slot < len(operands):
                stack[-1] = (name, slot + 1)
                if operands[slot] not in seen:
                    seen.add(operands[slot])
                    stack.append((operands[slot], 0))
            else:
                stack.pop()
                order.append(name)
        return order

    def _backward(self, output: str, seed: float, bounds: StepBounds) -> None:
        out = self.nodes[output]
        if not out.tracked or not math.isfinite(seed):
            return  # untracked-output or non-finite-seed: no finite float in the error
        topo = self._topology(output)
        zero = Quantity.point(0.0)
        adjoint = {name: zero for name in topo if self.nodes[name].tracked}
        adjoint[output] = Quantity.point(seed)
        parts: dict[str, list[Quantity]] = {name: [] for name in adjoint}
        iv = self.iv
        position = 0
        for consumer in reversed(topo):
            node = self.nodes[consumer]
            if node.tracked:
                adjoint[consumer] = self._any_order(adjoint[consumer], parts[consumer])
            upstream = adjoint[consumer] if node.tracked else zero
            for slot, operand in enumerate(node.operands):
                local = node.locals[slot]
                c = upstream.v * local.v
                contribution = iv.mul(upstream, local, c)
                if not math.isfinite(c):
                    bounds["error.upstream"] = self._entry(upstream)
                    bounds["error.local_derivative"] = self._entry(local)
                    return
                if self.records:
                    where = f"pass.edges[{consumer}:{slot}]"
                    bounds[f"{where}.local_derivative"] = self._entry(local)
                    bounds[f"{where}.upstream"] = self._entry(upstream)
                    bounds[f"{where}.contribution"] = self._entry(contribution)
                if self.nodes[operand].tracked:
                    # The exact product, if the sum is fused; a product with a zero factor is exact already.
                    exact = contribution.is_point and (upstream.v == 0.0 or local.v == 0.0)
                    summand = contribution if exact else contribution.widened(1)
                    before = adjoint[operand]
                    after = iv.add(before, summand, before.v + c)
                    if not math.isfinite(after.v):
                        bounds["error.previous"] = self._entry(before)
                        bounds["error.contribution"] = self._entry(contribution)
                        return
                    adjoint[operand] = after
                    parts[operand].append(summand)
                    if self.records:
                        bounds[f"pass.edges[{position}].before"] = self._entry(before)
                        bounds[f"pass.edges[{position}].after"] = self._entry(after)
                position += 1
        totals = {}
        for name in topo:
            node = self.nodes[name]
            if node.tracked:
                assert node.stored is not None
                total = node.stored.v + adjoint[name].v
                if not math.isfinite(total):
                    bounds["error.stored"] = self._entry(node.stored)
                    bounds["error.pass_adjoint"] = self._entry(adjoint[name])
                    return
                totals[name] = iv.add(node.stored, adjoint[name], total)
        for name in topo:
            node = self.nodes[name]
            if node.tracked:
                node.stored = totals[name]
            if self.records:
                where = f"pass.nodes[{name}]"
                bounds[f"{where}.value"] = self._entry(node.value)
                if node.tracked:
                    bounds[f"{where}.pass_adjoint"] = self._entry(adjoint[name])
                    bounds[f"{where}.stored_gradient"] = self._entry(totals[name])

    def _any_order(self, sequential: Quantity, parts: list[Quantity]) -> Quantity:
        """A final pass adjoint, widened to hold the sum of its contributions in any order.

        Two contributions added to 0.0 give the same sum in either order; three or more
        (or any number under ``numeric``, whose engines may sum as they like) can round
        differently: any order lies within ``(n - 1) * u * sum|c|`` of the exact sum
        (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., section 4.2),
        taken here as ``2 * n * u * sum|c|`` plus one subnormal per addition.
        """
        n = len(parts)
        if n < 3 and not (self.numeric and n >= 2):
            return sequential
        if not all(p.bounded for p in parts):
            return _hull(sequential.v, *_UNBOUNDED)
        try:
            magnitude = math.fsum(max(abs(p.lo), abs(p.hi)) for p in parts)
            low_sum, high_sum = math.fsum(p.lo for p in parts), math.fsum(p.hi for p in parts)
        except OverflowError:  # contributions near the largest float: another order may overflow
            return _hull(sequential.v, *_UNBOUNDED)
        slack = 2.0 * n * _UNIT * magnitude + n * _TINY
        lo = _down(low_sum - slack, 2)
        hi = _up(high_sum + slack, 2)
        return _hull(sequential.v, min(lo, sequential.lo), max(hi, sequential.hi))

    def _gradients(self, bounds: StepBounds) -> None:
        for name in self.order:
            if self.named is not None and name not in self.named:
                continue
            node = self.nodes[name]
            if node.stored is not None:
                bounds[f"gradients.{name}"] = self._entry(node.stored)

    @staticmethod
    def _entry(q: Quantity) -> tuple[float, float]:
        return q.v, q.bound()

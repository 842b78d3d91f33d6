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

from reference.ops import OPS

from .intervals import FORMULA_ULPS, LIBM_ULPS, TINY, UNBOUNDED, UNIT, Interval, Quantity, down, hull, up
from .optable import HARNESS_OPS
from .program import LEAF_OPS, Program, observed_ids
from .protocol import Profile

__all__ = ["FORMULA_ULPS", "LIBM_ULPS", "Quantity", "StepBounds", "derive_bounds"]


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
        self.iv = Interval(profile)
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
        row = HARNESS_OPS.get(op)
        if row is None:
            raise ValueError(f"no interval rule for op {op!r}")
        return row.interval(self.iv, operands, c, v, d)

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
            return hull(sequential.v, *UNBOUNDED)
        try:
            magnitude = math.fsum(max(abs(p.lo), abs(p.hi)) for p in parts)
            low_sum, high_sum = math.fsum(p.lo for p in parts), math.fsum(p.hi for p in parts)
        except OverflowError:  # contributions near the largest float: another order may overflow
            return hull(sequential.v, *UNBOUNDED)
        slack = 2.0 * n * UNIT * magnitude + n * TINY
        lo = down(low_sum - slack, 2)
        hi = up(high_sum + slack, 2)
        return hull(sequential.v, min(lo, sequential.lo), max(hi, sequential.hi))

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

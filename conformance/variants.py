"""Correct engines that round differently from the contract: the check on the derived bounds.

Each ``VariantEngine`` is a port a porter could honestly write, using one allowance that
docs/contract.md section 9 grants, or (under ``numeric``) a formula that is algebraically
equal to the contract's. The corpus and the fuzzer must find no difference on any of them
under their profile, while every bug of the catalogue (conformance/mutants.py) still fails:
that is what shows the bounds are wide enough and still tight (tests/test_bounds.py,
bench/bounds_check.py).

Contract-profile variants:

- ``libm``: exp, log, tanh and pow from the platform's C library (glibc here), sigmoid from its exp in the stable form.
- ``fma``: ``1 - t*t`` as one fused multiply-add, and backward's ``pass + upstream * local``
  fused too. The contract allows the fused sum only where a case is not compared exactly,
  so under ``contract`` this port fuses its sums in every program that uses exp, log, tanh,
  sigmoid or pow (never an exact case) and rounds the product elsewhere.
- ``reversed-sums`` and ``shuffled-sums``: every pass adjoint sums its contributions in
  reverse processing order, or in a seeded random order. Their edge records then hold
  other ``before``/``after`` partial sums, so they do not declare ``order``; and near the
  largest float another order can overflow a partial sum where processing order does not
  (``1e308 + 1e308 - 1e308``), which rule ``backward.sum-edges`` decides by processing
  order, so they do not declare ``errors`` either: the bounds cover rounding, not overflow.

Numeric-profile variants (an engine not written from the contract, such as autograd):

- ``accurate-tanh-derivative``: tanh's local derivative is sech^2(a), correctly rounded.
- ``divisor-contribution``: the divisor's edge's contribution is computed directly from
  the operands as ``-g * a / b**2``, as autograd does, rounded once from its exact value:
  the numeric profile allows another formula within a few ulps of the exact result, and
  this is the closest one. (Autograd's literal expression rounds ``y**2`` and ``-g*x``
  first, which underflow when the operands are tiny, around 1e-160: then it is not within
  any ulps of the exact result, and the kit rightly reports the difference.) Its local
  derivative is the contract's ``-(r / b)``.
- ``everything``: all of the above at once, with libm, fused multiply-adds and shuffled sums.

Like the engines they stand for (PyTorch and autograd raise no typed errors), numeric
variants declare no ``errors`` level: another formula may overflow where the contract's
does not, a difference the errors level would rightly report.

``a / b`` as ``a * (1 / b)`` (micrograd) is not among them: it is within rounding of the
contract while ``1 / b`` is finite, but ``1e-300 / 1e-310`` overflows there and fails with
another error, a difference the numeric profile rightly reports.
"""

from __future__ import annotations

import math
import random
from typing import Any, Callable, Optional

import gmpy2

from reference.crmath import ieee_div
from reference.errors import NonFiniteContribution, NonFinitePassAdjoint, NonFiniteSeed, UntrackedOutput
from reference.ops import IEEE_EXACT_OPS, OPS

from .mutants import MutantEngine, _Node
from .optable import HARNESS_OPS, LIBM_TANH
from .program import DECLARABLE_OPS, Program
from .protocol import LEVELS, Observation, Profile
from .transport import AdapterFault, DirectTransport, Handshake

_IEEE = gmpy2.ieee(64)


#: Variant name -> (its profile, the allowances it takes).
VARIANTS: dict[str, tuple[str, frozenset[str]]] = {
    "libm": ("contract", frozenset({"libm"})),
    "fma": ("contract", frozenset({"fma"})),
    "reversed-sums": ("contract", frozenset({"reversed-sums"})),
    "shuffled-sums": ("contract", frozenset({"shuffled-sums"})),
    "contract-everything": ("contract", frozenset({"libm", "fma", "shuffled-sums"})),
    "accurate-tanh-derivative": ("numeric", frozenset({"accurate-tanh-derivative"})),
    "divisor-contribution": ("numeric", frozenset({"divisor-contribution"})),
    "everything": (
        "numeric",
        frozenset(
            {
                "libm",
                "fma",
                "shuffled-sums",
                "accurate-tanh-derivative",
                "divisor-contribution",
            }
        ),
    ),
}


def fma(x: float, y: float, z: float) -> float:
    """``x * y + z`` with one rounding, as a hardware fused multiply-add gives it."""
    return float(_IEEE.fma(x, y, z))


def exactly_rounded(value: Callable[[], Any]) -> float:
    """A real expression evaluated with 256 bits and no exponent limit, then rounded once to binary64."""
    with gmpy2.context(precision=256, emax=2**30, emin=-(2**30)):
        exact = value()
    return float(_IEEE.plus(exact))


def sech_squared(a: float) -> float:
    """sech(a)^2, the exact derivative of tanh, rounded once."""
    return exactly_rounded(lambda: gmpy2.sech(gmpy2.mpfr(a)) ** 2)


class VariantEngine(MutantEngine):
    """A correct engine that takes the allowances of one named variant (see VARIANTS)."""

    def __init__(self, variant: str, seed: int = 0) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        super().__init__(None)
        self.variant = variant
        self.profile, self.takes = VARIANTS[variant]
        self._random = random.Random(seed)
        self._fuse_sums = False

    def run(self, program: Program, records: bool = True) -> list[Observation]:
        """Observe a program, fusing backward's sums where this variant's profile allows it."""
        inexact = any(step.op not in IEEE_EXACT_OPS for step in program if step.id is not None and step.op in OPS)
        self._fuse_sums = "fma" in self.takes and (self.profile == "numeric" or inexact)
        return super().run(program, records)

    @property
    def reorders_sums(self) -> bool:
        """Whether pass adjoints are summed out of processing order (so ``order``'s partial sums differ)."""
        return bool(self.takes & {"reversed-sums", "shuffled-sums"})

    def _rule(self, op: str, values: tuple[float, ...], exponent: Optional[float]) -> tuple[float, tuple[float, ...]]:
        takes = self.takes
        a = values[0]
        if op == "div" and "divisor-contribution" in takes:
            r = ieee_div(a, values[1])
            return r, (ieee_div(1.0, values[1]), -ieee_div(r, values[1]))
        if op == "tanh" and takes & {"libm", "fma", "accurate-tanh-derivative"}:
            t = LIBM_TANH(a) if "libm" in takes else super()._rule(op, values, exponent)[0]
            if "accurate-tanh-derivative" in takes:
                return t, (sech_squared(a),)
            return t, (fma(-t, t, 1.0) if "fma" in takes else 1.0 - t * t,)
        libm = HARNESS_OPS[op].libm if op in HARNESS_OPS else None
        if "libm" in takes and libm is not None:
            return libm(values, exponent)
        return super()._rule(op, values, exponent)

    def _direct(self, consumer: _Node, slot: int) -> bool:
        """Whether this edge's contribution is computed from the operands directly, not as upstream * local."""
        return "divisor-contribution" in self.takes and consumer.operation == "div" and slot == 1

    def _contribution(self, consumer: _Node, slot: int, upstream: float, local: float) -> float:
        if self._direct(consumer, slot):
            a, b = (gmpy2.mpfr(operand.value) for operand in consumer.operands)
            return exactly_rounded(lambda: -gmpy2.mpfr(upstream) * a / (b * b))
        return upstream * local

    def _backward(self, output: _Node, seed: float) -> dict[str, Any]:
        if not self.reorders_sums and not self._fuse_sums and "divisor-contribution" not in self.takes:
            return super()._backward(output, seed)
        # The contract's checks, in its order; only the arithmetic of a contribution and of a
        # pass adjoint's sum differ (docs/contract.md section 5).
        self._check_backward_start(output, seed)
        topo = self._topology(output)
        adjoint: dict[int, float] = {id(n): 0.0 for n in topo if n.tracked}
        adjoint[id(output)] = seed
        waiting: dict[int, list[list[Any]]] = {id(n): [] for n in topo if n.tracked}
        edges: list[list[Any]] = []
        for consumer in reversed(topo):
            if consumer.tracked and waiting[id(consumer)]:
                parts = waiting[id(consumer)]
                order = list(reversed(parts)) if "reversed-sums" in self.takes else self._random.sample(parts, len(parts))
                for edge in order:
                    self._add(edge, adjoint)
            upstream = adjoint.get(id(consumer), 0.0) if consumer.tracked else 0.0
            for slot, operand in enumerate(consumer.operands):
                local = consumer.locals[slot]
                contribution = self._contribution(consumer, slot, upstream, local)
                if not math.isfinite(contribution):
                    raise NonFiniteContribution(
                        consumer=consumer, slot=slot, operand=operand, upstream=upstream, local_derivative=local
                    )
                edges.append([consumer, slot, operand, local, upstream, contribution, operand.tracked, None, None])
                if not operand.tracked:
                    continue
                if self.reorders_sums:
                    waiting[id(operand)].append(edges[-1])  # added when the operand's turn comes, in this variant's order
                else:
                    self._add(edges[-1], adjoint)
        totals = {id(node): self._prospective(node, adjoint[id(node)]) for node in topo if node.tracked}
        for node in topo:
            if id(node) in totals:
                node.grad = totals[id(node)]
        has_grad = lambda n: n.tracked  # noqa: E731 - the record's shape, as MutantEngine builds it
        return {"seed": seed, "topo": topo, "adjoint": adjoint, "edges": [tuple(e) for e in edges], "has_grad": has_grad}

    def _add(self, edge: list[Any], adjoint: dict[int, float]) -> None:
        """Add one edge's contribution to its operand's pass adjoint, and record the sum before and after it.

        Where this variant fuses, a contribution that is the product upstream * local is added
        as one fused multiply-add; any other contribution is added as computed.
        """
        consumer, slot, operand, local, upstream, contribution = edge[:6]
        before = adjoint[id(operand)]
        fused = self._fuse_sums and not self._direct(consumer, slot)
        after = fma(upstream, local, before) if fused else before + contribution
        if not math.isfinite(after):
            raise NonFinitePassAdjoint(node=operand, previous=before, contribution=contribution)
        adjoint[id(operand)] = after
        edge[7:9] = [before, after]

    def _check_backward_start(self, output: _Node, seed: float) -> None:
        if not output.tracked:
            raise UntrackedOutput(operation=output.operation)
        if not math.isfinite(seed):
            raise NonFiniteSeed(seed=seed)


class VariantTransport(DirectTransport):
    """A variant engine called in-process, with the hello such a port would send."""

    def __init__(self, variant: str, seed: int = 0) -> None:
        self.engine = VariantEngine(variant, seed)
        undeclared = {"order", "errors"} if self.engine.reorders_sums else set()
        if self.engine.profile == "numeric":
            undeclared.add("errors")
        levels = frozenset(level for level in LEVELS if level not in undeclared)
        self.hello = Handshake(
            f"variant-{variant}",
            "0",
            "python",
            frozenset(DECLARABLE_OPS),
            levels,
            frozenset({"seed"}),
            profile=Profile(self.engine.profile),
        )

    def handshake(self) -> Handshake:
        """The variant's hello."""
        return self.hello

    def run(self, case: str, program: Program, timeout: Optional[float] = None, *, records: bool = True) -> list[Any]:
        """Run a program in-process; an exception becomes the fault a real adapter's error reply would be."""
        try:
            return self.engine.run(program, records)
        except Exception as error:  # noqa: BLE001 - as a real adapter would reply with an error message
            raise AdapterFault(
                f"the variant could not run the case: {type(error).__name__}: {error}", kind="error-reply"
            ) from None

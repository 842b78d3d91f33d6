"""A catalogue of deliberately broken engines: the reference with one classic bug each.

``MutantEngine(bug)`` runs programs like the reference (same op table, same
observation format) except for one misconception. With ``bug=None`` it is a
second, independent implementation of the contract, and a test holds it equal
to the reference. The harness uses the catalogue twice: to prove that the
corpus catches every bug (each variant runs behind the protocol via
``adapters/broken``), and to diagnose a failing engine by reproduction: when a
variant's answers match an adapter's wrong answers, its description names the
likely bug.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Callable, Iterable, Optional

from reference.crmath import cr_pow, ieee_div
from reference.errors import (
    EngineError,
    NonFiniteAccumulatedGradient,
    NonFiniteContribution,
    NonFiniteLeaf,
    NonFiniteLocalDerivative,
    NonFinitePassAdjoint,
    NonFiniteResult,
    NonFiniteSeed,
    UntrackedOutput,
)
from reference.ops import OPS

from .observe import observe, step_hook
from .optable import HARNESS_OPS
from .program import LEAF_OPS, Program, ProgramError, Step
from .protocol import EdgeRecord, NodeRecord, Observation, PassRecord

_finite = math.isfinite

#: A wrong local derivative per op (its row's ``wrong_derivative``): the slip a porter makes most often with it.
#: Each is the catalogue's mistake ``wrong-derivative-OP``.
WRONG_DERIVATIVES: dict[str, Callable[[tuple[float, ...], float, Optional[float]], tuple[float, ...]]] = {
    name: row.wrong_derivative for name, row in HARNESS_OPS.items()
}


class Bug(StrEnum):
    """A mistake of the catalogue, by the name a porter would give it (``BUGS`` has its description).

    The wrong local derivative of each op is a mistake too, named ``wrong-derivative-OP``
    (``WRONG_DERIVATIVES``, from the harness's op table): those names are in ``BUGS`` and
    ``CATALOGUE``, not members here, so that a new op needs no edit of this file.
    """

    RELU_DERIVATIVE_AT_ZERO = "relu-derivative-at-zero"
    ONLY_SLOT_0_CHECKED = "only-slot-0-checked"
    DERIVATIVE_UNCHECKED = "derivative-unchecked"
    ACCUMULATION_CHECKED_FIRST = "accumulation-checked-first"
    ASSIGN = "assign"
    MERGE_EDGES = "merge-edges"
    STALE = "stale"
    PARTIAL_COMMIT = "partial-commit"
    DETACH_EDGE = "detach-edge"
    ZERO_LEAVES = "zero-leaves"
    SEED_IGNORED = "seed-ignored"
    UNTRACKED_GRADS = "untracked-grads"
    RECURSIVE_TOPO = "recursive-topo"
    DIV_BY_RECIPROCAL = "div-by-reciprocal"
    DIV_DERIVATIVE_SQUARED = "div-derivative-squared"
    POW_DERIVATIVE_AT_C_0 = "pow-derivative-at-c-0"
    RELU_KEEPS_NEGATIVE_ZERO = "relu-keeps-negative-zero"
    SIGNED_ZERO_LOST = "signed-zero-lost"
    LEAF_UNCHECKED = "leaf-unchecked"
    DERIVATIVE_CHECKED_FIRST = "derivative-checked-first"
    FAILED_OP_KEPT = "failed-op-kept"
    RESULT_ALWAYS_TRACKED = "result-always-tracked"
    DETACH_STAYS_TRACKED = "detach-stays-tracked"
    MERGE_EQUAL_EXPRESSIONS = "merge-equal-expressions"
    MERGE_EQUAL_LEAVES = "merge-equal-leaves"
    SEED_CHECKED_FIRST = "seed-checked-first"
    CONTRIBUTION_UNCHECKED = "contribution-unchecked"
    PASS_ADJOINT_UNCHECKED = "pass-adjoint-unchecked"
    ACCUMULATION_UNCHECKED = "accumulation-unchecked"
    UNTRACKED_EDGES_SKIPPED = "untracked-edges-skipped"
    ZERO_UPSTREAM_SKIPPED = "zero-upstream-skipped"
    NO_ACCUMULATION = "no-accumulation"
    OUTPUT_GRAD_ASSIGNED = "output-grad-assigned"
    ZERO_GRAD_OUTPUT_ONLY = "zero-grad-output-only"
    ZERO_GRAD_EVERYTHING = "zero-grad-everything"
    TAPE_ORDER = "tape-order"
    REVERSE_SLOT_ORDER = "reverse-slot-order"
    WHOLE_GRAPH_TOPOLOGY = "whole-graph-topology"


#: Every bug of the catalogue and its plain-words description, as a diagnosis prints it.
#: When several bugs reproduce one failure, the diagnosis names them in this order, so a
#: bug that is a special case of another comes first (see _SPECIFIC_FIRST below).
_DESCRIPTIONS: dict[str, str] = {
    "assign": "contributions assigned instead of added: each operand edge overwrites its operand's pass adjoint, "
    "so a node used more than once keeps only its last contribution",
    "merge-edges": "operand edges to one node merged: a repeated operand (x*x, s+s) is walked as one edge",
    "stale": "a second backward re-propagates stale intermediate gradients: stored gradients are used as "
    "upstream instead of fresh pass adjoints",
    "partial-commit": "gradients changed although backward failed: stored gradients are committed before every check passed",
    "detach-edge": "a detached value still passes gradient: detach keeps its edge to the original node",
    "zero-leaves": "zero_grad reaches only leaves: intermediate stored gradients are left in place",
    "seed-ignored": "the seed is ignored: backward always starts from 1",
    "untracked-grads": "untracked nodes (constants, detached copies) are given gradients",
    "recursive-topo": "a recursive topological sort: deep graphs exhaust the stack",
    **{f"wrong-derivative-{op}": f"a wrong local derivative for {op}" for op in WRONG_DERIVATIVES},
    # Formulas that are equal in real numbers but round differently, and signed zeros.
    "div-by-reciprocal": "a / b computed as a * (1 / b): two roundings where the contract has one",
    "div-derivative-squared": "the divisor's local derivative computed as -a / (b * b) "
    "instead of -(r / b) from the rounded quotient",
    "pow-derivative-at-c-0": "pow's local derivative computed as c * a^(c-1) even for c = 0, which is nan at a = 0 "
    "(the contract makes it exactly 0)",
    "relu-keeps-negative-zero": "relu returns its input when it is not negative, so relu(-0.0) is -0.0 instead of +0.0",
    "relu-derivative-at-zero": "relu's local derivative is 1 at a = 0 (a >= 0) instead of 0 (a > 0)",
    "signed-zero-lost": "negative zero is normalised to +0.0 (for example by adding 0.0 to every result)",
    # Creation checks.
    "leaf-unchecked": "variable and constant accept inf and nan instead of failing with non-finite-leaf",
    "derivative-unchecked": "an operation with a finite value but a non-finite local derivative is accepted",
    "derivative-checked-first": "an operation checks its local derivatives before its value, so 1/0 reports "
    "non-finite-local-derivative instead of non-finite-result",
    "only-slot-0-checked": "only the first operand's local derivative is checked for being finite",
    "failed-op-kept": "a failed operation still adds its node to the graph",
    "result-always-tracked": "every operation result is tracked, even one whose operands are all constants",
    "detach-stays-tracked": "detach copies the tracked flag: a detached copy of a tracked node is tracked (with no edge)",
    "merge-equal-expressions": "structurally equal expressions (same op, same operands) are merged into one node",
    "merge-equal-leaves": "leaves with equal values are merged into one node",
    # Backward checks and their order.
    "seed-checked-first": "backward checks the seed before checking that the output is tracked",
    "contribution-unchecked": "a non-finite contribution is not checked on its own: it surfaces later, or never",
    "pass-adjoint-unchecked": "the sum of contributions into a pass adjoint is not checked for being finite",
    "accumulation-unchecked": "stored gradients are accumulated without checking that the result is finite",
    "accumulation-checked-first": "each node's accumulation is checked as soon as its pass adjoint is final, "
    "before the edges of later nodes are checked",
    "untracked-edges-skipped": "edges to untracked operands (constants, detached copies) are skipped: not checked, not recorded",
    "zero-upstream-skipped": "edges from a node whose pass adjoint is zero are skipped as an optimisation: "
    "not checked, not recorded",
    # Accumulation and zero_grad.
    "no-accumulation": "each backward overwrites the stored gradients with its pass adjoints instead of adding to them",
    "output-grad-assigned": "the output's stored gradient is set to the seed instead of having the seed added to it",
    "zero-grad-output-only": "zero_grad resets only the node it is called on, not everything that node reaches",
    "zero-grad-everything": "zero_grad resets every node of the graph, including nodes its output does not reach",
    # Topology.
    "tape-order": "the topology is creation order (a tape) instead of the depth-first post-order from the output",
    "reverse-slot-order": "a node's operand edges are processed last slot first",
    "whole-graph-topology": "backward walks every node of the graph, not only the nodes the output reaches",
}

#: Bugs whose every failure another, broader bug also produces on some case: named before it.
_SPECIFIC_FIRST = (
    "relu-derivative-at-zero",  # before wrong-derivative-relu (1 everywhere)
    "only-slot-0-checked",  # before derivative-unchecked
    "derivative-unchecked",  # before wrong-derivative-log/pow, which also let log(5e-324), pow(0; 0.5) through
    "accumulation-checked-first",  # before partial-commit, which fails the same way when the first commit overflows
)
_MEMBERS = {bug.value: bug for bug in Bug}


def _named(name: str) -> str:
    """The ``Bug`` member of this name, or the name itself for an op's wrong derivative."""
    if name in _MEMBERS:
        return _MEMBERS[name]
    if name.startswith("wrong-derivative-") and name.removeprefix("wrong-derivative-") in WRONG_DERIVATIVES:
        return name
    raise ValueError(f"unknown bug {name!r}")


_ORDERED = {**{bug: _DESCRIPTIONS[bug] for bug in _SPECIFIC_FIRST}, **_DESCRIPTIONS}
#: Every bug of the catalogue by its name (a ``Bug``, or ``wrong-derivative-OP``) -> its description.
BUGS: dict[str, str] = {_named(name): description for name, description in _ORDERED.items()}
#: Every bug name of the catalogue, in the diagnosis's order.
CATALOGUE: tuple[str, ...] = tuple(BUGS)
assert set(BUGS) == {*Bug, *(f"wrong-derivative-{op}" for op in WRONG_DERIVATIVES)}, (
    "every bug has a description and every description a bug"
)
_NAMES = {description: bug for bug, description in BUGS.items()}


def bug_named(description: str) -> Optional[str]:
    """The catalogue name of the bug a diagnosis describes in these words, or None."""
    return _NAMES.get(description)


class _Node:
    __slots__ = ("value", "operation", "operands", "locals", "tracked", "grad")

    def __init__(self, value: float, operation: str, operands: tuple["_Node", ...], locals_: tuple[float, ...], tracked: bool):
        self.value = value
        self.operation = operation
        self.operands = operands
        self.locals = locals_
        self.tracked = tracked
        self.grad: Optional[float] = 0.0 if tracked else None


class MutantEngine:
    """The reference semantics with one named bug (or none)."""

    def __init__(self, bug: Optional[str] = None, *, unchecked: Iterable[str] = ()) -> None:
        if bug is not None and bug not in BUGS:
            raise ValueError(f"unknown bug {bug!r}; known: {', '.join(BUGS)}")
        self.bug: Optional[str] = None if bug is None else _named(bug)
        self.unchecked = frozenset(unchecked)
        """Error kinds this engine never raises (an adapter's undeclared ``error_kinds``): it computes on instead."""
        self._created: list[_Node] = []  # every node of the current program, in creation order
        self._interned: dict[Any, _Node] = {}  # the merging bugs' table
        self._kept: Optional[_Node] = None  # failed-op-kept: the node a failed operation left behind
        self._nodes: dict[str, _Node] = {}  # the current program's nodes by id
        self._names: dict[int, str] = {}  # and their ids by node identity

    # -- graph ----------------------------------------------------------------

    def _leaf(self, operation: str, value: float) -> _Node:
        if not _finite(value) and self.bug is not Bug.LEAF_UNCHECKED and self._checks("non-finite-leaf"):
            raise NonFiniteLeaf(operation=operation, value=value)
        if self.bug is Bug.MERGE_EQUAL_LEAVES:
            key = (operation, math.copysign(1.0, value), value)
            if key in self._interned:
                return self._interned[key]
        node = self._register(_Node(value, operation, (), (), operation == "variable"))
        if self.bug is Bug.UNTRACKED_GRADS:
            node.grad = 0.0
        if self.bug is Bug.MERGE_EQUAL_LEAVES:
            self._interned[key] = node
        return node

    def _checks(self, kind: str) -> bool:
        """Whether this engine checks for (and raises) the error kind."""
        return kind not in self.unchecked

    def _register(self, node: _Node) -> _Node:
        self._created.append(node)
        return node

    def _apply(self, op: str, operands: tuple[_Node, ...], exponent: Optional[float]) -> _Node:
        if self.bug is Bug.MERGE_EQUAL_EXPRESSIONS:
            key = (op, tuple(id(n) for n in operands), exponent)
            if key in self._interned:
                return self._interned[key]
        value, locals_ = self._rule(op, tuple(n.value for n in operands), exponent)
        tracked = any(n.tracked for n in operands) or self.bug is Bug.RESULT_ALWAYS_TRACKED
        failure: Optional[EngineError] = None
        checks = [self._check_value, self._check_derivatives]
        if self.bug is Bug.DERIVATIVE_CHECKED_FIRST:
            checks.reverse()
        for check in checks:
            failure = failure or check(op, value, locals_)
        node = _Node(value, op, operands, tuple(locals_), tracked)
        if self.bug is Bug.UNTRACKED_GRADS:
            node.grad = 0.0
        if failure is not None:
            if self.bug is Bug.FAILED_OP_KEPT:
                self._register(node)
                self._kept = node
            raise failure
        if self.bug is Bug.MERGE_EQUAL_EXPRESSIONS:
            self._interned[key] = node
        return self._register(node)

    def _rule(self, op: str, values: tuple[float, ...], exponent: Optional[float]) -> tuple[float, tuple[float, ...]]:
        rule = OPS[op].rule
        value, locals_ = rule(values[0], exponent) if op == "pow" else rule(*values)
        bug = self.bug
        if bug == f"wrong-derivative-{op}":
            locals_ = WRONG_DERIVATIVES[op](values, value, exponent)
        elif op == "div" and bug is Bug.DIV_BY_RECIPROCAL:
            reciprocal = ieee_div(1.0, values[1])
            value = values[0] * reciprocal
            locals_ = (reciprocal, -value * reciprocal)
        elif op == "div" and bug is Bug.DIV_DERIVATIVE_SQUARED:
            locals_ = (locals_[0], -ieee_div(values[0], values[1] * values[1]))
        elif op == "pow" and bug is Bug.POW_DERIVATIVE_AT_C_0 and exponent == 0.0:
            locals_ = (0.0 * cr_pow(values[0], -1.0),)
        elif op == "relu" and bug is Bug.RELU_KEEPS_NEGATIVE_ZERO and values[0] == 0.0:
            value = values[0]
        elif op == "relu" and bug is Bug.RELU_DERIVATIVE_AT_ZERO and values[0] == 0.0:
            locals_ = (1.0,)
        if bug is Bug.SIGNED_ZERO_LOST:
            value, locals_ = value + 0.0, tuple(local + 0.0 for local in locals_)
        return value, locals_

    def _check_value(self, op: str, value: float, locals_: tuple[float, ...]) -> Optional[EngineError]:
        if not _finite(value) and self._checks("non-finite-result"):
            return NonFiniteResult(operation=op, value=value)
        return None

    def _check_derivatives(self, op: str, value: float, locals_: tuple[float, ...]) -> Optional[EngineError]:
        if self.bug is Bug.DERIVATIVE_UNCHECKED or not self._checks("non-finite-local-derivative"):
            return None
        for slot, local in enumerate(locals_[:1] if self.bug is Bug.ONLY_SLOT_0_CHECKED else locals_):
            if not _finite(local):
                return NonFiniteLocalDerivative(operation=op, slot=slot, value=local)
        return None

    def _detach(self, source: _Node) -> _Node:
        if self.bug is Bug.DETACH_EDGE:
            node = _Node(source.value, "detached", (source,), (1.0,), source.tracked)
        else:
            node = _Node(source.value, "detached", (), (), self.bug is Bug.DETACH_STAYS_TRACKED and source.tracked)
        if self.bug is Bug.UNTRACKED_GRADS:
            node.grad = 0.0
        return self._register(node)

    def _topology(self, output: _Node) -> list[_Node]:
        if self.bug is Bug.RECURSIVE_TOPO:
            order: list[_Node] = []
            seen: set[int] = set()

            def visit(node: _Node) -> None:
                if id(node) not in seen:
                    seen.add(id(node))
                    for operand in node.operands:
                        visit(operand)
                    order.append(node)

            visit(output)
            return order
        if self.bug is Bug.WHOLE_GRAPH_TOPOLOGY:
            return list(self._created)
        if self.bug is Bug.TAPE_ORDER:
            reached = {id(node) for node in self._post_order(output)}
            return [n for n in self._created if id(n) in reached]
        return self._post_order(output)

    def _post_order(self, output: _Node) -> list[_Node]:
        order, seen, stack = [], {id(output)}, [(output, 0)]
        while stack:
            node, slot = stack[-1]
            if slot < len(node.operands):
                stack[-1] = (node, slot + 1)
                operand = node.operands[slot]
                if id(operand) not in seen:
                    seen.add(id(operand))
                    stack.append((operand, 0))
            else:
                stack.pop()
                order.append(node)
        return order

    # -- gradients --------------------------------------------------------------

    def _backward(self, output: _Node, seed: float) -> dict[str, Any]:
        if self.bug is Bug.SEED_CHECKED_FIRST and not _finite(seed) and self._checks("non-finite-seed"):
            raise NonFiniteSeed(seed=seed)
        if not output.tracked and self._checks("untracked-output"):
            raise UntrackedOutput(operation=output.operation)
        if self.bug is Bug.SEED_IGNORED:
            seed = 1.0
        if not _finite(seed) and self._checks("non-finite-seed"):
            raise NonFiniteSeed(seed=seed)
        topo = self._topology(output)
        has_grad = (lambda n: n.grad is not None) if self.bug is Bug.UNTRACKED_GRADS else (lambda n: n.tracked)
        if self.bug is Bug.STALE:
            return self._stale_backward(topo, seed)
        adjoint: dict[int, float] = {id(n): 0.0 for n in topo if has_grad(n)}
        adjoint[id(output)] = seed
        edges = []
        committed: set[int] = set()
        bug = self.bug
        for consumer in reversed(topo):
            upstream = adjoint.get(id(consumer), 0.0)
            if bug is Bug.PARTIAL_COMMIT and has_grad(consumer):
                self._accumulate(consumer, upstream)
                committed.add(id(consumer))
            if bug is Bug.ACCUMULATION_CHECKED_FIRST and has_grad(consumer):
                self._prospective(consumer, upstream)
            operands = consumer.operands
            slots: list[int] = list(range(len(operands)))
            if bug is Bug.MERGE_EDGES:
                firsts: dict[int, int] = {}
                for slot, node in enumerate(operands):
                    firsts.setdefault(id(node), slot)
                slots = sorted(firsts.values())
            elif bug is Bug.REVERSE_SLOT_ORDER:
                slots.reverse()
            elif bug is Bug.UNTRACKED_EDGES_SKIPPED:
                slots = [slot for slot in slots if has_grad(operands[slot])]
            elif bug is Bug.ZERO_UPSTREAM_SKIPPED and upstream == 0.0:
                slots = []
            for slot in slots:
                operand, local = operands[slot], consumer.locals[slot]
                contribution = upstream * local
                if (
                    not _finite(contribution)
                    and bug is not Bug.CONTRIBUTION_UNCHECKED
                    and self._checks("non-finite-contribution")
                ):
                    raise NonFiniteContribution(
                        consumer=consumer, slot=slot, operand=operand, upstream=upstream, local_derivative=local
                    )
                before = after = None
                if has_grad(operand):
                    before = adjoint[id(operand)]
                    after = contribution if bug is Bug.ASSIGN else before + contribution
                    if not _finite(after) and bug is not Bug.PASS_ADJOINT_UNCHECKED and self._checks("non-finite-pass-adjoint"):
                        raise NonFinitePassAdjoint(node=operand, previous=before, contribution=contribution)
                    adjoint[id(operand)] = after
                edges.append((consumer, slot, operand, local, upstream, contribution, has_grad(operand), before, after))
        totals = {}
        for node in topo:
            if has_grad(node) and id(node) not in committed:
                totals[id(node)] = self._prospective(node, adjoint[id(node)])
        if bug is Bug.OUTPUT_GRAD_ASSIGNED:
            totals[id(output)] = seed
        for node in topo:
            if id(node) in totals:
                node.grad = totals[id(node)]
        return {"seed": seed, "topo": topo, "adjoint": adjoint, "edges": edges, "has_grad": has_grad}

    def _prospective(self, node: _Node, pass_adjoint: float) -> float:
        if self.bug is Bug.NO_ACCUMULATION:
            return pass_adjoint
        total = node.grad + pass_adjoint  # type: ignore[operator]
        if not _finite(total) and self.bug is not Bug.ACCUMULATION_UNCHECKED and self._checks("non-finite-accumulated-gradient"):
            raise NonFiniteAccumulatedGradient(node=node, stored=node.grad, pass_adjoint=pass_adjoint)
        return total

    def _accumulate(self, node: _Node, pass_adjoint: float) -> None:
        total = node.grad + pass_adjoint  # type: ignore[operator]
        if not _finite(total) and self._checks("non-finite-accumulated-gradient"):
            raise NonFiniteAccumulatedGradient(node=node, stored=node.grad, pass_adjoint=pass_adjoint)
        node.grad = total

    def _stale_backward(self, topo: list[_Node], seed: float) -> dict[str, Any]:
        # micrograd's algorithm: the output's stored gradient is set to the seed and every
        # edge adds consumer.grad * local into operand.grad, stale values included.
        topo[-1].grad = seed
        edges = []
        for consumer in reversed(topo):
            for slot, (operand, local) in enumerate(zip(consumer.operands, consumer.locals)):
                upstream = consumer.grad if consumer.grad is not None else 0.0
                contribution = upstream * local
                before = operand.grad
                if operand.tracked:
                    operand.grad = before + contribution  # type: ignore[operator]
                edges.append((consumer, slot, operand, local, upstream, contribution, operand.tracked, before, operand.grad))
        adjoint = {id(n): n.grad for n in topo if n.tracked}
        return {"seed": seed, "topo": topo, "adjoint": adjoint, "edges": edges, "has_grad": lambda n: n.tracked}

    def _zero_grad(self, output: _Node) -> None:
        if self.bug is Bug.ZERO_GRAD_OUTPUT_ONLY:
            reached = [output]
        elif self.bug is Bug.ZERO_GRAD_EVERYTHING:
            reached = list(self._created)
        else:
            reached = self._post_order(output)
        for node in reached:
            if node.grad is not None and (self.bug is not Bug.ZERO_LEAVES or not node.operands):
                node.grad = 0.0

    # -- programs ---------------------------------------------------------------

    def run(self, program: Program, records: bool = True) -> list[Observation]:
        """Run a program on a fresh graph and observe every step (see conformance.observe); pass records if ``records``."""
        self._fresh()
        return observe(self, program, record_pass=records)

    def start(self, records: bool = True) -> Callable[[Step], Observation]:
        """A fresh graph and the function observing one step on it: ``run`` a step at a time.

        For ``conformance.serve.by_steps`` (adapters/broken): an exception this engine raises at one step, the
        RecursionError of recursive-topo on a deep chain, is then that step's fault (protocol 2.1).
        """
        self._fresh()
        return step_hook(self, record_pass=records)

    def _fresh(self) -> None:
        self._created, self._interned, self._kept = [], {}, None
        self._nodes, self._names = {}, {}

    # -- the Session interface (conformance.observe) -----------------------------------

    def create(self, step: Step) -> tuple[float, bool]:
        """Create the step's node, with this engine's bug."""
        assert step.id is not None
        try:
            if step.op in LEAF_OPS:
                node = self._leaf(step.op, step.value)  # type: ignore[arg-type]
            elif step.op == "detach":
                node = self._detach(self._get(step.operands[0]))
            else:
                node = self._apply(step.op, tuple(self._get(a) for a in step.operands), step.exponent)
        except EngineError:
            if self._kept is not None:  # failed-op-kept: the failed node stays under its id
                self._nodes[step.id], self._names[id(self._kept)], self._kept = self._kept, step.id, None
            raise
        self._nodes[step.id] = node
        self._names[id(node)] = step.id
        return node.value, node.tracked

    def backward(self, output: str, seed: float, record: bool) -> Optional[PassRecord]:
        """Backward with this engine's bug; the record names nodes by id."""
        raw = self._backward(self._get(output), seed)
        return _pass_record(raw, self._names) if record else None

    def zero_grad(self, output: str) -> None:
        """zero_grad with this engine's bug."""
        self._zero_grad(self._get(output))

    def gradients(self) -> dict[str, float]:
        """Every stored gradient, by id."""
        return {name: node.grad for name, node in self._nodes.items() if node.grad is not None}

    def name(self, node: Any) -> str:
        """The id a node was created under."""
        return self._names[id(node)]

    def _get(self, name: str) -> _Node:
        if name not in self._nodes:
            raise ProgramError(f"id {name!r} was never created")
        return self._nodes[name]


def _pass_record(record: dict[str, Any], names: dict[int, str]) -> PassRecord:
    has_grad = record["has_grad"]
    return PassRecord(
        seed=record["seed"],
        nodes=[
            NodeRecord(
                names[id(n)],
                n.operation,
                n.value,
                n.tracked,
                record["adjoint"].get(id(n)) if has_grad(n) else None,
                n.grad,
            )
            for n in record["topo"]
        ],
        edges=[
            EdgeRecord(names[id(c)], slot, names[id(o)], local, up, contribution, tracked, before, after)
            for c, slot, o, local, up, contribution, tracked, before, after in record["edges"]
        ],
    )

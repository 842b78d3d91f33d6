"""An audit of the committed corpus against the principles of issue 32 ("a corpus that tells every plausible mistake apart").

Each principle is checked by property over the fixtures, never by case name: what is
needed is a fixture with such and such a shape, wherever it comes from. ``audit`` lists
every unmet requirement; the corpus must meet them all, and removing any family of
conformance/cases/principles.py must make the audit fail (so no family is dead weight
and none can be dropped unnoticed). A port that commits each node's gradient while it
still checks later ones (``backward.atomic`` forbids it) passed the corpus before these
families; a fake of it below must now fail.
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional

import pytest

from conformance.cases import principles
from conformance.compare import compare_level
from conformance.execute import run_program
from conformance.fixture import Fixture, load_corpus, replayable
from conformance.protocol import Profile
from reference.errors import (
    NonFiniteAccumulatedGradient,
    NonFiniteContribution,
    NonFinitePassAdjoint,
    NonFiniteSeed,
    UntrackedOutput,
)
from reference.node import Node, topology
from reference.record import PassRecord

CORPUS = replayable(load_corpus())
BINARY_OPS = ("add", "sub", "mul", "div")
UNARY_OPS = ("neg", "exp", "log", "tanh", "relu", "pow")
#: The kinds of operand a binary op's slot can hold: tracked, or one of the three untracked kinds.
OPERAND_KINDS = ("tracked", "constant", "detached", "untracked-result")
#: The checks made during backward and the error kind each raises.
BACKWARD_CHECKS = {
    "contribution": "non-finite-contribution",
    "pass adjoint": "non-finite-pass-adjoint",
    "accumulation": "non-finite-accumulated-gradient",
}
LARGEST = 1e308  # |x| at least this: among the largest finite values


def _bits(x: Any) -> Any:
    return (math.copysign(1.0, x), x) if isinstance(x, float) and not math.isnan(x) else repr(x)


def _numbers(fields: dict[str, Any]) -> list[Any]:
    return [v for v in fields.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _pairwise_distinct(values: list[Any]) -> bool:
    keys = [_bits(v) for v in values]
    return len(set(keys)) == len(keys)


class Graph:
    """A fixture's program as a graph: each node's operands, kind, tracked flag, value and depth."""

    def __init__(self, fixture: Fixture) -> None:
        self.fixture = fixture
        self.operands: dict[str, tuple[str, ...]] = {}
        self.kind: dict[str, str] = {}
        self.tracked: dict[str, bool] = {}
        self.value: dict[str, float] = {}
        self.depth: dict[str, int] = {}
        self._topologies: dict[str, list[str]] = {}
        self._sets: dict[str, set[str]] = {}
        for step, seen in zip(fixture.program, fixture.expected):
            if step.id is None or seen.error is not None:
                continue
            self.operands[step.id] = step.operands if step.op != "detach" else ()
            self.tracked[step.id] = bool(seen.tracked)
            self.value[step.id] = seen.value  # type: ignore[assignment]
            self.depth[step.id] = 1 + max((self.depth[a] for a in self.operands[step.id]), default=-1)
            if step.op == "constant":
                self.kind[step.id] = "constant"
            elif step.op == "detach":
                self.kind[step.id] = "detached"
            elif step.op == "variable" or seen.tracked:
                self.kind[step.id] = "tracked"
            else:
                self.kind[step.id] = "untracked-result"

    def topology(self, output: str) -> list[str]:
        """The canonical depth-first post-order from ``output`` (docs/contract.md section 7)."""
        if output not in self._topologies:
            self._topologies[output] = self._walk(output)
        return self._topologies[output]

    def reaches(self, output: str, name: str) -> bool:
        """Whether ``name`` is in the topology of ``output``."""
        if output not in self._sets:
            self._sets[output] = set(self.topology(output))
        return name in self._sets[output]

    def _walk(self, output: str) -> list[str]:
        order: list[str] = []
        seen = {output}
        stack = [(output, 0)]
        while stack:
            name, slot = stack[-1]
            operands = self.operands[name]
            if slot < len(operands):
                stack[-1] = (name, slot + 1)
                if operands[slot] not in seen:
                    seen.add(operands[slot])
                    stack.append((operands[slot], 0))
            else:
                stack.pop()
                order.append(name)
        return order

    def below(self, name: str) -> set[str]:
        """Every node ``name`` depends on through operand edges, itself excluded."""
        return set(self.topology(name)) - {name}

    def gradients_before(self, index: int) -> dict[str, float]:
        """The stored gradients just before step ``index`` (the last backward or zero_grad's observation)."""
        for seen in reversed(self.fixture.expected[:index]):
            if seen.gradients is not None:
                return seen.gradients
        return {}

    def gradient_steps(self) -> Iterator[tuple[int, Any, Any]]:
        """(index, step, observation) of every backward and zero_grad."""
        for index, (step, seen) in enumerate(zip(self.fixture.program, self.fixture.expected)):
            if step.id is None:
                yield index, step, seen


def _graphs(fixtures: list[Fixture]) -> list[Graph]:
    return [Graph(f) for f in fixtures if not any(step.repeat is not None for step in f.program)]


# -- the principles -------------------------------------------------------------------------------------


def every_field_distinguishable(graphs: list[Graph]) -> list[str]:
    """Each error kind: a fixture whose error's numeric fields all differ; the same for a pass record's edge fields."""
    kinds: dict[str, bool] = {}
    edges = False
    for graph in graphs:
        for seen in graph.fixture.expected:
            if seen.error is not None:
                distinct = _pairwise_distinct(_numbers(seen.error.fields()))
                kinds[seen.error.kind] = kinds.get(seen.error.kind, False) or distinct
            if seen.pass_ is not None:
                for edge in seen.pass_.edges:
                    fields = [edge.slot, edge.local_derivative, edge.upstream, edge.contribution, edge.before, edge.after]
                    edges = edges or (None not in fields and _pairwise_distinct(fields))
    missing = [
        f"every field distinguishable: no {kind} error whose numeric fields all differ" for kind, ok in kinds.items() if not ok
    ]
    if not edges:
        missing.append(
            "every field distinguishable: no pass-record edge whose slot, local_derivative, upstream, "
            "contribution, before and after all differ"
        )
    return missing


def _failure_position(graph: Graph, index: int, step: Any, error: Any) -> Optional[tuple[str, str]]:
    """(check, position) of a failed backward: first, middle or last node of the walk the check makes."""
    check = next((name for name, kind in BACKWARD_CHECKS.items() if kind == error.kind), None)
    if check is None or step.output not in graph.operands:
        return None
    topo = graph.topology(step.output)
    walk = list(reversed(topo))
    if check == "contribution":  # the consumers, in the order backward walks them
        order, failing = [n for n in walk if graph.operands[n] and graph.tracked[n]], error.consumer
    elif check == "pass adjoint":  # the nodes that receive contributions, in walk order
        order, failing = [n for n in walk if graph.tracked[n] and n != step.output], error.node
    else:  # the accumulations, in the order the contract checks them (the topology)
        order, failing = [n for n in topo if graph.tracked[n]], error.node
    if len(order) < 3 or failing not in order:
        return None
    before = graph.gradients_before(index)
    others = [n for n in order if n != failing and before.get(n, 0.0) != 0.0]
    if not others:  # committing as you go shows only where other nodes have stored gradients to change
        return None
    at = order.index(failing)
    return check, "first" if at == 0 else "last" if at == len(order) - 1 else "middle"


def every_position(graphs: list[Graph]) -> list[str]:
    """Each backward check failing at the first, a middle and the last node of its walk, other nodes holding gradients."""
    found = set()
    for graph in graphs:
        for index, step, seen in graph.gradient_steps():
            if step.op == "backward" and seen.error is not None:
                position = _failure_position(graph, index, step, seen.error)
                if position is not None:
                    found.add(position)
    return [
        f"every position: no {check} failure at the {where} node of the walk with nonzero stored gradients on others"
        for check in BACKWARD_CHECKS
        for where in ("first", "middle", "last")
        if (check, where) not in found
    ]


def every_operand_combination(graphs: list[Graph]) -> list[str]:
    """Each binary op with each kind of operand in each slot, reached by a later backward and zero_grad."""
    found = set()
    for graph in graphs:
        later = [(index, step, seen) for index, step, seen in graph.gradient_steps() if seen.error is None]
        for index, step in enumerate(graph.fixture.program):
            if step.op not in BINARY_OPS or step.id not in graph.operands:
                continue
            reached = {s.op for i, s, _ in later if i > index and graph.reaches(s.output, step.id)}
            if reached >= {"backward", "zero_grad"}:
                found.add((step.op, graph.kind[step.operands[0]], graph.kind[step.operands[1]]))
    return [
        f"every combination: no {op}({a}, {b}) followed by a backward and a zero_grad that reach it"
        for op in BINARY_OPS
        for a in OPERAND_KINDS
        for b in OPERAND_KINDS
        if (op, a, b) not in found
    ]


def every_value_class(graphs: list[Graph]) -> list[str]:
    """Zero adjoints and gradients above nonzero ones, equal values at every depth, later backwards from other outputs."""
    zero_adjoint = zero_gradient = False
    equal_depths: set[int] = set()
    other_outputs = False
    for graph in graphs:
        done: list[str] = []
        for index, step, seen in graph.gradient_steps():
            if seen.error is not None:
                continue
            if step.op == "zero_grad":
                before = graph.gradients_before(index)
                for name in graph.topology(step.output):
                    if not zero_gradient and name in before and before[name] == 0.0:
                        zero_gradient = any(before.get(b, 0.0) != 0.0 for b in graph.below(name))
                continue
            record = seen.pass_
            if record is not None:
                adjoints = {n.node: n.pass_adjoint for n in record.nodes}
                for node in record.nodes:
                    if not zero_adjoint and node.pass_adjoint == 0.0 and node.node != step.output:
                        zero_adjoint = any(adjoints.get(b) not in (None, 0.0) for b in graph.below(node.node))
                by_value: dict[tuple[int, Any], int] = {}
                for node in record.nodes:
                    key = (graph.depth[node.node], _bits(node.value))
                    by_value[key] = by_value.get(key, 0) + 1
                equal_depths |= {depth for (depth, _), count in by_value.items() if count > 1}
            done.append(step.output)
            if len(done) >= 3 and done[1] != done[0] and done[2] != done[0]:
                other_outputs = other_outputs or bool(set(graph.topology(done[0])) & set(graph.topology(done[2])))
    missing = []
    if not zero_adjoint:
        missing.append("every value class: no pass adjoint of exactly 0 on a node above nonzero ones")
    if not zero_gradient:
        missing.append("every value class: no zero_grad over a stored gradient of exactly 0 above nonzero ones")
    missing += [f"every value class: no equal values on distinct nodes at depth {d}" for d in range(4) if d not in equal_depths]
    if not other_outputs:
        missing.append("every value class: no second and third backward from another output than the first's")
    return missing


def _tanh_from_exp(a: float) -> float:
    e = math.exp(2.0 * a)
    return (e - 1.0) / (e + 1.0)


def _composite_differs(graph: Graph, index: int, step: Any, op: str) -> bool:
    """Whether this step's contract value fails the composite form a porter may use for ``op``."""
    values = [graph.value[a] for a in step.operands]
    expected = graph.fixture.expected[index].value
    try:
        if op == "div":
            other = values[0] * (1.0 / values[1])
        else:
            other = _tanh_from_exp(values[0])
    except (OverflowError, ZeroDivisionError):
        return False
    bounds = graph.fixture.step_bounds(Profile.CONTRACT)
    bound = None if bounds is None else bounds[index].get("value", 0.0)
    if expected == other and math.copysign(1.0, expected) == math.copysign(1.0, other):
        return False
    if expected == 0.0 and other == 0.0:
        return bound is None or bound == 0.0
    return bound is None or abs(expected - other) > bound


def every_op_form(graphs: list[Graph]) -> list[str]:
    """Each op at its special operands, pow at its exponents, and a case telling each composite form apart."""
    classes: set[tuple[str, str]] = set()
    composite: set[str] = set()
    for graph in graphs:
        for index, step in enumerate(graph.fixture.program):
            if step.op not in BINARY_OPS + UNARY_OPS or not all(a in graph.value for a in step.operands):
                continue
            for a in step.operands:
                v = graph.value[a]
                if v == 0.0 and math.copysign(1.0, v) < 0:
                    classes.add((step.op, "negative zero"))
                if v != 0.0 and abs(v) < 2.2250738585072014e-308:
                    classes.add((step.op, "subnormal"))
                if math.isfinite(v) and abs(v) >= LARGEST:
                    classes.add((step.op, "largest finite"))
            if step.op == "pow":
                base, c = graph.value[step.operands[0]], step.exponent
                classes.add(("pow", "integral exponent" if float(c).is_integer() else "non-integral exponent"))
                if base < 0:
                    classes.add(("pow", "negative base"))
                if base == 0.0 and c == 0.0:
                    classes.add(("pow", "0^0"))
            if step.id not in graph.value:
                continue
            if step.op in ("div", "tanh") and _composite_differs(graph, index, step, step.op):
                composite.add(step.op)
            if step.op == "sub" and "trace" in graph.fixture.levels:
                if any(
                    s.op == "backward" and graph.reaches(s.output, step.id)
                    for _, s, o in graph.gradient_steps()
                    if o.error is None
                ):
                    composite.add("sub")
    wanted = [(op, c) for op in BINARY_OPS + UNARY_OPS for c in ("negative zero", "subnormal", "largest finite")]
    missing = [f"every op form: no {op} with a {c} operand" for op, c in wanted if (op, c) not in classes]
    exponents = ("integral exponent", "non-integral exponent", "negative base", "0^0")
    missing += [f"every op form: no pow with {c}" for c in exponents if ("pow", c) not in classes]
    names = {
        "div": "a / b against a * (1 / b)",
        "tanh": "tanh against (e^2a - 1) / (e^2a + 1)",
        "sub": "a - b against a + (-b) (trace)",
    }
    missing += [f"every op form: no case telling {text} apart" for op, text in names.items() if op not in composite]
    return missing


PRINCIPLES = (every_field_distinguishable, every_position, every_operand_combination, every_value_class, every_op_form)


def audit(fixtures: list[Fixture]) -> list[str]:
    """Every requirement of the five principles that ``fixtures`` do not meet (empty: all met)."""
    graphs = _graphs(fixtures)
    return [line for principle in PRINCIPLES for line in principle(graphs)]


# -- the tests ------------------------------------------------------------------------------------------


def test_the_committed_corpus_meets_every_principle():
    assert audit(CORPUS) == []


def _family(fixture: Fixture) -> str:
    return fixture.provenance["generator"]


FAMILIES = sorted({_family(f) for f in CORPUS if _family(f).startswith("conformance.cases.principles:")})


def test_the_principles_families_are_all_in_the_corpus():
    assert {f"conformance.cases.principles:{name}" for name in principles.FAMILIES} == set(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_removing_any_principles_family_makes_the_audit_fail(family):
    assert audit([f for f in CORPUS if _family(f) != family]) != []


def test_the_corpus_without_the_principles_families_fails_the_audit_on_every_principle_they_serve():
    rest = [f for f in CORPUS if not _family(f).startswith("conformance.cases.principles:")]
    unmet = audit(rest)
    assert {line.split(":")[0] for line in unmet} >= {"every position", "every combination"}


def _committing_backward(reverse: bool) -> Any:
    """Node._backward of a port that commits each node's total as soon as its accumulation is checked.

    The contract (``backward.atomic``) checks every accumulation first and commits none when
    one overflows; this port has already committed the nodes it checked before the one that
    overflows: in topology order, or (``reverse``) from the output down. Written from
    reference/node.py, with only the commit moved.
    """

    def backward(self: Any, seed: float) -> Any:
        if not self.tracked:
            raise UntrackedOutput(operation=self.operation)
        seed = float(seed)
        if not math.isfinite(seed):
            raise NonFiniteSeed(seed=seed)
        topo = topology(self)
        adjoints: list[Optional[float]] = [0.0 if node.tracked else None for node in topo]
        adjoints[-1] = seed
        for index in range(len(topo) - 1, -1, -1):
            consumer = topo[index]
            upstream = adjoints[index] or 0.0
            for slot, (operand, local) in enumerate(zip(consumer.operands, consumer.local_derivatives)):
                contribution = upstream * local
                if not math.isfinite(contribution):
                    raise NonFiniteContribution(
                        consumer=consumer, slot=slot, operand=operand, upstream=upstream, local_derivative=local
                    )
                if operand.tracked:
                    before = adjoints[operand._place]
                    after = before + contribution
                    if not math.isfinite(after):
                        raise NonFinitePassAdjoint(node=operand, previous=before, contribution=contribution)
                    adjoints[operand._place] = after
        totals: list[Optional[float]] = [None] * len(topo)
        for index in reversed(range(len(topo))) if reverse else range(len(topo)):
            node, adjoint = topo[index], adjoints[index]
            if adjoint is None:
                continue
            total = node._grad + adjoint
            if not math.isfinite(total):
                raise NonFiniteAccumulatedGradient(node=node, stored=node._grad, pass_adjoint=adjoint)
            node._grad = totals[index] = total  # committed before the later nodes are checked
        return PassRecord(seed, tuple(topo), tuple(adjoints), tuple(totals))

    return backward


def _failing(fixtures: list[Fixture]) -> list[str]:
    """The ids of the fixtures the reference, as it is patched now, fails at some level."""
    failed = []
    for fixture in fixtures:
        observations = run_program(fixture.program)
        if any(compare_level(fixture, observations, level, limit=1)[0] for level in fixture.levels):
            failed.append(fixture.id)
    return failed


def _principled() -> set[str]:
    return {f.id for f in CORPUS if _family(f).startswith("conformance.cases.principles:")}


def test_a_port_that_commits_in_topology_order_as_it_checks_fails_only_through_the_principles_families(monkeypatch):
    # issue 32's C++ port: every overflowing accumulation of the corpus before was on the first node checked.
    monkeypatch.setattr(Node, "_backward", _committing_backward(reverse=False))
    failed = _failing(CORPUS)
    assert failed and set(failed) <= _principled(), failed


def test_a_port_that_commits_from_the_output_down_as_it_checks_fails_the_principles_families_too(monkeypatch):
    monkeypatch.setattr(Node, "_backward", _committing_backward(reverse=True))
    assert set(_failing(CORPUS)) & _principled()


def test_the_committing_fake_is_the_reference_where_nothing_overflows(monkeypatch):
    monkeypatch.setattr(Node, "_backward", _committing_backward(False))
    assert not _failing([f for f in CORPUS if "non-finite-accumulated-gradient" not in f.error_kinds])

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
from typing import Any, Callable, Optional

from reference.errors import (
    NODE_FIELDS,
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

from .program import Program, ProgramError

_finite = math.isfinite

#: A wrong local derivative per op: the slip a porter makes most often with it.
WRONG_DERIVATIVES: dict[str, Callable[[tuple[float, ...], float, Optional[float]], tuple[float, ...]]] = {
    "add": lambda a, r, c: (1.0, 0.0),
    "sub": lambda a, r, c: (1.0, 1.0),
    "mul": lambda a, r, c: (a[0], a[1]),
    "div": lambda a, r, c: (1.0 / a[1], r / a[1]),
    "neg": lambda a, r, c: (1.0,),
    "pow": lambda a, r, c: (c * r,),  # type: ignore[operator]
    "exp": lambda a, r, c: (a[0],),
    "log": lambda a, r, c: (a[0],),
    "tanh": lambda a, r, c: (1.0 - r,),
    "relu": lambda a, r, c: (1.0,),
}

#: Every bug of the catalogue and its plain-words description, as a diagnosis prints it.
BUGS: dict[str, str] = {
    "assign": "contributions assigned instead of added: each operand edge overwrites its parent's pass adjoint, "
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
}


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

    def __init__(self, bug: Optional[str] = None) -> None:
        if bug is not None and bug not in BUGS:
            raise ValueError(f"unknown bug {bug!r}; known: {', '.join(BUGS)}")
        self.bug = bug

    # -- graph ----------------------------------------------------------------

    def _leaf(self, operation: str, value: float) -> _Node:
        if not _finite(value):
            raise NonFiniteLeaf(operation=operation, value=value)
        node = _Node(value, operation, (), (), operation == "variable")
        if self.bug == "untracked-grads":
            node.grad = 0.0
        return node

    def _apply(self, op: str, operands: tuple[_Node, ...], exponent: Optional[float]) -> _Node:
        rule = OPS[op].rule
        values = tuple(n.value for n in operands)
        value, locals_ = rule(values[0], exponent) if op == "pow" else rule(*values)
        if not _finite(value):
            raise NonFiniteResult(operation=op, value=value)
        if self.bug == f"wrong-derivative-{op}":
            locals_ = WRONG_DERIVATIVES[op](values, value, exponent)
        for slot, local in enumerate(locals_):
            if not _finite(local):
                raise NonFiniteLocalDerivative(operation=op, operand=slot, value=local)
        node = _Node(value, op, operands, tuple(locals_), any(n.tracked for n in operands))
        if self.bug == "untracked-grads":
            node.grad = 0.0
        return node

    def _detach(self, source: _Node) -> _Node:
        if self.bug == "detach-edge":
            node = _Node(source.value, "detached", (source,), (1.0,), source.tracked)
        else:
            node = _Node(source.value, "detached", (), (), False)
        if self.bug == "untracked-grads":
            node.grad = 0.0
        return node

    def _topology(self, output: _Node) -> list[_Node]:
        if self.bug == "recursive-topo":
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
        if not output.tracked:
            raise UntrackedOutput(operation=output.operation)
        if self.bug == "seed-ignored":
            seed = 1.0
        if not _finite(seed):
            raise NonFiniteSeed(seed=seed)
        topo = self._topology(output)
        has_grad = (lambda n: n.grad is not None) if self.bug == "untracked-grads" else (lambda n: n.tracked)
        if self.bug == "stale":
            return self._stale_backward(topo, seed)
        adjoint: dict[int, float] = {id(n): 0.0 for n in topo if has_grad(n)}
        adjoint[id(output)] = seed
        edges = []
        committed: set[int] = set()
        for child in reversed(topo):
            upstream = adjoint.get(id(child), 0.0)
            if self.bug == "partial-commit" and has_grad(child):
                self._accumulate(child, upstream)
                committed.add(id(child))
            operands = child.operands
            slots = range(len(operands))
            if self.bug == "merge-edges":
                firsts: dict[int, int] = {}
                for slot, operand in enumerate(operands):
                    firsts.setdefault(id(operand), slot)
                slots = sorted(firsts.values())  # type: ignore[assignment]
            for slot in slots:
                parent, local = operands[slot], child.locals[slot]
                contribution = upstream * local
                if not _finite(contribution):
                    raise NonFiniteContribution(
                        child=child, parent=parent, operand=slot, upstream=upstream, local_derivative=local
                    )
                before = after = None
                if has_grad(parent):
                    before = adjoint[id(parent)]
                    after = contribution if self.bug == "assign" else before + contribution
                    if not _finite(after):
                        raise NonFinitePassAdjoint(node=parent, previous=before, contribution=contribution)
                    adjoint[id(parent)] = after
                edges.append((child, parent, slot, local, upstream, contribution, has_grad(parent), before, after))
        totals = {}
        for node in topo:
            if has_grad(node) and id(node) not in committed:
                total = node.grad + adjoint[id(node)]  # type: ignore[operator]
                if not _finite(total):
                    raise NonFiniteAccumulatedGradient(node=node, stored=node.grad, pass_adjoint=adjoint[id(node)])
                totals[id(node)] = total
        for node in topo:
            if id(node) in totals:
                node.grad = totals[id(node)]
        return {"seed": seed, "topo": topo, "adjoint": adjoint, "edges": edges, "has_grad": has_grad}

    def _accumulate(self, node: _Node, pass_adjoint: float) -> None:
        total = node.grad + pass_adjoint  # type: ignore[operator]
        if not _finite(total):
            raise NonFiniteAccumulatedGradient(node=node, stored=node.grad, pass_adjoint=pass_adjoint)
        node.grad = total

    def _stale_backward(self, topo: list[_Node], seed: float) -> dict[str, Any]:
        # micrograd's algorithm: the output's stored gradient is set to the seed and every
        # edge adds child.grad * local into parent.grad, stale values included.
        topo[-1].grad = seed
        edges = []
        for child in reversed(topo):
            for slot, (parent, local) in enumerate(zip(child.operands, child.locals)):
                upstream = child.grad if child.grad is not None else 0.0
                contribution = upstream * local
                before = parent.grad
                if parent.tracked:
                    parent.grad = before + contribution  # type: ignore[operator]
                edges.append((child, parent, slot, local, upstream, contribution, parent.tracked, before, parent.grad))
        adjoint = {id(n): n.grad for n in topo if n.tracked}
        return {"seed": seed, "topo": topo, "adjoint": adjoint, "edges": edges, "has_grad": lambda n: n.tracked}

    def _zero_grad(self, output: _Node) -> None:
        for node in self._topology(output):
            if node.grad is not None and (self.bug != "zero-leaves" or not node.operands):
                node.grad = 0.0

    # -- programs ---------------------------------------------------------------

    def run(self, program: Program) -> list[dict[str, Any]]:
        """Run a program and observe every step in the wire format (see conformance.execute)."""
        nodes: dict[str, _Node] = {}
        names: dict[int, str] = {}
        observations: list[dict[str, Any]] = []

        def gradients() -> dict[str, float]:
            return {name: node.grad for name, node in nodes.items() if node.grad is not None}

        for step in program:
            try:
                if step.id is not None:
                    if step.op in ("variable", "constant"):
                        node = self._leaf(step.op, step.value)  # type: ignore[arg-type]
                    elif step.op == "detach":
                        node = self._detach(self._get(nodes, step.args[0]))
                    else:
                        node = self._apply(step.op, tuple(self._get(nodes, a) for a in step.args), step.exponent)
                    nodes[step.id] = node
                    names[id(node)] = step.id
                    observations.append({"value": node.value, "tracked": node.tracked})
                elif step.op == "zero_grad":
                    self._zero_grad(self._get(nodes, step.output))  # type: ignore[arg-type]
                    observations.append({"gradients": gradients()})
                else:
                    output = self._get(nodes, step.output)  # type: ignore[arg-type]
                    record = self._backward(output, 1.0 if step.seed is None else step.seed)
                    observations.append({"gradients": gradients(), "pass": _pass_json(record, names)})
            except EngineError as error:
                failed: dict[str, Any] = {
                    "error": {"kind": error.kind, **{k: names[id(v)] if k in NODE_FIELDS else v for k, v in error.fields.items()}}
                }
                if step.id is None:
                    failed["gradients"] = gradients()
                observations.append(failed)
        return observations

    @staticmethod
    def _get(nodes: dict[str, _Node], name: str) -> _Node:
        if name not in nodes:
            raise ProgramError(f"id {name!r} was never created")
        return nodes[name]


def _pass_json(record: dict[str, Any], names: dict[int, str]) -> dict[str, Any]:
    has_grad = record["has_grad"]
    return {
        "seed": record["seed"],
        "nodes": [
            {
                "node": names[id(n)],
                "operation": n.operation,
                "value": n.value,
                "tracked": n.tracked,
                "pass_adjoint": record["adjoint"].get(id(n)) if has_grad(n) else None,
                "stored_gradient": n.grad,
            }
            for n in record["topo"]
        ],
        "edges": [
            {
                "child": names[id(c)],
                "parent": names[id(p)],
                "operand": slot,
                "local_derivative": local,
                "upstream": up,
                "contribution": contribution,
                "parent_tracked": tracked,
                "before": before,
                "after": after,
            }
            for c, p, slot, local, up, contribution, tracked, before, after in record["edges"]
        ],
    }

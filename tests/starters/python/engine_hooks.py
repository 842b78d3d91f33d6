"""A tiny correct engine written into the Python starter's hooks, for tests/test_starters.py.

It follows the contract (docs/contract.md sections 3 to 6) with the standard library's
math: every operand edge summed, fresh pass adjoints per backward, every check before
the commit, the canonical depth-first post-order, and a pass record for trace and order.
"""

from __future__ import annotations

import math
import os
from typing import Any, Optional

# A library's banner at import, before the adapter has answered hello: it must stay off the protocol too.
print("engine noise at import")

ENGINE = {"name": "starter-test-engine", "version": "0.1.0", "language": "python"}
OPS = ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "sigmoid", "sqrt", "detach"]
LEVELS = ["values", "gradients", "errors", "trace", "order"]
FEATURES = ["seed"]


class EngineError(Exception):
    def __init__(self, kind: str, **fields: Any) -> None:
        super().__init__(kind)
        self.kind = kind
        self.fields = fields


def _div(a: float, b: float) -> float:
    if b != 0.0:
        return a / b
    if a == 0.0 or math.isnan(a):
        return math.nan
    return math.inf if (math.copysign(1, a) < 0) == (math.copysign(1, b) < 0) else -math.inf


def _exp(a: float) -> float:
    try:
        return math.exp(a)
    except OverflowError:
        return math.inf


def _log(a: float) -> float:
    if a == 0.0:
        return -math.inf
    return math.log(a) if a > 0 else math.nan


def _pow(a: float, c: float) -> float:
    try:
        return math.pow(a, c)
    except OverflowError:
        return math.inf if a > 0 or c % 2 != 1 else -math.inf
    except ValueError:  # a zero base to a negative power, or a negative base to a fraction
        if a == 0.0:
            odd = c % 2 == 1
            return math.copysign(math.inf, a) if odd else math.inf
        return math.nan


def _sigmoid(a: float) -> float:
    # The stable form: exp never overflows, and the value is subnormal or +0.0 far below zero.
    if a >= 0.0:
        return 1.0 / (1.0 + math.exp(-a))
    e = math.exp(a)
    return e / (1.0 + e)


def _sqrt(a: float) -> float:
    return math.sqrt(a) if a >= 0.0 else math.nan  # math.sqrt(-0.0) is -0.0, as IEEE-754 says


def _pow_rule(a: float, c: float) -> tuple[float, list[float]]:
    return _pow(a, c), [0.0 if c == 0.0 else c * _pow(a, c - 1.0)]


# The op table: value and local derivatives from the forward values, as the contract writes them.
RULES = {
    "add": lambda a, b: (a + b, [1.0, 1.0]),
    "sub": lambda a, b: (a - b, [1.0, -1.0]),
    "mul": lambda a, b: (a * b, [b, a]),
    "div": lambda a, b: (lambda r: (r, [_div(1.0, b), -_div(r, b)]))(_div(a, b)),
    "neg": lambda a: (-a, [-1.0]),
    "exp": lambda a: (lambda r: (r, [r]))(_exp(a)),
    "log": lambda a: (_log(a), [_div(1.0, a)]),
    "tanh": lambda a: (lambda t: (t, [1.0 - t * t]))(math.tanh(a)),
    "relu": lambda a: (a, [1.0]) if a > 0.0 else (0.0, [0.0]),
    "sigmoid": lambda a: (lambda s: (s, [s * (1.0 - s)]))(_sigmoid(a)),
    "sqrt": lambda a: (lambda r: (r, [_div(0.5, r)]))(_sqrt(a)),
}


class Node:
    __slots__ = ("value", "operation", "operands", "derivatives", "tracked", "grad", "adjoint")

    def __init__(self, value: float, operation: str, operands: list["Node"], derivatives: list[float], tracked: bool):
        self.value, self.operation, self.operands, self.derivatives = value, operation, operands, derivatives
        self.tracked = tracked
        self.grad = 0.0
        self.adjoint = 0.0


class Engine:
    def __init__(self) -> None:
        self.record: tuple[float, list[Node], list[tuple[Any, ...]]] = (1.0, [], [])

    def _leaf(self, value: float, operation: str) -> Node:
        if not math.isfinite(value):
            raise EngineError("non-finite-leaf", operation=operation, value=value)
        return Node(value, operation, [], [], operation == "variable")

    def variable(self, value: float) -> Node:
        if value == 12345.0:
            # Stray prints, as an engine's debug lines (Python's, and a C extension's on fd 1): kept off the protocol.
            print("engine noise on stdout")
            os.write(1, b"engine noise written to fd 1\n")
        return self._leaf(value, "variable")

    def constant(self, value: float) -> Node:
        return self._leaf(value, "constant")

    def apply(self, op: str, operands: list[Node], exponent: Optional[float]) -> Node:
        values = [n.value for n in operands]
        value, derivatives = _pow_rule(values[0], exponent) if op == "pow" else RULES[op](*values)  # type: ignore[arg-type]
        if not math.isfinite(value):
            raise EngineError("non-finite-result", operation=op, value=value)
        for slot, d in enumerate(derivatives):
            if not math.isfinite(d):
                raise EngineError("non-finite-local-derivative", operation=op, slot=slot, value=d)
        return Node(value, op, list(operands), derivatives, any(n.tracked for n in operands))

    def detach(self, node: Node) -> Node:
        return Node(node.value, "detached", [], [], False)

    def value(self, node: Node) -> float:
        return node.value

    def tracked(self, node: Node) -> bool:
        return node.tracked

    def gradient(self, node: Node) -> float:
        return node.grad

    @staticmethod
    def _topology(output: Node) -> list[Node]:
        # Depth-first post-order from the output, operands in slot order, iteratively (a million-node chain is a case).
        order: list[Node] = []
        seen = {output}
        stack = [(output, iter(output.operands))]
        while stack:
            node, operands = stack[-1]
            for operand in operands:
                if operand not in seen:
                    seen.add(operand)
                    stack.append((operand, iter(operand.operands)))
                    break
            else:
                stack.pop()
                order.append(node)
        return order

    def backward(self, output: Node, seed: float) -> None:
        if not output.tracked:
            raise EngineError("untracked-output", operation=output.operation)
        if not math.isfinite(seed):
            raise EngineError("non-finite-seed", seed=seed)
        topology = self._topology(output)
        for node in topology:
            node.adjoint = 0.0  # fresh pass adjoints; untracked nodes keep 0.0 and are never read
        output.adjoint = seed
        edges = []  # (consumer, slot, operand, local derivative, upstream, contribution, before, after)
        isfinite = math.isfinite
        for consumer in reversed(topology):
            upstream = consumer.adjoint
            for slot, (operand, d) in enumerate(zip(consumer.operands, consumer.derivatives)):
                contribution = upstream * d
                if not isfinite(contribution):
                    raise EngineError(
                        "non-finite-contribution",
                        consumer=consumer,
                        slot=slot,
                        operand=operand,
                        upstream=upstream,
                        local_derivative=d,
                    )
                before = after = None
                if operand.tracked:
                    before = operand.adjoint
                    after = before + contribution
                    if not isfinite(after):
                        raise EngineError("non-finite-pass-adjoint", node=operand, previous=before, contribution=contribution)
                    operand.adjoint = after
                edges.append((consumer, slot, operand, d, upstream, contribution, before, after))
        for node in topology:
            if node.tracked and not isfinite(node.grad + node.adjoint):
                raise EngineError("non-finite-accumulated-gradient", node=node, stored=node.grad, pass_adjoint=node.adjoint)
        for node in topology:
            if node.tracked:
                node.grad += node.adjoint
        self.record = (seed, topology, edges)

    def zero_grad(self, output: Node) -> None:
        for node in self._topology(output):
            node.grad = 0.0

    def pass_record(self) -> dict[str, Any]:
        # Built when asked for, right after the backward it describes (the adapter asks at once, or not at all).
        seed, topology, edges = self.record
        fields = ("consumer", "slot", "operand", "local_derivative", "upstream", "contribution", "before", "after")
        nodes = [{"node": n, "pass_adjoint": n.adjoint if n.tracked else None, "stored_gradient": n.grad} for n in topology]
        return {"seed": seed, "nodes": nodes, "edges": [dict(zip(fields, edge)) for edge in edges]}

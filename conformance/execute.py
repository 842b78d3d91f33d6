"""Run a program on the reference engine and observe every step.

This is what the generator records as a fixture's expectations and what the
python adapter answers on the wire. One observation per step:

    creation, ok:      {"value": v, "tracked": b}
    creation, failed:  {"error": {"kind": k, ...fields}}
    backward, ok:      {"gradients": {id: g, ...}, "pass": {"seed", "nodes", "edges"}}
    backward, failed:  {"error": {...}, "gradients": {...}}
    zero_grad:         {"gradients": {...}}

``gradients`` holds the stored gradient of every tracked node the program has
created so far, so a step that touches a node it should not is visible.
Nodes are named by program id everywhere.
"""

from __future__ import annotations

from typing import Any

import reference
from reference import EngineError, Node, PassRecord
from reference.errors import NODE_FIELDS

from .program import Program, ProgramError

Observation = dict[str, Any]


def run_program(program: Program, *, record_pass: bool = True) -> list[Observation]:
    """Execute ``program`` on a fresh reference graph and return one observation per step.

    Raises ProgramError when a step names an id whose creating step failed.
    """
    nodes: dict[str, Node] = {}
    names: dict[Node, str] = {}
    observations: list[Observation] = []
    for index, step in enumerate(program):
        try:
            if step.id is not None:
                node = _create(step, nodes, index)
                nodes[step.id] = node
                names[node] = step.id
                observations.append({"value": node.value, "tracked": node.tracked})
                continue
            output = _lookup(nodes, step.output, index)  # type: ignore[arg-type]
            if step.op == "zero_grad":
                output.zero_grad()
                observations.append({"gradients": _gradients(nodes)})
                continue
            record = output.backward(1.0 if step.seed is None else step.seed)
            observation: Observation = {"gradients": _gradients(nodes)}
            if record_pass:
                observation["pass"] = pass_to_json(record, names)
            observations.append(observation)
        except EngineError as error:
            failed: Observation = {"error": error_to_json(error, names)}
            if step.id is None:
                failed["gradients"] = _gradients(nodes)
            observations.append(failed)
    return observations


def _create(step: Any, nodes: dict[str, Node], index: int) -> Node:
    if step.op == "variable":
        return reference.variable(step.value)
    if step.op == "constant":
        return reference.constant(step.value)
    operands = tuple(_lookup(nodes, name, index) for name in step.operands)
    if step.op == "detach":
        return operands[0].detach()
    return reference.apply(step.op, operands, step.exponent)


def _lookup(nodes: dict[str, Node], name: str, index: int) -> Node:
    try:
        return nodes[name]
    except KeyError:
        raise ProgramError(f"step {index}: id {name!r} was never created (its creating step failed)") from None


def _gradients(nodes: dict[str, Node]) -> dict[str, float]:
    return {name: node.grad for name, node in nodes.items() if node.grad is not None}


def error_to_json(error: EngineError, names: dict[Node, str]) -> dict[str, Any]:
    """The error as wire data: its kind, then its fields with nodes named by program id."""
    data: dict[str, Any] = {"kind": error.kind}
    for field, value in error.fields.items():
        data[field] = names[value] if field in NODE_FIELDS else value
    return data


def pass_to_json(record: PassRecord, names: dict[Node, str]) -> dict[str, Any]:
    """The pass record as wire data, nodes in topology order, edges in processing order."""
    return {
        "seed": record.seed,
        "nodes": [
            {
                "node": names[n.node],
                "operation": n.operation,
                "value": n.value,
                "tracked": n.tracked,
                "pass_adjoint": n.pass_adjoint,
                "stored_gradient": n.stored_gradient,
            }
            for n in record.nodes
        ],
        "edges": [
            {
                "consumer": names[e.consumer],
                "slot": e.slot,
                "operand": names[e.operand],
                "local_derivative": e.local_derivative,
                "upstream": e.upstream,
                "contribution": e.contribution,
                "operand_tracked": e.operand_tracked,
                "before": e.before,
                "after": e.after,
            }
            for e in record.edges
        ],
    }

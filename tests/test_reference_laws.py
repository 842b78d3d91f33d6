"""Laws of the contract checked on random programs (hypothesis), on the reference engine."""

from __future__ import annotations

import math
import struct

from hypothesis import given
from hypothesis import strategies as st

import reference
from conformance.program import Program
from conformance.strategies import programs
from reference import EngineError, Node, topology


def bits(value):
    return None if value is None else struct.pack("<d", value)


def build(program: Program):
    """Create every node the program creates (skipping failures); return id -> node."""
    nodes: dict[str, Node] = {}
    for step in program:
        if step.id is None:
            continue
        try:
            if step.op == "variable":
                nodes[step.id] = reference.variable(step.value)
            elif step.op == "constant":
                nodes[step.id] = reference.constant(step.value)
            elif step.op == "detach":
                nodes[step.id] = nodes[step.operands[0]].detach()
            else:
                nodes[step.id] = reference.apply(step.op, tuple(nodes[a] for a in step.operands), step.exponent)
        except EngineError:
            pass
    return nodes


def snapshot(nodes):
    return {name: bits(node.grad) for name, node in nodes.items()}


@given(programs())
def test_a_failed_backward_leaves_every_stored_gradient_bit_identical(program):
    nodes = build(program)
    for step in program:
        if step.op != "backward":
            continue
        before = snapshot(nodes)
        try:
            nodes[step.output].backward(1.0 if step.seed is None else step.seed)
        except EngineError:
            assert snapshot(nodes) == before


@given(programs(extreme=False), st.integers(min_value=1, max_value=4))
def test_k_backwards_accumulate_the_iterated_sum_of_pass_adjoints(program, k):
    nodes = build(program)
    output = list(nodes.values())[-1]
    if not output.tracked:
        return
    expected = {node: node.grad for node in topology(output) if node.tracked}
    for _ in range(k):
        record = output.backward()
        for entry in record.nodes:
            if entry.tracked:
                expected[entry.node] = expected[entry.node] + entry.pass_adjoint
                assert bits(entry.stored_gradient) == bits(expected[entry.node])
    for node, total in expected.items():
        assert bits(node.grad) == bits(total)


@given(programs(extreme=False))
def test_zero_grad_then_backward_equals_a_fresh_graph(program):
    used = build(program)
    name = list(used)[-1]
    if not used[name].tracked:
        return
    used[name].backward()
    used[name].backward(0.5)
    used[name].zero_grad()
    used[name].backward()
    fresh = build(program)
    fresh[name].backward()
    reachable = {id(n) for n in topology(used[name])}
    for key, node in used.items():
        if id(node) in reachable:
            assert bits(node.grad) == bits(fresh[key].grad), key


@given(programs(extreme=False))
def test_detach_stops_all_flow(program):
    # Replacing every detached node by a constant of the same value changes no gradient.
    nodes = build(program)
    replaced = build(
        tuple(
            type(step)(op="constant", id=step.id, value=nodes[step.operands[0]].value)
            if step.op == "detach" and step.operands[0] in nodes
            else step
            for step in program
        )
    )
    name = list(nodes)[-1]
    if not nodes[name].tracked:
        return
    nodes[name].backward()
    replaced[name].backward()
    for key, node in nodes.items():
        assert bits(node.grad) == bits(replaced[key].grad), key
        if node.operation == "detached":
            assert node.grad is None and not node.operands


@given(programs())
def test_a_result_is_tracked_iff_an_operand_is(program):
    for node in build(program).values():
        if node.operands:
            assert node.tracked == any(operand.tracked for operand in node.operands)
        else:
            assert node.tracked == (node.operation == "variable")
            assert (node.grad is None) == (not node.tracked)


@given(st.floats(min_value=-10, max_value=10, allow_nan=False), st.sampled_from(["add", "mul", "sub"]))
def test_node_identity_not_equal_values_decides_the_output_boundary(value, op):
    x = reference.variable(value)
    twin = reference.variable(value)
    y = reference.apply(op, (x, reference.constant(2.0)))
    y.backward()
    assert twin.grad == 0.0
    assert [node for node in topology(y) if node.tracked] == [x, y]


@given(programs())
def test_topology_lists_each_reachable_node_once_operands_first_output_last(program):
    nodes = build(program)
    output = list(nodes.values())[-1]
    order = topology(output)
    assert order[-1] is output
    assert len({id(n) for n in order}) == len(order)
    position = {id(n): i for i, n in enumerate(order)}
    for node in order:
        for operand in node.operands:
            assert position[id(operand)] < position[id(node)]


def test_edges_to_one_node_are_never_merged():
    x = reference.variable(3.0)
    y = x * x
    assert y.operands == (x, x) and y.local_derivatives == (3.0, 3.0)


def test_a_creation_error_creates_nothing_and_names_its_fields():
    x = reference.variable(1000.0)
    try:
        x.exp()
        raise AssertionError("exp(1000) must fail")
    except reference.NonFiniteResult as error:
        assert error.kind == "non-finite-result" and error.fields == {"operation": "exp", "value": math.inf}


@given(programs(max_steps=16))
def test_a_pass_records_every_operand_edge_once_and_its_sums_reach_the_pass_adjoints(program):
    # The record's edges are the pass's sweep done again when read (reference/record.py): they must
    # show each edge of the topology exactly once, in reverse topological order, each contribution
    # the product of its upstream and local derivative, and running sums that end at the pass adjoints.
    nodes = build(program)
    for output in {nodes[s.output] for s in program if s.op == "backward" and s.output in nodes}:
        try:
            record = output.backward()
        except EngineError:
            continue
        order = {node: index for index, node in enumerate(record.topology)}
        expected = [(c, slot) for c in reversed(record.topology) for slot in range(len(c.operands))]
        assert [(e.consumer, e.slot) for e in record.edges] == expected
        last_after = {}
        for edge in record.edges:
            assert bits(edge.contribution) == bits(edge.upstream * edge.local_derivative)
            assert edge.operand is edge.consumer.operands[edge.slot] and order[edge.operand] < order[edge.consumer]
            if edge.operand_tracked:
                last_after[edge.operand] = edge.after
        for node, adjoint in zip(record.topology, record.pass_adjoints):
            if node in last_after:
                assert bits(last_after[node]) == bits(adjoint)

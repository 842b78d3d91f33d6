"""Depth is limited only by memory: a million-node chain builds, runs backward and zero_grad."""

import reference


def test_a_million_node_chain_runs_backward_and_zero_grad_without_recursion():
    x = reference.variable(0.5)
    node = x
    one = reference.constant(1.0)
    for _ in range(1_000_000):
        node = reference.apply("add", (node, one))
    record = node.backward()
    assert len(record.nodes) == 1_000_002 and x.grad == 1.0
    node.zero_grad()
    assert x.grad == 0.0 and node.grad == 0.0

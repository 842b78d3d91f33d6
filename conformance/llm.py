"""Turn the tiny GPT's graphs into a program: the model as fixture steps, node for node.

The model (``reference/model.py``) builds ordinary reference nodes; this
module walks what a loss reaches and writes one program step per node, so
``run_program`` on the result rebuilds exactly the same values (the same ops
on the same operand values give the same bits). Ids are short because a
model graph has tens of thousands of nodes: ``p<k>`` for the k-th parameter in
the model's initialisation order (every parameter gets a step, used or not,
so the fixture shows every parameter's stored gradient), ``c<k>`` for
constants, ``n<k>`` for operation results. Steps come in the canonical
topological order of each output (operands before results), which is a valid
creation order.
"""

from __future__ import annotations

from typing import Any, Sequence

from reference import Node
from reference.node import topology

from .program import Program, parse_program


class ProgramRecorder:
    """Collects steps for parameters, document graphs, backward and zero_grad, naming every node once."""

    def __init__(self, parameters: Sequence[Node]) -> None:
        self.steps: list[dict[str, Any]] = []
        self.ids: dict[Node, str] = {}
        self._constants = 0
        self._results = 0
        for index, node in enumerate(parameters):
            if node.operation != "variable":
                raise ValueError(f"parameter {index} is a {node.operation} node, not a variable leaf")
            self._name(node, f"p{index}")
            self.steps.append({"id": f"p{index}", "op": "variable", "value": node.value})

    def _name(self, node: Node, name: str) -> str:
        self.ids[node] = name
        return name

    def graph(self, output: Node) -> str:
        """Add a step for every node ``output`` reaches that has none yet; return the output's id."""
        for node in topology(output):
            if node in self.ids:
                continue
            if node.operation == "constant":
                self.steps.append({"id": self._name(node, f"c{self._constants}"), "op": "constant", "value": node.value})
                self._constants += 1
            elif node.operands:
                step: dict[str, Any] = {
                    "id": self._name(node, f"n{self._results}"),
                    "op": node.operation,
                    "operands": [self.ids[operand] for operand in node.operands],
                }
                if node.exponent is not None:
                    step["exponent"] = node.exponent
                self.steps.append(step)
                self._results += 1
            else:
                # A variable the model did not declare as a parameter would be a model bug.
                raise ValueError(f"the graph reaches a {node.operation} leaf that is not a parameter: {node!r}")
        return self.ids[output]

    def backward(self, output: Node) -> None:
        """Add ``backward(output)`` (seed 1)."""
        self.steps.append({"op": "backward", "output": self.ids[output]})

    def zero_grad(self, output: Node) -> None:
        """Add ``zero_grad(output)``."""
        self.steps.append({"op": "zero_grad", "output": self.ids[output]})

    def program(self, source: str) -> Program:
        """The recorded steps as a checked program."""
        return parse_program(self.steps, source)

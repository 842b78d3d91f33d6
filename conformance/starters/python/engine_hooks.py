"""Engine hooks: EDIT THIS FILE to connect your engine to the conformance kit.

adapter.py (do not edit it) speaks the protocol and calls the methods of ``Engine``
below, one fresh ``Engine`` per case. Each method says what the contract
(`conformance docs contract`) expects of it. Until you fill one in it raises
``NotImplementedError``, which the adapter reports as an ``error`` for the case, so
the kit runs from the first minute and tells you which hook to connect next.

Nodes are whatever your engine uses (objects, or integer indices into a tape): the
adapter only hands them back to you, and names them by the program's ids on the wire.
When your engine refuses an operation the contract says must fail, raise
``EngineError(kind, **fields)`` with exactly the fields of that kind, nodes as your
node objects (docs/contract.md sections 3 to 5; `conformance docs protocol` lists them).
"""

from __future__ import annotations

from typing import Any, Optional

# ---- config block: what your engine supports (sent in the hello reply) -------------------
ENGINE = {"name": "my-engine", "version": "0.1.0", "language": "python"}
#: The ops your engine has, among add sub mul div neg pow exp log tanh relu detach;
#: also sigmoid and sqrt, the optional ops, only if your engine has them.
OPS = ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "detach"]
#: The levels you report honestly: values gradients errors, and trace/order once pass_record works.
LEVELS = ["values", "gradients", "errors"]
#: "seed" if backward accepts a seed other than 1. (adapter.py adds "repeat": it runs repeated steps itself.)
FEATURES = ["seed"]
# ---- end of config block -------------------------------------------------------------------


class EngineError(Exception):
    """A contract error (docs/contract.md sections 3 to 5): its kind and exactly its fields.

    Kinds and fields: non-finite-leaf (operation, value); non-finite-result (operation, value);
    non-finite-local-derivative (operation, slot, value); untracked-output (operation);
    non-finite-seed (seed); non-finite-contribution (consumer, slot, operand, upstream,
    local_derivative); non-finite-pass-adjoint (node, previous, contribution);
    non-finite-accumulated-gradient (node, stored, pass_adjoint). consumer, operand and node are nodes.
    Keep this class: adapter.py imports it.
    """

    def __init__(self, kind: str, **fields: Any) -> None:
        super().__init__(f"{kind} {fields}")
        self.kind = kind
        self.fields = fields


def not_connected(hook: str) -> NotImplementedError:
    return NotImplementedError(f"not implemented: connect {hook} to your engine (engine_hooks.py)")


class Engine:
    """Your engine behind the hooks; a fresh one per case, so no case sees another's graph."""

    def __init__(self) -> None:
        pass

    def variable(self, value: float) -> Any:
        """A tracked leaf. A non-finite value raises EngineError("non-finite-leaf", operation="variable", value=value)."""
        raise not_connected("Engine.variable")

    def constant(self, value: float) -> Any:
        """An untracked leaf; non-finite-leaf as for variable, with operation="constant"."""
        raise not_connected("Engine.constant")

    def apply(self, op: str, operands: list[Any], exponent: Optional[float]) -> Any:
        """The result node of op (add sub mul div: two operands; neg exp log tanh relu sigmoid sqrt pow: one).

        exponent is pow's constant (None for the other ops). A non-finite value raises
        non-finite-result (operation, value); a finite value with a non-finite local derivative
        raises non-finite-local-derivative (operation, operand slot, value of the derivative).
        """
        raise not_connected("Engine.apply")

    def detach(self, node: Any) -> Any:
        """An untracked leaf with node's value and no edge."""
        raise not_connected("Engine.detach")

    def value(self, node: Any) -> float:
        """The node's forward value."""
        raise not_connected("Engine.value")

    def tracked(self, node: Any) -> bool:
        """Whether the node takes part in gradients (a variable, or an op with a tracked operand)."""
        raise not_connected("Engine.tracked")

    def backward(self, output: Any, seed: float) -> None:
        """Backward from output with this seed (docs/contract.md section 5).

        Checks in order: untracked-output, non-finite-seed, then per edge non-finite-contribution and
        non-finite-pass-adjoint, then per node non-finite-accumulated-gradient; commit only if all pass.
        """
        raise not_connected("Engine.backward")

    def zero_grad(self, output: Any) -> None:
        """Set the stored gradient of every tracked node reachable from output to 0.0."""
        raise not_connected("Engine.zero_grad")

    def gradient(self, node: Any) -> float:
        """The stored gradient of a tracked node."""
        raise not_connected("Engine.gradient")

    def pass_record(self) -> dict[str, Any]:
        """Optional, for the trace and order levels: what the last successful backward did.

        Return {"seed": s, "nodes": [{"node", "pass_adjoint", "stored_gradient"}, ...] in topology
        order, "edges": [{"consumer", "slot", "operand", "local_derivative", "upstream",
        "contribution", "before", "after"}, ...] in processing order}. The adapter adds each
        node's operation, value and tracked flag itself. Add "trace"/"order" to LEVELS when it works.
        """
        raise not_connected("Engine.pass_record")

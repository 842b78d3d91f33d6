"""The eight typed errors of the contract (docs/contract.md sections 3-5).

Every error carries its fields as attributes and in ``fields`` (in the
contract's order), and its ``kind`` is the contract's kebab-case name, the
same string the Rust and Go ports and the wire protocol use. Fields that name
a node (``consumer``, ``operand``, ``node``) hold the engine's node handle; the
fixture layer translates them to program ids.
"""

from __future__ import annotations

from typing import Any, ClassVar


class EngineError(Exception):
    """Base of every typed error the reference engine raises.

    Raising one never changes engine state: creation errors create no node, and
    backward errors are raised before any stored gradient is committed.
    """

    kind: ClassVar[str] = ""
    field_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **fields: Any) -> None:
        missing = [name for name in self.field_names if name not in fields]
        extra = [name for name in fields if name not in self.field_names]
        if missing or extra:
            raise TypeError(f"{self.kind}: missing fields {missing}, unexpected fields {extra}")
        self.fields: dict[str, Any] = {name: fields[name] for name in self.field_names}
        for name, value in self.fields.items():
            setattr(self, name, value)
        super().__init__(self._message())

    def _message(self) -> str:
        parts = ", ".join(f"{name}={value!r}" for name, value in self.fields.items())
        return f"{self.kind}: {parts}"


class NonFiniteLeaf(EngineError):
    """A variable or constant was given inf or nan."""

    kind = "non-finite-leaf"
    field_names = ("operation", "value")


class NonFiniteResult(EngineError):
    """An operation's value is inf or nan (exp overflow, log(0), x/0, ...)."""

    kind = "non-finite-result"
    field_names = ("operation", "value")


class NonFiniteLocalDerivative(EngineError):
    """An operation's value is finite but a local derivative is not (log of a subnormal)."""

    kind = "non-finite-local-derivative"
    field_names = ("operation", "slot", "value")


class UntrackedOutput(EngineError):
    """backward was called on a node that takes no part in gradients."""

    kind = "untracked-output"
    field_names = ("operation",)


class NonFiniteSeed(EngineError):
    """backward was given an infinite or nan seed."""

    kind = "non-finite-seed"
    field_names = ("seed",)


class NonFiniteContribution(EngineError):
    """upstream * local_derivative overflowed on one operand edge."""

    kind = "non-finite-contribution"
    field_names = ("consumer", "slot", "operand", "upstream", "local_derivative")


class NonFinitePassAdjoint(EngineError):
    """Adding a contribution to a node's pass adjoint overflowed."""

    kind = "non-finite-pass-adjoint"
    field_names = ("node", "previous", "contribution")


class NonFiniteAccumulatedGradient(EngineError):
    """Adding a pass adjoint to a node's stored gradient would overflow."""

    kind = "non-finite-accumulated-gradient"
    field_names = ("node", "stored", "pass_adjoint")


ERROR_KINDS: dict[str, type[EngineError]] = {
    cls.kind: cls
    for cls in (
        NonFiniteLeaf,
        NonFiniteResult,
        NonFiniteLocalDerivative,
        UntrackedOutput,
        NonFiniteSeed,
        NonFiniteContribution,
        NonFinitePassAdjoint,
        NonFiniteAccumulatedGradient,
    )
}
"""Every error kind of the contract, by its kebab-case name."""

#: Fields whose value is a node (a program id on the wire).
NODE_FIELDS = frozenset({"consumer", "operand", "node"})

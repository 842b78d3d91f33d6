"""The reference scalar reverse-mode autodiff engine of the conformance kit.

Its semantics are the contract of docs/contract.md: every other engine is compared
with what this one computes. Build graphs with ``variable`` and ``constant``,
combine nodes with the op methods (add sub mul div neg pow exp log tanh relu
sigmoid sqrt) or Python operators, call ``backward`` for a pass record and ``zero_grad`` to
reset stored gradients.
"""

from .errors import (
    ERROR_KINDS,
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
from .gradcheck import GradCheck, gradcheck
from .node import Node, apply, constant, topology, variable
from .ops import IEEE_EXACT_OPS, OPS, Op
from .record import EdgeRecord, NodeRecord, PassRecord

__version__ = "1.0.0"

__all__ = [
    "ERROR_KINDS",
    "EdgeRecord",
    "EngineError",
    "GradCheck",
    "IEEE_EXACT_OPS",
    "Node",
    "NodeRecord",
    "NonFiniteAccumulatedGradient",
    "NonFiniteContribution",
    "NonFiniteLeaf",
    "NonFiniteLocalDerivative",
    "NonFinitePassAdjoint",
    "NonFiniteResult",
    "NonFiniteSeed",
    "OPS",
    "Op",
    "PassRecord",
    "UntrackedOutput",
    "apply",
    "constant",
    "gradcheck",
    "topology",
    "variable",
]

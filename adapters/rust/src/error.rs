//! The eight typed errors of the contract (docs/contract.md sections 3-5).
//!
//! Every variant carries its fields, in the contract's order, and its
//! [`Error::kind`] is the contract's kebab-case name, the same string the
//! Python reference, the Go port and the wire protocol use. Fields that name a
//! node (`consumer`, `operand`, `node`) hold a [`NodeInfo`]: the node's id on its
//! tape with the operation and value a message quotes (the program runner
//! translates the id to a program id). Returning an error never
//! changes engine state: a failed creation creates no node, and a failed
//! backward commits no stored gradient.

use std::fmt;

use crate::scalar::Operation;
use crate::tape::NodeId;

/// A node as an error names it: its id on its tape, its operation and its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeInfo {
    /// The node's position on its tape.
    pub id: NodeId,
    /// How the node was made.
    pub operation: Operation,
    /// Its forward value.
    pub value: f64,
}

/// A contract error raised by a leaf constructor, an operation or backward.
#[derive(Clone, Debug)]
pub enum Error {
    /// A variable or constant was given inf or nan.
    NonFiniteLeaf {
        /// `variable` or `constant`.
        operation: Operation,
        /// The rejected value.
        value: f64,
    },
    /// An operation's value is inf or nan (exp overflow, log(0), x/0, ...).
    NonFiniteResult {
        /// The operation that was applied.
        operation: Operation,
        /// The non-finite value it computed.
        value: f64,
    },
    /// An operation's value is finite but a local derivative is not (log of a subnormal).
    NonFiniteLocalDerivative {
        /// The operation that was applied.
        operation: Operation,
        /// The operand slot whose local derivative is not finite.
        slot: usize,
        /// The non-finite local derivative.
        value: f64,
    },
    /// backward was called on a node that takes no part in gradients.
    UntrackedOutput {
        /// The output node's operation.
        operation: Operation,
    },
    /// backward was given an infinite or nan seed.
    NonFiniteSeed {
        /// The rejected seed.
        seed: f64,
    },
    /// `upstream * local_derivative` overflowed (or was nan) on one operand edge.
    NonFiniteContribution {
        /// The node whose operation reads the operand.
        consumer: NodeInfo,
        /// The operand slot of the edge.
        slot: usize,
        /// The node the consumer reads in this slot.
        operand: NodeInfo,
        /// The consumer's pass adjoint.
        upstream: f64,
        /// The edge's local derivative.
        local_derivative: f64,
    },
    /// Adding a contribution to a node's pass adjoint overflowed.
    NonFinitePassAdjoint {
        /// The node whose pass adjoint overflowed.
        node: NodeInfo,
        /// Its pass adjoint before the contribution.
        previous: f64,
        /// The contribution that was added.
        contribution: f64,
    },
    /// Adding a pass adjoint to a node's stored gradient would overflow.
    NonFiniteAccumulatedGradient {
        /// The node whose stored gradient would overflow.
        node: NodeInfo,
        /// Its stored gradient, unchanged.
        stored: f64,
        /// This pass's adjoint for it.
        pass_adjoint: f64,
    },
}

/// Every error kind of the contract, in the contract's order.
pub const ERROR_KINDS: [&str; 8] = [
    "non-finite-leaf",
    "non-finite-result",
    "non-finite-local-derivative",
    "untracked-output",
    "non-finite-seed",
    "non-finite-contribution",
    "non-finite-pass-adjoint",
    "non-finite-accumulated-gradient",
];

impl Error {
    /// The contract's kebab-case name of this error, as used on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::NonFiniteLeaf { .. } => ERROR_KINDS[0],
            Error::NonFiniteResult { .. } => ERROR_KINDS[1],
            Error::NonFiniteLocalDerivative { .. } => ERROR_KINDS[2],
            Error::UntrackedOutput { .. } => ERROR_KINDS[3],
            Error::NonFiniteSeed { .. } => ERROR_KINDS[4],
            Error::NonFiniteContribution { .. } => ERROR_KINDS[5],
            Error::NonFinitePassAdjoint { .. } => ERROR_KINDS[6],
            Error::NonFiniteAccumulatedGradient { .. } => ERROR_KINDS[7],
        }
    }
}

/// A node as an error message shows it: its operation and value.
struct Shown<'a>(&'a NodeInfo);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} node #{} (value {:?})",
            self.0.operation, self.0.id.0, self.0.value
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.kind())?;
        match self {
            Error::NonFiniteLeaf { operation, value } => {
                write!(f, "{operation}({value:?}): a leaf value must be finite")
            }
            Error::NonFiniteResult { operation, value } => {
                write!(f, "{operation} computed the value {value:?}")
            }
            Error::NonFiniteLocalDerivative {
                operation,
                slot,
                value,
            } => {
                write!(
                    f,
                    "{operation} has the local derivative {value:?} for operand slot {slot}"
                )
            }
            Error::UntrackedOutput { operation } => {
                write!(f, "backward from an untracked {operation} node")
            }
            Error::NonFiniteSeed { seed } => write!(f, "backward seed {seed:?} is not finite"),
            Error::NonFiniteContribution {
                consumer,
                slot,
                operand,
                upstream,
                local_derivative,
            } => write!(
                f,
                "upstream {upstream:?} * local derivative {local_derivative:?} is not finite \
                 on the edge from slot {slot} of the {} to its operand, the {}",
                Shown(consumer),
                Shown(operand)
            ),
            Error::NonFinitePassAdjoint {
                node,
                previous,
                contribution,
            } => write!(
                f,
                "pass adjoint {previous:?} + contribution {contribution:?} is not finite for the {}",
                Shown(node)
            ),
            Error::NonFiniteAccumulatedGradient {
                node,
                stored,
                pass_adjoint,
            } => write!(
                f,
                "stored gradient {stored:?} + pass adjoint {pass_adjoint:?} is not finite for the {}",
                Shown(node)
            ),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_the_bad_input() {
        let error = crate::Tape::new().variable(f64::NEG_INFINITY).unwrap_err();
        assert_eq!(
            error.to_string(),
            "non-finite-leaf: variable(-inf): a leaf value must be finite"
        );
        let seed = Error::NonFiniteSeed { seed: f64::NAN };
        assert_eq!(
            seed.to_string(),
            "non-finite-seed: backward seed NaN is not finite"
        );
    }
}

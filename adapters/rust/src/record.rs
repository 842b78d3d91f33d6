//! The pass record: what one backward call computed, node by node and edge by edge.
//!
//! [`Scalar::backward_recorded`](crate::Scalar::backward_recorded) returns a [`PassRecord`]
//! (docs/contract.md section 5, "The pass record") when it is asked for one:
//! [`Scalar::backward`](crate::Scalar::backward), the fast path, builds none.
//! Nodes are named by [`NodeId`], plain numbers, so a record holds no pointer
//! into the graph; the program runner names them by program id.

use crate::scalar::Operation;
use crate::tape::NodeId;

/// One node of the topology: its pass adjoint and its stored gradient after commit.
#[derive(Clone, Debug)]
pub struct NodeRecord {
    /// The node.
    pub node: NodeId,
    /// How it was made.
    pub operation: Operation,
    /// Its forward value.
    pub value: f64,
    /// Whether it takes part in gradients.
    pub tracked: bool,
    /// This pass's adjoint; `None` for an untracked node.
    pub pass_adjoint: Option<f64>,
    /// The stored gradient after commit; `None` for an untracked node.
    pub stored_gradient: Option<f64>,
}

/// One operand edge as backward walked it: (consumer, slot) -> operand.
///
/// `consumer` reads `operand` in operand slot `slot`. `upstream` is the
/// consumer's pass adjoint (0.0 for an untracked consumer) and `contribution`
/// is `upstream * local_derivative`. `before` and `after` are the operand's
/// pass adjoint around this edge, `None` when the operand is untracked. The
/// fields are in the order the wire writes them (docs/protocol.md).
#[derive(Clone, Debug)]
pub struct EdgeRecord {
    /// The node whose operation reads the operand.
    pub consumer: NodeId,
    /// The operand's 0-based position among the consumer's operands.
    pub slot: usize,
    /// The node the consumer reads in this slot.
    pub operand: NodeId,
    /// The edge's local derivative.
    pub local_derivative: f64,
    /// The consumer's pass adjoint (0.0 for an untracked consumer).
    pub upstream: f64,
    /// `upstream * local_derivative`.
    pub contribution: f64,
    /// Whether the operand takes part in gradients.
    pub operand_tracked: bool,
    /// The operand's pass adjoint before this edge; `None` when untracked.
    pub before: Option<f64>,
    /// The operand's pass adjoint after this edge; `None` when untracked.
    pub after: Option<f64>,
}

/// A successful recorded backward pass: the seed, nodes in topology order, edges in processing order.
#[derive(Clone, Debug)]
pub struct PassRecord {
    /// The seed (the output's pass adjoint).
    pub seed: f64,
    /// Every node reachable from the output, in canonical topology order (output last).
    pub nodes: Vec<NodeRecord>,
    /// Every operand edge, in the order backward processed it.
    pub edges: Vec<EdgeRecord>,
}

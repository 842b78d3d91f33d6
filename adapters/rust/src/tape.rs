//! The tape: every node of one graph in one `Vec`, named by `u32` index.
//!
//! A node is plain data: its value, its operation, whether it is tracked, and
//! its operand edges, one per slot, each an operand index with the local
//! derivative evaluated at creation (docs/contract.md sections 1 and 4), so
//! `x*x` holds two edges to the same `x` and never merges them. The fields
//! live in one array each, indexed by node id: the structure (`Link`, 12
//! bytes), the value, the local derivatives and the stored gradient, 44 bytes
//! per node in all. Nothing on the tape is a pointer and no node owns a heap
//! allocation: creating a node is a few pushes, and dropping a graph of any
//! depth is freeing a few `Vec`s.
//!
//! The tape also owns the scratch of backward and zero_grad (each node's visit
//! mark, one buffer for the topological order and the walk's stack, the pass
//! adjoints), sized to the tape and reused by every pass, so a pass allocates
//! nothing once the tape has grown (see `backward.rs`). Memory is time here:
//! a fresh page costs about as much as the work on the nodes it holds, so a
//! node is 44 bytes and the scratch 13 bytes per node.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use crate::error::Error;
use crate::ops::OpKind;
use crate::scalar::{Operation, Scalar};

/// The position of a node on its tape: nodes are numbered 0, 1, 2, ... in
/// creation order, so every operand's id is smaller than its result's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The node's creation index on its tape.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The structure of one node (docs/contract.md section 1): how it was made and
/// its operand edges' operand nodes, 12 bytes. Its value, local derivatives and
/// stored gradient sit in arrays of their own at the same index, so that a
/// walk, which reads only structure, touches few cache lines per node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link {
    /// The operand node of each slot; only the first `arity` are meaningful.
    pub(crate) operands: [u32; 2],
    pub(crate) operation: Operation,
    /// Number of operand slots in use (0, 1 or 2).
    pub(crate) arity: u8,
    /// `TRACKED` for a tracked node, plus `OPERAND_TRACKED << slot` for each
    /// tracked operand, so a pass learns whether an operand is tracked without
    /// reading the operand node.
    pub(crate) flags: u8,
}

/// `Link::flags`: the node is tracked.
pub(crate) const TRACKED: u8 = 1;
/// `Link::flags`: the operand of slot 0 is tracked (`<< 1` for slot 1).
pub(crate) const OPERAND_TRACKED: u8 = 2;

impl Link {
    /// Whether the node takes part in gradients.
    #[inline]
    pub(crate) fn tracked(&self) -> bool {
        self.flags & TRACKED != 0
    }

    /// Whether the operand of `slot` takes part in gradients.
    #[inline]
    pub(crate) fn operand_tracked(&self, slot: usize) -> bool {
        self.flags & (OPERAND_TRACKED << slot) != 0
    }
}

/// The reusable buffers of walks and backward passes, sized to the tape.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// The generation of the last walk that visited each node, by node id, so
    /// "visited" is one comparison, with no hash set. One byte per node in a
    /// dense array: the walk tests the mark of every operand it meets, mostly
    /// nodes far apart on the tape, so a small array keeps those tests in cache.
    pub(crate) marks: Vec<u8>,
    /// The generation of the current walk; the marks are cleared when it wraps.
    pub(crate) generation: u8,
    /// The last walk's canonical order (docs/contract.md section 7) in
    /// `walk[..order_len]`; during the walk its stack grows down from the end
    /// of the same buffer (a node is on the stack or in the order, never both).
    pub(crate) walk: Vec<u32>,
    pub(crate) order_len: usize,
    /// Pass adjoints by node id, reset for the reachable nodes of each pass.
    pub(crate) adjoint: Vec<f64>,
}

/// The nodes of one graph, one array per field, and the scratch buffers of its passes.
#[derive(Debug, Default)]
pub(crate) struct TapeData {
    /// Each node's structure.
    pub(crate) links: Vec<Link>,
    /// Each node's forward value.
    pub(crate) values: Vec<f64>,
    /// The local derivative of each operand slot, evaluated at creation. pow
    /// has one slot, so its constant exponent is kept in the unused second entry.
    pub(crate) local_derivatives: Vec<[f64; 2]>,
    /// The stored gradient; meaningful only for a tracked node.
    pub(crate) grads: Vec<f64>,
    pub(crate) scratch: Scratch,
}

impl TapeData {
    /// How many nodes the tape holds.
    pub(crate) fn len(&self) -> usize {
        self.links.len()
    }

    #[inline]
    fn push(&mut self, link: Link, value: f64, local_derivatives: [f64; 2]) -> NodeId {
        let id = u32::try_from(self.links.len())
            .ok()
            .filter(|&id| id < u32::MAX)
            .expect("a tape holds fewer than 2^32 - 1 nodes");
        self.links.push(link);
        self.values.push(value);
        self.local_derivatives.push(local_derivatives);
        self.grads.push(0.0);
        NodeId(id)
    }

    /// Room for `nodes` more nodes before any array reallocates.
    pub(crate) fn reserve(&mut self, nodes: usize) {
        self.links.reserve(nodes);
        self.values.reserve(nodes);
        self.local_derivatives.reserve(nodes);
        self.grads.reserve(nodes);
    }

    /// A leaf: `variable` (tracked), `constant` or `detached` (untracked).
    #[inline]
    pub(crate) fn leaf(&mut self, value: f64, operation: Operation) -> Result<NodeId, Error> {
        if !value.is_finite() {
            return Err(Error::NonFiniteLeaf { operation, value });
        }
        let link = Link {
            operands: [0; 2],
            operation,
            arity: 0,
            flags: if operation == Operation::Variable {
                TRACKED
            } else {
                0
            },
        };
        Ok(self.push(link, value, [0.0; 2]))
    }

    /// An untracked copy of `id`'s value with no edge to it (docs/contract.md section 3).
    pub(crate) fn detach(&mut self, id: NodeId) -> NodeId {
        let value = self.values[id.index()];
        self.leaf(value, Operation::Detached)
            .expect("a node's value is finite")
    }

    /// Apply `kind` to the operand nodes (docs/contract.md section 4); no node on failure.
    ///
    /// # Panics
    ///
    /// When the operand count is not the op's arity, or the exponent is missing,
    /// not finite, or given to an op other than pow.
    #[inline]
    pub(crate) fn apply(
        &mut self,
        kind: OpKind,
        operands: &[NodeId],
        exponent: Option<f64>,
    ) -> Result<NodeId, Error> {
        let op = kind.op();
        assert_eq!(
            operands.len(),
            op.arity,
            "{} takes {} operand(s), got {}",
            op.name,
            op.arity,
            operands.len()
        );
        let first = operands[0].0;
        let (second_operand, exponent) = if op.takes_exponent {
            match exponent {
                Some(c) if c.is_finite() => (None, c),
                _ => panic!(
                    "{} needs a finite constant exponent, got {exponent:?}",
                    op.name
                ),
            }
        } else {
            assert!(exponent.is_none(), "{} takes no exponent", op.name);
            (operands.get(1).map(|b| b.0), 0.0)
        };
        self.apply_resolved(kind, first, second_operand, exponent)
    }

    /// `apply` for a caller that has checked what `apply` asserts (ids on
    /// this tape, as many operands as the op's arity, pow's exponent finite):
    /// `kind` applied to the node `first` and, for a binary op, the node
    /// `second_operand`; `exponent` is pow's exponent and must be 0.0 for
    /// every other unary op. Inlined into the program runner's loop.
    #[inline(always)]
    pub(crate) fn apply_resolved(
        &mut self,
        kind: OpKind,
        first: u32,
        second_operand: Option<u32>,
        exponent: f64,
    ) -> Result<NodeId, Error> {
        let second = match second_operand {
            Some(b) => self.values[b as usize],
            None => exponent,
        };
        match self.push_result(kind, first, second_operand, second) {
            Some(id) => Ok(id),
            None => Err(creation_error(kind, self.values[first as usize], second)),
        }
    }

    /// Evaluate `kind` on the operand `first` and `second` (the second
    /// operand's value, pow's exponent, or 0.0) and push the result node, or
    /// push nothing and return `None` when the value or a local derivative is
    /// not finite. Inlined into every caller and free of the error type, so
    /// creating a node is straight-line code; `creation_error` says which
    /// check failed.
    #[inline(always)]
    fn push_result(
        &mut self,
        kind: OpKind,
        first: u32,
        second_operand: Option<u32>,
        second: f64,
    ) -> Option<NodeId> {
        let (value, mut local_derivatives) = kind.evaluate(self.values[first as usize], second);
        let [first_local, second_local] = local_derivatives;
        // A unary rule's unused slot is 0.0, so one test covers every op.
        if !(value.is_finite() & first_local.is_finite() & second_local.is_finite()) {
            return None;
        }
        let mut operands = [first; 2];
        let mut flags = if self.links[first as usize].tracked() {
            OPERAND_TRACKED
        } else {
            0
        };
        if let Some(b) = second_operand {
            operands[1] = b;
            if self.links[b as usize].tracked() {
                flags |= OPERAND_TRACKED << 1;
            }
        }
        if flags != 0 {
            // Tracked iff an operand is (docs/contract.md section 3).
            flags |= TRACKED;
        }
        if kind == OpKind::Pow {
            // pow's second slot is unused: it keeps the exponent.
            local_derivatives[1] = second;
        }
        let link = Link {
            operands,
            operation: Operation::Op(kind),
            arity: if second_operand.is_some() { 2 } else { 1 },
            flags,
        };
        Some(self.push(link, value, local_derivatives))
    }

    /// The stored gradient of `id`; `None` for an untracked node.
    pub(crate) fn gradient(&self, id: NodeId) -> Option<f64> {
        self.links[id.index()]
            .tracked()
            .then_some(self.grads[id.index()])
    }
}

/// The error of a creation that `TapeData::push_result` refused: the rule
/// evaluated again (the same bits), its checks made in the contract's order,
/// value first, then each slot (docs/contract.md section 4).
#[cold]
#[inline(never)]
fn creation_error(kind: OpKind, first: f64, second: f64) -> Error {
    let operation = Operation::Op(kind);
    let (value, local_derivatives) = kind.evaluate(first, second);
    if !value.is_finite() {
        return Error::NonFiniteResult { operation, value };
    }
    let (slot, &value) = local_derivatives[..kind.op().arity]
        .iter()
        .enumerate()
        .find(|(_, local)| !local.is_finite())
        .expect("a refused creation has a non-finite value or local derivative");
    Error::NonFiniteLocalDerivative {
        operation,
        slot,
        value,
    }
}

/// One graph: the arena every [`Scalar`] of the graph points into.
///
/// Cloning a `Tape` yields another handle to the *same* tape. Nodes live as
/// long as the tape does (any handle to it, including every [`Scalar`] on it);
/// an operation's operands must all be on one tape.
#[derive(Clone, Default)]
pub struct Tape(pub(crate) Rc<RefCell<TapeData>>);

impl Tape {
    /// An empty tape.
    pub fn new() -> Tape {
        Tape::default()
    }

    /// An empty tape with room for `nodes` nodes before it reallocates.
    pub fn with_capacity(nodes: usize) -> Tape {
        let tape = Tape::new();
        tape.0.borrow_mut().reserve(nodes);
        tape
    }

    /// How many nodes the tape holds.
    pub fn len(&self) -> usize {
        self.0.borrow().len()
    }

    /// True when the tape holds no node.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A tracked leaf. Fails with [`Error::NonFiniteLeaf`] for inf or nan.
    pub fn variable(&self, value: f64) -> Result<Scalar, Error> {
        let id = self.0.borrow_mut().leaf(value, Operation::Variable)?;
        Ok(self.scalar(id))
    }

    /// An untracked leaf. Fails with [`Error::NonFiniteLeaf`] for inf or nan.
    pub fn constant(&self, value: f64) -> Result<Scalar, Error> {
        let id = self.0.borrow_mut().leaf(value, Operation::Constant)?;
        Ok(self.scalar(id))
    }

    /// A handle to the node `id` of this tape.
    ///
    /// # Panics
    ///
    /// When the tape has no node `id`.
    pub fn scalar(&self, id: NodeId) -> Scalar {
        assert!(id.index() < self.len(), "no node {} on this tape", id.0);
        Scalar {
            tape: self.clone(),
            id,
        }
    }

    /// True when both handles name the same tape.
    pub fn is_same_tape(&self, other: &Tape) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Tape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tape({} nodes)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_numbered_in_creation_order() {
        let tape = Tape::new();
        let x = tape.variable(2.0).unwrap();
        let y = x.mul(&x).unwrap();
        assert_eq!((x.id().index(), y.id().index()), (0, 1));
        assert_eq!(tape.len(), 2);
    }

    #[test]
    fn a_failed_operation_pushes_no_node() {
        let tape = Tape::new();
        let x = tape.variable(5e-324).unwrap();
        assert_eq!(x.log().unwrap_err().kind(), "non-finite-local-derivative");
        assert_eq!(tape.len(), 1);
    }

    #[test]
    fn a_node_holds_no_heap_allocation() {
        // Plain data of a fixed size: the tape is one allocation however many nodes it holds.
        assert!(std::mem::size_of::<Link>() <= 12);
        assert!(!std::mem::needs_drop::<Link>());
    }
}

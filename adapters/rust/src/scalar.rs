//! Nodes and leaves: the `Scalar` handle, its constructors and its operations.
//!
//! A [`Scalar`] is a cheap, cloneable handle (`Rc`) to one node of the graph. A
//! node keeps its operands as ordered operand edges, one per slot with its local
//! derivative, so `x*x` holds two edges to the same `x` and never merges them
//! (docs/contract.md section 1). Values, edges and the tracked flag never change after
//! creation; only the stored gradient does, so it lives in a `Cell`.
//!
//! Dropping the last handle to a deep graph is iterative (see `Drop for Node`),
//! so a million-node chain drops without overflowing the stack.

use std::cell::Cell;
use std::fmt;
use std::rc::Rc;

use crate::error::Error;
use crate::ops::OpKind;

/// How a node was made: a leaf constructor or an operation of the op table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// A tracked leaf.
    Variable,
    /// An untracked leaf.
    Constant,
    /// An untracked leaf copied from another node's value, with no edge to it.
    Detached,
    /// The result of one operation of the op table.
    Op(OpKind),
}

impl Operation {
    /// The contract's name: `variable`, `constant`, `detached` or the op name.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Variable => "variable",
            Operation::Constant => "constant",
            Operation::Detached => "detached",
            Operation::Op(kind) => kind.name(),
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One scalar of the graph. Private: users hold [`Scalar`] handles.
pub(crate) struct Node {
    pub(crate) value: f64,
    pub(crate) operation: Operation,
    pub(crate) tracked: bool,
    /// Number of operand slots in use (0, 1 or 2).
    pub(crate) arity: u8,
    /// Operand edges: the operand node of each slot ...
    pub(crate) operands: [Option<Scalar>; 2],
    /// ... and its local derivative, evaluated at creation.
    pub(crate) local_derivatives: [f64; 2],
    /// pow's constant exponent.
    pub(crate) exponent: Option<f64>,
    /// The stored gradient; meaningful only when `tracked`.
    pub(crate) grad: Cell<f64>,
    /// Scratch for the topological sort: the id of the last walk that visited this node ...
    pub(crate) visit_mark: Cell<u64>,
    /// ... and the node's position in that walk's order.
    pub(crate) topo_index: Cell<usize>,
}

impl Drop for Node {
    fn drop(&mut self) {
        // Unlink the operands iteratively: a recursive drop of a long chain
        // would overflow the stack. A node whose last handle we hold is emptied
        // here before it drops, so its own drop finds nothing to do.
        let mut pending: Vec<Scalar> = self.operands.iter_mut().filter_map(Option::take).collect();
        while let Some(handle) = pending.pop() {
            if let Some(mut node) = Rc::into_inner(handle.0) {
                pending.extend(node.operands.iter_mut().filter_map(Option::take));
            }
        }
    }
}

/// A handle to one node of the graph: a leaf or the result of one operation.
///
/// Cloning is cheap and yields a handle to the *same* node. Equality is node
/// identity, as in the reference: two nodes with equal values are different
/// nodes (use [`Scalar::value`] to compare values, [`Scalar::node_key`] for a
/// hashable identity).
#[derive(Clone)]
pub struct Scalar(pub(crate) Rc<Node>);

impl Scalar {
    fn leaf(value: f64, operation: Operation) -> Result<Scalar, Error> {
        if !value.is_finite() {
            return Err(Error::NonFiniteLeaf { operation, value });
        }
        Ok(Scalar::new_node(
            value,
            operation,
            operation == Operation::Variable,
            0,
            [None, None],
            [0.0; 2],
            None,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn new_node(
        value: f64,
        operation: Operation,
        tracked: bool,
        arity: u8,
        operands: [Option<Scalar>; 2],
        local_derivatives: [f64; 2],
        exponent: Option<f64>,
    ) -> Scalar {
        Scalar(Rc::new(Node {
            value,
            operation,
            tracked,
            arity,
            operands,
            local_derivatives,
            exponent,
            grad: Cell::new(0.0),
            visit_mark: Cell::new(0),
            topo_index: Cell::new(0),
        }))
    }

    /// A tracked leaf. Fails with [`Error::NonFiniteLeaf`] for inf or nan.
    pub fn variable(value: f64) -> Result<Scalar, Error> {
        Scalar::leaf(value, Operation::Variable)
    }

    /// An untracked leaf. Fails with [`Error::NonFiniteLeaf`] for inf or nan.
    pub fn constant(value: f64) -> Result<Scalar, Error> {
        Scalar::leaf(value, Operation::Constant)
    }

    /// An untracked leaf (operation `detached`) with this node's value and no edge to it.
    pub fn detach(&self) -> Scalar {
        Scalar::new_node(
            self.value(),
            Operation::Detached,
            false,
            0,
            [None, None],
            [0.0; 2],
            None,
        )
    }

    /// Apply the operation `kind` to `operands` (and pow's constant `exponent`).
    ///
    /// Fails with [`Error::NonFiniteResult`] or [`Error::NonFiniteLocalDerivative`],
    /// and then creates no node.
    ///
    /// # Panics
    ///
    /// When `operands.len()` is not the op's arity, or when `exponent` is missing
    /// or not finite for pow or present for another op: those are programming
    /// mistakes, not contract errors (the program runner checks them first).
    pub fn apply(
        kind: OpKind,
        operands: &[&Scalar],
        exponent: Option<f64>,
    ) -> Result<Scalar, Error> {
        let op = kind.op();
        assert_eq!(
            operands.len(),
            op.arity,
            "{} takes {} operand(s), got {}",
            op.name,
            op.arity,
            operands.len()
        );
        let second = if op.takes_exponent {
            match exponent {
                Some(c) if c.is_finite() => c,
                _ => panic!(
                    "{} needs a finite constant exponent, got {exponent:?}",
                    op.name
                ),
            }
        } else {
            assert!(exponent.is_none(), "{} takes no exponent", op.name);
            operands.get(1).map_or(0.0, |b| b.value())
        };
        let (value, local_derivatives) = (op.rule)(operands[0].value(), second);
        let operation = Operation::Op(kind);
        if !value.is_finite() {
            return Err(Error::NonFiniteResult { operation, value });
        }
        for (operand, &local) in local_derivatives[..op.arity].iter().enumerate() {
            if !local.is_finite() {
                return Err(Error::NonFiniteLocalDerivative {
                    operation,
                    operand,
                    value: local,
                });
            }
        }
        let tracked = operands.iter().any(|operand| operand.tracked_gradient());
        let operand_handles = [
            operands.first().map(|&a| a.clone()),
            operands.get(1).map(|&b| b.clone()),
        ];
        let exponent = if op.takes_exponent { exponent } else { None };
        Ok(Scalar::new_node(
            value,
            operation,
            tracked,
            op.arity as u8,
            operand_handles,
            local_derivatives,
            exponent,
        ))
    }

    /// `self + other`.
    pub fn add(&self, other: &Scalar) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Add, &[self, other], None)
    }

    /// `self - other`.
    pub fn sub(&self, other: &Scalar) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Sub, &[self, other], None)
    }

    /// `self * other`.
    pub fn mul(&self, other: &Scalar) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Mul, &[self, other], None)
    }

    /// `self / other`.
    pub fn div(&self, other: &Scalar) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Div, &[self, other], None)
    }

    /// `-self`.
    pub fn neg(&self) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Neg, &[self], None)
    }

    /// `self ^ exponent`, where the exponent is a constant, not a node.
    ///
    /// # Panics
    ///
    /// When `exponent` is not finite (a programming mistake, as in the reference).
    pub fn pow(&self, exponent: f64) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Pow, &[self], Some(exponent))
    }

    /// `e ^ self`.
    pub fn exp(&self) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Exp, &[self], None)
    }

    /// Natural logarithm of `self`.
    pub fn log(&self) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Log, &[self], None)
    }

    /// Hyperbolic tangent of `self`.
    pub fn tanh(&self) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Tanh, &[self], None)
    }

    /// `self` if `self > 0` else `+0.0`.
    pub fn relu(&self) -> Result<Scalar, Error> {
        Scalar::apply(OpKind::Relu, &[self], None)
    }

    /// The node's forward value.
    pub fn value(&self) -> f64 {
        self.0.value
    }

    /// How the node was made (`variable`, `constant`, `detached` or an op).
    pub fn operation(&self) -> Operation {
        self.0.operation
    }

    /// True iff the node takes part in gradients: a variable, or an operation
    /// with at least one tracked operand.
    pub fn tracks_gradient(&self) -> bool {
        self.tracked_gradient()
    }

    fn tracked_gradient(&self) -> bool {
        self.0.tracked
    }

    /// The stored (accumulated) gradient; `None` for an untracked node.
    pub fn gradient(&self) -> Option<f64> {
        self.0.tracked.then(|| self.0.grad.get())
    }

    /// pow's constant exponent; `None` for every other node.
    pub fn exponent(&self) -> Option<f64> {
        self.0.exponent
    }

    /// The operand edges in slot order: each operand node with its local derivative.
    pub fn operand_edges(&self) -> impl Iterator<Item = (&Scalar, f64)> + '_ {
        let node = &*self.0;
        (0..node.arity as usize).filter_map(move |slot| {
            node.operands[slot]
                .as_ref()
                .map(|operand| (operand, node.local_derivatives[slot]))
        })
    }

    /// This node's identity as a map key.
    pub fn node_key(&self) -> NodeKey {
        NodeKey(Rc::as_ptr(&self.0) as usize)
    }

    /// True when both handles name the same node.
    pub fn is_same_node(&self, other: &Scalar) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl PartialEq for Scalar {
    /// Node identity, as in the reference (`is_same_node`).
    fn eq(&self, other: &Scalar) -> bool {
        self.is_same_node(other)
    }
}

impl Eq for Scalar {}

/// The identity of a node, usable as a map key (the program runner maps
/// nodes to program ids with it). Two live nodes never share a key; a key may
/// be reused once its node has been dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeKey(usize);

impl fmt::Debug for Scalar {
    /// A flat summary; operands are not printed, so deep graphs print quickly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Scalar({}, value={:?}, grad={:?})",
            self.0.operation,
            self.0.value,
            self.gradient()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_reject_non_finite_values() {
        let error = Scalar::variable(f64::INFINITY).unwrap_err();
        assert_eq!(error.kind(), "non-finite-leaf");
        assert!(Scalar::constant(f64::NAN).is_err());
        assert!(Scalar::constant(-0.0).unwrap().value().is_sign_negative());
    }

    #[test]
    fn an_operation_is_tracked_iff_an_operand_is() {
        let x = Scalar::variable(2.0).unwrap();
        let c = Scalar::constant(3.0).unwrap();
        assert!(x.mul(&c).unwrap().tracks_gradient());
        assert!(!c.mul(&c).unwrap().tracks_gradient());
        assert!(!x.detach().tracks_gradient());
        assert_eq!(x.detach().operation().name(), "detached");
        assert_eq!(c.gradient(), None);
        assert_eq!(x.gradient(), Some(0.0));
    }

    #[test]
    fn repeated_operands_keep_one_edge_per_slot() {
        let x = Scalar::variable(3.0).unwrap();
        let y = x.mul(&x).unwrap();
        let edges: Vec<_> = y.operand_edges().collect();
        assert_eq!(edges.len(), 2);
        assert!(
            edges
                .iter()
                .all(|(operand, local)| operand.is_same_node(&x) && *local == 3.0)
        );
    }

    #[test]
    fn a_failed_operation_creates_no_node_and_names_the_slot() {
        let x = Scalar::variable(5e-324).unwrap();
        let error = x.log().unwrap_err();
        assert_eq!(error.kind(), "non-finite-local-derivative");
        assert_eq!(Rc::strong_count(&x.0), 1);
        let zero = Scalar::constant(0.0).unwrap();
        assert_eq!(x.div(&zero).unwrap_err().kind(), "non-finite-result");
    }

    #[test]
    fn equality_is_node_identity() {
        let a = Scalar::variable(1.0).unwrap();
        let b = Scalar::variable(1.0).unwrap();
        assert_ne!(a, b);
        assert_eq!(a, a.clone());
    }
}

//! The `Scalar` handle: one node of a [`Tape`], its constructors and its operations.
//!
//! A [`Scalar`] is a cheap, cloneable handle: its tape and its [`NodeId`]. The
//! node itself is plain data on the tape (`tape.rs`): values, operand edges
//! and the tracked flag never change after creation; only the stored gradient
//! does (docs/contract.md sections 1-4).

use std::fmt;

use crate::error::{Error, NodeInfo};
use crate::ops::OpKind;
use crate::tape::{NodeId, Tape};
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

/// A handle to one node of a [`Tape`]: a leaf or the result of one operation.
///
/// Cloning is cheap and yields a handle to the *same* node. Equality is node
/// identity, as in the reference: two nodes with equal values are different
/// nodes (use [`Scalar::value`] to compare values, [`Scalar::id`] for a
/// hashable identity within one tape).
#[derive(Clone)]
pub struct Scalar {
    pub(crate) tape: Tape,
    pub(crate) id: NodeId,
}

impl Scalar {
    /// The tape this node lives on.
    pub fn tape(&self) -> &Tape {
        &self.tape
    }

    /// This node's position on its tape.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// An untracked leaf (operation `detached`) with this node's value and no edge to it.
    pub fn detach(&self) -> Scalar {
        let id = self.tape.0.borrow_mut().detach(self.id);
        self.tape.scalar(id)
    }

    /// Apply the operation `kind` to `operands` (and pow's constant `exponent`).
    ///
    /// Fails with [`Error::NonFiniteResult`] or [`Error::NonFiniteLocalDerivative`],
    /// and then creates no node.
    ///
    /// # Panics
    ///
    /// When `operands` is empty or its length is not the op's arity, when the
    /// operands are not all on one tape, or when `exponent` is missing or not
    /// finite for pow or present for another op: those are programming
    /// mistakes, not contract errors (the program runner checks them first).
    pub fn apply(
        kind: OpKind,
        operands: &[&Scalar],
        exponent: Option<f64>,
    ) -> Result<Scalar, Error> {
        let tape = &operands
            .first()
            .unwrap_or_else(|| panic!("{} needs an operand", kind.name()))
            .tape;
        assert!(
            operands
                .iter()
                .all(|operand| operand.tape.is_same_tape(tape)),
            "{}: the operands are on different tapes",
            kind.name()
        );
        // At most two operands: no allocation per node.
        assert!(
            operands.len() <= 2,
            "{} takes at most two operands",
            kind.name()
        );
        let mut ids = [NodeId(0); 2];
        for (slot, operand) in operands.iter().enumerate() {
            ids[slot] = operand.id;
        }
        let id = tape
            .0
            .borrow_mut()
            .apply(kind, &ids[..operands.len()], exponent)?;
        Ok(Scalar {
            tape: tape.clone(),
            id,
        })
    }

    fn binary(&self, kind: OpKind, other: &Scalar) -> Result<Scalar, Error> {
        assert!(
            self.tape.is_same_tape(&other.tape),
            "{}: the operands are on different tapes",
            kind.name()
        );
        let id = self
            .tape
            .0
            .borrow_mut()
            .apply(kind, &[self.id, other.id], None)?;
        Ok(Scalar {
            tape: self.tape.clone(),
            id,
        })
    }

    fn unary(&self, kind: OpKind, exponent: Option<f64>) -> Result<Scalar, Error> {
        let id = self.tape.0.borrow_mut().apply(kind, &[self.id], exponent)?;
        Ok(Scalar {
            tape: self.tape.clone(),
            id,
        })
    }

    /// `self + other`.
    pub fn add(&self, other: &Scalar) -> Result<Scalar, Error> {
        self.binary(OpKind::Add, other)
    }

    /// `self - other`.
    pub fn sub(&self, other: &Scalar) -> Result<Scalar, Error> {
        self.binary(OpKind::Sub, other)
    }

    /// `self * other`.
    pub fn mul(&self, other: &Scalar) -> Result<Scalar, Error> {
        self.binary(OpKind::Mul, other)
    }

    /// `self / other`.
    pub fn div(&self, other: &Scalar) -> Result<Scalar, Error> {
        self.binary(OpKind::Div, other)
    }

    /// `-self`.
    pub fn neg(&self) -> Result<Scalar, Error> {
        self.unary(OpKind::Neg, None)
    }

    /// `self ^ exponent`, where the exponent is a constant, not a node.
    ///
    /// # Panics
    ///
    /// When `exponent` is not finite (a programming mistake, as in the reference).
    pub fn pow(&self, exponent: f64) -> Result<Scalar, Error> {
        self.unary(OpKind::Pow, Some(exponent))
    }

    /// `e ^ self`.
    pub fn exp(&self) -> Result<Scalar, Error> {
        self.unary(OpKind::Exp, None)
    }

    /// Natural logarithm of `self`.
    pub fn log(&self) -> Result<Scalar, Error> {
        self.unary(OpKind::Log, None)
    }

    /// Hyperbolic tangent of `self`.
    pub fn tanh(&self) -> Result<Scalar, Error> {
        self.unary(OpKind::Tanh, None)
    }

    /// `self` if `self > 0` else `+0.0`.
    pub fn relu(&self) -> Result<Scalar, Error> {
        self.unary(OpKind::Relu, None)
    }

    /// The logistic function `1 / (1 + e^(-self))`, finite for every finite `self`.
    pub fn sigmoid(&self) -> Result<Scalar, Error> {
        self.unary(OpKind::Sigmoid, None)
    }

    /// The square root of `self`.
    ///
    /// Fails with [`Error::NonFiniteResult`] for `self < 0` and with
    /// [`Error::NonFiniteLocalDerivative`] for `self = ±0.0`, whose derivative is `±inf`.
    pub fn sqrt(&self) -> Result<Scalar, Error> {
        self.unary(OpKind::Sqrt, None)
    }

    /// A constant on this node's tape (shorthand for `self.tape().constant(value)`).
    pub fn constant(&self, value: f64) -> Result<Scalar, Error> {
        self.tape.constant(value)
    }

    /// The node's forward value.
    pub fn value(&self) -> f64 {
        self.tape.0.borrow().values[self.id.index()]
    }

    /// How the node was made (`variable`, `constant`, `detached` or an op).
    pub fn operation(&self) -> Operation {
        self.tape.0.borrow().links[self.id.index()].operation
    }

    /// True iff the node takes part in gradients: a variable, or an operation
    /// with at least one tracked operand.
    pub fn tracks_gradient(&self) -> bool {
        self.tape.0.borrow().links[self.id.index()].tracked()
    }

    /// The stored (accumulated) gradient; `None` for an untracked node.
    pub fn gradient(&self) -> Option<f64> {
        self.tape.0.borrow().gradient(self.id)
    }

    /// pow's constant exponent; `None` for every other node.
    pub fn exponent(&self) -> Option<f64> {
        let tape = self.tape.0.borrow();
        let index = self.id.index();
        (tape.links[index].operation == Operation::Op(OpKind::Pow))
            .then_some(tape.local_derivatives[index][1])
    }

    /// The operand edges in slot order: each operand node with its local derivative.
    pub fn operand_edges(&self) -> Vec<(Scalar, f64)> {
        let tape = self.tape.0.borrow();
        let link = tape.links[self.id.index()];
        let locals = tape.local_derivatives[self.id.index()];
        (0..link.arity as usize)
            .map(|slot| {
                let operand = Scalar {
                    tape: self.tape.clone(),
                    id: NodeId(link.operands[slot]),
                };
                (operand, locals[slot])
            })
            .collect()
    }

    /// This node as an error names it: id, operation and value.
    pub fn info(&self) -> NodeInfo {
        self.tape.0.borrow().info(self.id.0)
    }

    /// True when both handles name the same node.
    pub fn is_same_node(&self, other: &Scalar) -> bool {
        self.id == other.id && self.tape.is_same_tape(&other.tape)
    }
}

impl PartialEq for Scalar {
    /// Node identity, as in the reference (`is_same_node`).
    fn eq(&self, other: &Scalar) -> bool {
        self.is_same_node(other)
    }
}

impl Eq for Scalar {}

impl fmt::Debug for Scalar {
    /// A flat summary; operands are not printed, so deep graphs print quickly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Scalar(#{} {}, value={:?}, grad={:?})",
            self.id.0,
            self.operation(),
            self.value(),
            self.gradient()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_reject_non_finite_values() {
        let tape = Tape::new();
        let error = tape.variable(f64::INFINITY).unwrap_err();
        assert_eq!(error.kind(), "non-finite-leaf");
        assert!(tape.constant(f64::NAN).is_err());
        assert!(tape.constant(-0.0).unwrap().value().is_sign_negative());
        assert_eq!(tape.len(), 1, "only the finite leaf was created");
    }

    #[test]
    fn an_operation_is_tracked_iff_an_operand_is() {
        let tape = Tape::new();
        let x = tape.variable(2.0).unwrap();
        let c = tape.constant(3.0).unwrap();
        assert!(x.mul(&c).unwrap().tracks_gradient());
        assert!(!c.mul(&c).unwrap().tracks_gradient());
        assert!(!x.detach().tracks_gradient());
        assert_eq!(x.detach().operation().name(), "detached");
        assert_eq!(c.gradient(), None);
        assert_eq!(x.gradient(), Some(0.0));
    }

    #[test]
    fn repeated_operands_keep_one_edge_per_slot() {
        let tape = Tape::new();
        let x = tape.variable(3.0).unwrap();
        let y = x.mul(&x).unwrap();
        let edges = y.operand_edges();
        assert_eq!(edges.len(), 2);
        assert!(
            edges
                .iter()
                .all(|(operand, local)| operand.is_same_node(&x) && *local == 3.0)
        );
    }

    #[test]
    fn a_failed_operation_creates_no_node_and_names_the_slot() {
        let tape = Tape::new();
        let x = tape.variable(5e-324).unwrap();
        let error = x.log().unwrap_err();
        assert_eq!(error.kind(), "non-finite-local-derivative");
        let zero = tape.constant(0.0).unwrap();
        assert_eq!(x.div(&zero).unwrap_err().kind(), "non-finite-result");
        assert_eq!(tape.len(), 2);
    }

    #[test]
    fn sqrt_refuses_a_negative_operand_and_a_zero_of_either_sign() {
        let tape = Tape::new();
        let negative = tape.variable(-4.0).unwrap();
        match negative.sqrt().unwrap_err() {
            Error::NonFiniteResult { operation, value } => {
                assert_eq!(operation, Operation::Op(OpKind::Sqrt));
                assert!(value.is_nan());
            }
            other => panic!("sqrt(-4) failed with {other}"),
        }
        for (zero, derivative) in [(0.0, f64::INFINITY), (-0.0, f64::NEG_INFINITY)] {
            match tape.variable(zero).unwrap().sqrt().unwrap_err() {
                Error::NonFiniteLocalDerivative {
                    operation,
                    slot,
                    value,
                } => {
                    assert_eq!((operation, slot), (Operation::Op(OpKind::Sqrt), 0));
                    assert_eq!(value, derivative, "sqrt({zero:?})");
                }
                other => panic!("sqrt({zero:?}) failed with {other}"),
            }
        }
        assert_eq!(tape.len(), 3, "only the three leaves were created");
        let root = tape.variable(6.25).unwrap().sqrt().unwrap();
        assert_eq!((root.value(), root.operand_edges()[0].1), (2.5, 0.2));
    }

    #[test]
    fn sigmoid_never_fails_on_a_finite_operand() {
        let tape = Tape::new();
        for a in [-f64::MAX, -1000.0, -745.0, -0.0, 0.0, 40.0, f64::MAX] {
            let s = tape.variable(a).unwrap().sigmoid().unwrap();
            assert!(
                (0.0..=1.0).contains(&s.value()),
                "sigmoid({a:?}) = {}",
                s.value()
            );
        }
    }

    #[test]
    fn equality_is_node_identity() {
        let tape = Tape::new();
        let a = tape.variable(1.0).unwrap();
        let b = tape.variable(1.0).unwrap();
        assert_ne!(a, b);
        assert_eq!(a, a.clone());
        let other = Tape::new().variable(1.0).unwrap();
        assert_ne!(a, other);
    }

    #[test]
    fn pow_keeps_its_exponent_and_other_ops_have_none() {
        let tape = Tape::new();
        let x = tape.variable(2.0).unwrap();
        assert_eq!(x.pow(3.0).unwrap().exponent(), Some(3.0));
        assert_eq!(x.exp().unwrap().exponent(), None);
    }

    #[test]
    #[should_panic(expected = "different tapes")]
    fn operands_on_different_tapes_are_a_programming_mistake() {
        let a = Tape::new().variable(1.0).unwrap();
        let b = Tape::new().variable(2.0).unwrap();
        let _ = a.add(&b);
    }
}

//! A scalar reverse-mode autodiff engine: the Rust port of the conformance kit's reference.
//!
//! Its semantics are the contract of docs/contract.md, the same as the Python
//! reference (`reference/`): the same op names (add sub mul div neg pow exp log
//! tanh relu sigmoid sqrt), the same error kinds, the same canonical topology and pass record.
//!
//! ```
//! use scalar_autodiff::Tape;
//!
//! let tape = Tape::new();
//! let x = tape.variable(2.0)?;
//! let square = x.mul(&x)?;
//! let loss = square.add(&square)?;
//! loss.backward()?;
//! assert_eq!(x.gradient(), Some(8.0));
//! let record = loss.backward_recorded(1.0)?;
//! assert_eq!(record.edges.len(), 4);
//! assert_eq!(x.gradient(), Some(16.0));
//! loss.zero_grad();
//! assert_eq!(x.gradient(), Some(0.0));
//! # Ok::<(), scalar_autodiff::Error>(())
//! ```
//!
//! Nodes live on a [`Tape`] as plain data, one array per node field, named by
//! `u32` index; a [`Scalar`] is a handle to one of them.
//!
//! Modules: [`ops`] (the op table), [`tape`] (the node arena), [`scalar`] (the
//! handle and its operations), [`backward`] (topology, backward, zero_grad), [`record`] (the pass record),
//! [`error`] (the typed errors), [`mod@gradcheck`] (central differences), [`gpt`]
//! (the tiny GPT of docs/contract.md section 11, from the ops alone). The
//! engine uses only `std`; [`program`], [`execute`] and [`wire`] parse and run
//! protocol programs and speak the JSON encoding, for the adapter, the
//! benchmark and the fixture tests.

#![deny(missing_docs)]

pub mod backward;
pub mod error;
pub mod execute;
pub mod gpt;
pub mod gradcheck;
pub mod ops;
pub mod program;
pub mod record;
pub mod scalar;
pub mod tape;
pub mod wire;

pub use backward::topology;
pub use error::{ERROR_KINDS, Error, NodeInfo};
pub use gradcheck::{DEFAULT_STEP, DEFAULT_TOLERANCE, GradCheck, gradcheck, gradcheck_with};
pub use ops::{OPS, Op, OpKind};
pub use record::{EdgeRecord, NodeRecord, PassRecord};
pub use scalar::{Operation, Scalar};
pub use tape::{NodeId, Tape};

//! Engine hooks: EDIT THIS FILE to connect your engine to the conformance kit.
//!
//! main.rs (do not edit it) speaks the protocol and calls the methods of `Engine` below, on a
//! fresh `Engine::new()` per case. Each method says what the contract (`conformance docs
//! contract`) expects of it. Until you fill one in it returns `not_connected(...)`, which the
//! adapter reports as an error for the case, so the kit runs from the first minute and tells
//! you which hook to connect next. Add your engine to Cargo.toml's [dependencies].
//!
//! When your engine refuses an operation the contract says must fail, return
//! `Err(conformance::EngineError::new(kind).text(..).number(..).into())` with exactly the fields
//! of that kind (docs/contract.md sections 3 to 5; main.rs's `conformance::EngineError` lists
//! them). Anything else that keeps a hook from answering (an op your engine lacks, an internal
//! failure) is `Err(conformance::Failure::Other(message))`: the case gets an error reply with
//! that message and the loop goes on; never use it for a contract error. The kit's types live
//! under `conformance::`, so your engine's own `Node`, `EngineError` or `Failure` can be
//! imported here without a clash.
#![allow(unused_variables)]

#[allow(unused_imports)]
use crate::conformance::{self, not_connected, HookResult};

// ---- config block: what your engine supports (sent in the hello reply) -------------------
pub const ENGINE_NAME: &str = "my-engine";
pub const ENGINE_VERSION: &str = "0.1.0";
/// The ops your engine has, among add sub mul div neg pow exp log tanh relu detach;
/// also sigmoid and sqrt, the optional ops, only if your engine has them.
pub const OPS: &[&str] = &[
    "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "detach",
];
/// The levels you report honestly: values gradients errors, and trace/order once pass_record works.
pub const LEVELS: &[&str] = &["values", "gradients", "errors"];
/// "seed" if backward accepts a seed other than 1. (main.rs adds "repeat": it runs repeated
/// steps itself.)
pub const FEATURES: &[&str] = &["seed"];
// ---- end of config block -------------------------------------------------------------------

/// Your engine's node handle, e.g. an index into a tape or `Rc<RefCell<Value>>` (a deep chain
/// of `Rc`s needs an iterative `Drop`: `conformance docs starting`). The adapter only clones it
/// and hands it back to you.
pub type Handle = usize;

/// A number that is the same for two handles of one node and different for different nodes:
/// the index itself, or `Rc::as_ptr(node) as *const () as usize` for a shared handle.
pub fn node_key(node: &Handle) -> usize {
    *node
}

/// Your engine behind the hooks; a fresh one per case, so no case sees another's graph.
pub struct Engine {}

impl Engine {
    /// An engine with an empty graph.
    pub fn new() -> Self {
        Engine {}
    }

    /// A tracked leaf. A non-finite value fails with
    /// `conformance::EngineError::new("non-finite-leaf").text("operation", "variable").number("value", value)`.
    pub fn variable(&mut self, value: f64) -> HookResult<Handle> {
        Err(not_connected("Engine::variable"))
    }

    /// An untracked leaf; non-finite-leaf as for variable, with operation "constant".
    pub fn constant(&mut self, value: f64) -> HookResult<Handle> {
        Err(not_connected("Engine::constant"))
    }

    /// The result node of op (add sub mul div: two operands; neg exp log tanh relu sigmoid sqrt pow: one),
    /// `operands` in slot order; `exponent` is pow's constant. A non-finite value fails with
    /// non-finite-result (operation, value); a finite value with a non-finite local derivative
    /// with non-finite-local-derivative (operation, slot of that operand, value of the
    /// derivative): `.text("operation", op).slot("slot", slot).number("value", d)`.
    pub fn apply(
        &mut self,
        op: &str,
        operands: &[Handle],
        exponent: Option<f64>,
    ) -> HookResult<Handle> {
        Err(not_connected("Engine::apply"))
    }

    /// An untracked leaf with node's value and no edge.
    pub fn detach(&mut self, node: &Handle) -> HookResult<Handle> {
        Err(not_connected("Engine::detach"))
    }

    /// The node's forward value.
    pub fn value(&self, node: &Handle) -> HookResult<f64> {
        Err(not_connected("Engine::value"))
    }

    /// Whether the node takes part in gradients (a variable, or an op with a tracked operand).
    pub fn tracked(&self, node: &Handle) -> HookResult<bool> {
        Err(not_connected("Engine::tracked"))
    }

    /// Backward from output with this seed (docs/contract.md section 5). Checks in order:
    /// untracked-output, non-finite-seed, then per edge non-finite-contribution and
    /// non-finite-pass-adjoint, then per node non-finite-accumulated-gradient; commit only if
    /// all pass.
    pub fn backward(&mut self, output: &Handle, seed: f64) -> HookResult<()> {
        Err(not_connected("Engine::backward"))
    }

    /// Sets the stored gradient of every tracked node reachable from output to 0.
    pub fn zero_grad(&mut self, output: &Handle) -> HookResult<()> {
        Err(not_connected("Engine::zero_grad"))
    }

    /// The stored gradient of a tracked node.
    pub fn gradient(&self, node: &Handle) -> HookResult<f64> {
        Err(not_connected("Engine::gradient"))
    }

    /// Optional, for the trace and order levels: what the last successful backward did, each
    /// edge as (consumer, slot) -> operand (see `conformance::PassEdge` in main.rs); an
    /// untracked node's pass adjoint and stored gradient, and an untracked operand's before and
    /// after, are `None`.
    /// Add "trace"/"order" to LEVELS when it works.
    pub fn pass_record(&mut self) -> HookResult<conformance::PassRecord> {
        Err(not_connected("Engine::pass_record"))
    }
}

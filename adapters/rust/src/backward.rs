//! Topology, backward and zero_grad (docs/contract.md sections 5-7).
//!
//! The topological order is the canonical one: depth-first post-order from the
//! output, operands visited in slot order (section 7), computed with an
//! explicit stack so that depth is limited only by memory, and with visit
//! marks of a generation counter instead of a hash set. backward computes
//! fresh pass adjoints in one reverse sweep of that order, checks every
//! contribution, every pass adjoint and every prospective stored gradient,
//! and commits only when all checks passed, so a failed backward changes no
//! bit of any stored gradient (section 5). Every buffer lives on the tape and
//! is reused, so a pass allocates nothing unless it records.
//!
//! The pass record is built on demand. The fast path ([`Scalar::backward`])
//! walks only tracked nodes: an untracked node's operands are untracked, its
//! upstream is 0.0 and its edges change nothing and cannot fail, so leaving
//! it out keeps the order of the tracked nodes, every check and every bit of
//! the result. Its sweep makes the checks without a branch each (see
//! `sweep`) and only learns whether one fails; then, before anything is
//! committed, the checked sweep runs again from fresh pass adjoints to find
//! the first failure and its fields. The recorded path
//! ([`Scalar::backward_recorded`]) walks every reachable node, as the record
//! lists them all, and checks each edge in turn.

use crate::error::{Error, NodeInfo};
use crate::record::{EdgeRecord, NodeRecord, PassRecord};
use crate::scalar::Scalar;
use crate::tape::{Link, NodeId, TapeData};

/// The node `id` as an error names it.
fn info(links: &[Link], values: &[f64], id: u32) -> NodeInfo {
    NodeInfo {
        id: NodeId(id),
        operation: links[id as usize].operation,
        value: values[id as usize],
    }
}

/// The fast path's reverse sweep over the tracked `order`: every edge's
/// contribution added to its tracked operand's pass adjoint, in processing
/// order, with no branch on a check. Returns whether every check of backward
/// passes (docs/contract.md section 5): a non-finite contribution or pass
/// adjoint leaves its operand's final pass adjoint non-finite (inf and nan
/// absorb every later finite sum, and `inf + -inf` is nan), so testing each
/// node's prospective stored gradient once, when the sweep reaches it with its
/// final pass adjoint, covers the edges to tracked operands; an edge to an
/// untracked operand is tested on its own.
fn sweep(
    links: &[Link],
    local_derivatives: &[[f64; 2]],
    grads: &[f64],
    order: &[u32],
    adjoint: &mut [f64],
) -> bool {
    let mut finite = true;
    for &consumer in order.iter().rev() {
        let node = &links[consumer as usize];
        let upstream = adjoint[consumer as usize];
        finite &= (grads[consumer as usize] + upstream).is_finite();
        let locals = &local_derivatives[consumer as usize];
        for slot in 0..node.arity as usize {
            let contribution = upstream * locals[slot];
            if node.operand_tracked(slot) {
                adjoint[node.operands[slot] as usize] += contribution;
            } else {
                finite &= contribution.is_finite();
            }
        }
    }
    finite
}

impl TapeData {
    /// The node `id` as an error names it.
    pub(crate) fn info(&self, id: u32) -> NodeInfo {
        info(&self.links, &self.values, id)
    }

    /// Fill the order (`scratch.walk[..scratch.order_len]`) with the canonical
    /// order from `output`; without `UNTRACKED`, untracked operands are not
    /// entered. With `FRESH`, each node's pass adjoint is set to 0.0 as it
    /// joins the order (backward's fresh pass adjoints, in the same visit that
    /// already has the node in cache).
    pub(crate) fn walk<const UNTRACKED: bool, const FRESH: bool>(&mut self, output: u32) {
        let size = self.len();
        let TapeData {
            links: nodes,
            scratch,
            ..
        } = self;
        // The walk writes every entry of the order and the pass adjoint of
        // every node it orders, before anything reads them, so their first
        // allocation is zeroed memory from the allocator (fresh pages, not
        // written) rather than a pass of stores.
        if scratch.walk.is_empty() {
            scratch.walk = vec![0; size];
        } else if scratch.walk.len() < size {
            scratch.walk.resize(size, 0);
        }
        if FRESH && scratch.adjoint.is_empty() {
            scratch.adjoint = vec![0.0; size];
        } else if FRESH && scratch.adjoint.len() < size {
            scratch.adjoint.resize(size, 0.0);
        }
        // New nodes get mark 0, which no walk's generation is.
        scratch.marks.resize(size, 0);
        scratch.generation = scratch.generation.wrapping_add(1);
        if scratch.generation == 0 {
            // Wrapped: forget every old mark once every 255 walks.
            scratch.marks.fill(0);
            scratch.generation = 1;
        }
        let generation = scratch.generation;
        // Every array cut to `size`, so that one bounds check of a node id
        // serves them all.
        let nodes = &nodes[..size];
        let marks = &mut scratch.marks[..size];
        let buffer = &mut scratch.walk[..size];
        let adjoint = if FRESH {
            &mut scratch.adjoint[..size]
        } else {
            &mut []
        };
        // The order grows up from 0, the stack of unfinished nodes down from
        // `size`: a node is on the stack, the node being visited, or in the
        // order, each at most once, so the two never meet. The stack holds
        // ids only: a node resumes at slot 1 exactly when the operand it
        // comes back from is its slot-0 operand (had slot 0's operand been
        // skipped there, slot 1 naming the same node would be skipped too),
        // so the walk writes nothing to the tape.
        let mut order_len = 0;
        let mut top = size;
        // A node joins the order once its operands have (post-order).
        macro_rules! emit {
            ($id:expr) => {
                let id: usize = $id;
                if FRESH {
                    adjoint[id] = 0.0;
                }
                buffer[order_len] = id as u32;
                order_len += 1;
            };
        }
        marks[output as usize] = generation;
        let mut id = output as usize;
        let mut slot = 0;
        'visit: loop {
            let node = nodes[id];
            while slot < node.arity as usize {
                let operand = node.operands[slot] as usize;
                // The consumer's flags say whether the operand is tracked: an
                // untracked operand is skipped without reading it.
                let enter =
                    (UNTRACKED || node.operand_tracked(slot)) && marks[operand] != generation;
                slot += 1;
                if enter {
                    marks[operand] = generation;
                    if nodes[operand].arity == 0 {
                        // A leaf is finished as soon as it is reached.
                        emit!(operand);
                    } else {
                        top -= 1;
                        buffer[top] = id as u32;
                        id = operand;
                        slot = 0;
                        continue 'visit;
                    }
                }
            }
            emit!(id);
            if top == size {
                break;
            }
            let finished = id as u32;
            id = buffer[top] as usize;
            top += 1;
            let node = &nodes[id];
            slot = if node.arity == 2 && node.operands[0] == finished {
                1
            } else {
                2
            };
        }
        scratch.order_len = order_len;
    }

    /// One backward pass from `output`; the record is built only when `RECORD`.
    pub(crate) fn backward<const RECORD: bool>(
        &mut self,
        output: u32,
        seed: f64,
    ) -> Result<Option<PassRecord>, Error> {
        let out = &self.links[output as usize];
        if !out.tracked() {
            return Err(Error::UntrackedOutput {
                operation: out.operation,
            });
        }
        if !seed.is_finite() {
            return Err(Error::NonFiniteSeed { seed });
        }
        // Fresh pass adjoints: 0.0 for every reachable node (set by the walk),
        // the seed for the output. Untracked nodes' entries stay 0.0, which is
        // also their upstream.
        self.walk::<RECORD, true>(output);
        let TapeData {
            links,
            values,
            local_derivatives,
            grads,
            scratch,
        } = &mut *self;
        // Slices, not the Vecs: a store through a slice cannot move another
        // array, so the sweep keeps every base pointer in a register.
        let (links, values, local_derivatives) = (&links[..], &values[..], &local_derivatives[..]);
        let grads = &mut grads[..];
        let order = &scratch.walk[..scratch.order_len];
        let adjoint = &mut scratch.adjoint[..];
        adjoint[output as usize] = seed;
        if !RECORD {
            if sweep(links, local_derivatives, grads, order, adjoint) {
                // Every check passed: commit.
                for &id in order {
                    grads[id as usize] += adjoint[id as usize];
                }
                return Ok(None);
            }
            // A check fails: sweep again from fresh pass adjoints, checking each
            // edge in turn, to report the first failure with its fields. Nothing
            // was committed, and the same sums give the same bits.
            for &id in order {
                adjoint[id as usize] = 0.0;
            }
            adjoint[output as usize] = seed;
        }
        let mut edges = Vec::new();
        if RECORD {
            edges.reserve(
                order
                    .iter()
                    .map(|&id| links[id as usize].arity as usize)
                    .sum(),
            );
        }
        // The first node, in topology order, whose stored gradient plus its pass
        // adjoint is not finite. A node's pass adjoint is final when the reverse
        // sweep reaches it (its consumers come later in the order), so the check
        // is made there; the sweep meets the nodes in reverse, so the last
        // failure it meets is the first in topology order. It is reported only
        // after the whole sweep, whose errors come first (docs/contract.md section 5).
        let mut accumulated_failure = None;
        for &consumer in order.iter().rev() {
            let node = &links[consumer as usize];
            let upstream = adjoint[consumer as usize];
            // On the fast path every node of the order is tracked.
            if (!RECORD || node.tracked()) && !(grads[consumer as usize] + upstream).is_finite() {
                accumulated_failure = Some(consumer);
            }
            let locals = &local_derivatives[consumer as usize][..node.arity as usize];
            for (slot, &local_derivative) in locals.iter().enumerate() {
                let operand = node.operands[slot];
                let contribution = upstream * local_derivative;
                if !contribution.is_finite() {
                    return Err(Error::NonFiniteContribution {
                        consumer: info(links, values, consumer),
                        slot,
                        operand: info(links, values, operand),
                        upstream,
                        local_derivative,
                    });
                }
                let operand_tracked = node.operand_tracked(slot);
                let mut around = (None, None);
                if operand_tracked {
                    let before = adjoint[operand as usize];
                    let after = before + contribution;
                    if !after.is_finite() {
                        return Err(Error::NonFinitePassAdjoint {
                            node: info(links, values, operand),
                            previous: before,
                            contribution,
                        });
                    }
                    adjoint[operand as usize] = after;
                    around = (Some(before), Some(after));
                }
                if RECORD {
                    edges.push(EdgeRecord {
                        consumer: NodeId(consumer),
                        slot,
                        operand: NodeId(operand),
                        local_derivative,
                        upstream,
                        contribution,
                        operand_tracked,
                        before: around.0,
                        after: around.1,
                    });
                }
            }
        }
        if let Some(id) = accumulated_failure {
            return Err(Error::NonFiniteAccumulatedGradient {
                node: info(links, values, id),
                stored: grads[id as usize],
                pass_adjoint: adjoint[id as usize],
            });
        }
        // Every check passed: commit (the same sums, so the same bits as checked).
        for &id in order {
            if !RECORD || links[id as usize].tracked() {
                grads[id as usize] += adjoint[id as usize];
            }
        }
        if !RECORD {
            return Ok(None);
        }
        let nodes = order
            .iter()
            .map(|&id| {
                let link = &links[id as usize];
                let tracked = link.tracked();
                NodeRecord {
                    node: NodeId(id),
                    operation: link.operation,
                    value: values[id as usize],
                    tracked,
                    pass_adjoint: tracked.then_some(adjoint[id as usize]),
                    stored_gradient: tracked.then_some(grads[id as usize]),
                }
            })
            .collect();
        Ok(Some(PassRecord { seed, nodes, edges }))
    }

    /// Zero the stored gradient of every tracked node reachable from `output`.
    pub(crate) fn zero_grad(&mut self, output: u32) {
        // Tracked nodes are reachable through tracked nodes only (an untracked
        // node's operands are untracked), so the tracked walk finds them all.
        self.walk::<false, false>(output);
        let TapeData {
            links,
            grads,
            scratch,
            ..
        } = self;
        for &id in &scratch.walk[..scratch.order_len] {
            if links[id as usize].tracked() {
                grads[id as usize] = 0.0;
            }
        }
    }
}

/// Every node reachable from `output`, each once, operands before results, output last.
///
/// The canonical order (docs/contract.md section 7): depth-first post-order
/// from the output, operands visited in slot order. Iterative.
pub fn topology(output: &Scalar) -> Vec<Scalar> {
    let ids = {
        let mut tape = output.tape.0.borrow_mut();
        tape.walk::<true, false>(output.id.0);
        tape.scratch.walk[..tape.scratch.order_len].to_vec()
    };
    ids.into_iter()
        .map(|id| Scalar {
            tape: output.tape.clone(),
            id: NodeId(id),
        })
        .collect()
}

impl Scalar {
    /// Run one backward pass from this node with seed 1.0; see [`Scalar::backward_with_seed`].
    pub fn backward(&self) -> Result<(), Error> {
        self.backward_with_seed(1.0)
    }

    /// Run one backward pass from this node and add its pass adjoints to the stored gradients.
    ///
    /// Fails with `UntrackedOutput` (checked first), `NonFiniteSeed`,
    /// `NonFiniteContribution`, `NonFinitePassAdjoint` or
    /// `NonFiniteAccumulatedGradient`; when it fails, no stored gradient has
    /// changed. Builds no pass record and, once the tape's buffers have grown
    /// to its size, allocates nothing.
    pub fn backward_with_seed(&self, seed: f64) -> Result<(), Error> {
        self.tape
            .0
            .borrow_mut()
            .backward::<false>(self.id.0, seed)
            .map(drop)
    }

    /// [`Scalar::backward_with_seed`], returning the pass record (docs/contract.md section 5).
    ///
    /// Same checks, same order, same stored gradients: only the record is extra.
    pub fn backward_recorded(&self, seed: f64) -> Result<PassRecord, Error> {
        let record = self.tape.0.borrow_mut().backward::<true>(self.id.0, seed)?;
        Ok(record.expect("a recorded pass returns its record"))
    }

    /// Set the stored gradient of every tracked node reachable from this node to 0.0.
    ///
    /// Values, edges and unreachable nodes are untouched.
    pub fn zero_grad(&self) {
        self.tape.0.borrow_mut().zero_grad(self.id.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tape;

    #[test]
    fn topology_is_depth_first_post_order_in_slot_order() {
        let tape = Tape::new();
        let a = tape.variable(1.0).unwrap();
        let b = tape.variable(2.0).unwrap();
        let ab = a.mul(&b).unwrap();
        let out = b.add(&ab).unwrap();
        assert_eq!(topology(&out), [b, a, ab, out]);
    }

    #[test]
    fn a_failed_backward_changes_no_stored_gradient() {
        let tape = Tape::new();
        let big = tape.variable(1.0).unwrap();
        let k = tape.constant(1e308).unwrap();
        let loss = big.mul(&k).unwrap();
        loss.backward().unwrap();
        let error = loss.backward().unwrap_err();
        assert_eq!(error.kind(), "non-finite-accumulated-gradient");
        assert_eq!(big.gradient(), Some(1e308));
        assert_eq!(loss.gradient(), Some(1.0));
    }

    #[test]
    fn the_first_overflowing_gradient_in_topology_order_is_reported() {
        let tape = Tape::new();
        let k = tape.constant(1e308).unwrap();
        let a = tape.variable(1.0).unwrap();
        let b = tape.variable(1.0).unwrap();
        // Topology: a, k, a*k, b, b*k, loss: a comes first, though the sweep meets b first.
        let loss = a.mul(&k).unwrap().sub(&b.mul(&k).unwrap()).unwrap();
        loss.backward().unwrap();
        for error in [
            loss.backward().unwrap_err(),
            loss.backward_recorded(1.0).unwrap_err(),
        ] {
            let Error::NonFiniteAccumulatedGradient { node, .. } = error else {
                panic!("expected an accumulated-gradient error, got {error}");
            };
            assert_eq!(node.id, a.id());
        }
        assert_eq!((a.gradient(), b.gradient()), (Some(1e308), Some(-1e308)));
    }

    #[test]
    fn a_sweep_error_met_after_an_accumulated_gradient_overflow_is_the_one_reported() {
        let tape = Tape::new();
        let x = tape.variable(1.0).unwrap();
        let ten = tape.constant(10.0).unwrap();
        let y = tape.variable(1.0).unwrap();
        y.backward_with_seed(1.7e308).unwrap();
        let p = x.mul(&ten).unwrap();
        let loss = p.add(&y).unwrap();
        // Reverse sweep: loss, y (1.7e308 + 1e308 overflows), p (1e308 * 10 overflows).
        for error in [
            loss.backward_with_seed(1e308).unwrap_err(),
            loss.backward_recorded(1e308).unwrap_err(),
        ] {
            assert_eq!(error.kind(), "non-finite-contribution");
        }
        assert_eq!((x.gradient(), y.gradient()), (Some(0.0), Some(1.7e308)));
    }

    #[test]
    fn untracked_output_is_checked_before_the_seed() {
        let tape = Tape::new();
        let c = tape.constant(1.0).unwrap();
        let error = c.backward_with_seed(f64::NAN).unwrap_err();
        assert_eq!(error.kind(), "untracked-output");
        let x = tape.variable(1.0).unwrap();
        assert_eq!(
            x.backward_with_seed(f64::INFINITY).unwrap_err().kind(),
            "non-finite-seed"
        );
    }

    #[test]
    fn a_contribution_to_a_constant_is_still_checked_on_the_fast_path() {
        let tape = Tape::new();
        let x = tape.variable(1e300).unwrap();
        let c = tape.constant(1.0).unwrap();
        // Slot 0 is the constant: upstream 1e10 * local derivative 1e300 overflows.
        let z = c.mul(&x).unwrap();
        let error = z.backward_with_seed(1e10).unwrap_err();
        let Error::NonFiniteContribution { operand, slot, .. } = &error else {
            panic!("expected a contribution error, got {error}");
        };
        assert_eq!((operand.id, *slot), (c.id(), 0));
        let recorded = z.backward_recorded(1e10).unwrap_err();
        assert_eq!(error.to_string(), recorded.to_string());
        assert_eq!(x.gradient(), Some(0.0));
    }

    #[test]
    fn a_failing_fast_sweep_reports_the_error_the_recorded_pass_reports() {
        let tape = Tape::new();
        let x = tape.variable(1.0).unwrap();
        let big = tape.variable(1e300).unwrap();
        let one = tape.constant(1.0).unwrap();
        let k = tape.constant(1e300).unwrap();
        let double = x.add(&x).unwrap();
        let scaled = x.mul(&k).unwrap();
        let on_constant = one.mul(&big).unwrap();
        // (output, seed, kind): a contribution to a tracked operand (1e10 * 1e300),
        // a pass adjoint (1e308 + 1e308), a contribution to a constant (1e10 * 1e300).
        let cases = [
            (&scaled, 1e10, "non-finite-contribution"),
            (&double, 1e308, "non-finite-pass-adjoint"),
            (&on_constant, 1e10, "non-finite-contribution"),
        ];
        for (output, seed, kind) in cases {
            let fast = output.backward_with_seed(seed).unwrap_err();
            let recorded = output.backward_recorded(seed).unwrap_err();
            assert_eq!(fast.kind(), kind);
            assert_eq!(fast.to_string(), recorded.to_string());
            assert_eq!((x.gradient(), big.gradient()), (Some(0.0), Some(0.0)));
        }
        // The fallback leaves the pass adjoints fresh for the next pass.
        double.backward().unwrap();
        assert_eq!(x.gradient(), Some(2.0));
    }

    #[test]
    fn the_fast_and_the_recorded_pass_commit_the_same_gradients() {
        let tape = Tape::new();
        let x = tape.variable(0.3).unwrap();
        let c = tape.constant(2.5).unwrap();
        let y = x
            .mul(&c)
            .unwrap()
            .tanh()
            .unwrap()
            .add(&x.mul(&x).unwrap())
            .unwrap();
        y.backward().unwrap();
        let fast = x.gradient();
        y.zero_grad();
        let record = y.backward_recorded(1.0).unwrap();
        assert_eq!(x.gradient(), fast);
        assert_eq!(record.nodes.len(), topology(&y).len());
        assert_eq!(record.nodes.last().map(|n| n.node), Some(y.id()));
    }

    #[test]
    fn passes_stay_right_after_the_visit_marks_wrap() {
        let tape = Tape::new();
        let x = tape.variable(3.0).unwrap();
        let mut y = x.mul(&x).unwrap();
        // 600 walks wrap the one-byte generation twice; nodes keep being added between them.
        for step in 0..300 {
            y.zero_grad();
            y.backward().unwrap();
            assert_eq!(x.gradient(), Some(6.0 + f64::from(step)), "step {step}");
            y = y.add(&x).unwrap();
        }
        assert_eq!(topology(&y).len(), 302);
    }

    #[test]
    fn zero_grad_leaves_unreachable_nodes_alone() {
        let tape = Tape::new();
        let x = tape.variable(3.0).unwrap();
        let y = x.mul(&x).unwrap();
        let other = x.neg().unwrap();
        y.backward().unwrap();
        other.backward().unwrap();
        y.zero_grad();
        assert_eq!(x.gradient(), Some(0.0));
        assert_eq!(y.gradient(), Some(0.0));
        assert_eq!(other.gradient(), Some(1.0));
    }
}

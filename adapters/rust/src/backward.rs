//! Topology, backward and zero_grad (docs/contract.md sections 5-7).
//!
//! The topological order is the canonical one: depth-first post-order from the
//! output, operands visited in slot order, computed with an explicit stack so
//! that depth is limited only by memory. backward computes fresh pass
//! adjoints, checks every contribution and every prospective stored gradient,
//! and commits only when all checks passed, so a failed backward changes no bit
//! of any stored gradient.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Error;
use crate::record::{EdgeRecord, NodeRecord, PassRecord};
use crate::scalar::Scalar;

/// Source of walk ids: each topological walk marks the nodes it visits with a
/// fresh id, so "visited" is one comparison instead of a hash-set lookup.
static NEXT_WALK: AtomicU64 = AtomicU64::new(1);

/// Every node reachable from `output`, each once, operands before results, output last.
///
/// The canonical order: depth-first post-order from the output, operands
/// visited in slot order. Iterative. As a side effect each node's `topo_index`
/// is its position in the returned order (valid until the next walk).
pub fn topology(output: &Scalar) -> Vec<Scalar> {
    let walk = NEXT_WALK.fetch_add(1, Ordering::Relaxed);
    let mut order: Vec<Scalar> = Vec::new();
    // The stack holds (node, next operand slot to visit).
    let mut stack: Vec<(Scalar, usize)> = vec![(output.clone(), 0)];
    output.0.visit_mark.set(walk);
    while let Some((node, slot)) = stack.last_mut() {
        let current = &node.0;
        if *slot < current.arity as usize {
            let operand = current.operands[*slot].clone();
            *slot += 1;
            if let Some(operand) = operand {
                if operand.0.visit_mark.get() != walk {
                    operand.0.visit_mark.set(walk);
                    stack.push((operand, 0));
                }
            }
        } else {
            let (node, _) = stack.pop().expect("the stack is not empty");
            node.0.topo_index.set(order.len());
            order.push(node);
        }
    }
    order
}

impl Scalar {
    /// Run one backward pass from this node with seed 1.0; see [`Scalar::backward_with_seed`].
    pub fn backward(&self) -> Result<PassRecord, Error> {
        self.backward_with_seed(1.0)
    }

    /// Run one backward pass from this node and add its pass adjoints to the stored gradients.
    ///
    /// Fails with `UntrackedOutput` (checked first), `NonFiniteSeed`,
    /// `NonFiniteContribution`, `NonFinitePassAdjoint` or
    /// `NonFiniteAccumulatedGradient`; when it fails, no stored gradient has
    /// changed. Returns the pass record.
    pub fn backward_with_seed(&self, seed: f64) -> Result<PassRecord, Error> {
        if !self.tracks_gradient() {
            return Err(Error::UntrackedOutput {
                operation: self.operation(),
            });
        }
        if !seed.is_finite() {
            return Err(Error::NonFiniteSeed { seed });
        }
        let topo = topology(self);
        // Fresh pass adjoints: 0.0 for every tracked node, the seed for the output.
        // Untracked nodes' entries stay 0.0, which is also their upstream.
        let mut pass = vec![0.0f64; topo.len()];
        let last = topo.len() - 1;
        pass[last] = seed;
        let edge_count = topo.iter().map(|node| node.0.arity as usize).sum();
        let mut edges: Vec<EdgeRecord> = Vec::with_capacity(edge_count);
        for child_index in (0..topo.len()).rev() {
            let child = &topo[child_index];
            let upstream = pass[child_index];
            for (operand, (parent, local_derivative)) in child.operand_edges().enumerate() {
                let contribution = upstream * local_derivative;
                if !contribution.is_finite() {
                    return Err(Error::NonFiniteContribution {
                        child: child.clone(),
                        parent: parent.clone(),
                        operand,
                        upstream,
                        local_derivative,
                    });
                }
                let parent_tracked = parent.tracks_gradient();
                let (before, after) = if parent_tracked {
                    let parent_index = parent.0.topo_index.get();
                    let before = pass[parent_index];
                    let after = before + contribution;
                    if !after.is_finite() {
                        return Err(Error::NonFinitePassAdjoint {
                            node: parent.clone(),
                            previous: before,
                            contribution,
                        });
                    }
                    pass[parent_index] = after;
                    (Some(before), Some(after))
                } else {
                    (None, None)
                };
                edges.push(EdgeRecord {
                    child: child.clone(),
                    parent: parent.clone(),
                    operand,
                    local_derivative,
                    upstream,
                    contribution,
                    parent_tracked,
                    before,
                    after,
                });
            }
        }
        // Prospective stored gradients, checked before anything is committed.
        let mut prospective: Vec<Option<f64>> = Vec::with_capacity(topo.len());
        for (node, &pass_adjoint) in topo.iter().zip(&pass) {
            if !node.tracks_gradient() {
                prospective.push(None);
                continue;
            }
            let stored = node.0.grad.get();
            let total = stored + pass_adjoint;
            if !total.is_finite() {
                return Err(Error::NonFiniteAccumulatedGradient {
                    node: node.clone(),
                    stored,
                    pass_adjoint,
                });
            }
            prospective.push(Some(total));
        }
        // Every check passed: commit.
        for (node, total) in topo.iter().zip(&prospective) {
            if let Some(total) = total {
                node.0.grad.set(*total);
            }
        }
        let nodes = topo
            .into_iter()
            .zip(pass)
            .zip(prospective)
            .map(|((node, pass_adjoint), stored_gradient)| {
                let tracked = node.tracks_gradient();
                NodeRecord {
                    operation: node.operation(),
                    value: node.value(),
                    tracked,
                    pass_adjoint: tracked.then_some(pass_adjoint),
                    stored_gradient,
                    node,
                }
            })
            .collect();
        Ok(PassRecord { seed, nodes, edges })
    }

    /// Set the stored gradient of every tracked node reachable from this node to 0.0.
    ///
    /// Values, edges and unreachable nodes are untouched.
    pub fn zero_grad(&self) {
        for node in topology(self) {
            if node.tracks_gradient() {
                node.0.grad.set(0.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(value: f64) -> Scalar {
        Scalar::variable(value).unwrap()
    }

    #[test]
    fn topology_is_depth_first_post_order_in_slot_order() {
        let a = v(1.0);
        let b = v(2.0);
        let ab = a.mul(&b).unwrap();
        let out = b.add(&ab).unwrap();
        let order = topology(&out);
        let expected = [&b, &a, &ab, &out];
        assert_eq!(order.len(), expected.len());
        for (got, want) in order.iter().zip(expected) {
            assert!(got.is_same_node(want));
        }
    }

    #[test]
    fn a_failed_backward_changes_no_stored_gradient() {
        let big = v(1.0);
        let k = Scalar::constant(1e308).unwrap();
        let loss = big.mul(&k).unwrap();
        loss.backward().unwrap();
        let error = loss.backward().unwrap_err();
        assert_eq!(error.kind(), "non-finite-accumulated-gradient");
        assert_eq!(big.gradient(), Some(1e308));
        assert_eq!(loss.gradient(), Some(1.0));
    }

    #[test]
    fn untracked_output_is_checked_before_the_seed() {
        let c = Scalar::constant(1.0).unwrap();
        let error = c.backward_with_seed(f64::NAN).unwrap_err();
        assert_eq!(error.kind(), "untracked-output");
        let x = v(1.0);
        assert_eq!(
            x.backward_with_seed(f64::INFINITY).unwrap_err().kind(),
            "non-finite-seed"
        );
    }

    #[test]
    fn zero_grad_leaves_unreachable_nodes_alone() {
        let x = v(3.0);
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

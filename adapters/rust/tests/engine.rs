//! The contract's seed facts (docs/contract.md section 10), a million-node chain, and the
//! gradient check, through the public API only.

use scalar_autodiff::{Scalar, Tape, gradcheck, topology};

fn grads(nodes: &[&Scalar]) -> Vec<Option<f64>> {
    nodes.iter().map(|node| node.gradient()).collect()
}

#[test]
fn a_reused_square_accumulates_through_four_edges() {
    let x = Tape::new().variable(2.0).unwrap();
    let square = x.mul(&x).unwrap();
    let loss = square.add(&square).unwrap();
    assert_eq!((square.value(), loss.value()), (4.0, 8.0));

    let record = loss.backward_recorded(1.0).unwrap();
    assert_eq!(
        grads(&[&loss, &square, &x]),
        [Some(1.0), Some(2.0), Some(8.0)]
    );
    let edges: Vec<_> = record
        .edges
        .iter()
        .map(|e| {
            (
                e.slot,
                e.local_derivative,
                e.upstream,
                e.contribution,
                e.before,
                e.after,
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            (0, 1.0, 1.0, 1.0, Some(0.0), Some(1.0)),
            (1, 1.0, 1.0, 1.0, Some(1.0), Some(2.0)),
            (0, 2.0, 2.0, 4.0, Some(0.0), Some(4.0)),
            (1, 2.0, 2.0, 4.0, Some(4.0), Some(8.0)),
        ]
    );
    assert!(
        record.edges[..2]
            .iter()
            .all(|e| e.consumer == loss.id() && e.operand == square.id())
    );
    assert!(
        record.edges[2..]
            .iter()
            .all(|e| e.consumer == square.id() && e.operand == x.id())
    );
    let order: Vec<_> = record.nodes.iter().map(|n| n.node).collect();
    assert_eq!(order, [x.id(), square.id(), loss.id()]);

    loss.backward().unwrap();
    assert_eq!(
        grads(&[&loss, &square, &x]),
        [Some(2.0), Some(4.0), Some(16.0)]
    );
    loss.zero_grad();
    assert_eq!(
        grads(&[&loss, &square, &x]),
        [Some(0.0), Some(0.0), Some(0.0)]
    );
    loss.backward().unwrap();
    assert_eq!(
        grads(&[&loss, &square, &x]),
        [Some(1.0), Some(2.0), Some(8.0)]
    );
}

#[test]
fn a_detached_copy_has_no_gradient_and_no_edge() {
    let tape = Tape::new();
    let x = tape.variable(2.0).unwrap();
    let detached = x.detach();
    let y = x
        .mul(&x)
        .unwrap()
        .add(&detached.mul(&tape.constant(3.0).unwrap()).unwrap())
        .unwrap();
    y.backward().unwrap();
    assert_eq!(y.value(), 10.0);
    assert_eq!(x.gradient(), Some(4.0));
    assert_eq!(detached.gradient(), None);
    assert!(detached.operand_edges().is_empty());
}

#[test]
fn exp_of_tanh_matches_the_seed_values() {
    let x = Tape::new().variable(0.5).unwrap();
    let y = x.tanh().unwrap().exp().unwrap();
    y.backward().unwrap();
    assert_eq!(format!("{:.12}", y.value()), "1.587431271430");
    assert_eq!(format!("{:.12}", x.gradient().unwrap()), "1.248431724655");
}

#[test]
fn central_differences_agree_with_backward_on_two_x_squared() {
    let checks = gradcheck(|v| v[0].constant(2.0)?.mul(&v[0])?.mul(&v[0]), &[2.0]).unwrap();
    assert_eq!(checks.len(), 1);
    assert_eq!(
        (
            checks[0].analytic,
            checks[0].numerical,
            checks[0].scaled_error
        ),
        (8.0, 8.0, 0.0)
    );
    assert!(checks[0].passed());
}

#[test]
fn a_million_node_chain_builds_backwards_zeroes_and_drops_on_a_small_stack() {
    // A small stack proves that nothing here recurses per node.
    let worker = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let tape = Tape::new();
            let x = tape.variable(0.5).unwrap();
            let one = tape.constant(1.0).unwrap();
            let mut y = x.clone();
            for _ in 1..1_000_000 {
                y = y.add(&one).unwrap();
            }
            assert_eq!(y.value(), 999_999.5);
            y.backward().unwrap();
            assert_eq!(x.gradient(), Some(1.0));
            y.zero_grad();
            let record = y.backward_recorded(1.0).unwrap();
            assert_eq!(record.nodes.len(), 1_000_001);
            assert_eq!(record.edges.len(), 1_999_998);
            assert_eq!(x.gradient(), Some(1.0));
            y.zero_grad();
            assert_eq!(x.gradient(), Some(0.0));
            assert_eq!(topology(&y).len(), 1_000_001);
            drop(record);
            drop(y);
            x.gradient()
        });
    assert_eq!(worker.unwrap().join().unwrap(), Some(0.0));
}

//! A tiny correct engine written into the Rust starter's hooks, for tests/test_starters.py.
//! It follows the contract (docs/contract.md sections 3 to 6) with std's f64 math on a tape
//! of nodes: every operand edge summed, fresh pass adjoints per backward, every check before
//! the commit, the canonical depth-first post-order, and a pass record for trace and order.

use crate::conformance::{self, HookResult, PassEdge, PassNode, PassRecord};

/// The engine's own types, named as the kit's were before they moved under `conformance::`:
/// a port's `Node` and `EngineError` must compile beside the loop's.
#[allow(dead_code)]
pub struct Node;
#[allow(dead_code)]
pub struct EngineError;
#[allow(dead_code)]
pub struct Failure;

pub const ENGINE_NAME: &str = "starter-test-engine";
pub const ENGINE_VERSION: &str = "0.1.0";
pub const OPS: &[&str] = &[
    "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "tanh", "relu", "sigmoid", "sqrt",
    "detach",
];
pub const LEVELS: &[&str] = &["values", "gradients", "errors", "trace", "order"];
pub const FEATURES: &[&str] = &["seed"];

pub type Handle = usize;

pub fn node_key(node: &Handle) -> usize {
    *node
}

struct Entry {
    value: f64,
    operation: String,
    operands: Vec<usize>,
    derivatives: Vec<f64>,
    tracked: bool,
    grad: f64,
}

pub struct Engine {
    tape: Vec<Entry>,
    record: Option<PassRecord>,
}

/// The op table: value and local derivatives from the forward values, as the contract writes them.
fn rule(op: &str, a: f64, b: f64, c: f64) -> (f64, Vec<f64>) {
    match op {
        "add" => (a + b, vec![1.0, 1.0]),
        "sub" => (a - b, vec![1.0, -1.0]),
        "mul" => (a * b, vec![b, a]),
        "div" => {
            let r = a / b;
            (r, vec![1.0 / b, -(r / b)])
        }
        "neg" => (-a, vec![-1.0]),
        "pow" => (
            a.powf(c),
            vec![if c == 0.0 { 0.0 } else { c * a.powf(c - 1.0) }],
        ),
        "exp" => {
            let r = a.exp();
            (r, vec![r])
        }
        "log" => (a.ln(), vec![1.0 / a]),
        "tanh" => {
            let t = a.tanh();
            (t, vec![1.0 - t * t])
        }
        "relu" if a > 0.0 => (a, vec![1.0]),
        "relu" => (0.0, vec![0.0]),
        "sigmoid" => {
            // The stable form: exp never overflows, and s is subnormal or +0.0 far below zero.
            let s = if a >= 0.0 {
                1.0 / (1.0 + (-a).exp())
            } else {
                let e = a.exp();
                e / (1.0 + e)
            };
            (s, vec![s * (1.0 - s)])
        }
        "sqrt" => {
            let r = a.sqrt();
            (r, vec![0.5 / r])
        }
        _ => panic!("unknown op {op}"),
    }
}

impl Engine {
    pub fn new() -> Self {
        Engine {
            tape: Vec::new(),
            record: None,
        }
    }

    fn push(
        &mut self,
        value: f64,
        operation: &str,
        operands: Vec<usize>,
        derivatives: Vec<f64>,
        tracked: bool,
    ) -> Handle {
        self.tape.push(Entry {
            value,
            operation: operation.to_string(),
            operands,
            derivatives,
            tracked,
            grad: 0.0,
        });
        self.tape.len() - 1
    }

    fn leaf(&mut self, value: f64, operation: &str) -> HookResult<Handle> {
        if !value.is_finite() {
            return Err(conformance::EngineError::new("non-finite-leaf")
                .text("operation", operation)
                .number("value", value)
                .into());
        }
        Ok(self.push(value, operation, vec![], vec![], operation == "variable"))
    }

    pub fn variable(&mut self, value: f64) -> HookResult<Handle> {
        if value == 12345.0 {
            // A stray print, as an engine's debug line: the loop must keep it off the protocol.
            println!("engine noise on stdout");
        }
        self.leaf(value, "variable")
    }

    pub fn constant(&mut self, value: f64) -> HookResult<Handle> {
        self.leaf(value, "constant")
    }

    pub fn apply(
        &mut self,
        op: &str,
        operands: &[Handle],
        exponent: Option<f64>,
    ) -> HookResult<Handle> {
        let a = self.tape[operands[0]].value;
        let b = operands.get(1).map_or(0.0, |&n| self.tape[n].value);
        let (value, derivatives) = rule(op, a, b, exponent.unwrap_or(0.0));
        if !value.is_finite() {
            return Err(conformance::EngineError::new("non-finite-result")
                .text("operation", op)
                .number("value", value)
                .into());
        }
        for (slot, d) in derivatives.iter().enumerate() {
            if !d.is_finite() {
                let error = conformance::EngineError::new("non-finite-local-derivative")
                    .text("operation", op)
                    .slot("slot", slot);
                return Err(error.number("value", *d).into());
            }
        }
        let tracked = operands.iter().any(|&n| self.tape[n].tracked);
        Ok(self.push(value, op, operands.to_vec(), derivatives, tracked))
    }

    pub fn detach(&mut self, node: &Handle) -> HookResult<Handle> {
        let value = self.tape[*node].value;
        Ok(self.push(value, "detached", vec![], vec![], false))
    }

    pub fn value(&self, node: &Handle) -> HookResult<f64> {
        Ok(self.tape[*node].value)
    }

    pub fn tracked(&self, node: &Handle) -> HookResult<bool> {
        Ok(self.tape[*node].tracked)
    }

    pub fn gradient(&self, node: &Handle) -> HookResult<f64> {
        Ok(self.tape[*node].grad)
    }

    /// Depth-first post-order from the output, operands in slot order, iteratively.
    fn topology(&self, output: usize) -> Vec<usize> {
        let mut order = Vec::new();
        let mut seen = vec![false; self.tape.len()];
        seen[output] = true;
        let mut stack = vec![(output, 0usize)];
        while let Some(top) = stack.last_mut() {
            let (node, slot) = *top;
            if slot < self.tape[node].operands.len() {
                top.1 += 1;
                let operand = self.tape[node].operands[slot];
                if !seen[operand] {
                    seen[operand] = true;
                    stack.push((operand, 0));
                }
            } else {
                order.push(node);
                stack.pop();
            }
        }
        order
    }

    pub fn backward(&mut self, output: &Handle, seed: f64) -> HookResult<()> {
        let output = *output;
        if !self.tape[output].tracked {
            return Err(conformance::EngineError::new("untracked-output")
                .text("operation", &self.tape[output].operation)
                .into());
        }
        if !seed.is_finite() {
            return Err(conformance::EngineError::new("non-finite-seed")
                .number("seed", seed)
                .into());
        }
        let order = self.topology(output);
        let mut adjoint = vec![0.0; self.tape.len()];
        adjoint[output] = seed;
        let mut edges = Vec::new();
        for &consumer in order.iter().rev() {
            let upstream = if self.tape[consumer].tracked {
                adjoint[consumer]
            } else {
                0.0
            };
            for (slot, &operand) in self.tape[consumer].operands.iter().enumerate() {
                let d = self.tape[consumer].derivatives[slot];
                let contribution = upstream * d;
                if !contribution.is_finite() {
                    let error = conformance::EngineError::new("non-finite-contribution")
                        .node("consumer", consumer)
                        .slot("slot", slot)
                        .node("operand", operand);
                    let error = error.number("upstream", upstream);
                    return Err(error.number("local_derivative", d).into());
                }
                let (mut before, mut after) = (None, None);
                if self.tape[operand].tracked {
                    let previous = adjoint[operand];
                    let sum = previous + contribution;
                    (before, after) = (Some(previous), Some(sum));
                    if !sum.is_finite() {
                        let error = conformance::EngineError::new("non-finite-pass-adjoint")
                            .node("node", operand)
                            .number("previous", previous);
                        return Err(error.number("contribution", contribution).into());
                    }
                    adjoint[operand] = sum;
                }
                edges.push(PassEdge {
                    consumer,
                    slot,
                    operand,
                    local_derivative: d,
                    upstream,
                    contribution,
                    before,
                    after,
                });
            }
        }
        for &n in &order {
            let entry = &self.tape[n];
            if entry.tracked && !(entry.grad + adjoint[n]).is_finite() {
                let error = conformance::EngineError::new("non-finite-accumulated-gradient")
                    .node("node", n)
                    .number("stored", entry.grad);
                return Err(error.number("pass_adjoint", adjoint[n]).into());
            }
        }
        let mut nodes = Vec::new();
        for &n in &order {
            if self.tape[n].tracked {
                self.tape[n].grad += adjoint[n];
            }
            let tracked = self.tape[n].tracked;
            nodes.push(PassNode {
                node: n,
                pass_adjoint: tracked.then_some(adjoint[n]),
                stored_gradient: tracked.then_some(self.tape[n].grad),
            });
        }
        self.record = Some(PassRecord { seed, nodes, edges });
        Ok(())
    }

    pub fn zero_grad(&mut self, output: &Handle) -> HookResult<()> {
        for n in self.topology(*output) {
            self.tape[n].grad = 0.0;
        }
        Ok(())
    }

    pub fn pass_record(&mut self) -> HookResult<PassRecord> {
        Ok(self
            .record
            .take()
            .expect("a successful backward came first"))
    }
}

//! The limit baseline: a minimal scalar tape engine, timed on a program file.
//!
//! `minimal-bench PROGRAM.json` reads a program (the fixture format 3 form, a
//! step's operand ids in `operands`, as the port's `scalar-bench` does), runs
//! it and prints one JSON line:
//! `{"engine":"rust-minimal","nodes":N,"forward_seconds":f,"backward_seconds":b,`
//! `"cold_forward_seconds":cf,"cold_backward_seconds":cb,"rss_delta_bytes":m}`.
//!
//! The engine is what issue 18 calls a minimal tape: nodes in one array, `u32`
//! operand indices, local derivatives stored at creation, one reverse sweep of
//! the tape from the output into a fresh adjoint array, and a commit after the
//! finiteness checks. It keeps no canonical topology (it sweeps every node
//! created before the output, in creation order), no error fields and no pass
//! record: it is what the port's speed is measured against, not a port.
//! Parsing is not timed; reserving the tape and runs of creation steps count
//! as forward, runs of backward and zero_grad steps as backward. As in
//! `scalar-bench`, the program runs twice on a new tape: the cold first run, in
//! a heap the process has never used, gives cf, cb and m (the resident set's
//! growth over it); its tape is dropped and the second run, in the memory the
//! allocator got back, gives f and b.

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::Value;

/// One operation, with the program's operand indices resolved.
#[derive(Clone, Copy)]
enum Step {
    Variable(f64),
    Constant(f64),
    Detach(u32),
    Binary(u8, u32, u32),
    Unary(u8, u32, f64),
    Backward(u32, f64),
    ZeroGrad(u32),
}

/// One node: operand indices and their local derivatives, fixed at creation.
#[derive(Clone, Copy)]
struct Node {
    operands: [u32; 2],
    local: [f64; 2],
    arity: u8,
    tracked: bool,
}

#[derive(Default)]
struct Tape {
    nodes: Vec<Node>,
    values: Vec<f64>,
    grads: Vec<f64>,
}

impl Tape {
    fn push(&mut self, value: f64, node: Node) -> Result<(), String> {
        if !value.is_finite() || !node.local[0].is_finite() || !node.local[1].is_finite() {
            return Err(format!("non-finite value {value} or local derivative"));
        }
        self.nodes.push(node);
        self.values.push(value);
        self.grads.push(0.0);
        Ok(())
    }

    fn create(&mut self, step: Step) -> Result<(), String> {
        let leaf = |tracked| Node {
            operands: [0; 2],
            local: [0.0; 2],
            arity: 0,
            tracked,
        };
        match step {
            Step::Variable(v) => self.push(v, leaf(true)),
            Step::Constant(v) => self.push(v, leaf(false)),
            Step::Detach(a) => self.push(self.values[a as usize], leaf(false)),
            Step::Binary(op, a, b) => {
                let (x, y) = (self.values[a as usize], self.values[b as usize]);
                let (value, local) = match op {
                    0 => (x + y, [1.0, 1.0]),
                    1 => (x - y, [1.0, -1.0]),
                    2 => (x * y, [y, x]),
                    _ => {
                        let r = x / y;
                        (r, [1.0 / y, -(r / y)])
                    }
                };
                let tracked = self.nodes[a as usize].tracked || self.nodes[b as usize].tracked;
                self.push(
                    value,
                    Node {
                        operands: [a, b],
                        local,
                        arity: 2,
                        tracked,
                    },
                )
            }
            Step::Unary(op, a, c) => {
                let x = self.values[a as usize];
                let (value, d) = match op {
                    0 => (-x, -1.0),
                    1 => (x.powf(c), if c == 0.0 { 0.0 } else { c * x.powf(c - 1.0) }),
                    2 => {
                        let r = x.exp();
                        (r, r)
                    }
                    3 => (x.ln(), 1.0 / x),
                    4 => {
                        let t = x.tanh();
                        (t, 1.0 - t * t)
                    }
                    _ => {
                        if x > 0.0 {
                            (x, 1.0)
                        } else {
                            (0.0, 0.0)
                        }
                    }
                };
                let tracked = self.nodes[a as usize].tracked;
                self.push(
                    value,
                    Node {
                        operands: [a, 0],
                        local: [d, 0.0],
                        arity: 1,
                        tracked,
                    },
                )
            }
            _ => unreachable!("not a creation step"),
        }
    }

    /// One reverse sweep from `output` into a fresh adjoint array; commit after the checks.
    fn backward(&mut self, output: u32, seed: f64) -> Result<(), String> {
        let out = output as usize;
        let mut adjoint = vec![0.0f64; out + 1];
        adjoint[out] = seed;
        for i in (0..=out).rev() {
            let node = self.nodes[i];
            if !node.tracked {
                continue;
            }
            let upstream = adjoint[i];
            for slot in 0..node.arity as usize {
                let operand = node.operands[slot] as usize;
                let contribution = upstream * node.local[slot];
                let after = adjoint[operand] + contribution;
                if !after.is_finite() {
                    return Err(format!("non-finite adjoint at node {operand}"));
                }
                adjoint[operand] = after;
            }
        }
        for (grad, adjoint) in self.grads.iter().zip(&adjoint) {
            if !(grad + adjoint).is_finite() {
                return Err("non-finite gradient".into());
            }
        }
        for (grad, adjoint) in self.grads.iter_mut().zip(&adjoint) {
            *grad += adjoint;
        }
        Ok(())
    }

    fn zero_grad(&mut self, output: u32) {
        self.grads[..=output as usize].fill(0.0);
    }
}

fn number(value: &Value) -> Result<f64, String> {
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("bad number {n}")),
        Value::String(s) => s.parse().map_err(|_| format!("bad number {s:?}")),
        other => Err(format!("not a number: {other}")),
    }
}

/// The program's steps with ids resolved to creation indices (failed creations are not expected).
fn load(path: &str) -> Result<Vec<Step>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let raw: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut steps = Vec::new();
    for step in raw.as_array().ok_or("a program is an array")? {
        let op = step["op"].as_str().ok_or("a step has an op")?;
        let node = |key: &Value| -> Result<u32, String> {
            let id = key.as_str().ok_or("ids are strings")?;
            ids.get(id)
                .copied()
                .ok_or_else(|| format!("unknown id {id:?}"))
        };
        if !step["args"].is_null() {
            return Err(format!(
                "a {op} step has protocol 1's \"args\": programs name operand ids \"operands\""
            ));
        }
        let operands = step["operands"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let parsed = match op {
            "variable" => Step::Variable(number(&step["value"])?),
            "constant" => Step::Constant(number(&step["value"])?),
            "detach" => Step::Detach(node(&operands[0])?),
            "add" | "sub" | "mul" | "div" => {
                let code = ["add", "sub", "mul", "div"]
                    .iter()
                    .position(|o| *o == op)
                    .unwrap_or(0);
                Step::Binary(code as u8, node(&operands[0])?, node(&operands[1])?)
            }
            "neg" | "pow" | "exp" | "log" | "tanh" | "relu" => {
                let code = ["neg", "pow", "exp", "log", "tanh", "relu"]
                    .iter()
                    .position(|o| *o == op)
                    .unwrap_or(0);
                let exponent = if op == "pow" {
                    number(&step["exponent"])?
                } else {
                    0.0
                };
                Step::Unary(code as u8, node(&operands[0])?, exponent)
            }
            "backward" => {
                let seed = if step["seed"].is_null() {
                    1.0
                } else {
                    number(&step["seed"])?
                };
                Step::Backward(node(&step["output"])?, seed)
            }
            "zero_grad" => Step::ZeroGrad(node(&step["output"])?),
            other => return Err(format!("unknown op {other:?}")),
        };
        if let Some(id) = step["id"].as_str() {
            let index = ids.len() as u32;
            ids.insert(id.to_string(), index);
        }
        steps.push(parsed);
    }
    Ok(steps)
}

/// The resident set size in bytes (VmRSS), or 0 where /proc is not available.
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
            let kilobytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kilobytes * 1024)
        })
        .unwrap_or(0)
}

fn run(steps: &[Step]) -> Result<(Tape, Duration, Duration), String> {
    let clock = Instant::now();
    // On the clock, as forward work, as in scalar-bench.
    let mut tape = Tape::default();
    tape.nodes.reserve(steps.len());
    tape.values.reserve(steps.len());
    tape.grads.reserve(steps.len());
    let (mut forward, mut backward) = (clock.elapsed(), Duration::ZERO);
    let creates = |step: &Step| !matches!(step, Step::Backward(..) | Step::ZeroGrad(_));
    let mut start = 0;
    while start < steps.len() {
        let creating = creates(&steps[start]);
        let mut end = start;
        while end < steps.len() && creates(&steps[end]) == creating {
            end += 1;
        }
        let clock = Instant::now();
        for &step in &steps[start..end] {
            match step {
                Step::Backward(output, seed) => tape.backward(output, seed)?,
                Step::ZeroGrad(output) => tape.zero_grad(output),
                creation => tape.create(creation)?,
            }
        }
        if creating {
            forward += clock.elapsed();
        } else {
            backward += clock.elapsed();
        }
        start = end;
    }
    Ok((tape, forward, backward))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = args.as_slice() else {
        eprintln!("usage: minimal-bench PROGRAM.json");
        return ExitCode::from(2);
    };
    // Parse on another thread, as scalar-bench does, so parsing leaves the main heap alone.
    let owned = path.clone();
    let steps = match std::thread::spawn(move || load(&owned)).join() {
        Ok(Ok(steps)) => steps,
        Ok(Err(message)) => {
            eprintln!("minimal-bench: {message}");
            return ExitCode::from(2);
        }
        Err(_) => {
            eprintln!("minimal-bench: the parser panicked");
            return ExitCode::from(2);
        }
    };
    let before = resident_bytes();
    let runs = run(&steps).and_then(|(cold, cold_forward, cold_backward)| {
        let rss_delta = resident_bytes().saturating_sub(before);
        // The cold run's memory goes back to the allocator before the warm run starts.
        drop(cold);
        Ok((cold_forward, cold_backward, rss_delta, run(&steps)?))
    });
    match runs {
        Ok((cold_forward, cold_backward, rss_delta, (tape, forward, backward))) => {
            println!(
                "{{\"engine\":\"rust-minimal\",\"nodes\":{},\"forward_seconds\":{},\"backward_seconds\":{},\"cold_forward_seconds\":{},\"cold_backward_seconds\":{},\"rss_delta_bytes\":{}}}",
                tape.nodes.len(),
                forward.as_secs_f64(),
                backward.as_secs_f64(),
                cold_forward.as_secs_f64(),
                cold_backward.as_secs_f64(),
                rss_delta
            );
            drop(tape);
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("minimal-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

//! Running a program on the engine and observing every step.
//!
//! This mirrors `conformance/execute.py`. The adapter, the benchmark and the
//! fixture tests all run programs through this module, so what the tests check
//! is what the harness sees. One observation per step, as JSON:
//!
//! ```text
//! creation, ok:      {"value": v, "tracked": b}
//! creation, failed:  {"error": {"kind": k, ...fields}}
//! backward, ok:      {"gradients": {id: g, ...}, "pass": {"seed", "nodes", "edges"}}
//! backward, failed:  {"error": {...}, "gradients": {...}}
//! zero_grad:         {"gradients": {...}}
//! ```
//!
//! `gradients` holds the stored gradient of every tracked node the program has
//! created so far, in creation order; nodes are named by program id everywhere.

use crate::error::Error;
use crate::program::{Creation, Program, ProgramError, Step};
use crate::record::PassRecord;
use crate::scalar::{Operation, Scalar};
use crate::tape::{NodeId, Tape};
use crate::wire::Json;

/// What one step did on the engine.
#[derive(Debug)]
pub enum Outcome {
    /// A creation step made this node.
    Created(NodeId),
    /// A creation step failed; no node exists for its id.
    CreationFailed(Error),
    /// A backward step succeeded, with its pass record when one was asked for.
    Backward(Option<PassRecord>),
    /// A backward step failed; no stored gradient changed.
    BackwardFailed(Error),
    /// A zero_grad step ran.
    ZeroGrad,
}

/// One program's run on the engine: ids and their nodes.
///
/// It holds one tape and the node of every creation index (the program's ids
/// by position, `Program::ids`). Every run starts a new session, on a new
/// tape. (The Go port's `program.Session` is the same thing.)
///
/// Each successful creation pushes one node, so until a creation fails the
/// creation index *is* the node id and no map is kept; the first failure
/// starts the map (`nodes`, with `NO_NODE` where the creating step failed).
#[derive(Debug, Default)]
pub struct Session {
    tape: Tape,
    /// Creation steps run so far.
    created: usize,
    /// Whether a creation has failed, so that `nodes` is the map.
    mapped: bool,
    nodes: Vec<u32>,
}

/// The entry of a creation index whose step failed; never a node id (a tape
/// holds fewer than `u32::MAX` nodes), and 4 bytes where `Option` takes 8.
const NO_NODE: u32 = u32::MAX;

impl Session {
    /// A session on an empty tape.
    pub fn new() -> Session {
        Session::default()
    }

    /// A session on an empty tape with room for `nodes` nodes.
    pub fn with_capacity(nodes: usize) -> Session {
        Session {
            tape: Tape::with_capacity(nodes),
            ..Session::default()
        }
    }

    /// The tape every node of the program lives on.
    pub fn tape(&self) -> &Tape {
        &self.tape
    }

    /// The node of a creation index, if its creating step succeeded.
    pub fn node(&self, index: usize) -> Option<Scalar> {
        self.id(index).map(|id| self.tape.scalar(id))
    }

    #[inline]
    fn id(&self, index: usize) -> Option<NodeId> {
        if !self.mapped {
            return (index < self.created).then_some(NodeId(index as u32));
        }
        self.nodes
            .get(index)
            .copied()
            .filter(|&id| id != NO_NODE)
            .map(NodeId)
    }

    #[inline]
    fn lookup(&self, program: &Program, index: u32, step: usize) -> Result<NodeId, ProgramError> {
        let index = index as usize;
        self.id(index).ok_or_else(|| {
            ProgramError(format!(
                "step {step}: id {:?} was never created (its creating step failed)",
                program.ids.get(index).map_or("?", String::as_str)
            ))
        })
    }

    /// Run step number `step_index` of `program` on the engine; a backward step
    /// builds its pass record only when `record` is true.
    ///
    /// Fails only when the step names a node whose creating step failed.
    #[inline]
    pub fn execute(
        &mut self,
        program: &Program,
        step_index: usize,
        record: bool,
    ) -> Result<Outcome, ProgramError> {
        match &program.steps[step_index] {
            Step::Create { creation, .. } => {
                let created = match creation {
                    Creation::Variable(value) => {
                        self.tape.0.borrow_mut().leaf(*value, Operation::Variable)
                    }
                    Creation::Constant(value) => {
                        self.tape.0.borrow_mut().leaf(*value, Operation::Constant)
                    }
                    Creation::Detach(operand) => {
                        let operand = self.lookup(program, *operand, step_index)?;
                        Ok(self.tape.0.borrow_mut().detach(operand))
                    }
                    Creation::Apply {
                        op,
                        operands,
                        exponent,
                    } => {
                        // At most two operands: no allocation per step.
                        let first = self.lookup(program, operands[0], step_index)?;
                        let row = op.op();
                        let exponent = row.takes_exponent.then_some(*exponent);
                        let mut tape = self.tape.0.borrow_mut();
                        if row.arity == 2 {
                            let second = self.lookup(program, operands[1], step_index)?;
                            tape.apply(*op, &[first, second], exponent)
                        } else {
                            tape.apply(*op, &[first], exponent)
                        }
                    }
                };
                if created.is_err() && !self.mapped {
                    // The first failure: from here on creation index and node id differ.
                    self.nodes = (0..self.created as u32).collect();
                    self.mapped = true;
                }
                self.created += 1;
                Ok(match created {
                    Ok(id) => {
                        if self.mapped {
                            self.nodes.push(id.0);
                        }
                        Outcome::Created(id)
                    }
                    Err(error) => {
                        self.nodes.push(NO_NODE);
                        Outcome::CreationFailed(error)
                    }
                })
            }
            Step::Backward { output, seed } => {
                let output = self.lookup(program, *output, step_index)?.0;
                let seed = *seed;
                let mut tape = self.tape.0.borrow_mut();
                let result = if record {
                    tape.backward::<true>(output, seed)
                } else {
                    tape.backward::<false>(output, seed)
                };
                Ok(match result {
                    Ok(record) => Outcome::Backward(record),
                    Err(error) => Outcome::BackwardFailed(error),
                })
            }
            Step::ZeroGrad { output } => {
                let output = self.lookup(program, *output, step_index)?.0;
                self.tape.0.borrow_mut().zero_grad(output);
                Ok(Outcome::ZeroGrad)
            }
        }
    }
}

/// The program id of every node on a program's tape, by node id.
///
/// Each successful creation step pushes exactly one node, so the node ids are
/// the successful creations in order and the map is a plain vector.
#[derive(Debug, Default)]
pub struct Names(Vec<usize>);

impl Names {
    fn id(&self, node: NodeId, program: &Program) -> Json {
        // Every node an error or record names was created by this program.
        Json::Str(
            self.0
                .get(node.index())
                .map_or_else(|| "?".to_string(), |&index| program.ids[index].clone()),
        )
    }
}

/// Execute `program` in a new session and return one observation per step.
///
/// `record_pass` adds the pass record to each successful backward's observation
/// (for an adapter that declares `trace` or `order`); without it backward takes
/// the fast path and builds none. Fails when a step names a node whose
/// creating step failed.
pub fn run_program(program: &Program, record_pass: bool) -> Result<Vec<Json>, ProgramError> {
    let mut session = Session::new();
    let mut names = Names::default();
    // Tracked nodes in creation order, for the gradients map.
    let mut tracked: Vec<(usize, NodeId)> = Vec::new();
    let mut observations = Vec::with_capacity(program.steps.len());
    for step_index in 0..program.steps.len() {
        let observation = match session.execute(program, step_index, record_pass)? {
            Outcome::Created(node) => {
                // This step's creation index: the creation steps before it.
                let index = session.created - 1;
                let tape = session.tape.0.borrow();
                let tracked_node = tape.links[node.index()].tracked();
                let observation = Json::object([
                    ("value", Json::Float(tape.values[node.index()])),
                    ("tracked", Json::Bool(tracked_node)),
                ]);
                if tracked_node {
                    tracked.push((index, node));
                }
                names.0.push(index);
                observation
            }
            Outcome::CreationFailed(error) => {
                Json::object([("error", error_to_json(&error, &names, program))])
            }
            Outcome::Backward(record) => {
                let mut fields = vec![("gradients", gradients(&session, &tracked, program))];
                if let Some(record) = record {
                    fields.push(("pass", pass_to_json(&record, &names, program)));
                }
                Json::object(fields)
            }
            Outcome::BackwardFailed(error) => Json::object([
                ("error", error_to_json(&error, &names, program)),
                ("gradients", gradients(&session, &tracked, program)),
            ]),
            Outcome::ZeroGrad => {
                Json::object([("gradients", gradients(&session, &tracked, program))])
            }
        };
        observations.push(observation);
    }
    Ok(observations)
}

fn gradients(session: &Session, tracked: &[(usize, NodeId)], program: &Program) -> Json {
    let tape = session.tape.0.borrow();
    Json::Object(
        tracked
            .iter()
            .map(|&(index, node)| {
                (
                    program.ids[index].clone(),
                    Json::optional_float(tape.gradient(node)),
                )
            })
            .collect(),
    )
}

/// The error as wire data: its kind, then its fields with nodes named by program id.
pub fn error_to_json(error: &Error, names: &Names, program: &Program) -> Json {
    let id = |node: &crate::NodeInfo| names.id(node.id, program);
    let operation = |operation: &crate::Operation| Json::Str(operation.name().to_string());
    let mut fields = vec![("kind", Json::Str(error.kind().to_string()))];
    match error {
        Error::NonFiniteLeaf {
            operation: op,
            value,
        }
        | Error::NonFiniteResult {
            operation: op,
            value,
        } => {
            fields.extend([("operation", operation(op)), ("value", Json::Float(*value))]);
        }
        Error::NonFiniteLocalDerivative {
            operation: op,
            slot,
            value,
        } => fields.extend([
            ("operation", operation(op)),
            ("slot", Json::Int(*slot as u64)),
            ("value", Json::Float(*value)),
        ]),
        Error::UntrackedOutput { operation: op } => fields.push(("operation", operation(op))),
        Error::NonFiniteSeed { seed } => fields.push(("seed", Json::Float(*seed))),
        Error::NonFiniteContribution {
            consumer,
            slot,
            operand,
            upstream,
            local_derivative,
        } => fields.extend([
            ("consumer", id(consumer)),
            ("slot", Json::Int(*slot as u64)),
            ("operand", id(operand)),
            ("upstream", Json::Float(*upstream)),
            ("local_derivative", Json::Float(*local_derivative)),
        ]),
        Error::NonFinitePassAdjoint {
            node,
            previous,
            contribution,
        } => fields.extend([
            ("node", id(node)),
            ("previous", Json::Float(*previous)),
            ("contribution", Json::Float(*contribution)),
        ]),
        Error::NonFiniteAccumulatedGradient {
            node,
            stored,
            pass_adjoint,
        } => fields.extend([
            ("node", id(node)),
            ("stored", Json::Float(*stored)),
            ("pass_adjoint", Json::Float(*pass_adjoint)),
        ]),
    }
    Json::object(fields)
}

/// The pass record as wire data, nodes in topology order, edges in processing order.
pub fn pass_to_json(record: &PassRecord, names: &Names, program: &Program) -> Json {
    let id = |node: &NodeId| names.id(*node, program);
    let nodes = record
        .nodes
        .iter()
        .map(|n| {
            Json::object([
                ("node", id(&n.node)),
                ("operation", Json::Str(n.operation.name().to_string())),
                ("value", Json::Float(n.value)),
                ("tracked", Json::Bool(n.tracked)),
                ("pass_adjoint", Json::optional_float(n.pass_adjoint)),
                ("stored_gradient", Json::optional_float(n.stored_gradient)),
            ])
        })
        .collect();
    let edges = record
        .edges
        .iter()
        .map(|e| {
            Json::object([
                ("consumer", id(&e.consumer)),
                ("slot", Json::Int(e.slot as u64)),
                ("operand", id(&e.operand)),
                ("local_derivative", Json::Float(e.local_derivative)),
                ("upstream", Json::Float(e.upstream)),
                ("contribution", Json::Float(e.contribution)),
                ("operand_tracked", Json::Bool(e.operand_tracked)),
                ("before", Json::optional_float(e.before)),
                ("after", Json::optional_float(e.after)),
            ])
        })
        .collect();
    Json::object([
        ("seed", Json::Float(record.seed)),
        ("nodes", Json::Array(nodes)),
        ("edges", Json::Array(edges)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::parse_program;
    use crate::wire::parse;

    fn run(text: &str) -> Result<String, ProgramError> {
        let program = parse_program(&parse(text).unwrap(), "test")?;
        let observations = run_program(&program, true)?;
        Ok(Json::Array(observations).to_string())
    }

    #[test]
    fn the_reused_square_program_observes_every_step() {
        let out = run(
            r#"[{"id":"x","op":"variable","value":2},{"id":"s","op":"mul","operands":["x","x"]},
            {"op":"backward","output":"s"},{"op":"zero_grad","output":"s"}]"#,
        )
        .unwrap();
        assert!(out.starts_with(r#"[{"value":2.0,"tracked":true},{"value":4.0,"tracked":true},{"gradients":{"x":4.0,"s":1.0},"pass":{"seed":1.0,"#));
        assert!(out.ends_with(r#"{"gradients":{"x":0.0,"s":0.0}}]"#));
    }

    #[test]
    fn a_failed_creation_observes_the_error_and_creates_no_id() {
        let out = run(r#"[{"id":"x","op":"variable","value":"inf"}]"#).unwrap();
        assert_eq!(
            out,
            r#"[{"error":{"kind":"non-finite-leaf","operation":"variable","value":"inf"}}]"#
        );
        let error = run(
            r#"[{"id":"x","op":"variable","value":"inf"},{"id":"y","op":"neg","operands":["x"]}]"#,
        )
        .unwrap_err();
        assert_eq!(
            error.0,
            "step 1: id \"x\" was never created (its creating step failed)"
        );
    }

    #[test]
    fn nodes_created_after_a_failed_creation_keep_their_ids() {
        let out = run(
            r#"[{"id":"x","op":"variable","value":2},{"id":"bad","op":"variable","value":"nan"},
            {"id":"c","op":"constant","value":3},{"id":"y","op":"mul","operands":["x","c"]},
            {"op":"backward","output":"y"}]"#,
        )
        .unwrap();
        assert!(
            out.contains(
                r#"{"gradients":{"x":3.0,"y":1.0},"pass":{"seed":1.0,"nodes":[{"node":"x","#
            ),
            "{out}"
        );
        assert!(
            out.contains(r#"{"node":"c","operation":"constant","value":3.0"#),
            "{out}"
        );
        assert!(
            out.contains(r#"{"consumer":"y","slot":1,"operand":"c","#),
            "{out}"
        );
    }

    #[test]
    fn edges_are_written_consumer_slot_operand_first_in_protocol_2() {
        let out = run(
            r#"[{"id":"x","op":"variable","value":2},{"id":"s","op":"mul","operands":["x","x"]},
            {"op":"backward","output":"s"}]"#,
        )
        .unwrap();
        assert!(
            out.contains(
                r#""edges":[{"consumer":"s","slot":0,"operand":"x","local_derivative":2.0,"upstream":1.0,"contribution":2.0,"operand_tracked":true,"before":0.0,"after":2.0},"#
            ),
            "{out}"
        );
    }

    #[test]
    fn the_edge_errors_are_written_with_protocol_2_fields_in_order() {
        let out = run(
            r#"[{"id":"x","op":"variable","value":5e-324},{"id":"y","op":"log","operands":["x"]}]"#,
        )
        .unwrap();
        assert!(
            out.ends_with(
                r#"{"error":{"kind":"non-finite-local-derivative","operation":"log","slot":0,"value":"inf"}}]"#
            ),
            "{out}"
        );
        let out = run(
            r#"[{"id":"x","op":"variable","value":1e300},{"id":"c","op":"constant","value":1},
            {"id":"z","op":"mul","operands":["c","x"]},{"op":"backward","output":"z","seed":1e10}]"#,
        )
        .unwrap();
        assert!(
            out.ends_with(
                r#"{"error":{"kind":"non-finite-contribution","consumer":"z","slot":0,"operand":"c","upstream":10000000000.0,"local_derivative":1e+300},"gradients":{"x":0.0,"z":0.0}}]"#
            ),
            "{out}"
        );
    }

    #[test]
    fn a_step_with_protocol_1_args_is_a_program_error_naming_the_step_and_field() {
        let error =
            run(r#"[{"id":"x","op":"variable","value":2},{"id":"y","op":"mul","args":["x","x"]}]"#)
                .unwrap_err();
        assert_eq!(
            error.0,
            "test: step 1 (mul): field \"args\" is protocol 1's name; protocol 2 calls a step's operand ids \"operands\""
        );
    }

    #[test]
    fn malformed_steps_are_program_errors() {
        for text in [
            r#"{"id":"x"}"#,
            r#"[{"id":"x","op":"variable","value":1},{"id":"x","op":"variable","value":1}]"#,
            r#"[{"id":"x","op":"sqrt","operands":[]}]"#,
            r#"[{"id":"x","op":"variable","value":true}]"#,
            r#"[{"id":"x","op":"variable","value":1,"seed":2}]"#,
            r#"[{"id":"x","op":"variable","value":1},{"id":"y","op":"pow","operands":["x"],"exponent":"inf"}]"#,
            r#"[{"id":"x","op":"variable","value":1},{"id":"y","op":"add","operands":["x"]}]"#,
            r#"[{"op":"backward","output":"nobody"}]"#,
            r#"[{"id":"","op":"variable","value":1}]"#,
        ] {
            assert!(run(text).is_err(), "{text}");
        }
    }
}

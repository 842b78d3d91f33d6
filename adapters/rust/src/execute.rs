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
//! A repeated step (rule `program.repeat`) is observed once, as the last node
//! of its chain; its inner nodes are never in `gradients` and are named
//! `id[k]` only where an error or a record names one.

use crate::error::Error;
use crate::ops::OpKind;
use crate::program::{Creation, Program, ProgramError, Step, chain_name};
use crate::record::PassRecord;
use crate::scalar::{Operation, Scalar};
use crate::tape::{NodeId, Tape, TapeData};
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
#[derive(Debug, Default)]
pub struct Session {
    tape: Tape,
    ids: Ids,
}

/// The node of every creation index run so far.
///
/// Each successful creation of one node pushes one node, so until a creation
/// fails or a repeated step pushes a chain the creation index *is* the node id
/// and no map is kept; the first failure or chain starts the map (`nodes`, the
/// node of each creation index, the last of a chain, `NO_NODE` where the
/// creating step failed).
#[derive(Debug, Default)]
struct Ids {
    /// Creation steps run so far.
    created: usize,
    /// Whether a creation has failed, so that `nodes` is the map.
    mapped: bool,
    nodes: Vec<u32>,
}

/// The entry of a creation index whose step failed; never a node id (a tape
/// holds fewer than `u32::MAX` nodes), and 4 bytes where `Option` takes 8.
const NO_NODE: u32 = u32::MAX;

impl Ids {
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

    /// Run the creation step number `step_index` on the tape and book its node
    /// under the next creation index: the node, or the engine's error (no node).
    ///
    /// Fails only when the step names a node whose creating step failed.
    #[inline(always)]
    fn create(
        &mut self,
        tape: &mut TapeData,
        program: &Program,
        step_index: usize,
        creation: &Creation,
    ) -> Result<Result<NodeId, Error>, ProgramError> {
        let created = match creation {
            Creation::Variable(value) => tape.leaf(*value, Operation::Variable),
            Creation::Constant(value) => tape.leaf(*value, Operation::Constant),
            Creation::Detach(operand) => {
                let operand = self.lookup(program, *operand, step_index)?;
                Ok(tape.detach(operand))
            }
            Creation::Apply {
                op,
                operands,
                exponent,
                repeat,
            } => {
                // Parsing checked the arity and pow's exponent (0.0 for every
                // other op): the operands go to the engine as ids, unchecked.
                let first = self.lookup(program, operands[0], step_index)?.0;
                let second = if op.op().arity == 2 {
                    Some(self.lookup(program, operands[1], step_index)?.0)
                } else {
                    None
                };
                apply_chain(tape, *op, first, second, *exponent, *repeat)
            }
        };
        let in_place = matches!(created, Ok(id) if id.index() == self.created);
        if !in_place && !self.mapped {
            // The first failure or chain: from here on creation index and node id differ.
            self.nodes = (0..self.created as u32).collect();
            self.mapped = true;
        }
        self.created += 1;
        if self.mapped {
            self.nodes.push(created.as_ref().map_or(NO_NODE, |id| id.0));
        }
        Ok(created)
    }
}

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
        self.ids.id(index).map(|id| self.tape.scalar(id))
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
            Step::Create { creation } => {
                let mut tape = self.tape.0.borrow_mut();
                Ok(
                    match self.ids.create(&mut tape, program, step_index, creation)? {
                        Ok(id) => Outcome::Created(id),
                        Err(error) => Outcome::CreationFailed(error),
                    },
                )
            }
            Step::Backward { output, seed } => {
                let output = self.ids.lookup(program, *output, step_index)?.0;
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
                let output = self.ids.lookup(program, *output, step_index)?.0;
                self.tape.0.borrow_mut().zero_grad(output);
                Ok(Outcome::ZeroGrad)
            }
        }
    }

    /// Run the creation steps of `program` from number `start` on, up to the
    /// first step that creates nothing (or the end), and return that step's
    /// number and how many nodes the successful ones created: `execute` in a
    /// loop, for a caller that times steps and does not observe them (the Go
    /// port's `Session.CreateRun`). A creation the engine refuses creates no
    /// node and the run goes on, as it would in the program.
    ///
    /// Fails only when a step names a node whose creating step failed.
    pub fn create_run(
        &mut self,
        program: &Program,
        start: usize,
    ) -> Result<(usize, usize), ProgramError> {
        let mut tape = self.tape.0.borrow_mut();
        let (mut step_index, mut nodes) = (start, 0);
        while let Some(step @ Step::Create { creation }) = program.steps.get(step_index) {
            if self
                .ids
                .create(&mut tape, program, step_index, creation)?
                .is_ok()
            {
                nodes += step.size() as usize;
            }
            step_index += 1;
        }
        Ok((step_index, nodes))
    }
}

/// Apply `op` `repeat` times (rule `program.repeat`), each result taking slot 0
/// of the next application, `second` (binary ops) the same each time; the
/// last node, or the error of the first application that fails. A loop: a
/// chain of any length costs its nodes on the tape and nothing else.
#[inline(always)]
fn apply_chain(
    tape: &mut TapeData,
    op: OpKind,
    first: u32,
    second: Option<u32>,
    exponent: f64,
    repeat: u32,
) -> Result<NodeId, Error> {
    let mut node = tape.apply_resolved(op, first, second, exponent)?;
    for _ in 1..repeat {
        node = tape.apply_resolved(op, node.0, second, exponent)?;
    }
    Ok(node)
}

/// The program name of every node on a program's tape, by node id.
///
/// Each successful creation step pushes one node, or a repeated step its
/// chain of nodes, consecutive on the tape: one `Span` per successful creation
/// step, in node order. A name is built only when an error or a record asks
/// for one, so a chain of a million nodes costs one span, not a million names.
#[derive(Debug, Default)]
pub struct Names(Vec<Span>);

/// The nodes one creation step made: `repeat` nodes from `first` on, the last
/// of them under the id of creation index `index`.
#[derive(Clone, Copy, Debug)]
struct Span {
    first: u32,
    index: u32,
    repeat: u32,
}

impl Names {
    fn id(&self, node: NodeId, program: &Program) -> Json {
        let spans = &self.0;
        // Until the first chain, span k is node k; after it, a binary search.
        let span = match spans.get(node.index()) {
            Some(span) if span.first == node.0 => Some(span),
            _ => spans
                .partition_point(|span| span.first <= node.0)
                .checked_sub(1)
                .map(|at| &spans[at]),
        };
        // Every node an error or record names was created by this program (the
        // inner nodes of a chain that failed are no operand of any other node).
        Json::Str(
            span.filter(|span| node.0 - span.first < span.repeat)
                .map_or_else(
                    || "?".to_string(),
                    |span| {
                        let id = &program.ids[span.index as usize];
                        chain_name(id, node.0 - span.first + 1, span.repeat)
                    },
                ),
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
                let index = session.ids.created - 1;
                let tape = session.tape.0.borrow();
                let tracked_node = tape.links[node.index()].tracked();
                let observation = Json::object([
                    ("value", Json::Float(tape.values[node.index()])),
                    ("tracked", Json::Bool(tracked_node)),
                ]);
                if tracked_node {
                    tracked.push((index, node));
                }
                let repeat = program.steps[step_index].size();
                names.0.push(Span {
                    first: node.0 + 1 - repeat,
                    index: index as u32,
                    repeat,
                });
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
    fn create_run_creates_what_executing_each_step_creates() {
        let program = parse_program(
            &parse(
                r#"[{"id":"x","op":"variable","value":2},{"id":"z","op":"constant","value":0},
                {"id":"bad","op":"log","operands":["z"]},{"id":"y","op":"mul","operands":["x","x"],"repeat":3},
                {"op":"backward","output":"y"},{"id":"w","op":"neg","operands":["y"]},
                {"id":"v","op":"neg","operands":["bad"]}]"#,
            )
            .unwrap(),
            "test",
        )
        .unwrap();
        let mut stepped = Session::new();
        for step in 0..4 {
            stepped.execute(&program, step, false).unwrap();
        }
        let mut run = Session::new();
        // Up to the backward step; the refused log creates no node and the run goes on.
        assert_eq!(run.create_run(&program, 0).unwrap(), (4, 5));
        for index in 0..4 {
            let value = |session: &Session| session.node(index).map(|node| node.value());
            assert_eq!(value(&run), value(&stepped), "creation index {index}");
        }
        assert_eq!(run.node(3).map(|y| y.value()), Some(16.0));
        assert_eq!(run.tape().len(), 5);
        run.execute(&program, 4, false).unwrap();
        assert_eq!(
            run.create_run(&program, 5).unwrap_err().0,
            "step 6: id \"bad\" was never created (its creating step failed)"
        );
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
    fn a_repeated_step_observes_what_its_steps_written_out_observe_minus_inner_ids() {
        let leaves =
            r#"{"id":"x","op":"variable","value":0.5},{"id":"c","op":"constant","value":0.25}"#;
        let repeated = run(&format!(
            r#"[{leaves},{{"id":"y","op":"add","operands":["x","c"],"repeat":3}},
            {{"op":"backward","output":"y"}},{{"op":"zero_grad","output":"y"}}]"#
        ))
        .unwrap();
        let written_out = run(&format!(
            r#"[{leaves},{{"id":"y[1]","op":"add","operands":["x","c"]}},
            {{"id":"y[2]","op":"add","operands":["y[1]","c"]}},{{"id":"y","op":"add","operands":["y[2]","c"]}},
            {{"op":"backward","output":"y"}},{{"op":"zero_grad","output":"y"}}]"#
        ))
        .unwrap();
        let repeated = parse(&repeated).unwrap();
        let written_out = parse(&written_out).unwrap();
        // One observation for the step: the last node's.
        assert_eq!(repeated.as_array().unwrap().len(), 5);
        assert_eq!(repeated[2], written_out[4]);
        assert_eq!(repeated[2]["value"].to_string(), "1.25");
        // The same pass, its inner nodes named y[k]; gradients of the program's own ids only.
        assert_eq!(repeated[3]["pass"], written_out[5]["pass"]);
        let gradients = |text: &str| parse(text).unwrap();
        assert_eq!(repeated[3]["gradients"], gradients(r#"{"x":1.0,"y":1.0}"#));
        assert_eq!(
            written_out[5]["gradients"],
            gradients(r#"{"x":1.0,"y[1]":1.0,"y[2]":1.0,"y":1.0}"#)
        );
        assert_eq!(repeated[4]["gradients"], gradients(r#"{"x":0.0,"y":0.0}"#));
    }

    #[test]
    fn an_error_names_an_inner_node_of_the_chain_by_its_index() {
        let out = run(
            r#"[{"id":"x","op":"variable","value":1e-300},{"id":"c","op":"constant","value":1e150},
            {"id":"y","op":"mul","operands":["x","c"],"repeat":3},{"op":"backward","output":"y","seed":1e300}]"#,
        )
        .unwrap();
        let observations = parse(&out).unwrap();
        let error = &observations[3]["error"];
        assert_eq!(error["kind"], "non-finite-contribution", "{out}");
        assert_eq!(
            (&error["consumer"], &error["slot"], &error["operand"]),
            (&"y".into(), &0.into(), &"y[2]".into()),
            "{out}"
        );
        // With no record too: naming does not depend on the record.
        let program = parse_program(&parse(r#"[{"id":"x","op":"variable","value":1e-300},{"id":"c","op":"constant","value":1e150},
            {"id":"y","op":"mul","operands":["x","c"],"repeat":3},{"op":"backward","output":"y","seed":1e300}]"#).unwrap(), "test").unwrap();
        let fast = Json::Array(run_program(&program, false).unwrap()).to_string();
        assert!(
            fast.contains(r#""consumer":"y","slot":0,"operand":"y[2]""#),
            "{fast}"
        );
    }

    #[test]
    fn a_failed_application_fails_the_step_and_creates_no_id() {
        let out = run(
            r#"[{"id":"x","op":"variable","value":1},{"id":"e","op":"exp","operands":["x"],"repeat":5}]"#,
        )
        .unwrap();
        assert!(
            out.ends_with(
                r#"{"error":{"kind":"non-finite-result","operation":"exp","value":"inf"}}]"#
            ),
            "{out}"
        );
        let error = run(
            r#"[{"id":"x","op":"variable","value":1},{"id":"e","op":"exp","operands":["x"],"repeat":5},
            {"id":"y","op":"neg","operands":["e"]}]"#,
        )
        .unwrap_err();
        assert_eq!(
            error.0,
            "step 2: id \"e\" was never created (its creating step failed)"
        );
    }

    #[test]
    fn nodes_after_a_chain_keep_their_ids() {
        let out = run(
            r#"[{"id":"x","op":"variable","value":2},{"id":"y","op":"neg","operands":["x"],"repeat":4},
            {"id":"z","op":"mul","operands":["y","x"]},{"op":"backward","output":"z"}]"#,
        )
        .unwrap();
        assert!(
            out.starts_with(r#"[{"value":2.0,"tracked":true},{"value":2.0,"tracked":true},{"value":4.0,"tracked":true},{"gradients":{"x":4.0,"y":2.0,"z":1.0},"#),
            "{out}"
        );
        assert!(
            out.contains(r#"{"consumer":"z","slot":0,"operand":"y","#),
            "{out}"
        );
        assert!(
            out.contains(r#"{"consumer":"y","slot":0,"operand":"y[3]","#),
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
            r#"[{"id":"x","op":"sin","operands":[]}]"#,
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

//! Programs: lists of steps over named nodes (DESIGN.md 3.5), parsed, run and observed.
//!
//! This mirrors `conformance/program.py` (parsing and its checks) and
//! `conformance/execute.py` (one observation per step). The adapter, the
//! benchmark and the fixture tests all run programs through this module, so
//! what the tests check is what the harness sees. The step forms, as JSON:
//!
//! ```text
//! {"id": "x", "op": "variable", "value": 2.0}
//! {"id": "c", "op": "constant", "value": 3.0}
//! {"id": "d", "op": "detach", "args": ["x"]}
//! {"id": "y", "op": "mul", "args": ["x", "x"]}
//! {"id": "p", "op": "pow", "args": ["x"], "exponent": 0.5}
//! {"op": "backward", "output": "y"}            (optional "seed", default 1.0)
//! {"op": "zero_grad", "output": "y"}
//! ```
//!
//! Observations, as JSON:
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

use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::error::Error;
use crate::ops::{OPS, OpKind};
use crate::record::PassRecord;
use crate::scalar::{NodeKey, Scalar};
use crate::wire::{Json, decode_float};

/// How a creation step makes its node. Node references are creation indices:
/// the position of the creating step among the program's creation steps.
#[derive(Clone, Debug, PartialEq)]
pub enum Creation {
    /// A tracked leaf (the value may be non-finite: the engine rejects it).
    Variable(f64),
    /// An untracked leaf.
    Constant(f64),
    /// An untracked copy of a node's value.
    Detach(usize),
    /// An operation of the op table applied to earlier nodes.
    Apply {
        /// The operation.
        op: OpKind,
        /// Operand nodes in slot order.
        args: Vec<usize>,
        /// pow's finite constant exponent.
        exponent: Option<f64>,
    },
}

/// One program step.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Create the node with creation index `index`, named `id`.
    Create {
        /// The node's program id.
        id: String,
        /// Its creation index.
        index: usize,
        /// How it is made.
        creation: Creation,
    },
    /// Backward from a node, with an optional seed (default 1.0).
    Backward {
        /// Creation index of the output.
        output: usize,
        /// The seed as written, if any.
        seed: Option<f64>,
    },
    /// Zero the stored gradients reachable from a node.
    ZeroGrad {
        /// Creation index of the output.
        output: usize,
    },
}

/// A parsed program: its steps and the id of every creation index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Program id of each creation index.
    pub ids: Vec<String>,
}

/// A program that breaks the step rules, or names a node whose creating step
/// failed; the message names the source, the step and the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramError(pub String);

impl fmt::Display for ProgramError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProgramError {}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "nothing".to_string(), Value::to_string)
}

/// Turn plain data into a checked program, or fail naming source, step and field.
pub fn parse_program(raw: &Value, source: &str) -> Result<Program, ProgramError> {
    let Value::Array(items) = raw else {
        return Err(ProgramError(format!(
            "{source}: program must be a list of steps, got {}",
            type_name(raw)
        )));
    };
    let mut program = Program::default();
    let mut known: HashMap<String, usize> = HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let step = parse_step(item, &format!("{source}: step {index}"), &known)?;
        if let Step::Create { id, index, .. } = &step {
            known.insert(id.clone(), *index);
            program.ids.push(id.clone());
        }
        program.steps.push(step);
    }
    Ok(program)
}

fn allowed_keys(op: &str) -> &'static [&'static str] {
    match op {
        "variable" | "constant" => &["id", "op", "value"],
        "pow" => &["id", "op", "args", "exponent"],
        "backward" => &["op", "output", "seed"],
        "zero_grad" => &["op", "output"],
        _ => &["id", "op", "args"],
    }
}

fn parse_step(
    item: &Value,
    where_: &str,
    known: &HashMap<String, usize>,
) -> Result<Step, ProgramError> {
    let Value::Object(fields) = item else {
        return Err(ProgramError(format!(
            "{where_}: a step must be an object, got {item}"
        )));
    };
    let op = match fields.get("op") {
        Some(Value::String(op)) => op.as_str(),
        other => {
            return Err(ProgramError(format!(
                "{where_}: field 'op' must be a string naming an operation, got {}",
                show(other)
            )));
        }
    };
    let kind = OpKind::from_name(op);
    let known_op = kind.is_some()
        || matches!(
            op,
            "variable" | "constant" | "detach" | "backward" | "zero_grad"
        );
    if !known_op {
        let names: Vec<&str> = ["variable", "constant", "detach"]
            .into_iter()
            .chain(OPS.iter().map(|op| op.name))
            .chain(["backward", "zero_grad"])
            .collect();
        return Err(ProgramError(format!(
            "{where_}: field 'op': unknown operation {op:?} (known: {})",
            names.join(", ")
        )));
    }
    let allowed = allowed_keys(op);
    let mut unexpected: Vec<&String> = fields
        .keys()
        .filter(|key| !allowed.contains(&key.as_str()))
        .collect();
    unexpected.sort();
    if let Some(key) = unexpected.first() {
        return Err(ProgramError(format!(
            "{where_} ({op}): unexpected field {key:?}"
        )));
    }
    if op == "backward" || op == "zero_grad" {
        let output = name(fields, "output", op, where_, known)?;
        if op == "zero_grad" {
            return Ok(Step::ZeroGrad { output });
        }
        let seed = match fields.get("seed") {
            Some(_) => Some(number(fields, "seed", where_)?),
            None => None,
        };
        return Ok(Step::Backward { output, seed });
    }
    let id = match fields.get("id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        other => {
            return Err(ProgramError(format!(
                "{where_} ({op}): field 'id' must be a non-empty string, got {}",
                show(other)
            )));
        }
    };
    let where_ = format!("{where_} ({id})");
    if known.contains_key(&id) {
        return Err(ProgramError(format!(
            "{where_}: field 'id': id {id:?} is already used by an earlier step"
        )));
    }
    let index = known.len();
    let creation = match op {
        "variable" => Creation::Variable(number(fields, "value", &where_)?),
        "constant" => Creation::Constant(number(fields, "value", &where_)?),
        _ => {
            let arity = kind.map_or(1, |kind| kind.op().arity);
            let args = match fields.get("args") {
                Some(Value::Array(args)) if args.len() == arity => args,
                other => {
                    return Err(ProgramError(format!(
                        "{where_}: field 'args': {op} takes a list of {arity} id(s), got {}",
                        show(other)
                    )));
                }
            };
            let mut operands = Vec::with_capacity(arity);
            for (slot, arg) in args.iter().enumerate() {
                let Value::String(arg) = arg else {
                    return Err(ProgramError(format!(
                        "{where_}: field 'args[{slot}]' must be an id string, got {arg}"
                    )));
                };
                let Some(&operand) = known.get(arg) else {
                    return Err(ProgramError(format!(
                        "{where_}: field 'args[{slot}]': unknown id {arg:?} (ids must be created by an earlier step)"
                    )));
                };
                operands.push(operand);
            }
            match kind {
                None => Creation::Detach(operands[0]),
                Some(op_kind) => {
                    let exponent = if op_kind.op().takes_exponent {
                        let exponent = number(fields, "exponent", &where_)?;
                        if !exponent.is_finite() {
                            return Err(ProgramError(format!(
                                "{where_}: field 'exponent' must be a finite constant, got {exponent:?}"
                            )));
                        }
                        Some(exponent)
                    } else {
                        None
                    };
                    Creation::Apply {
                        op: op_kind,
                        args: operands,
                        exponent,
                    }
                }
            }
        }
    };
    Ok(Step::Create {
        id,
        index,
        creation,
    })
}

fn name(
    fields: &Map<String, Value>,
    field: &str,
    op: &str,
    where_: &str,
    known: &HashMap<String, usize>,
) -> Result<usize, ProgramError> {
    let Some(Value::String(id)) = fields.get(field) else {
        return Err(ProgramError(format!(
            "{where_} ({op}): field {field:?} must be an id string, got {}",
            show(fields.get(field))
        )));
    };
    known.get(id).copied().ok_or_else(|| {
        ProgramError(format!(
            "{where_} ({op}): field {field:?}: unknown id {id:?}"
        ))
    })
}

fn number(fields: &Map<String, Value>, field: &str, where_: &str) -> Result<f64, ProgramError> {
    let raw = fields
        .get(field)
        .ok_or_else(|| ProgramError(format!("{where_}: field {field:?} is missing")))?;
    decode_float(raw, &format!("{where_}: field {field:?}")).map_err(|error| ProgramError(error.0))
}

/// What one step did on the engine.
#[derive(Debug)]
pub enum Outcome {
    /// A creation step made this node.
    Created(Scalar),
    /// A creation step failed; no node exists for its id.
    CreationFailed(Error),
    /// A backward step succeeded.
    Backward(PassRecord),
    /// A backward step failed; no stored gradient changed.
    BackwardFailed(Error),
    /// A zero_grad step ran.
    ZeroGrad,
}

/// The engine state of one running program: the node of every creation index
/// (`None` where the creating step failed). Every run starts from a new graph.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: Vec<Option<Scalar>>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// The node of a creation index, if its creating step succeeded.
    pub fn node(&self, index: usize) -> Option<&Scalar> {
        self.nodes.get(index).and_then(Option::as_ref)
    }

    fn lookup(
        &self,
        program: &Program,
        index: usize,
        step: usize,
    ) -> Result<&Scalar, ProgramError> {
        self.node(index).ok_or_else(|| {
            ProgramError(format!(
                "step {step}: id {:?} was never created (its creating step failed)",
                program.ids.get(index).map_or("?", String::as_str)
            ))
        })
    }

    /// Run step number `step_index` of `program` on the engine.
    ///
    /// Fails only when the step names a node whose creating step failed.
    pub fn execute(
        &mut self,
        program: &Program,
        step_index: usize,
    ) -> Result<Outcome, ProgramError> {
        match &program.steps[step_index] {
            Step::Create { creation, .. } => {
                let created = match creation {
                    Creation::Variable(value) => Scalar::variable(*value),
                    Creation::Constant(value) => Scalar::constant(*value),
                    Creation::Detach(arg) => Ok(self.lookup(program, *arg, step_index)?.detach()),
                    Creation::Apply { op, args, exponent } => {
                        let mut operands: Vec<&Scalar> = Vec::with_capacity(args.len());
                        for &arg in args {
                            operands.push(self.lookup(program, arg, step_index)?);
                        }
                        Scalar::apply(*op, &operands, *exponent)
                    }
                };
                Ok(match created {
                    Ok(node) => {
                        self.nodes.push(Some(node.clone()));
                        Outcome::Created(node)
                    }
                    Err(error) => {
                        self.nodes.push(None);
                        Outcome::CreationFailed(error)
                    }
                })
            }
            Step::Backward { output, seed } => {
                let output = self.lookup(program, *output, step_index)?;
                Ok(match output.backward_with_seed(seed.unwrap_or(1.0)) {
                    Ok(record) => Outcome::Backward(record),
                    Err(error) => Outcome::BackwardFailed(error),
                })
            }
            Step::ZeroGrad { output } => {
                self.lookup(program, *output, step_index)?.zero_grad();
                Ok(Outcome::ZeroGrad)
            }
        }
    }
}

/// Execute `program` on a fresh graph and return one observation per step.
///
/// `record_pass` adds the pass record to each successful backward's observation
/// (for an adapter that declares `trace` or `order`). Fails when a step names a
/// node whose creating step failed.
pub fn run_program(program: &Program, record_pass: bool) -> Result<Vec<Json>, ProgramError> {
    let mut graph = Graph::new();
    let mut names: HashMap<NodeKey, usize> = HashMap::new();
    // Tracked nodes in creation order, for the gradients map.
    let mut tracked: Vec<(usize, Scalar)> = Vec::new();
    let mut observations = Vec::with_capacity(program.steps.len());
    for step_index in 0..program.steps.len() {
        let observation = match graph.execute(program, step_index)? {
            Outcome::Created(node) => {
                let Step::Create { index, .. } = &program.steps[step_index] else {
                    unreachable!("only creation steps create nodes")
                };
                let observation = Json::object([
                    ("value", Json::Float(node.value())),
                    ("tracked", Json::Bool(node.tracks_gradient())),
                ]);
                if node.tracks_gradient() {
                    tracked.push((*index, node.clone()));
                }
                names.insert(node.node_key(), *index);
                observation
            }
            Outcome::CreationFailed(error) => {
                Json::object([("error", error_to_json(&error, &names, program))])
            }
            Outcome::Backward(record) => {
                let mut fields = vec![("gradients", gradients(&tracked, program))];
                if record_pass {
                    fields.push(("pass", pass_to_json(&record, &names, program)));
                }
                Json::object(fields)
            }
            Outcome::BackwardFailed(error) => Json::object([
                ("error", error_to_json(&error, &names, program)),
                ("gradients", gradients(&tracked, program)),
            ]),
            Outcome::ZeroGrad => Json::object([("gradients", gradients(&tracked, program))]),
        };
        observations.push(observation);
    }
    Ok(observations)
}

fn gradients(tracked: &[(usize, Scalar)], program: &Program) -> Json {
    Json::Object(
        tracked
            .iter()
            .map(|(index, node)| {
                (
                    program.ids[*index].clone(),
                    Json::optional_float(node.gradient()),
                )
            })
            .collect(),
    )
}

fn id_of(node: &Scalar, names: &HashMap<NodeKey, usize>, program: &Program) -> Json {
    // Every node an error or record names was created by this program.
    Json::Str(
        names
            .get(&node.node_key())
            .map_or_else(|| "?".to_string(), |&index| program.ids[index].clone()),
    )
}

/// The error as wire data: its kind, then its fields with nodes named by program id.
pub fn error_to_json(error: &Error, names: &HashMap<NodeKey, usize>, program: &Program) -> Json {
    let id = |node: &Scalar| id_of(node, names, program);
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
            operand,
            value,
        } => fields.extend([
            ("operation", operation(op)),
            ("operand", Json::Int(*operand as u64)),
            ("value", Json::Float(*value)),
        ]),
        Error::UntrackedOutput { operation: op } => fields.push(("operation", operation(op))),
        Error::NonFiniteSeed { seed } => fields.push(("seed", Json::Float(*seed))),
        Error::NonFiniteContribution {
            child,
            parent,
            operand,
            upstream,
            local_derivative,
        } => fields.extend([
            ("child", id(child)),
            ("parent", id(parent)),
            ("operand", Json::Int(*operand as u64)),
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
pub fn pass_to_json(
    record: &PassRecord,
    names: &HashMap<NodeKey, usize>,
    program: &Program,
) -> Json {
    let id = |node: &Scalar| id_of(node, names, program);
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
                ("child", id(&e.child)),
                ("parent", id(&e.parent)),
                ("operand", Json::Int(e.operand as u64)),
                ("local_derivative", Json::Float(e.local_derivative)),
                ("upstream", Json::Float(e.upstream)),
                ("contribution", Json::Float(e.contribution)),
                ("parent_tracked", Json::Bool(e.parent_tracked)),
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
    use crate::wire::parse;

    fn run(text: &str) -> Result<String, ProgramError> {
        let program = parse_program(&parse(text).unwrap(), "test")?;
        let observations = run_program(&program, true)?;
        Ok(Json::Array(observations).to_string())
    }

    #[test]
    fn the_reused_square_program_observes_every_step() {
        let out = run(
            r#"[{"id":"x","op":"variable","value":2},{"id":"s","op":"mul","args":["x","x"]},
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
        let error =
            run(r#"[{"id":"x","op":"variable","value":"inf"},{"id":"y","op":"neg","args":["x"]}]"#)
                .unwrap_err();
        assert_eq!(
            error.0,
            "step 1: id \"x\" was never created (its creating step failed)"
        );
    }

    #[test]
    fn malformed_steps_are_program_errors() {
        for text in [
            r#"{"id":"x"}"#,
            r#"[{"id":"x","op":"variable","value":1},{"id":"x","op":"variable","value":1}]"#,
            r#"[{"id":"x","op":"sqrt","args":[]}]"#,
            r#"[{"id":"x","op":"variable","value":true}]"#,
            r#"[{"id":"x","op":"variable","value":1,"seed":2}]"#,
            r#"[{"id":"x","op":"variable","value":1},{"id":"y","op":"pow","args":["x"],"exponent":"inf"}]"#,
            r#"[{"id":"x","op":"variable","value":1},{"id":"y","op":"add","args":["x"]}]"#,
            r#"[{"op":"backward","output":"nobody"}]"#,
            r#"[{"id":"","op":"variable","value":1}]"#,
        ] {
            assert!(run(text).is_err(), "{text}");
        }
    }
}

//! Programs: lists of steps over named nodes (docs/contract.md section 8), parsed and checked.
//!
//! This mirrors `conformance/program.py`: a program arrives as plain JSON data
//! (from a fixture or the wire) and becomes a checked [`Program`]. Every mistake
//! is a [`ProgramError`] naming the source, the step and the field: an unknown
//! id, a reused id, an unknown op, a non-finite exponent, a string where a
//! number belongs. [`crate::execute`] runs programs. The step forms, as JSON
//! (protocol 2, fixture format 3):
//!
//! ```text
//! {"id": "x", "op": "variable", "value": 2.0}
//! {"id": "c", "op": "constant", "value": 3.0}
//! {"id": "d", "op": "detach", "operands": ["x"]}
//! {"id": "y", "op": "mul", "operands": ["x", "x"]}
//! {"id": "p", "op": "pow", "operands": ["x"], "exponent": 0.5}
//! {"op": "backward", "output": "y"}            (optional "seed", default 1.0)
//! {"op": "zero_grad", "output": "y"}
//! ```
//!
//! `operands` lists the ids the operation reads, in slot order. Protocol 1
//! called that field `args`; a step that still has it is a program error that
//! says so.
//!
//! An operation step may carry `"repeat": n` (the `repeat` feature, rule
//! `program.repeat`): the operation is applied n times, each result taking
//! slot 0 of the next application, so one step builds a chain of n nodes; the
//! last is the step's id, the k-th before it is named `id[k]` ([`chain_name`]).
//! No other step may take such a name.

use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::ops::{OPS, OpKind};
use crate::wire::decode_float;

/// The most applications one repeated step may ask for (a bound on what one
/// step can cost), as in `conformance/program.py`.
pub const MAX_REPEAT: u32 = 10_000_000;

/// How a creation step makes its node. Node references are creation indices:
/// the position of the creating step among the program's creation steps.
#[derive(Clone, Debug, PartialEq)]
pub enum Creation {
    /// A tracked leaf (the value may be non-finite: the engine rejects it).
    Variable(f64),
    /// An untracked leaf.
    Constant(f64),
    /// An untracked copy of a node's value.
    Detach(u32),
    /// An operation of the op table applied to earlier nodes.
    Apply {
        /// The operation.
        op: OpKind,
        /// Operand nodes in slot order: the first `op.arity()` entries (a unary
        /// op repeats its operand in the unused slot). Inline, not a `Vec`, so
        /// running a step reads no second allocation.
        operands: [u32; 2],
        /// pow's finite constant exponent; 0.0 for every other op (the op
        /// table's `takes_exponent` says which op has one). A plain `f64`,
        /// not an `Option`, and `u32` ids: a step is 24 bytes, and running a
        /// program streams through its steps.
        exponent: f64,
        /// How many times the operation is applied (`"repeat"`, 1 when the
        /// step has none): application k + 1 takes application k's result in
        /// slot 0, and only the last node is the step's id.
        repeat: u32,
    },
}

/// One program step.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Create a node. Its creation index is the number of creation steps
    /// before it; its id is `Program::ids[index]`.
    Create {
        /// How it is made.
        creation: Creation,
    },
    /// Backward from a node, with an optional seed (default 1.0).
    Backward {
        /// Creation index of the output.
        output: u32,
        /// The seed: as written, or 1.0 when the step gives none.
        seed: f64,
    },
    /// Zero the stored gradients reachable from a node.
    ZeroGrad {
        /// Creation index of the output.
        output: u32,
    },
}

impl Step {
    /// How many steps this one counts as (`program_size` in
    /// `conformance/program.py`): an operation's `repeat`, else 1. A creation
    /// step that succeeds pushes this many nodes.
    pub fn size(&self) -> u32 {
        match self {
            Step::Create {
                creation: Creation::Apply { repeat, .. },
            } => *repeat,
            _ => 1,
        }
    }
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
    let mut known: HashMap<String, u32> = HashMap::new();
    let mut chains = Chains::default();
    for (index, item) in items.iter().enumerate() {
        let where_ = format!("{source}: step {index}");
        let (step, id) = parse_step(item, &where_, &known)?;
        if let (Step::Create { creation }, Some(id)) = (&step, id) {
            chains.check(&id, creation, &where_)?;
            let index = u32::try_from(known.len())
                .ok()
                .filter(|&index| index < u32::MAX)
                .ok_or_else(|| ProgramError(format!("{source}: more than 2^32 - 2 nodes")))?;
            known.insert(id.clone(), index);
            program.ids.push(id);
        }
        program.steps.push(step);
    }
    Ok(program)
}

/// The name of node `position` (1-based) of the chain a step with id `id`
/// and `repeat` applications creates: `id[position]` for an inner node, `id`
/// itself for the last. Built only when something names the node.
pub fn chain_name(id: &str, position: u32, repeat: u32) -> String {
    if position < repeat {
        format!("{id}[{position}]")
    } else {
        id.to_string()
    }
}

/// The names repeated steps give their inner nodes (`id[k]`), kept apart from
/// the program's own ids: `conformance/program.py`'s `_Chains`.
#[derive(Debug, Default)]
struct Chains {
    /// The length of each repeated step's chain, by its id.
    lengths: HashMap<String, u32>,
    /// For each base name, the k of every id `base[k]` seen so far, in order.
    indexed: HashMap<String, Vec<u64>>,
}

impl Chains {
    /// Refuse an id that names an inner node of an earlier repeated step, and
    /// a repeated step one of whose inner nodes an earlier step's id names.
    fn check(&mut self, id: &str, creation: &Creation, where_: &str) -> Result<(), ProgramError> {
        if let Some((base, k)) = indexed_name(id) {
            if k < u64::from(self.lengths.get(base).copied().unwrap_or(0)) {
                return Err(ProgramError(format!(
                    "{where_} ({id}): field 'id': {id:?} names a node of the repeated step {base:?}"
                )));
            }
            self.indexed.entry(base.to_string()).or_default().push(k);
        }
        // A chain of one node has no inner node to clash with.
        let repeat = match *creation {
            Creation::Apply { repeat, .. } => repeat,
            _ => 1,
        };
        if repeat > 1 {
            let clash = self
                .indexed
                .get(id)
                .and_then(|ks| ks.iter().find(|&&k| k < u64::from(repeat)));
            if let Some(k) = clash {
                return Err(ProgramError(format!(
                    "{where_} ({id}): field 'repeat': its node {id}[{k}] would take an id an earlier step uses"
                )));
            }
            self.lengths.insert(id.to_string(), repeat);
        }
        Ok(())
    }
}

/// `base` and `k` of an id of the form `base[k]` (k a whole number without
/// leading zeros, base non-empty), the form inner nodes are named by; a k too
/// large for a `u64` is `u64::MAX`, longer than any chain.
fn indexed_name(id: &str) -> Option<(&str, u64)> {
    let (base, digits) = id.strip_suffix(']')?.rsplit_once('[')?;
    let well_formed = !base.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && digits.bytes().next().is_some_and(|b| b != b'0');
    well_formed.then(|| (base, digits.parse().unwrap_or(u64::MAX)))
}

fn allowed_keys(op: &str) -> &'static [&'static str] {
    match op {
        "variable" | "constant" => &["id", "op", "value"],
        "detach" => &["id", "op", "operands"],
        "pow" => &["id", "op", "operands", "exponent", "repeat"],
        "backward" => &["op", "output", "seed"],
        "zero_grad" => &["op", "output"],
        _ => &["id", "op", "operands", "repeat"],
    }
}

/// The step's `"repeat"`: 1 when absent, else a whole number from 1 to
/// [`MAX_REPEAT`] (the message is Python's).
fn repeat(fields: &Map<String, Value>, where_: &str) -> Result<u32, ProgramError> {
    let Some(raw) = fields.get("repeat") else {
        return Ok(1);
    };
    raw.as_u64()
        .filter(|n| (1..=u64::from(MAX_REPEAT)).contains(n))
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            ProgramError(format!(
                "{where_}: field 'repeat' must be a whole number from 1 to {MAX_REPEAT}, got {raw}"
            ))
        })
}

fn parse_step(
    item: &Value,
    where_: &str,
    known: &HashMap<String, u32>,
) -> Result<(Step, Option<String>), ProgramError> {
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
    if fields.contains_key("args") {
        return Err(ProgramError(format!(
            "{where_} ({op}): field \"args\" is protocol 1's name; protocol 2 calls a step's \
             operand ids \"operands\""
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
            return Ok((Step::ZeroGrad { output }, None));
        }
        let seed = match fields.get("seed") {
            Some(_) => number(fields, "seed", where_)?,
            None => 1.0,
        };
        return Ok((Step::Backward { output, seed }, None));
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
    let creation = match op {
        "variable" => Creation::Variable(number(fields, "value", &where_)?),
        "constant" => Creation::Constant(number(fields, "value", &where_)?),
        _ => {
            let arity = kind.map_or(1, |kind| kind.op().arity);
            let ids = match fields.get("operands") {
                Some(Value::Array(ids)) if ids.len() == arity => ids,
                other => {
                    return Err(ProgramError(format!(
                        "{where_}: field 'operands': {op} takes a list of {arity} id(s), got {}",
                        show(other)
                    )));
                }
            };
            let mut operands = Vec::with_capacity(arity);
            for (slot, raw) in ids.iter().enumerate() {
                let Value::String(name) = raw else {
                    return Err(ProgramError(format!(
                        "{where_}: field 'operands[{slot}]' must be an id string, got {raw}"
                    )));
                };
                let Some(&operand) = known.get(name) else {
                    return Err(ProgramError(format!(
                        "{where_}: field 'operands[{slot}]': unknown id {name:?} (ids must be created by an earlier step)"
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
                        exponent
                    } else {
                        0.0
                    };
                    Creation::Apply {
                        op: op_kind,
                        operands: [operands[0], *operands.last().unwrap_or(&operands[0])],
                        exponent,
                        repeat: repeat(fields, &where_)?,
                    }
                }
            }
        }
    };
    Ok((Step::Create { creation }, Some(id)))
}

fn name(
    fields: &Map<String, Value>,
    field: &str,
    op: &str,
    where_: &str,
    known: &HashMap<String, u32>,
) -> Result<u32, ProgramError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_error(steps: &str) -> String {
        let raw = crate::wire::parse(steps).expect("JSON");
        parse_program(&raw, "test").expect_err(steps).0
    }

    const X: &str = r#"{"id": "x", "op": "variable", "value": 0.5}"#;

    #[test]
    fn a_bad_repeat_is_refused_naming_step_and_field() {
        for (step, message) in [
            (
                r#"{"id": "y", "op": "add", "operands": ["x", "x"], "repeat": 0}"#,
                "test: step 1 (y): field 'repeat' must be a whole number from 1 to 10000000, got 0",
            ),
            (
                r#"{"id": "y", "op": "add", "operands": ["x", "x"], "repeat": "3"}"#,
                "test: step 1 (y): field 'repeat' must be a whole number from 1 to 10000000, got \"3\"",
            ),
            (
                r#"{"id": "y", "op": "add", "operands": ["x", "x"], "repeat": true}"#,
                "test: step 1 (y): field 'repeat' must be a whole number from 1 to 10000000, got true",
            ),
            (
                r#"{"id": "y", "op": "neg", "operands": ["x"], "repeat": 2.0}"#,
                "test: step 1 (y): field 'repeat' must be a whole number from 1 to 10000000, got 2.0",
            ),
            (
                r#"{"id": "y", "op": "pow", "operands": ["x"], "exponent": 2, "repeat": 100000000}"#,
                "test: step 1 (y): field 'repeat' must be a whole number from 1 to 10000000, got 100000000",
            ),
            (
                r#"{"id": "y", "op": "variable", "value": 1.0, "repeat": 2}"#,
                "test: step 1 (variable): unexpected field \"repeat\"",
            ),
            (
                r#"{"id": "y", "op": "detach", "operands": ["x"], "repeat": 2}"#,
                "test: step 1 (detach): unexpected field \"repeat\"",
            ),
            (
                r#"{"op": "backward", "output": "x", "repeat": 2}"#,
                "test: step 1 (backward): unexpected field \"repeat\"",
            ),
        ] {
            assert_eq!(parse_error(&format!("[{X}, {step}]")), message, "{step}");
        }
    }

    #[test]
    fn a_repeat_in_range_is_the_steps_size() {
        let raw = crate::wire::parse(&format!(
            r#"[{X}, {{"id": "y", "op": "pow", "operands": ["x"], "exponent": 1, "repeat": 10000000}},
            {{"id": "z", "op": "neg", "operands": ["x"]}}]"#
        ))
        .unwrap();
        let program = parse_program(&raw, "test").unwrap();
        let sizes: Vec<u32> = program.steps.iter().map(Step::size).collect();
        assert_eq!(sizes, [1, MAX_REPEAT, 1]);
    }

    #[test]
    fn no_other_step_may_take_the_name_of_an_inner_node() {
        assert_eq!(
            parse_error(&format!(
                r#"[{X}, {{"id": "y", "op": "neg", "operands": ["x"], "repeat": 3}},
                {{"id": "y[2]", "op": "neg", "operands": ["x"]}}]"#
            )),
            "test: step 2 (y[2]): field 'id': \"y[2]\" names a node of the repeated step \"y\""
        );
        assert_eq!(
            parse_error(&format!(
                r#"[{X}, {{"id": "y[1]", "op": "neg", "operands": ["x"]}},
                {{"id": "y", "op": "neg", "operands": ["x"], "repeat": 3}}]"#
            )),
            "test: step 2 (y): field 'repeat': its node y[1] would take an id an earlier step uses"
        );
        // y[3] is not a node of a 3-step chain (that one is y itself), and y[02] is no index: allowed.
        for id in ["y[3]", "y[02]", "y[0]", "[1]"] {
            let raw = crate::wire::parse(&format!(
                r#"[{X}, {{"id": "y", "op": "neg", "operands": ["x"], "repeat": 3}},
                {{"id": "{id}", "op": "neg", "operands": ["x"]}}]"#
            ))
            .unwrap();
            assert!(parse_program(&raw, "test").is_ok(), "{id}");
        }
    }

    #[test]
    fn a_step_is_plain_data_of_24_bytes() {
        // Running a program streams through its steps: ids are u32 and no field is an Option.
        assert!(std::mem::size_of::<Step>() <= 24);
        assert!(!std::mem::needs_drop::<Step>());
    }
}

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

use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::ops::{OPS, OpKind};
use crate::wire::decode_float;

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
    for (index, item) in items.iter().enumerate() {
        let (step, id) = parse_step(item, &format!("{source}: step {index}"), &known)?;
        if let (Step::Create { .. }, Some(id)) = (&step, id) {
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

fn allowed_keys(op: &str) -> &'static [&'static str] {
    match op {
        "variable" | "constant" => &["id", "op", "value"],
        "pow" => &["id", "op", "operands", "exponent"],
        "backward" => &["op", "output", "seed"],
        "zero_grad" => &["op", "output"],
        _ => &["id", "op", "operands"],
    }
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

    #[test]
    fn a_step_is_plain_data_of_24_bytes() {
        // Running a program streams through its steps: ids are u32 and no field is an Option.
        assert!(std::mem::size_of::<Step>() <= 24);
        assert!(!std::mem::needs_drop::<Step>());
    }
}

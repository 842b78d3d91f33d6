//! The Rust engine behind the adapter protocol (docs/protocol.md, version 2).
//!
//! Reads one JSON request per line on stdin and answers each on stdout, one
//! line per reply, flushed: `hello` gets the handshake (always with protocol
//! 2, whatever version the harness asked for: the harness refuses a
//! mismatch), `run` gets the
//! observations of the whole program (or an `error` reply when the program is
//! malformed or the engine fails), `shutdown` or the end of input exits 0.
//! Anything that is not a request it understands gets an `error` reply, never a
//! panic; logs go to stderr only.

use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};

use scalar_autodiff::execute::run_program;
use scalar_autodiff::ops::OPS;
use scalar_autodiff::program::parse_program;
use scalar_autodiff::wire::{Json, parse};
use serde_json::Value;

/// The protocol this adapter speaks: 2 names edges (consumer, slot) -> operand
/// and a step's operand ids `operands`.
const PROTOCOL_VERSION: u64 = 2;
/// The protocol's limit on one reply line.
const MAX_LINE: usize = 64 * 1024 * 1024;
const LEVELS: [&str; 5] = ["values", "gradients", "errors", "trace", "order"];

/// Whether backward must build pass records: the harness compares them at the
/// `trace` and `order` levels, so they are built iff one of those is declared
/// (training and the bench take the fast path instead).
fn records_passes() -> bool {
    LEVELS
        .iter()
        .any(|level| matches!(*level, "trace" | "order"))
}

fn strings(items: &[&str]) -> Json {
    Json::Array(
        items
            .iter()
            .map(|item| Json::Str(item.to_string()))
            .collect(),
    )
}

/// The declared ops: every row of the engine's op table (`ops::OPS`) in the
/// contract's order, then detach, a step that is not a row (it makes a leaf
/// and no edge). Derived, not listed, so a row added to the table is declared
/// (the same derivation as the Go adapter's declaredOps).
fn declared_ops() -> Vec<&'static str> {
    OPS.iter().map(|op| op.name).chain(["detach"]).collect()
}

fn hello() -> Json {
    Json::object([
        ("type", Json::Str("hello".into())),
        ("protocol", Json::Int(PROTOCOL_VERSION)),
        (
            "engine",
            Json::object([
                ("name", Json::Str("rust-scalar".into())),
                ("version", Json::Str(env!("CARGO_PKG_VERSION").into())),
                ("language", Json::Str("rust".into())),
            ]),
        ),
        ("ops", strings(&declared_ops())),
        ("levels", strings(&LEVELS)),
        ("features", strings(&["seed", "repeat"])),
    ])
}

fn error_reply(case: Json, message: String) -> Json {
    eprintln!("adapter: {message}");
    Json::object([
        ("type", Json::Str("error".into())),
        ("case", case),
        ("message", Json::Str(message)),
    ])
}

/// Answer one run request: the result, or an error reply naming what went wrong.
fn run(request: &serde_json::Map<String, Value>) -> Json {
    let case = request
        .get("case")
        .cloned()
        .unwrap_or_else(|| Value::String(String::new()));
    let case_name = case.as_str().unwrap_or("").to_string();
    let Some(raw) = request.get("program") else {
        return error_reply(
            Json::Raw(case),
            format!("case {case_name}: the run request has no program"),
        );
    };
    let program = match parse_program(raw, &format!("case {case_name}")) {
        Ok(program) => program,
        Err(error) => return error_reply(Json::Raw(case), error.to_string()),
    };
    // `"records": false`: the harness reads no pass record, so build none
    // (a chain of a million nodes would make a record too big for a reply).
    let records = records_passes() && request.get("records") != Some(&Value::Bool(false));
    match panic::catch_unwind(AssertUnwindSafe(|| run_program(&program, records))) {
        Ok(Ok(observations)) => {
            let result = Json::object([
                ("type", Json::Str("result".into())),
                ("case", Json::Raw(case.clone())),
                ("observations", Json::Array(observations)),
            ]);
            let text = result.to_string();
            if text.len() > MAX_LINE {
                let message = format!(
                    "the result is {} bytes, over the 64 MiB line limit",
                    text.len()
                );
                return error_reply(Json::Raw(case), message);
            }
            Json::Verbatim(text)
        }
        Ok(Err(error)) => error_reply(Json::Raw(case), error.to_string()),
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".to_string());
            error_reply(Json::Raw(case), format!("panic: {message}"))
        }
    }
}

/// The reply to one request line, or `None` for shutdown.
fn answer(line: &str) -> Option<Json> {
    let request = match parse(line) {
        Ok(request) => request,
        Err(error) => {
            return Some(error_reply(
                Json::Str(String::new()),
                format!("request {error}"),
            ));
        }
    };
    let Value::Object(request) = request else {
        return Some(error_reply(
            Json::Str(String::new()),
            format!("a request must be an object, got {request}"),
        ));
    };
    match request.get("type").and_then(Value::as_str) {
        Some("hello") => Some(hello()),
        Some("run") => Some(run(&request)),
        Some("shutdown") => None,
        other => Some(error_reply(
            request
                .get("case")
                .cloned()
                .map_or(Json::Str(String::new()), Json::Raw),
            format!(
                "unknown request type {}",
                other.map_or_else(|| "(none)".to_string(), |t| format!("{t:?}"))
            ),
        )),
    }
}

fn main() {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match input.read_until(b'\n', &mut buffer) {
            Ok(0) => return,
            Ok(_) => {}
            Err(error) => {
                eprintln!("adapter: cannot read stdin: {error}");
                return;
            }
        }
        let line = String::from_utf8_lossy(&buffer);
        if line.trim().is_empty() {
            continue;
        }
        let Some(reply) = answer(&line) else { return };
        let mut text = reply.to_string();
        text.push('\n');
        let mut out = stdout.lock();
        if out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            // The harness went away: nothing more to answer.
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        let reply = answer(line).expect("a reply");
        parse(&reply.to_string()).expect("JSON")
    }

    #[test]
    fn hello_declares_every_op_table_row_once_then_detach_and_nothing_else() {
        let hello = reply(r#"{"type": "hello", "protocol": 2}"#);
        let declared: Vec<&str> = hello["ops"]
            .as_array()
            .expect("a list of ops")
            .iter()
            .map(|op| op.as_str().expect("an op name"))
            .collect();
        for row in &OPS {
            let times = declared.iter().filter(|&&name| name == row.name).count();
            assert_eq!(times, 1, "op-table row {} declared {times} times", row.name);
        }
        let others: Vec<&&str> = declared
            .iter()
            .filter(|&&name| OPS.iter().all(|row| row.name != name))
            .collect();
        assert_eq!(others, [&"detach"], "declared beyond the op table");
        assert_eq!(declared.len(), OPS.len() + 1);
    }

    #[test]
    fn hello_answers_protocol_2_even_to_a_harness_that_asks_for_protocol_1() {
        for request in [
            r#"{"type": "hello", "protocol": 2}"#,
            r#"{"type": "hello", "protocol": 1}"#,
            r#"{"type": "hello", "protocol": 3}"#,
        ] {
            let hello = reply(request);
            assert_eq!(hello["type"], "hello", "{request}");
            assert_eq!(hello["protocol"], 2, "{request}");
        }
    }

    #[test]
    fn hello_declares_the_seed_and_repeat_features() {
        let hello = reply(r#"{"type": "hello", "protocol": 2}"#);
        assert_eq!(hello["features"], serde_json::json!(["seed", "repeat"]));
    }

    #[test]
    fn a_run_with_records_false_observes_backward_without_its_pass() {
        let program = r#""program": [{"id": "x", "op": "variable", "value": 2},
            {"id": "y", "op": "neg", "operands": ["x"], "repeat": 3}, {"op": "backward", "output": "y"}]"#;
        let without = reply(&format!(
            r#"{{"type": "run", "case": "c", "records": false, {program}}}"#
        ));
        assert_eq!(
            without["observations"][2],
            serde_json::json!({"gradients": {"x": -1.0, "y": 1.0}})
        );
        // Absent means true: the record is there, its inner nodes named y[k].
        let with = reply(&format!(r#"{{"type": "run", "case": "c", {program}}}"#));
        let nodes = with["observations"][2]["pass"]["nodes"]
            .as_array()
            .expect("a pass record");
        let names: Vec<&str> = nodes.iter().filter_map(|n| n["node"].as_str()).collect();
        assert_eq!(names, ["x", "y[1]", "y[2]", "y"]);
    }

    #[test]
    fn a_run_with_protocol_1_args_gets_an_error_reply_naming_the_step_and_field() {
        let error = reply(
            r#"{"type": "run", "case": "c", "program": [{"id": "x", "op": "variable", "value": 2},
                {"id": "y", "op": "neg", "args": ["x"]}]}"#,
        );
        assert_eq!(error["type"], "error");
        assert_eq!(error["case"], "c");
        let message = error["message"].as_str().expect("a message");
        assert!(
            message.starts_with("case c: step 1 (neg): field \"args\""),
            "{message}"
        );
    }

    #[test]
    fn a_run_with_operands_gets_its_observations_with_protocol_2_edges() {
        let line = r#"{"type": "run", "case": "c", "program": [{"id": "x", "op": "variable", "value": 2},
            {"id": "y", "op": "neg", "operands": ["x"]}, {"op": "backward", "output": "y"}]}"#;
        // The text, not a parsed map: the edge's keys must come in the spec's order.
        let text = answer(line).expect("a reply").to_string();
        assert!(
            text.starts_with(r#"{"type":"result","case":"c","#),
            "{text}"
        );
        assert!(
            text.contains(
                r#""edges":[{"consumer":"y","slot":0,"operand":"x","local_derivative":-1.0,"upstream":1.0,"contribution":-1.0,"operand_tracked":true,"before":0.0,"after":-1.0}]"#
            ),
            "{text}"
        );
    }
}

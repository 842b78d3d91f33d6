//! Runs every canonical fixture (`../../fixtures/**/*.json`) on the engine and
//! compares the observations with the fixture's `expected`, at every level the
//! fixture declares, under its comparison policy (docs/protocol.md, "Levels:
//! what is compared").
//!
//! The programs go through the same runner and JSON writer as the adapter
//! (`program::run_program`, then the wire text, parsed back), so this checks
//! what the harness would see. Every failing case is reported with its id, its
//! step, the level and the path of the field that differs; a fixture that does
//! not have the documented shape is reported as a fixture bug.

use std::fs;
use std::path::{Path, PathBuf};

use scalar_autodiff::execute::run_program;
use scalar_autodiff::program::parse_program;
use scalar_autodiff::wire::{Json, decode_float, parse};
use serde_json::{Map, Value};

/// How floats are compared: `exact` bits (nan equals nan, -0.0 differs from
/// 0.0), or `|a-b| <= abs + rel*max(|a|,|b|)` with non-finite values matching exactly.
#[derive(Clone, Copy, Debug)]
enum Policy {
    Exact,
    Tolerance { rel: f64, abs: f64 },
}

impl Policy {
    fn matches(self, expected: f64, actual: f64) -> bool {
        if expected.is_nan() || actual.is_nan() {
            return expected.is_nan() && actual.is_nan();
        }
        match self {
            Policy::Exact => expected.to_bits() == actual.to_bits(),
            Policy::Tolerance { rel, abs } => {
                if !expected.is_finite() || !actual.is_finite() {
                    return expected == actual;
                }
                (expected - actual).abs() <= abs + rel * expected.abs().max(actual.abs())
            }
        }
    }
}

/// Differences found in one case, each "step N [level] path: message".
struct Comparison<'a> {
    policy: Policy,
    step: usize,
    level: &'a str,
    differences: Vec<String>,
}

impl Comparison<'_> {
    fn differ(&mut self, path: &str, message: String) {
        self.differences.push(format!(
            "step {} [{}] {path}: {message}",
            self.step, self.level
        ));
    }

    fn field<'v>(
        &mut self,
        object: &'v Value,
        key: &str,
        path: &str,
        side: &str,
    ) -> Option<&'v Value> {
        let found = object.get(key);
        if found.is_none() {
            self.differ(
                &format!("{path}.{key}"),
                format!("missing in the {side} observation"),
            );
        }
        found
    }

    /// Ids, kinds, slots and booleans: exact JSON equality.
    fn same(&mut self, expected: &Value, actual: &Value, key: &str, path: &str) {
        let (Some(e), Some(a)) = (
            self.field(expected, key, path, "expected"),
            self.field(actual, key, path, "actual"),
        ) else {
            return;
        };
        if e != a {
            self.differ(&format!("{path}.{key}"), format!("expected {e}, got {a}"));
        }
    }

    /// A float (or null) under the policy.
    fn float(&mut self, expected: &Value, actual: &Value, key: &str, path: &str) {
        let (Some(e), Some(a)) = (
            self.field(expected, key, path, "expected"),
            self.field(actual, key, path, "actual"),
        ) else {
            return;
        };
        self.float_values(e, a, &format!("{path}.{key}"));
    }

    fn float_values(&mut self, e: &Value, a: &Value, path: &str) {
        if e.is_null() || a.is_null() {
            if e.is_null() != a.is_null() {
                self.differ(path, format!("expected {e}, got {a}"));
            }
            return;
        }
        match (decode_float(e, path), decode_float(a, path)) {
            (Ok(x), Ok(y)) if self.policy.matches(x, y) => {}
            (Ok(x), Ok(y)) => self.differ(
                path,
                format!("expected {e}, got {a} (distance {:e})", (x - y).abs()),
            ),
            (Err(error), _) => self.differ(path, format!("fixture bug: {error}")),
            (_, Err(error)) => self.differ(path, format!("not a float: {error}")),
        }
    }

    fn error(&mut self, expected: &Value, actual: &Value, path: &str) {
        let (Some(e), Some(a)) = (expected.get("error"), actual.get("error")) else {
            match (expected.get("error"), actual.get("error")) {
                (Some(e), None) => {
                    self.differ(path, format!("expected the error {e}, got no error"))
                }
                (None, Some(a)) => self.differ(path, format!("expected no error, got {a}")),
                _ => {}
            }
            return;
        };
        let path = format!("{path}.error");
        let (Some(e_fields), Some(a_fields)) = (e.as_object(), a.as_object()) else {
            self.differ(&path, format!("expected {e}, got {a}"));
            return;
        };
        if keys(e_fields) != keys(a_fields) {
            self.differ(
                &path,
                format!(
                    "expected fields {:?}, got {:?}",
                    keys(e_fields),
                    keys(a_fields)
                ),
            );
            return;
        }
        for key in e_fields.keys() {
            match key.as_str() {
                "kind" | "operation" | "operand" | "child" | "parent" | "node" => {
                    self.same(e, a, key, &path)
                }
                _ => self.float(e, a, key, &path),
            }
        }
    }

    fn gradients(&mut self, expected: &Value, actual: &Value, path: &str) {
        let (Some(e), Some(a)) = (
            self.field(expected, "gradients", path, "expected"),
            self.field(actual, "gradients", path, "actual"),
        ) else {
            return;
        };
        let path = format!("{path}.gradients");
        let (Some(e_map), Some(a_map)) = (e.as_object(), a.as_object()) else {
            self.differ(&path, format!("expected {e}, got {a}"));
            return;
        };
        if keys(e_map) != keys(a_map) {
            self.differ(
                &path,
                format!("expected nodes {:?}, got {:?}", keys(e_map), keys(a_map)),
            );
            return;
        }
        for (id, value) in e_map {
            self.float_values(value, &a_map[id], &format!("{path}.{id}"));
        }
    }

    fn trace(&mut self, expected: &Value, actual: &Value, path: &str) {
        self.float(expected, actual, "seed", path);
        let by =
            |record: &Value, list: &str, key: &dyn Fn(&Value) -> String| -> Vec<(String, Value)> {
                let mut items: Vec<(String, Value)> = array(record, list)
                    .iter()
                    .map(|item| (key(item), item.clone()))
                    .collect();
                items.sort_by(|x, y| x.0.cmp(&y.0));
                items
            };
        let node_key = |node: &Value| node["node"].to_string();
        let edge_key = |edge: &Value| format!("({}, {})", edge["child"], edge["operand"]);
        for (list, key, floats, exact) in [
            (
                "nodes",
                &node_key as &dyn Fn(&Value) -> String,
                &["value", "pass_adjoint", "stored_gradient"][..],
                &["operation", "tracked"][..],
            ),
            (
                "edges",
                &edge_key,
                &["local_derivative", "upstream", "contribution"][..],
                &["parent", "parent_tracked"][..],
            ),
        ] {
            let (e_items, a_items) = (by(expected, list, key), by(actual, list, key));
            let e_keys: Vec<&String> = e_items.iter().map(|(k, _)| k).collect();
            let a_keys: Vec<&String> = a_items.iter().map(|(k, _)| k).collect();
            if e_keys != a_keys {
                self.differ(
                    &format!("{path}.{list}"),
                    format!("expected {e_keys:?}, got {a_keys:?}"),
                );
                continue;
            }
            for ((k, e), (_, a)) in e_items.iter().zip(&a_items) {
                let item_path = format!("{path}.{list}[{k}]");
                for field in exact {
                    self.same(e, a, field, &item_path);
                }
                for field in floats {
                    self.float(e, a, field, &item_path);
                }
            }
        }
    }

    fn order(&mut self, expected: &Value, actual: &Value, path: &str) {
        let ids = |record: &Value| -> Vec<Value> {
            array(record, "nodes")
                .iter()
                .map(|n| n["node"].clone())
                .collect()
        };
        let (e_ids, a_ids) = (ids(expected), ids(actual));
        if e_ids != a_ids {
            self.differ(
                &format!("{path}.nodes"),
                format!("expected the order {e_ids:?}, got {a_ids:?}"),
            );
        }
        let sequence = |record: &Value| -> Vec<String> {
            array(record, "edges")
                .iter()
                .map(|e| format!("({}, {}, {})", e["child"], e["operand"], e["parent"]))
                .collect()
        };
        let (e_seq, a_seq) = (sequence(expected), sequence(actual));
        if e_seq != a_seq {
            self.differ(
                &format!("{path}.edges"),
                format!("expected the sequence {e_seq:?}, got {a_seq:?}"),
            );
            return;
        }
        for (index, (e, a)) in array(expected, "edges")
            .iter()
            .zip(array(actual, "edges"))
            .enumerate()
        {
            let edge_path = format!("{path}.edges[{index}]");
            self.float(e, a, "before", &edge_path);
            self.float(e, a, "after", &edge_path);
        }
    }
}

fn keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    keys
}

fn array<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The observations the engine gives for a fixture's program, as the adapter writes them.
fn observe(program: &Value, id: &str) -> Result<Vec<Value>, String> {
    let program = parse_program(program, id).map_err(|error| format!("program error: {error}"))?;
    let observations =
        run_program(&program, true).map_err(|error| format!("program error: {error}"))?;
    let text = Json::Array(observations).to_string();
    match parse(&text) {
        Ok(Value::Array(items)) => Ok(items),
        other => Err(format!(
            "the runner wrote something that is not a JSON array: {other:?}"
        )),
    }
}

/// Compare one fixture; returns its differences (empty when it passes).
fn check_case(fixture: &Value, id: &str) -> Vec<String> {
    let policy = match fixture["comparison"]["mode"].as_str() {
        Some("exact") => Policy::Exact,
        Some("tolerance") => match (
            fixture["comparison"]["rel"].as_f64(),
            fixture["comparison"]["abs"].as_f64(),
        ) {
            (Some(rel), Some(abs)) => Policy::Tolerance { rel, abs },
            _ => {
                return vec!["fixture bug: a tolerance comparison without rel and abs".to_string()];
            }
        },
        _ => {
            return vec![format!(
                "fixture bug: unknown comparison {}",
                fixture["comparison"]
            )];
        }
    };
    let levels: Vec<&str> = array(fixture, "levels")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let program = array(fixture, "program");
    let expected = array(fixture, "expected");
    if program.len() != expected.len() {
        return vec![format!(
            "fixture bug: {} steps but {} expected observations",
            program.len(),
            expected.len()
        )];
    }
    let actual = match observe(&fixture["program"], id) {
        Ok(actual) => actual,
        Err(message) => return vec![message],
    };
    if actual.len() != expected.len() {
        return vec![format!(
            "expected {} observations, got {}",
            expected.len(),
            actual.len()
        )];
    }
    let mut comparison = Comparison {
        policy,
        step: 0,
        level: "",
        differences: Vec::new(),
    };
    for (step, ((program_step, e), a)) in program.iter().zip(expected).zip(&actual).enumerate() {
        comparison.step = step;
        let path = format!("observations[{step}]");
        let creates = program_step.get("id").is_some();
        let is_backward = program_step["op"] == "backward";
        let reference_failed = e.get("error").is_some();
        for &level in &levels {
            comparison.level = level;
            match level {
                "values" if creates => {
                    comparison.error(e, a, &path);
                    if !reference_failed && a.get("error").is_none() {
                        comparison.float(e, a, "value", &path);
                        comparison.same(e, a, "tracked", &path);
                    }
                }
                "gradients" if !creates && !reference_failed => {
                    if let Some(error) = a.get("error") {
                        comparison.differ(
                            &path,
                            format!("the reference completed this step, got the error {error}"),
                        );
                    } else {
                        comparison.gradients(e, a, &path);
                    }
                }
                "errors" if is_backward && reference_failed => {
                    comparison.error(e, a, &path);
                    comparison.gradients(e, a, &path);
                }
                "trace" | "order" if is_backward && !reference_failed => {
                    let (Some(e_pass), Some(a_pass)) = (e.get("pass"), a.get("pass")) else {
                        if e.get("pass").is_none() {
                            comparison.differ(
                                &path,
                                "fixture bug: the level is declared but there is no pass".into(),
                            );
                        } else {
                            comparison.differ(&path, format!("expected a pass record, got {a}"));
                        }
                        continue;
                    };
                    let pass_path = format!("{path}.pass");
                    if level == "trace" {
                        comparison.trace(e_pass, a_pass, &pass_path);
                    } else {
                        comparison.order(e_pass, a_pass, &pass_path);
                    }
                }
                "values" | "gradients" | "errors" | "trace" | "order" => {}
                other => comparison.differ(&path, format!("fixture bug: unknown level {other:?}")),
            }
        }
    }
    comparison.differences
}

fn fixture_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            // llm-records/ holds model-level records, not cases.
            if path.file_name().is_some_and(|name| name != "llm-records") {
                fixture_files(&path, found);
            }
        } else if path.extension().is_some_and(|ext| ext == "json")
            && path
                .file_name()
                .is_some_and(|name| name != "fixture.schema.json")
        {
            found.push(path);
        }
    }
}

#[test]
fn every_canonical_fixture_passes_at_every_level_it_declares() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in &files {
        let relative = path
            .strip_prefix(&root)
            .expect("under the fixtures root")
            .with_extension("");
        let id = relative.to_string_lossy().replace('\\', "/");
        let text = fs::read_to_string(path)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
        let fixture = match parse(&text) {
            Ok(fixture) => fixture,
            Err(error) => {
                failures.push(format!("{id}: fixture bug: {error}"));
                continue;
            }
        };
        if fixture["id"] != Value::String(id.clone()) {
            failures.push(format!(
                "{id}: fixture bug: the file says id {}",
                fixture["id"]
            ));
        }
        checked += 1;
        for difference in check_case(&fixture, &id) {
            failures.push(format!("{id}: {difference}"));
        }
    }
    eprintln!(
        "fixtures: {checked} cases checked, {} differences",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} difference(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        checked > 80,
        "only {checked} fixture cases found under {}",
        root.display()
    );
}

#[test]
fn the_policies_compare_as_documented() {
    assert!(Policy::Exact.matches(f64::NAN, f64::NAN));
    assert!(!Policy::Exact.matches(0.0, -0.0));
    assert!(!Policy::Exact.matches(1.0, 1.0 + f64::EPSILON));
    let tolerance = Policy::Tolerance {
        rel: 1e-13,
        abs: 0.0,
    };
    assert!(tolerance.matches(1.0, 1.0 + f64::EPSILON));
    assert!(!tolerance.matches(1.0, 1.0 + 1e-12));
    assert!(!tolerance.matches(f64::INFINITY, f64::MAX));
    assert!(tolerance.matches(f64::NEG_INFINITY, f64::NEG_INFINITY));
}

#[test]
fn a_wrong_observation_is_reported_with_its_step_and_field() {
    let text = r#"{"id": "t", "comparison": {"mode": "exact"}, "levels": ["values", "gradients"],
        "program": [{"id": "x", "op": "variable", "value": 2.0}, {"id": "y", "op": "mul", "args": ["x", "x"]},
                    {"op": "backward", "output": "y"}],
        "expected": [{"value": 2.0, "tracked": true}, {"value": 4.0, "tracked": true},
                     {"gradients": {"x": 2.0, "y": 1.0}}]}"#;
    let differences = check_case(&parse(text).unwrap(), "t");
    assert_eq!(
        differences,
        vec![
            "step 2 [gradients] observations[2].gradients.x: expected 2.0, got 4.0 (distance 2e0)"
        ]
    );
}

#[test]
fn backward_without_a_record_observes_every_fixture_bit_for_bit_like_the_recorded_pass() {
    // The fast path (no pass record, only tracked nodes walked) must give the
    // same values, gradients and errors, to the bit, as the recorded pass.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    let mut differences = Vec::new();
    let mut backward_steps = 0;
    for path in &files {
        let fixture = parse(&fs::read_to_string(path).expect("a readable fixture")).expect("JSON");
        let id = path.display().to_string();
        let program = parse_program(&fixture["program"], &id).expect("a valid program");
        let fast = run_program(&program, false).expect("the program runs");
        let recorded = run_program(&program, true).expect("the program runs");
        for (step, (fast, recorded)) in fast.iter().zip(&recorded).enumerate() {
            let mut recorded = parse(&recorded.to_string()).expect("JSON");
            if let Some(fields) = recorded.as_object_mut() {
                backward_steps += usize::from(fields.remove("pass").is_some());
            }
            let fast = parse(&fast.to_string()).expect("JSON");
            // Numbers compare as their text (arbitrary_precision): -0.0 differs from 0.0.
            if fast != recorded {
                differences.push(format!("{id} step {step}: {fast} != {recorded}"));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    assert!(
        backward_steps > 80,
        "only {backward_steps} recorded backward steps"
    );
}

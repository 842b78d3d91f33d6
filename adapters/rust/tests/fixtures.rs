//! Runs every canonical fixture (`../../fixtures/**/*.json`) on the engine and
//! compares the observations with the fixture's `expected`, at every level the
//! fixture declares (docs/protocol.md, "Levels: what is compared"), under the
//! `contract` profile: an `exact` fixture bit for bit, a `bounds` fixture with
//! each float's bound from `bounds.contract` (docs/contract.md section 9,
//! docs/fixtures.md "Comparison policy").
//!
//! The programs go through the same runner and JSON writer as the adapter
//! (`program::run_program`, then the wire text, parsed back), so this checks
//! what the harness would see. Every failing case is reported with its id, its
//! step, the level and the path of the field that differs; a fixture that does
//! not have the documented shape is reported as a fixture bug.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use scalar_autodiff::execute::run_program;
use scalar_autodiff::program::parse_program;
use scalar_autodiff::wire::{Json, decode_float, parse};
use serde_json::{Map, Value};

/// How a fixture's floats are compared under the `contract` profile, the one
/// a port written from the contract declares (docs/contract.md section 9): an
/// `exact` fixture bit for bit; a `bounds` fixture with each float's own bound,
/// `bounds.contract[step][path]`, 0 when the path is absent.
#[derive(Clone, Debug)]
enum Policy {
    Exact,
    Bounds(Vec<HashMap<String, f64>>),
}

impl Policy {
    /// The fixture's policy, or a fixture bug when its comparison or bounds do
    /// not have the documented shape for `steps` steps (docs/fixtures.md).
    fn of(fixture: &Value, steps: usize) -> Result<Policy, String> {
        let contract = fixture
            .get("bounds")
            .and_then(|bounds| bounds.get("contract"));
        match (fixture["comparison"]["mode"].as_str(), contract) {
            (Some("exact"), None) => Ok(Policy::Exact),
            (Some("exact"), Some(_)) => {
                Err("fixture bug: an exact comparison with bounds.contract".into())
            }
            (Some("bounds"), None) => {
                Err("fixture bug: a bounds comparison without bounds.contract".into())
            }
            (Some("bounds"), Some(contract)) => {
                let Some(per_step) = contract.as_array() else {
                    return Err(format!(
                        "fixture bug: bounds.contract is {contract}, not a list"
                    ));
                };
                if per_step.len() != steps {
                    return Err(format!(
                        "fixture bug: bounds.contract has {} entries for {steps} steps",
                        per_step.len()
                    ));
                }
                per_step
                    .iter()
                    .enumerate()
                    .map(|(step, paths)| step_bounds(step, paths))
                    .collect::<Result<_, _>>()
                    .map(Policy::Bounds)
            }
            _ => Err(format!(
                "fixture bug: unknown comparison {}",
                fixture["comparison"]
            )),
        }
    }

    /// The bound of the float at `path` (its path within step `step`'s
    /// observation, docs/fixtures.md), or None when it is compared bit for bit.
    fn bound(&self, step: usize, path: &str) -> Option<f64> {
        match self {
            Policy::Exact => None,
            Policy::Bounds(steps) => Some(steps[step].get(path).copied().unwrap_or(0.0)),
        }
    }
}

/// One step's bounds: each path's bound, a positive number or `"inf"`.
fn step_bounds(step: usize, paths: &Value) -> Result<HashMap<String, f64>, String> {
    let Some(paths) = paths.as_object() else {
        return Err(format!(
            "fixture bug: bounds.contract[{step}] is {paths}, not an object"
        ));
    };
    paths
        .iter()
        .map(|(path, raw)| {
            let where_ = format!("bounds.contract[{step}].{path}");
            match decode_float(raw, &where_) {
                Ok(bound) if bound > 0.0 => Ok((path.clone(), bound)),
                Ok(_) => Err(format!(
                    "fixture bug: {where_} is {raw}, not a positive bound"
                )),
                Err(error) => Err(format!("fixture bug: {error}")),
            }
        })
        .collect()
}

/// Whether `actual` agrees with `expected`: the same bits (nan equals nan), or,
/// under a bound, both finite and `|expected - actual| <= bound`. So -0.0 and
/// 0.0 agree only under a bound, and a non-finite value must match exactly.
fn agree(expected: f64, actual: f64, bound: Option<f64>) -> bool {
    let same_bits =
        expected.to_bits() == actual.to_bits() || (expected.is_nan() && actual.is_nan());
    same_bits
        || bound.is_some_and(|bound| {
            expected.is_finite() && actual.is_finite() && (expected - actual).abs() <= bound
        })
}

/// Differences found in one case, each "step N [level] path: message".
struct Comparison<'a> {
    policy: &'a Policy,
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

    /// Compare two floats at `path` (`observations[STEP].` then the float's
    /// bounds path) under the float's bound.
    fn float_values(&mut self, e: &Value, a: &Value, path: &str) {
        if e.is_null() || a.is_null() {
            if e.is_null() != a.is_null() {
                self.differ(path, format!("expected {e}, got {a}"));
            }
            return;
        }
        let prefix = format!("observations[{}].", self.step);
        let key = path.strip_prefix(&prefix).unwrap_or(path);
        let bound = self.policy.bound(self.step, key);
        match (decode_float(e, path), decode_float(a, path)) {
            (Ok(x), Ok(y)) if agree(x, y, bound) => {}
            (Ok(x), Ok(y)) => self.differ(
                path,
                format!(
                    "expected {e}, got {a} (distance {:e}, {})",
                    (x - y).abs(),
                    bound.map_or("compared bit for bit".to_string(), |b| format!(
                        "bound {b:e}"
                    ))
                ),
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
        // The keys are those of the bounds paths: pass.nodes[ID], pass.edges[CHILD:SLOT].
        let text = |value: &Value| value.as_str().map_or(value.to_string(), str::to_string);
        let node_key = |node: &Value| text(&node["node"]);
        let edge_key = |edge: &Value| format!("{}:{}", text(&edge["child"]), edge["operand"]);
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
    let policy = match Policy::of(fixture, program.len()) {
        Ok(policy) => policy,
        Err(bug) => return vec![bug],
    };
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
        policy: &policy,
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

/// The float after `x` (toward +inf), for finite `x`.
fn next_up(x: f64) -> f64 {
    if x == 0.0 {
        f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() + 1)
    } else {
        f64::from_bits(x.to_bits() - 1)
    }
}

#[test]
fn floats_agree_as_the_contract_profile_documents() {
    let one_ulp = next_up(1.0) - 1.0;
    // exact: the same bits; nan equals nan; the sign of zero counts.
    assert!(agree(f64::NAN, f64::NAN, None));
    assert!(agree(1.0, 1.0, None));
    assert!(!agree(0.0, -0.0, None));
    assert!(!agree(1.0, next_up(1.0), None));
    // A bound of 1 ulp lets 1 ulp through, not 2.
    assert!(agree(1.0, next_up(1.0), Some(one_ulp)));
    assert!(!agree(1.0, next_up(next_up(1.0)), Some(one_ulp)));
    // Bound 0 (an absent path): the same number, but the sign of zero may differ.
    assert!(agree(0.0, -0.0, Some(0.0)));
    assert!(!agree(1.0, next_up(1.0), Some(0.0)));
    // Non-finite values match exactly, whatever the bound.
    assert!(!agree(f64::INFINITY, f64::MAX, Some(f64::INFINITY)));
    assert!(!agree(f64::NAN, 1.0, Some(f64::INFINITY)));
    assert!(!agree(
        f64::NEG_INFINITY,
        f64::INFINITY,
        Some(f64::INFINITY)
    ));
    assert!(agree(f64::NEG_INFINITY, f64::NEG_INFINITY, Some(0.0)));
    assert!(agree(f64::NAN, f64::NAN, Some(0.0)));
}

#[test]
fn a_bound_is_read_from_its_path_and_an_absent_path_has_bound_0() {
    let fixture = parse(
        r#"{"comparison": {"mode": "bounds", "reason": "r"},
            "bounds": {"contract": [{}, {"value": 1e-15, "gradients.x": "inf"}], "numeric": [{}, {}]}}"#,
    )
    .unwrap();
    let policy = Policy::of(&fixture, 2).unwrap();
    assert_eq!(policy.bound(1, "value"), Some(1e-15));
    assert_eq!(policy.bound(1, "gradients.x"), Some(f64::INFINITY));
    assert_eq!(policy.bound(1, "gradients.y"), Some(0.0));
    assert_eq!(policy.bound(0, "value"), Some(0.0));
    let exact =
        parse(r#"{"comparison": {"mode": "exact", "reason": "r"}, "bounds": {"numeric": [{}]}}"#);
    assert_eq!(
        Policy::of(&exact.unwrap(), 1).unwrap().bound(0, "value"),
        None
    );
}

#[test]
fn a_comparison_or_bounds_of_the_wrong_shape_is_a_fixture_bug() {
    for (text, bug) in [
        (
            r#"{"comparison": {"mode": "tolerance", "rel": 1e-12, "abs": 0.0}}"#,
            "unknown comparison",
        ),
        (
            r#"{"comparison": {"mode": "bounds"}, "bounds": {"numeric": [{}]}}"#,
            "without bounds.contract",
        ),
        (
            r#"{"comparison": {"mode": "exact"}, "bounds": {"contract": [{}], "numeric": [{}]}}"#,
            "an exact comparison with bounds.contract",
        ),
        (
            r#"{"comparison": {"mode": "bounds"}, "bounds": {"contract": [{}, {}], "numeric": [{}]}}"#,
            "2 entries for 1 steps",
        ),
        (
            r#"{"comparison": {"mode": "bounds"}, "bounds": {"contract": [{"value": -1.0}], "numeric": [{}]}}"#,
            "not a positive bound",
        ),
        (
            r#"{"comparison": {"mode": "bounds"}, "bounds": {"contract": [{"value": "big"}], "numeric": [{}]}}"#,
            "bounds.contract[0].value",
        ),
    ] {
        let error = Policy::of(&parse(text).unwrap(), 1).unwrap_err();
        assert!(
            error.starts_with("fixture bug: ") && error.contains(bug),
            "{text}: {error}"
        );
    }
}

/// The float of an observation at a bounds path (docs/fixtures.md), found the
/// way conformance/generate.py names it, independently of the walker.
fn float_at<'v>(observation: &'v mut Value, path: &str) -> &'v mut Value {
    let Some(rest) = path.strip_prefix("pass.") else {
        return match path.split_once('.') {
            Some((object, name)) => &mut observation[object][name],
            None => &mut observation[path],
        };
    };
    let (head, key) = rest.rsplit_once('.').expect("pass.LIST[SELECTOR].KEY");
    let (list, selector) = head
        .trim_end_matches(']')
        .split_once('[')
        .expect("pass.LIST[SELECTOR]");
    let items = observation["pass"][list].as_array_mut().expect("a list");
    let item = match (list, selector.split_once(':'), selector.parse::<usize>()) {
        ("nodes", _, _) => items.iter_mut().find(|n| n["node"] == selector),
        (_, Some((child, slot)), _) => items
            .iter_mut()
            .find(|e| e["child"] == child && e["operand"].as_u64() == slot.parse().ok()),
        (_, None, Ok(position)) => items.get_mut(position),
        _ => None,
    };
    &mut item.unwrap_or_else(|| panic!("no float at {path}"))[key]
}

/// A fixture whose expected observations are what this engine observes, each
/// float at the given (step, path) moved to `move_to(actual, bound)`.
fn moved(
    fixture: &Value,
    id: &str,
    floats: &[(usize, String, f64)],
    move_to: impl Fn(f64, f64) -> f64,
) -> Value {
    let mut fixture = fixture.clone();
    let mut observed = observe(&fixture["program"], id).expect("the program runs");
    for (step, path, bound) in floats {
        let at = float_at(&mut observed[*step], path);
        let actual = decode_float(at, path).expect("a float");
        let mut text = String::new();
        scalar_autodiff::wire::write_float(move_to(actual, *bound), &mut text);
        *at = parse(&text).expect("a float as JSON");
    }
    fixture["expected"] = Value::Array(observed);
    fixture
}

/// Every finite bound of a fixture's contract profile on a finite float: (step, path, bound).
fn finite_bounds(fixture: &Value) -> Vec<(usize, String, f64)> {
    let mut out = Vec::new();
    for (step, paths) in array(&fixture["bounds"], "contract").iter().enumerate() {
        for (path, raw) in paths.as_object().expect("an object") {
            let bound = decode_float(raw, path).expect("a bound");
            if bound.is_finite() {
                out.push((step, path.clone(), bound));
            }
        }
    }
    out
}

/// The largest float within `bound` above `actual`, and the smallest beyond it.
fn at_the_bound(actual: f64, bound: f64) -> f64 {
    let mut x = actual + bound;
    while (x - actual).abs() > bound {
        x = -next_up(-x);
    }
    x
}

fn past_the_bound(actual: f64, bound: f64) -> f64 {
    let mut x = actual + bound;
    while (x - actual).abs() <= bound {
        x = next_up(x);
    }
    x
}

#[test]
fn every_bound_of_a_bounds_fixture_lets_its_float_move_to_it_and_no_further() {
    // Expected values set to this engine's own, then moved to the edge of their
    // bounds: the walker must find each bound at the path it compares the float
    // under (else it uses bound 0 and fails), and must fail one float past it.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    let (mut fixtures, mut moved_floats) = (0, 0);
    for path in &files {
        let fixture = parse(&fs::read_to_string(path).expect("readable")).expect("JSON");
        if fixture["comparison"]["mode"] != "bounds" {
            continue;
        }
        let id = path.display().to_string();
        let floats = finite_bounds(&fixture);
        fixtures += 1;
        moved_floats += floats.len();
        let within = moved(&fixture, &id, &floats, at_the_bound);
        assert_eq!(check_case(&within, &id), Vec::<String>::new(), "{id}");
        if floats.len() > 200 {
            continue; // the model cases: one run per float would take minutes
        }
        for float in &floats {
            let beyond = moved(&fixture, &id, std::slice::from_ref(float), past_the_bound);
            let differences = check_case(&beyond, &id);
            let (step, at, _) = float;
            assert!(
                !differences.is_empty()
                    && differences
                        .iter()
                        .all(|d| d.starts_with(&format!("step {step} "))
                            && d.contains(&format!("].{at}: "))),
                "{id}: step {step} {at} moved past its bound: {differences:?}"
            );
        }
    }
    assert!(
        fixtures > 30 && moved_floats > 1000,
        "{fixtures} fixtures, {moved_floats} floats"
    );
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
            "step 2 [gradients] observations[2].gradients.x: expected 2.0, got 4.0 (distance 2e0, compared bit for bit)"
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

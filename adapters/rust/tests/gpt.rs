//! The tiny GPT built from the engine's ops agrees with the reference's model
//! record (fixtures/llm-records/reference-width.json): the same loss and the
//! same stored gradient for every parameter, within the record's tolerance.

use std::path::Path;

use scalar_autodiff::Tape;
use scalar_autodiff::gpt::{Adam, Config, Gpt, tokenize};
use serde_json::Value;

fn number(value: &Value) -> f64 {
    value.to_string().parse().expect("a number")
}

/// Every number of a list of {"values": [[...], ...]} matrices, row by row.
fn flatten(matrices: &Value) -> Vec<f64> {
    let mut out = Vec::new();
    for matrix in matrices.as_array().expect("a list of matrices") {
        for row in matrix["values"].as_array().expect("rows") {
            out.extend(row.as_array().expect("a row").iter().map(number));
        }
    }
    out
}

fn record() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/llm-records/reference-width.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("the model record")).expect("JSON")
}

#[test]
fn the_model_gives_the_reference_loss_and_gradients_on_its_record() {
    let record = record();
    let model = Gpt::new(Config::reference(), flatten(&record["parameters"]));
    let tokens: Vec<usize> = record["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .map(|t| t.as_u64().expect("a token") as usize)
        .collect();
    assert_eq!(
        tokenize(record["document"].as_str().expect("a document")),
        Some(tokens.clone())
    );
    let (rel, abs) = (
        number(&record["comparison"]["rel"]),
        number(&record["comparison"]["abs"]),
    );
    let close = |got: f64, want: f64| (got - want).abs() <= abs + rel * want.abs();

    let tape = Tape::new();
    let (loss, parameters) = model.loss(&tape, &tokens).unwrap();
    loss.backward().unwrap();
    let want_loss = number(&record["expected"]["loss"]);
    assert!(
        close(loss.value(), want_loss),
        "loss {} != {want_loss}",
        loss.value()
    );
    let want = flatten(&record["expected"]["gradients"]);
    assert_eq!(parameters.len(), want.len());
    let wrong: Vec<String> = parameters
        .iter()
        .zip(&want)
        .enumerate()
        .filter(|(_, (p, w))| !close(p.gradient().unwrap(), **w))
        .map(|(i, (p, w))| format!("parameter {i}: {:?} != {w}", p.gradient()))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} gradient(s) differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn a_few_adam_steps_on_one_document_lower_its_loss() {
    let record = record();
    let mut model = Gpt::new(Config::reference(), flatten(&record["parameters"]));
    let tokens = tokenize("emma").unwrap();
    let mut adam = Adam::new(model.values.len(), 5);
    let mut losses = Vec::new();
    for step in 0..5 {
        let tape = Tape::new();
        let (loss, parameters) = model.loss(&tape, &tokens).unwrap();
        loss.backward().unwrap();
        let gradients: Vec<f64> = parameters.iter().map(|p| p.gradient().unwrap()).collect();
        adam.step(step, &mut model.values, &gradients);
        losses.push(loss.value());
    }
    assert!(losses[4] < losses[0], "{losses:?}");
}

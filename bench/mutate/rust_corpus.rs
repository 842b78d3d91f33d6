//! The conformance corpus as the only test of a cargo-mutants mutant (bench/mutate).
//!
//! `bench/mutate/run.py` copies this file into a copy of `adapters/rust` as
//! `tests/corpus.rs` (never into the port itself) and runs
//! `cargo mutants -- --test corpus` there: cargo builds the adapter binary from the
//! mutated source, and this test hands it to `bench/mutate/judge.py`, which runs the
//! corpus against it. No other test of the port runs, so a mutant is killed by the
//! corpus or not at all.

use std::path::Path;
use std::process::Command;

#[test]
fn the_corpus_passes_on_the_adapter_built_from_this_source() {
    let python = std::env::var("MUTATE_PYTHON").expect("MUTATE_PYTHON: the kit's interpreter (set by bench/mutate/run.py)");
    let judge = std::env::var("MUTATE_JUDGE").expect("MUTATE_JUDGE: bench/mutate/judge.py (set by bench/mutate/run.py)");
    let quick = std::env::var("MUTATE_QUICK").map(|v| v == "1").unwrap_or(true);
    let adapter = env!("CARGO_BIN_EXE_scalar-adapter");
    let mut command = Command::new(python);
    command.args([judge.as_str(), "rust", "--source", env!("CARGO_MANIFEST_DIR"), "--adapter", adapter]);
    if quick {
        command.arg("--quick");
    }
    assert!(Path::new(adapter).exists(), "{adapter}: not built");
    let status = command.status().expect("judge.py did not start");
    assert!(status.success(), "the corpus fails on this build ({status})");
}

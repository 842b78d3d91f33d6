//! Times the engine on one program: `scalar-bench PROGRAM.json`.
//!
//! PROGRAM.json is a JSON array of program steps, the same form as the
//! protocol's `run.program`. Parsing is not timed. The program runs on the
//! engine without building observations; pass records are kept alive until
//! the timing ends, so their drop is not timed either. Prints one JSON line:
//! `{"engine":"rust-scalar","nodes":N,"forward_seconds":f,"backward_seconds":b}`,
//! where forward is the time spent in creation steps and backward the time
//! spent in backward and zero_grad steps.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use scalar_autodiff::program::{Graph, Outcome, Program, Step, parse_program};
use scalar_autodiff::wire::{Json, parse};

/// Run the program, timing runs of consecutive steps of one class together so
/// that reading the clock stays small next to the work.
fn time(program: &Program) -> Result<(usize, Duration, Duration, Vec<Outcome>), String> {
    let mut graph = Graph::new();
    let mut outcomes = Vec::with_capacity(program.steps.len());
    let (mut forward, mut backward) = (Duration::ZERO, Duration::ZERO);
    let mut start = 0;
    while start < program.steps.len() {
        let creates = matches!(program.steps[start], Step::Create { .. });
        let mut end = start;
        while end < program.steps.len()
            && matches!(program.steps[end], Step::Create { .. }) == creates
        {
            end += 1;
        }
        let clock = Instant::now();
        for step in start..end {
            outcomes.push(
                graph
                    .execute(program, step)
                    .map_err(|error| error.to_string())?,
            );
        }
        let elapsed = clock.elapsed();
        if creates {
            forward += elapsed;
        } else {
            backward += elapsed;
        }
        start = end;
    }
    let nodes = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Outcome::Created(_)))
        .count();
    Ok((nodes, forward, backward, outcomes))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = args.as_slice() else {
        eprintln!("usage: scalar-bench PROGRAM.json");
        return ExitCode::from(2);
    };
    let program = std::fs::read_to_string(path)
        .map_err(|error| format!("{path}: {error}"))
        .and_then(|text| parse(&text).map_err(|error| format!("{path}: {error}")))
        .and_then(|raw| parse_program(&raw, path).map_err(|error| error.to_string()));
    let program = match program {
        Ok(program) => program,
        Err(message) => {
            eprintln!("scalar-bench: {message}");
            return ExitCode::from(2);
        }
    };
    match time(&program) {
        Ok((nodes, forward, backward, outcomes)) => {
            let line = Json::object([
                ("engine", Json::Str("rust-scalar".into())),
                ("nodes", Json::Int(nodes as u64)),
                ("forward_seconds", Json::Float(forward.as_secs_f64())),
                ("backward_seconds", Json::Float(backward.as_secs_f64())),
            ]);
            println!("{line}");
            drop(outcomes);
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("scalar-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

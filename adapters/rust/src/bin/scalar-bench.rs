//! Times the engine on one program: `scalar-bench PROGRAM.json`.
//!
//! PROGRAM.json is a JSON array of program steps, the same form as the
//! protocol's `run.program`. Parsing is not timed. The program runs on the
//! engine without building observations; the graph and the pass records are
//! kept alive until the timing ends, so their drop is not timed either. Prints
//! one JSON line:
//! `{"engine":"rust-scalar","nodes":N,"forward_seconds":f,"backward_seconds":b}`,
//! where N is the number of nodes the program created, forward the time spent
//! in creation steps and backward the time spent in backward and zero_grad steps.
//! Exits 2 on a usage or program error, 1 when a step names a node whose
//! creating step failed.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use scalar_autodiff::execute::{Graph, Outcome};
use scalar_autodiff::program::{Program, Step, parse_program};
use scalar_autodiff::wire::{Json, parse};

/// Run the program, timing runs of consecutive steps of one class together so
/// that reading the clock stays small next to the work.
fn time(program: &Program) -> Result<(usize, Duration, Duration, Graph, Vec<Outcome>), String> {
    let mut graph = Graph::new();
    let mut records = Vec::new();
    let (mut forward, mut backward) = (Duration::ZERO, Duration::ZERO);
    let mut nodes = 0;
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
            match graph
                .execute(program, step)
                .map_err(|error| error.to_string())?
            {
                // The graph keeps every created node alive.
                Outcome::Created(_) => nodes += 1,
                outcome => records.push(outcome),
            }
        }
        let elapsed = clock.elapsed();
        if creates {
            forward += elapsed;
        } else {
            backward += elapsed;
        }
        start = end;
    }
    Ok((nodes, forward, backward, graph, records))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = args.as_slice() else {
        eprintln!("usage: scalar-bench PROGRAM.json");
        return ExitCode::from(2);
    };
    // Parse on another thread: glibc gives that thread its own malloc arena, so the
    // garbage parsing leaves behind does not fragment the heap the engine then
    // allocates its nodes from (which made the timings depend on the parser).
    let owned_path = path.clone();
    let loaded = std::thread::spawn(move || -> Result<Program, String> {
        let text = std::fs::read_to_string(&owned_path)
            .map_err(|error| format!("{owned_path}: {error}"))?;
        let raw = parse(&text).map_err(|error| format!("{owned_path}: {error}"))?;
        parse_program(&raw, &owned_path).map_err(|error| error.to_string())
    })
    .join()
    .unwrap_or_else(|_| Err("the parser panicked".to_string()));
    let program = match loaded {
        Ok(program) => program,
        Err(message) => {
            eprintln!("scalar-bench: {message}");
            return ExitCode::from(2);
        }
    };
    match time(&program) {
        Ok((nodes, forward, backward, graph, records)) => {
            let line = Json::object([
                ("engine", Json::Str("rust-scalar".into())),
                ("nodes", Json::Int(nodes as u64)),
                ("forward_seconds", Json::Float(forward.as_secs_f64())),
                ("backward_seconds", Json::Float(backward.as_secs_f64())),
            ]);
            println!("{line}");
            drop(records);
            drop(graph);
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("scalar-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

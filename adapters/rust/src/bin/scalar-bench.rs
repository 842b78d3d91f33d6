//! Times the engine on one program: `scalar-bench PROGRAM.json`.
//!
//! PROGRAM.json is a JSON array of program steps, the same form as the
//! protocol's `run.program`. Parsing is not timed. The program runs on the
//! engine without building observations or pass records (backward's fast
//! path, as in training). Prints one JSON line:
//! `{"engine":"rust-scalar","nodes":N,"forward_seconds":f,"backward_seconds":b,`
//! `"cold_forward_seconds":cf,"cold_backward_seconds":cb,"rss_delta_bytes":m}`,
//! where N is the number of nodes the program created, forward the time spent
//! reserving the tape and in creation steps, backward the time spent in
//! backward and zero_grad steps.
//!
//! The program runs twice, each time in a new session on a new tape, as the Go
//! bench binaries do. The first, cold run starts in a heap the process has
//! never used (the program is parsed on another thread), so every page of the
//! tape and of the pass's buffers is a page fault, nearly half its time on a
//! program of 72k nodes; it gives cf and cb, and m, the growth of the resident
//! set over it (the session's tape and the engine's buffers, still alive), read
//! from /proc/self/status (0 elsewhere). Its session is then dropped, as a
//! training loop drops each step's tape (`scalar-train`), and the second run,
//! on a new tape in the memory the allocator got back, gives f and b: a
//! training step after the first. Neither drop is timed.
//! Exits 2 on a usage or program error, 1 when a step names a node whose
//! creating step failed.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use scalar_autodiff::execute::{Outcome, Session};
use scalar_autodiff::program::{Program, Step, parse_program};
use scalar_autodiff::wire::{Json, parse};

/// One run of the program: what it created, its times, and what it leaves alive.
struct Run {
    nodes: usize,
    forward: Duration,
    backward: Duration,
    session: Session,
    records: Vec<Outcome>,
}

/// Run the program in a new session, timing runs of consecutive steps of one
/// class together so that reading the clock stays small next to the work:
/// creation steps through `Session::create_run`, the others one by one.
fn time(program: &Program) -> Result<Run, String> {
    // A repeated step pushes one node per application.
    let size: usize = program.steps.iter().map(|step| step.size() as usize).sum();
    let clock = Instant::now();
    // The tape's room for every node is reserved on the clock, as forward work.
    let mut session = Session::with_capacity(size);
    let mut records = Vec::new();
    let (mut forward, mut backward) = (clock.elapsed(), Duration::ZERO);
    let mut nodes = 0;
    let mut start = 0;
    while start < program.steps.len() {
        let clock = Instant::now();
        if matches!(program.steps[start], Step::Create { .. }) {
            // The session keeps every created node alive.
            let (end, created) = session
                .create_run(program, start)
                .map_err(|error| error.to_string())?;
            nodes += created;
            forward += clock.elapsed();
            start = end;
            continue;
        }
        let mut end = start;
        while end < program.steps.len() && !matches!(program.steps[end], Step::Create { .. }) {
            records.push(
                session
                    .execute(program, end, false)
                    .map_err(|error| error.to_string())?,
            );
            end += 1;
        }
        backward += clock.elapsed();
        start = end;
    }
    Ok(Run {
        nodes,
        forward,
        backward,
        session,
        records,
    })
}

/// The resident set size in bytes (VmRSS), or 0 where /proc is not available.
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
            let kilobytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kilobytes * 1024)
        })
        .unwrap_or(0)
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
    let parser = std::thread::Builder::new().name("parser".into());
    let loaded = parser
        .spawn(move || -> Result<Program, String> {
            let text = std::fs::read_to_string(&owned_path)
                .map_err(|error| format!("{owned_path}: {error}"))?;
            let raw = parse(&text).map_err(|error| format!("{owned_path}: {error}"))?;
            parse_program(&raw, &owned_path).map_err(|error| error.to_string())
        })
        .map_err(|error| format!("cannot start the parser: {error}"))
        .and_then(|parser| {
            parser
                .join()
                .unwrap_or_else(|_| Err("the parser panicked".to_string()))
        });
    let program = match loaded {
        Ok(program) => program,
        Err(message) => {
            eprintln!("scalar-bench: {message}");
            return ExitCode::from(2);
        }
    };
    let resident_before = resident_bytes();
    let runs = time(&program).and_then(|cold| {
        let rss_delta = resident_bytes().saturating_sub(resident_before);
        // The cold run's memory goes back to the allocator before the warm run starts.
        drop(cold.session);
        drop(cold.records);
        Ok((cold.forward, cold.backward, rss_delta, time(&program)?))
    });
    match runs {
        Ok((cold_forward, cold_backward, rss_delta, warm)) => {
            let line = Json::object([
                ("engine", Json::Str("rust-scalar".into())),
                ("nodes", Json::Int(warm.nodes as u64)),
                ("forward_seconds", Json::Float(warm.forward.as_secs_f64())),
                ("backward_seconds", Json::Float(warm.backward.as_secs_f64())),
                (
                    "cold_forward_seconds",
                    Json::Float(cold_forward.as_secs_f64()),
                ),
                (
                    "cold_backward_seconds",
                    Json::Float(cold_backward.as_secs_f64()),
                ),
                ("rss_delta_bytes", Json::Int(rss_delta)),
            ]);
            println!("{line}");
            drop(warm);
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("scalar-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

//! Trains the tiny GPT at reference width on the engine: `scalar-train RECORD.json [STEPS]`.
//!
//! RECORD.json is a model record (`fixtures/llm-records/reference-width.json`),
//! whose parameters are the reference's seed-42 initialisation. Each step
//! builds one document's loss on a fresh tape, runs backward (the fast path,
//! no pass record) and takes one Adam step; documents are the built-in corpus,
//! the chemical elements, in atomic-number order (the reference trainer
//! shuffles them with Python's RNG, so the loss curves are not step-for-step
//! comparable). Prints the first-step loss, the mean loss over the last 20% of
//! steps, and steps/s and nodes/s of forward plus backward (the Adam update is
//! not timed, as in `conformance train`).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use scalar_autodiff::Tape;
use scalar_autodiff::gpt::{Adam, Config, Gpt, tokenize};
use serde_json::Value;

/// The chemical elements, hydrogen to oganesson (reference/corpus.py), space-separated.
const ELEMENTS: &str = concat!(
    "hydrogen helium lithium beryllium boron carbon nitrogen oxygen ",
    "fluorine neon sodium magnesium aluminium silicon phosphorus sulfur ",
    "chlorine argon potassium calcium scandium titanium vanadium chromium ",
    "manganese iron cobalt nickel copper zinc gallium germanium arsenic ",
    "selenium bromine krypton rubidium strontium yttrium zirconium niobium ",
    "molybdenum technetium ruthenium rhodium palladium silver cadmium ",
    "indium tin antimony tellurium iodine xenon caesium barium lanthanum ",
    "cerium praseodymium neodymium promethium samarium europium gadolinium ",
    "terbium dysprosium holmium erbium thulium ytterbium lutetium hafnium ",
    "tantalum tungsten rhenium osmium iridium platinum gold mercury ",
    "thallium lead bismuth polonium astatine radon francium radium ",
    "actinium thorium protactinium uranium neptunium plutonium americium ",
    "curium berkelium californium einsteinium fermium mendelevium nobelium ",
    "lawrencium rutherfordium dubnium seaborgium bohrium hassium ",
    "meitnerium darmstadtium roentgenium copernicium nihonium flerovium ",
    "moscovium livermorium tennessine oganesson",
);

/// The initial parameter values of a model record, matrix by matrix, row by row.
fn record_values(path: &str) -> Result<Vec<f64>, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{path}: {error}"))?;
    let record: Value = serde_json::from_str(&text).map_err(|error| format!("{path}: {error}"))?;
    let matrices = record["parameters"]
        .as_array()
        .ok_or_else(|| format!("{path}: no 'parameters' list"))?;
    let mut values = Vec::new();
    for matrix in matrices {
        for row in matrix["values"].as_array().into_iter().flatten() {
            for value in row.as_array().into_iter().flatten() {
                let number = value.as_str().map_or_else(
                    || value.to_string().parse::<f64>().ok(),
                    |text| text.parse::<f64>().ok(),
                );
                values.push(
                    number
                        .ok_or_else(|| format!("{path}: a parameter is not a number: {value}"))?,
                );
            }
        }
    }
    Ok(values)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (path, steps) = match args.as_slice() {
        [_, path] => (path.clone(), 100),
        [_, path, steps] => match steps.parse::<usize>() {
            Ok(steps) if steps > 0 => (path.clone(), steps),
            _ => {
                eprintln!("scalar-train: STEPS must be a positive integer, got {steps:?}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: scalar-train RECORD.json [STEPS]");
            return ExitCode::from(2);
        }
    };
    let config = Config::reference();
    let values = match record_values(&path) {
        Ok(values) => values,
        Err(message) => {
            eprintln!("scalar-train: {message}");
            return ExitCode::from(2);
        }
    };
    let count: usize = config.shapes().iter().map(|(_, r, c)| r * c).sum();
    if values.len() != count {
        eprintln!(
            "scalar-train: {path} has {} parameters, the reference width needs {count}",
            values.len()
        );
        return ExitCode::from(2);
    }
    let mut model = Gpt::new(config, values);
    let documents: Vec<&str> = ELEMENTS.split_whitespace().collect();
    let mut adam = Adam::new(count, steps);
    let (mut losses, mut nodes, mut timed) = (Vec::new(), 0usize, Duration::ZERO);
    let mut gradients = vec![0.0; count];
    for step in 0..steps {
        let tokens = tokenize(documents[step % documents.len()]).expect("the elements are a-z");
        let started = Instant::now();
        let tape = Tape::new();
        let built = model.loss(&tape, &tokens).and_then(|(loss, parameters)| {
            loss.backward()?;
            Ok((loss, parameters))
        });
        let (loss, parameters) = match built {
            Ok(built) => built,
            Err(error) => {
                eprintln!(
                    "scalar-train: training stopped at step {}: {error}",
                    step + 1
                );
                return ExitCode::FAILURE;
            }
        };
        timed += started.elapsed();
        nodes += tape.len();
        for (gradient, parameter) in gradients.iter_mut().zip(&parameters) {
            *gradient = parameter.gradient().expect("a parameter is tracked");
        }
        adam.step(step, &mut model.values, &gradients);
        losses.push(loss.value());
    }
    let tail = steps.div_ceil(5);
    let last = losses[steps - tail..].iter().sum::<f64>() / tail as f64;
    let seconds = timed.as_secs_f64();
    println!(
        "trained {steps} step(s) on {} documents (built-in: the chemical elements, in order), \
         {count} parameters: {seconds:.3} s in forward and backward, {:.1} steps/s, {:.0} nodes/s",
        documents.len(),
        steps as f64 / seconds,
        nodes as f64 / seconds
    );
    println!("first-step loss:                        {:.4}", losses[0]);
    println!("mean loss over the last 20% ({tail} steps): {last:.4}");
    ExitCode::SUCCESS
}

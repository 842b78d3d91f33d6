"""Nodes per second of one tiny-GPT training step: the reference, and the Rust and Go ports.

Usage: .venv/bin/python bench/llm_step.py [--repeat N] [--document WORD]

One step is the forward graph of one document's loss at reference width
(docs/contract.md section 11) and its backward. The reference builds it from its own model
code; the same graph, written as an op program (``conformance/llm.py``), goes
to the ports' bench binaries when they have been built:

    adapters/go/bin/bench              (cd adapters/go && go build -o bin/bench ./cmd/bench)
    adapters/rust/target/release/scalar-bench   (cd adapters/rust && cargo build --release)

Each prints ``{"engine", "nodes", "forward_seconds", "backward_seconds"}``; the
binaries also report their cold first run, shown as its own row (``go, cold``, ``rust, cold``). A
binary's nodes are the program's creation steps, which include the few
parameters this document does not reach; the reference counts the nodes the
loss reaches. Each engine's best of ``--repeat`` runs (warm and cold each) is shown as nodes/s and
as a ratio to the reference measured in the same run, beside microGPT's
250k nodes/s from the project brief. The output is a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from native import best_native, cold, minimal_of, native_binaries  # noqa: E402

from conformance.llm import ProgramRecorder  # noqa: E402
from conformance.wire import to_json_ready  # noqa: E402
from reference.model import GPT, GPTConfig  # noqa: E402
from reference.tokenizer import encode  # noqa: E402

#: microGPT's pure-Python Value, end to end (the project brief).
MICROGPT_NODES_PER_SECOND = 250_000
#: An element name of the corpus's median length (8 letters), so 9 positions.
DOCUMENT = "hydrogen"
SEED = 42


def reference_step(document: str) -> tuple[int, float, float]:
    """(nodes, forward seconds, backward seconds) of one step on the reference."""
    model = GPT.from_seed(GPTConfig(), SEED)
    tokens = encode(document)
    started = time.perf_counter()
    loss = model.loss(tokens)
    built = time.perf_counter()
    record = loss.backward()
    done = time.perf_counter()
    return len(record.topology), built - started, done - built


def step_program(document: str) -> list[dict]:
    """The same step as an op program: every parameter, the loss's graph, backward."""
    model = GPT.from_seed(GPTConfig(), SEED)
    recorder = ProgramRecorder(model.parameters())
    loss = model.loss(encode(document))
    recorder.graph(loss)
    recorder.backward(loss)
    return recorder.steps


def best(runs: list[tuple]) -> tuple:
    """The run with the least forward + backward time."""
    return min(runs, key=lambda r: r[-2] + r[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per engine; the best counts (default 3)")
    parser.add_argument("--document", default=DOCUMENT, help=f"the training document (default {DOCUMENT!r})")
    args = parser.parse_args()

    rows: list[tuple[str, int, float, float]] = []
    names: dict[str, str] = {}  # row label -> native binary name, for the vs-minimal column
    nodes, forward, backward = best([reference_step(args.document) for _ in range(args.repeat)])
    rows.append(("reference (python)", nodes, forward, backward))
    reference_rate = nodes / (forward + backward)

    with tempfile.TemporaryDirectory() as folder:
        steps = to_json_ready(step_program(args.document))
        for name, command in native_binaries().items():
            fastest = best_native(command, steps, Path(folder), args.repeat)
            for variant, timing in ((name, fastest), (f"{name}, cold", cold(fastest))):
                if timing is not None:
                    label = f"{timing['engine']} ({variant})"
                    names[label] = variant
                    rows.append(
                        (label, int(timing["nodes"]), float(timing["forward_seconds"]), float(timing["backward_seconds"]))
                    )

    print(f"One training step at reference width: document {args.document!r}, best of {args.repeat}.\n")
    print("| engine | nodes | forward ms | backward ms | nodes/s | vs reference | vs minimal | vs microGPT 250k |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    # A port is shown against its language's minimal engine (bench/minimal/), "<name>-minimal".
    rates = {engine: n / (f + b) for engine, n, f, b in rows}
    by_name = {name: rates[label] for label, name in names.items()}
    for engine, n, f, b in rows:
        rate = rates[engine]
        minimal = by_name.get(minimal_of(names[engine])) if engine in names else None
        vs_minimal = f"{rate / minimal:,.2f}x" if minimal else ""
        print(
            f"| {engine} | {n:,} | {f * 1e3:,.1f} | {b * 1e3:,.1f} | {rate:,.0f} | "
            f"{rate / reference_rate:,.2f}x | {vs_minimal} | {rate / MICROGPT_NODES_PER_SECOND:,.2f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

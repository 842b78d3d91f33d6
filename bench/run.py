"""Benchmarks, each a ratio against a baseline measured in the same run (never a timed test).

    python bench/run.py            # everything that is available here
    python bench/run.py --quick    # smaller sizes, for a smoke run

Sections:
1. chains of 10k, 100k and 1M nodes on the reference: nodes/s stays flat (time grows linearly)
   with Python's cycle collector paused; the same chains with it running, for its cost;
2. an MLP-shaped graph of add/mul/relu: the reference beside micrograd 0.1.0, in one process;
3. the same programs through the Rust and Go bench binaries, beside the reference and
   beside each language's minimal tape engine (bench/minimal/), best of --repeat runs,
   with memory per node (peak resident set delta / nodes) where the binary reports it;
4. harness overhead: the canonical corpus in-process versus through the protocol (python adapter).

Every engine runs the same program (a list of steps, the fixture format), so
the graphs are identical by construction. Forward is the creation of every
node, backward every backward step; parsing is never timed.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from native import best_native, cold, minimal_of, native_binaries, rss_delta  # noqa: E402

import reference  # noqa: E402
from conformance.fixture import load_corpus  # noqa: E402
from conformance.program import Program, parse_program, program_to_json  # noqa: E402
from conformance.runner import run_adapter  # noqa: E402
from conformance.transport import InProcessTransport, SubprocessTransport  # noqa: E402


def chain_program(n: int) -> Program:
    """x, then n nodes alternating +x and *0.999 (a constant), then one backward."""
    steps: list[dict[str, Any]] = [{"id": "x", "op": "variable", "value": 0.5}, {"id": "k", "op": "constant", "value": 0.999}]
    previous = "x"
    for i in range(n):
        steps.append({"id": f"n{i}", "op": "add" if i % 2 == 0 else "mul", "operands": [previous, "x" if i % 2 == 0 else "k"]})
        previous = f"n{i}"
    steps.append({"op": "backward", "output": previous})
    return parse_program(steps, f"chain-{n}")


def mlp_program(sizes: tuple[int, ...] = (16, 32, 32, 1), samples: int = 8) -> Program:
    """An MLP (relu hidden layers, linear output) applied to ``samples`` inputs; loss = sum of outputs."""
    steps: list[dict[str, Any]] = []
    weights: list[list[list[str]]] = []
    biases: list[list[str]] = []
    for layer, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        weights.append([])
        biases.append([])
        for j in range(fan_out):
            row = []
            for i in range(fan_in):
                name = f"w{layer}_{j}_{i}"
                steps.append({"id": name, "op": "variable", "value": ((i * 7 + j * 3 + layer) % 11 - 5) / 10})
                row.append(name)
            weights[-1].append(row)
            steps.append({"id": f"b{layer}_{j}", "op": "variable", "value": 0.01 * (j % 5)})
            biases[-1].append(f"b{layer}_{j}")
    outputs = []
    for s in range(samples):
        activations = []
        for i in range(sizes[0]):
            steps.append({"id": f"x{s}_{i}", "op": "constant", "value": ((i * 5 + s) % 9 - 4) / 4})
            activations.append(f"x{s}_{i}")
        for layer in range(len(sizes) - 1):
            last = layer == len(sizes) - 2
            nxt = []
            for j, row in enumerate(weights[layer]):
                total = biases[layer][j]
                for i, w in enumerate(row):
                    product = f"p{s}_{layer}_{j}_{i}"
                    steps.append({"id": product, "op": "mul", "operands": [w, activations[i]]})
                    steps.append({"id": f"a{s}_{layer}_{j}_{i}", "op": "add", "operands": [total, product]})
                    total = f"a{s}_{layer}_{j}_{i}"
                if not last:
                    steps.append({"id": f"h{s}_{layer}_{j}", "op": "relu", "operands": [total]})
                    total = f"h{s}_{layer}_{j}"
                nxt.append(total)
            activations = nxt
        outputs.append(activations[0])
    loss = outputs[0]
    for k, out in enumerate(outputs[1:]):
        steps.append({"id": f"loss{k}", "op": "add", "operands": [loss, out]})
        loss = f"loss{k}"
    steps.append({"op": "backward", "output": loss})
    return parse_program(steps, "mlp")


def best_reference(program: Program, repeat: int, collector: bool = True) -> dict[str, float]:
    """The fastest of ``repeat`` runs of time_reference (forward + backward)."""
    runs = [time_reference(program, collector) for _ in range(max(1, repeat))]
    return min(runs, key=lambda timing: timing["forward_seconds"] + timing["backward_seconds"])


def resolved(program: Program) -> tuple[list[tuple[str, Any, tuple[int, ...], Any]], list[int]]:
    """The creation steps as (op, value, operand indices, exponent), and the backward outputs' indices.

    Each operand is resolved to the index of the step that created it before the clock starts, as the
    ports' bench binaries do when they parse: a timed forward is the engine's work, not a map from ids
    to nodes (a dict of a million string ids costs more per entry than one of a hundred thousand).
    """
    created: dict[str, int] = {}
    plan: list[tuple[str, Any, tuple[int, ...], Any]] = []
    for step in program:
        if step.id is not None:
            plan.append((step.op, step.value, tuple(created[a] for a in step.operands), step.exponent))
            created[step.id] = len(created)
    return plan, [created[step.output] for step in program if step.op == "backward" and step.output is not None]


def time_reference(program: Program, collector: bool = True) -> dict[str, float]:
    """Run a program on the reference: forward (node creation) and backward seconds.

    ``collector=False`` pauses Python's cycle collector during the forward as well
    (backward pauses it itself). With it running, every full collection walks every
    live object, the program's steps included, and how many walks a node costs depends
    on the collector's thresholds and on what else is alive, not on the engine: on the
    chain, 0 per node at 10k nodes, 4.7 at 100k, 7.4 at 1M, 7.3 at 4M.
    """
    plan, outputs = resolved(program)
    nodes: list[reference.Node] = []
    records = []
    gc.collect()
    if not collector:
        gc.disable()
    start = time.perf_counter()
    for op, value, operands, exponent in plan:
        if op == "variable":
            nodes.append(reference.variable(value))
        elif op == "constant":
            nodes.append(reference.constant(value))
        elif op == "detach":
            nodes.append(nodes[operands[0]].detach())
        else:
            nodes.append(reference.apply(op, tuple(map(nodes.__getitem__, operands)), exponent))
    middle = time.perf_counter()
    for output in outputs:
        records.append(nodes[output].backward())
    end = time.perf_counter()
    gc.enable()
    return {"nodes": len(nodes), "forward_seconds": middle - start, "backward_seconds": end - middle}


def time_micrograd(program: Program) -> dict[str, float] | None:
    """The same program on micrograd's Value, if micrograd is installed."""
    try:
        from micrograd.engine import Value
    except ImportError:
        return None
    ops: dict[str, Callable[..., Any]] = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "relu": lambda a: a.relu()}
    plan, outputs = resolved(program)
    nodes: list[Any] = []
    gc.collect()
    start = time.perf_counter()
    for op, value, operands, _ in plan:
        if op in ("variable", "constant"):
            nodes.append(Value(value))
        else:
            nodes.append(ops[op](*map(nodes.__getitem__, operands)))
    middle = time.perf_counter()
    for output in outputs:
        nodes[output].backward()
    end = time.perf_counter()
    return {"nodes": len(nodes), "forward_seconds": middle - start, "backward_seconds": end - middle}


def rate(timing: dict[str, float]) -> float:
    """Nodes per second, forward and backward together."""
    return timing["nodes"] / (timing["forward_seconds"] + timing["backward_seconds"])


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    """Run every section and print its Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per engine and program; the best counts (default 3)")
    parser.add_argument("--only-harness", action="store_true", help="only the harness-overhead table")
    args = parser.parse_args()
    if args.only_harness:
        harness_overhead(args.repeat)
        return
    sizes = [1_000, 10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]

    print("## Reference: chains (time must grow linearly, so nodes/s stays flat)\n")
    rows, seconds, seconds_running, base, base_running = [], [], [], None, None
    # The engine's own scaling, then the same chain as a program that leaves the collector running; each
    # the best of --repeat runs, as the ports are, since one run on a shared machine is noise, and the sizes
    # interleaved, so that a slow spell of the machine does not fall on one size only.
    chains = {n: chain_program(n) for n in sizes}
    runs: dict[tuple[int, bool], list[dict[str, float]]] = {(n, c): [] for n in sizes for c in (False, True)}
    for _ in range(max(1, args.repeat)):
        for n, collector in runs:
            runs[n, collector].append(time_reference(chains[n], collector))
    fastest = {key: min(tried, key=lambda t: t["forward_seconds"] + t["backward_seconds"]) for key, tried in runs.items()}
    for n in sizes:
        timing, running = fastest[n, False], fastest[n, True]
        base, base_running = base or rate(timing), base_running or rate(running)
        seconds.append(timing["forward_seconds"] + timing["backward_seconds"])
        seconds_running.append(running["forward_seconds"] + running["backward_seconds"])
        rows.append(
            [
                f"{n:,}",
                f"{seconds[-1]:.2f} s",
                f"{rate(timing):,.0f}",
                f"{rate(timing) / base:.2f}",
                f"{rate(running):,.0f}",
                f"{rate(running) / base_running:.2f}",
            ]
        )
    header = ["chain nodes", "forward + backward", "nodes/s", "nodes/s vs smallest", "collector running: nodes/s", "vs smallest"]
    print(table(header, rows))
    print(
        f"\nt({sizes[-1]:,}) / t({sizes[-2]:,}) (linear: 10.0): {seconds[-1] / seconds[-2]:.1f} with the collector paused,"
        f" {seconds_running[-1] / seconds_running[-2]:.1f} with it running"
    )

    mlp = mlp_program()
    print("\n## MLP-shaped graph (add/mul/relu), reference beside micrograd 0.1.0, same process\n")
    ref = best_reference(mlp, args.repeat)
    rows = [["reference", f"{ref['nodes']:,}", f"{rate(ref):,.0f}", "1.00"]]
    tries = [time_micrograd(mlp) for _ in range(max(1, args.repeat))]
    micro = max((t for t in tries if t), key=rate, default=None)
    if micro:
        rows.append(["micrograd 0.1.0", f"{micro['nodes']:,}", f"{rate(micro):,.0f}", f"{rate(micro) / rate(ref):.2f}"])
    print(table(["engine", "nodes", "nodes/s", "vs reference"], rows))

    binaries = native_binaries()
    if binaries:
        print("\n## Ports: the same programs through the Rust and Go bench binaries\n")
        chain = chain_program(sizes[-1])
        ref_chain = running  # the largest chain with the collector running, best of --repeat, from section 1
        native: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        with tempfile.TemporaryDirectory() as folder:
            for name, command in binaries.items():
                c = best_native(command, program_to_json(chain), Path(folder), args.repeat)
                m = best_native(command, program_to_json(mlp), Path(folder), args.repeat)
                native[name] = (c, m)
                cold_c, cold_m = cold(c), cold(m)
                if cold_c and cold_m:
                    native[f"{name}, cold"] = (cold_c, cold_m)
        rows = [["reference (Python)", f"{rate(ref_chain):,.0f}", "1.00", "", f"{rate(ref):,.0f}", "1.00", "", ""]]
        for name, (c, m) in native.items():
            # A port is shown against its language's minimal engine, "<name>-minimal".
            vs_minimal = ["", ""]
            if minimal_of(name) in native:
                minimal_chain, minimal_mlp = native[minimal_of(name)]
                vs_minimal = [f"{rate(c) / rate(minimal_chain):.2f}", f"{rate(m) / rate(minimal_mlp):.2f}"]
            memory = f"{rss_delta(c) / c['nodes']:.0f}" if rss_delta(c) else "n/a"
            rows.append(
                [
                    name,
                    f"{rate(c):,.0f}",
                    f"{rate(c) / rate(ref_chain):.1f}",
                    vs_minimal[0],
                    f"{rate(m):,.0f}",
                    f"{rate(m) / rate(ref):.1f}",
                    vs_minimal[1],
                    memory,
                ]
            )
        header = [
            f"engine (best of {args.repeat})",
            f"{sizes[-1]:,}-chain nodes/s",
            "vs reference",
            "vs minimal",
            "MLP nodes/s",
            "vs reference",
            "vs minimal",
            "chain bytes/node",
        ]
        print(table(header, rows))
        print(
            "\nbytes/node: the resident set's growth over the run (Go: its peak), over the chain's nodes."
            "\n'cold': the fastest first pass of the same runs, in memory just returned to the system or never used"
            " (every page a fault)."
        )

    harness_overhead(args.repeat)


def interleaved(repeat: int, trials: dict[str, Callable[[], float]]) -> dict[str, float]:
    """Each trial's best of ``repeat`` seconds, the trials taking turns so that a slow spell lands on all alike."""
    timings: dict[str, list[float]] = {label: [] for label in trials}
    for _ in range(repeat):
        for label, trial in trials.items():
            timings[label].append(trial())
    return {label: min(runs) for label, runs in timings.items()}


def timed_run(make: Callable[[], Any], fixtures: Callable[[], list[Any]]) -> Callable[[], float]:
    """A trial: the transport ``make`` gives (started as it starts it), then a run of ``fixtures()``, on the clock."""

    def trial() -> float:
        start = time.perf_counter()
        transport = make()
        run = run_adapter("bench", transport, fixtures(), [])
        seconds = time.perf_counter() - start
        transport.close()
        assert not run.unexpected, [r.message for r in run.unexpected]
        return seconds

    return trial


def harness_overhead(repeat: int) -> None:
    """The canonical corpus in-process and through the protocol, interleaved, best of ``repeat`` each."""
    print(f"\n## Harness overhead: the canonical corpus in-process versus through the protocol (best of {repeat})\n")
    # Without the million-node chain: it takes seconds on the reference either way, and would hide the overhead.
    corpus = [fixture for fixture in load_corpus() if "repeat" not in fixture.features]
    adapter = [sys.executable, str(ROOT / "adapters/python/adapter.py")]

    def greeted() -> float:
        """A run whose adapter was started and greeted before the clock."""
        transport = SubprocessTransport(adapter)
        transport.handshake()
        return timed_run(lambda: transport, lambda: corpus)()

    def start_alone() -> float:
        start = time.perf_counter()
        transport = SubprocessTransport(adapter)
        transport.handshake()
        seconds = time.perf_counter() - start
        transport.close()
        return seconds

    best = interleaved(
        repeat,
        {
            "in-process (reference called directly)": timed_run(InProcessTransport, lambda: corpus),
            "protocol (python adapter subprocess, started in the run)": timed_run(
                lambda: SubprocessTransport(adapter), lambda: corpus
            ),
            "protocol (the same, adapter started and greeted before the clock starts)": greeted,
            "the adapter's start and hello alone (no case)": start_alone,
        },
    )
    base_seconds = best["in-process (reference called directly)"]
    rows = []
    for label, seconds in best.items():
        cases = 0 if label.startswith("the adapter's start") else len(corpus)
        rate = f"{cases / seconds:.1f}" if cases else ""
        rows.append([label, f"{cases}", f"{seconds:.3f} s", rate, f"{seconds / base_seconds:.2f}"])
    print(table(["transport", "cases", "time", "cases/s", "time vs in-process"], rows))
    command_overhead(corpus, adapter, repeat)


def command_overhead(corpus: list[Any], adapter: list[str], repeat: int) -> None:
    """The same two ways as ``conformance run`` goes: the corpus read in the clock, the adapter started before it."""
    print(f"\n### As `conformance run` goes: reading the corpus in the clock (best of {repeat})\n")
    ids = {fixture.id for fixture in corpus}

    def read() -> list[Any]:
        return [fixture for fixture in load_corpus() if fixture.id in ids]

    def launched() -> SubprocessTransport:
        transport = SubprocessTransport(adapter)
        transport.launch()
        return transport

    best = interleaved(
        repeat,
        {
            "in-process (reference called directly)": timed_run(InProcessTransport, read),
            "protocol (python adapter started, then the corpus read while it starts)": timed_run(launched, read),
        },
    )
    base_seconds = best["in-process (reference called directly)"]
    rows = [[label, f"{len(ids)}", f"{seconds:.3f} s", f"{seconds / base_seconds:.2f}"] for label, seconds in best.items()]
    print(table(["transport", "cases", "time", "time vs in-process"], rows))


if __name__ == "__main__":
    main()

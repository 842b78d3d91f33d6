"""``conformance train``: train the tiny GPT on the reference engine and show the loss falling.

Trains at reference width (docs/contract.md section 11) with Adam, one document per step:
the corpus (the built-in element names, or ``--corpus FILE`` with one
document per line) is shuffled with ``--seed`` and cycled. On a terminal a
progress line shows the step, the loss and the engine's speed in graph nodes
per second (forward and backward together); elsewhere only the summary is
printed. The summary gives the first step's loss and the mean loss over the
last 20% of steps; the command exits 1 when that mean is not below the first
loss (training did not work), 0 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path
from typing import Optional, TextIO

from ..errors import UsageError

#: Steps by default: about a minute and a half of pure Python at reference width, enough for a clear fall.
DEFAULT_STEPS = 100
DEFAULT_SEED = 42


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("train", help="train the tiny GPT on the reference engine and check the loss falls")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, metavar="N", help=f"training steps (default {DEFAULT_STEPS})")
    parser.add_argument("--corpus", type=Path, metavar="FILE", help="one document per line (default: the chemical elements)")
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, metavar="S", help=f"initialisation and shuffle seed (default {DEFAULT_SEED})"
    )
    parser.add_argument("--plot", type=Path, metavar="FILE.png", help="write the loss curve as a PNG")
    parser.add_argument("--html", type=Path, metavar="FILE.html", help="write the loss curve as a page (the report's look)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Train, print the summary, optionally plot."""
    from reference import EngineError
    from reference.adam import Adam
    from reference.corpus import CorpusError, builtin_corpus, read_corpus
    from reference.model import GPT, GPTConfig
    from reference.tokenizer import encode

    if args.steps < 1:
        raise UsageError(f"--steps must be at least 1, got {args.steps}")
    if args.plot is not None and not args.plot.parent.is_dir():
        raise UsageError(f"--plot {args.plot}: folder {args.plot.parent} does not exist")
    if args.html is not None:
        from ..html import check_target

        check_target(args.html, "--html")
    try:
        documents = read_corpus(args.corpus) if args.corpus is not None else builtin_corpus()
    except CorpusError as error:
        raise UsageError(str(error)) from None
    source = str(args.corpus) if args.corpus is not None else "built-in: the chemical elements"
    random.Random(args.seed).shuffle(documents)

    config = GPTConfig()
    model = GPT.from_seed(config, args.seed)
    optimiser = Adam(model.parameters(), args.steps)
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    losses: list[float] = []
    nodes = 0
    seconds = 0.0
    for step in range(args.steps):
        tokens = encode(documents[step % len(documents)])
        started = time.perf_counter()
        try:
            loss = model.loss(tokens)
            record = loss.backward()
        except EngineError as error:
            if progress is not None:
                progress.finish()
            print(f"conformance: training stopped at step {step + 1}: {error}", file=sys.stderr)
            return 1
        seconds += time.perf_counter() - started
        nodes += len(record.nodes)
        optimiser.step(step)
        losses.append(loss.value)
        if progress is not None:
            progress.update(step + 1, args.steps, loss.value, nodes / seconds if seconds else 0.0)
    if progress is not None:
        progress.finish()

    tail = max(1, math.ceil(args.steps / 5))
    first, last = losses[0], sum(losses[-tail:]) / tail
    settings = (
        f"trained {args.steps} step(s) on {len(documents)} document(s) ({source}), {config.parameter_count():,} parameters, "
        f"seed {args.seed}: {seconds:.1f} s in forward and backward, {nodes / seconds:,.0f} nodes/s"
    )
    print(settings)
    print(f"first-step loss:                        {first:.4f}")
    print(f"mean loss over the last 20% ({tail} step{'s' if tail > 1 else ''}): {last:.4f}")
    if args.plot is not None:
        from ..plot import write_loss_plot

        try:
            write_loss_plot(args.plot, losses)
        except OSError as error:
            raise UsageError(f"--plot {args.plot}: cannot write: {error.strerror or error}") from None
        print(f"loss curve written to {args.plot}")
    if args.html is not None:
        from ..html.loss import write_loss_page

        try:
            write_loss_page(args.html, losses, settings, first, last, tail)
        except OSError as error:
            raise UsageError(f"--html {args.html}: cannot write: {error.strerror or error}") from None
        print(f"loss page written to {args.html}")
    if args.steps < 5:
        print("too few steps to judge whether the loss falls (use 5 or more)")
        return 0
    if last < first:
        print(f"the loss fell by {first - last:.4f}")
        return 0
    print("the loss did not fall: the mean of the last 20% is not below the first step's loss", file=sys.stderr)
    return 1


class _Progress:
    """One self-overwriting line: a bar, the step, the loss and nodes/s."""

    WIDTH = 30

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown: Optional[str] = None

    def update(self, step: int, steps: int, loss: float, rate: float) -> None:
        filled = self.WIDTH * step // steps
        bar = "#" * filled + "." * (self.WIDTH - filled)
        line = f"\r[{bar}] step {step}/{steps}  loss {loss:.4f}  {rate:,.0f} nodes/s"
        self.stream.write(line)
        self.stream.flush()
        self.shown = line

    def finish(self) -> None:
        if self.shown is not None:
            self.stream.write("\n")
            self.stream.flush()

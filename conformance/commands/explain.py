"""``conformance explain CASE``: a textbook walk-through of one case.

The program with every forward value; for each backward the edge table in
processing order (consumer, slot, operand, local derivative, upstream,
contribution) and the pass adjoints; the stored gradients after every
backward and zero_grad. The numbers come from running the reference.
``--html FILE`` also writes it as a page with the graph after each backward.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..corpora import add_fixtures_option, fixture_dirs, load_corpora
from ..errors import UsageError
from ..execute import run_program
from ..protocol import ErrorInfo

MAX_ROWS = 40


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("explain", help="walk through one case step by step")
    parser.add_argument("case", help="the case id, e.g. seed/reused-square")
    add_fixtures_option(parser)
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write the walk-through as a page, a graph per backward")
    parser.set_defaults(handler=run)


def _num(value: Any) -> str:
    return "none" if value is None else repr(value) if isinstance(value, float) else str(value)


def _table(rows: list[list[str]], indent: str) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]


def run(args: argparse.Namespace) -> int:
    """Print the walk-through."""
    corpus = {f.id: f for f in load_corpora(fixture_dirs(args.fixtures))}
    fixture = corpus.get(args.case)
    if fixture is None:
        close = [case for case in corpus if args.case.split("/")[-1] in case][:5]
        hint = f" (did you mean {', '.join(close)}?)" if close else " (see `conformance list`)"
        raise UsageError(f"no case {args.case!r}{hint}")
    if args.html:
        from ..html import check_target
        from ..html.walk import write_walk
        from ..report import versions_line

        check_target(args.html, "--html")
        try:
            write_walk(fixture, args.html, versions_line())
        except OSError as error:
            raise UsageError(f"cannot write {args.html}: {error.strerror or error}") from None
    print(f"{fixture.id}: {fixture.description}")
    print(f"ops: {', '.join(fixture.ops) or '-'}; levels: {', '.join(fixture.levels)}; comparison: {fixture.comparison.mode}")
    print()
    for index, (step, obs) in enumerate(zip(fixture.program, run_program(fixture.program))):
        head = f"step {index:<3} {step.describe()}"
        if step.id is not None:
            if obs.error is not None:
                print(f"{head}  -> fails: {_error(obs.error)}; no node is created")
            else:
                tracked = "tracked" if obs.tracked else "untracked"
                print(f"{head}  -> value {_num(obs.value)}, {tracked}")
            continue
        if obs.error is not None:
            print(f"{head}  -> fails: {_error(obs.error)}; no stored gradient changes")
        elif step.op == "backward" and obs.pass_ is not None:
            record = obs.pass_
            print(f"{head}  -> seed {_num(record.seed)}, {len(record.nodes)} nodes reached")
            rows = [["consumer", "slot", "operand", "local derivative", "upstream", "contribution", "operand's pass adjoint"]]
            for edge in record.edges[:MAX_ROWS]:
                after = f"{_num(edge.before)} -> {_num(edge.after)}" if edge.operand_tracked else "(untracked)"
                rows.append(
                    [
                        edge.consumer,
                        str(edge.slot),
                        edge.operand,
                        _num(edge.local_derivative),
                        _num(edge.upstream),
                        _num(edge.contribution),
                        after,
                    ]
                )
            print("\n".join(_table(rows, "          ")))
            if len(record.edges) > MAX_ROWS:
                print(f"          ... and {len(record.edges) - MAX_ROWS} more edges")
            adjoints = [f"{n.node} {_num(n.pass_adjoint)}" for n in record.nodes if n.tracked]
            print(f"          pass adjoints: {_clip(adjoints)}")
        else:
            print(head)
        print(f"          stored gradients: {_clip([f'{k} {_num(v)}' for k, v in (obs.gradients or {}).items()])}")
    return 0


def _error(error: ErrorInfo) -> str:
    fields = ", ".join(f"{k}={_num(v)}" for k, v in error.fields().items())
    return f"{error.kind} ({fields})"


def _clip(items: list[str]) -> str:
    if len(items) > MAX_ROWS:
        return ", ".join(items[:MAX_ROWS]) + f", ... ({len(items) - MAX_ROWS} more)"
    return ", ".join(items) or "(none)"

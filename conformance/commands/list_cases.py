"""``conformance list``: every case with its ops, features, levels and comparison policy."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..fixture import FIXTURES_DIR, load_corpus
from ..runner import select


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("list", help="list the cases with their ops and levels")
    parser.add_argument("--case", action="append", metavar="PATTERN", help="only cases whose id matches (fnmatch)")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES_DIR, help="fixtures folder")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print one line per case."""
    fixtures = select(load_corpus(args.fixtures), args.case, None)
    width = max((len(f.id) for f in fixtures), default=0)
    for fixture in fixtures:
        ops = ",".join(fixture.ops) or "-"
        features = f"  features={','.join(fixture.features)}" if fixture.features else ""
        print(f"{fixture.id.ljust(width)}  ops={ops}  levels={','.join(fixture.levels)}  {fixture.comparison.mode}{features}")
    print(f"{len(fixtures)} cases")
    return 0

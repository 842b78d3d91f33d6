"""``conformance docs [NAME]``: the porter's documents, from the checkout or the installed package.

Without NAME it lists the documents with their paths; with NAME (``contract``,
``protocol``, ...) it prints that document, so an installed kit carries its
contract wherever it runs.
"""

from __future__ import annotations

import argparse

from ..contract import docs_dir
from ..errors import UsageError


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("docs", help="list or print the contract, the protocol and the other porter's documents")
    parser.add_argument("name", nargs="?", metavar="NAME", help="a document: contract, protocol, fixtures, ...")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the list, or one document."""
    folder = docs_dir()
    found = {path.stem: path for path in sorted(folder.glob("*.md"))}
    if args.name is None:
        for name, path in found.items():
            print(f"{name.ljust(16)} {path}")
        return 0
    if args.name not in found:
        raise UsageError(f"no document {args.name!r} in {folder} (documents: {', '.join(found) or 'none'})")
    print(found[args.name].read_text(), end="")
    return 0

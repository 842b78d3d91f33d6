"""``conformance docs [NAME] [--path]``: the porter's documents, from the checkout or the installed package.

Without NAME it lists every document it has with its path: the Markdown
documents by name (``contract``, ``protocol``, ...) and the JSON ones by file
name (``protocol.schema.json``, the adapter protocol's schema). With NAME it
prints that document, so an installed kit carries its contract wherever it
runs; ``--path`` prints where the file is instead, for a validator or an editor.
A document's commands that need the kit's source repository (its adapters,
tests and benchmarks) are marked "(in the kit's repository)" (tests/test_docs.py
holds every shipped document to that).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..contract import docs_dir
from ..errors import UsageError

#: The words that mark a command or path of a document as one for the kit's repository, not the installed kit.
REPOSITORY_MARK = "(in the kit's repository)"


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("docs", help="list or print the contract, the protocol, its schema and the other documents")
    parser.add_argument(
        "name", nargs="?", metavar="NAME", help="a document: contract, protocol, protocol.schema.json, fixtures, ..."
    )
    parser.add_argument("--path", action="store_true", help="print where the document is instead of its text")
    parser.set_defaults(handler=run)


def documents(folder: Path) -> dict[str, Path]:
    """Every document in folder by the name ``docs`` takes: a Markdown file's stem, a JSON file's whole name."""
    found = {path.stem: path for path in sorted(folder.glob("*.md"))}
    found.update({path.name: path for path in sorted(folder.glob("*.json"))})
    return found


def run(args: argparse.Namespace) -> int:
    """Print the list, one document, or where it is."""
    folder = docs_dir()
    found = documents(folder)
    if args.name is None:
        for name, path in found.items():
            print(f"{name.ljust(22)} {path}")
        return 0
    document = found.get(args.name) or found.get(args.name.removesuffix(".md"))
    if document is None:
        raise UsageError(f"no document {args.name!r} in {folder} (documents: {', '.join(found) or 'none'})")
    print(document if args.path else document.read_text(encoding="utf-8"), end="\n" if args.path else "")
    return 0

"""``conformance regen [--check]``: write the canonical fixtures and the two schemas, or check they are current.

In the kit's checkout it writes (or checks) the repository's ``fixtures/``.
In an installed kit ``--check`` proves that the corpus shipped in the package
is what its reference generates; writing there is refused (the package is not
the place to edit), unless ``--fixtures DIR`` names another folder.

``--cases DIR`` (repeatable) works on a port's own cases instead: the TOML case
files (the kit's format, docs/fixtures.md) and the programs ``fuzz --save``
wrote in DIR become exactly the fixtures of ``--fixtures F`` (default
``./conformance-fixtures``), so after upgrading the kit a port re-derives its
regression fixtures from the new reference, and ``--check`` proves F current.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Optional

from ..contract import docs_dir
from ..corpora import KIT_WORD
from ..doc_example import with_example
from ..errors import UsageError
from ..files import refuse_installed_package, write_atomic
from ..fixture import FIXTURES_DIR, SCHEMA_NAME, in_checkout
from ..fixture_schema import fixture_schema_text
from ..generate import all_cases, compare, generate, load_own_cases, write
from ..protocol import protocol_schema

#: The adapter protocol's JSON Schema, generated from conformance/protocol.py next to docs/protocol.md.
SCHEMA_FILE = "protocol.schema.json"
#: Where ``--cases`` writes when no ``--fixtures`` is given: a folder of the user's project.
OWN_FIXTURES = Path("conformance-fixtures")


def schema_text() -> str:
    """The canonical text of the protocol schema."""
    return json.dumps(protocol_schema(), indent=2) + "\n"


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("regen", help="regenerate fixtures/ from the reference engine, or a port's own cases")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 listing stale, missing and extra files")
    parser.add_argument(
        "--fixtures",
        metavar="DIR",
        help=f"fixtures folder (default: the kit's own; with --cases, ./{OWN_FIXTURES})",
    )
    parser.add_argument(
        "--cases",
        action="append",
        type=Path,
        metavar="DIR",
        help="a port's own case folder (repeatable): its *.toml case files and the *.json programs fuzz --save wrote "
        "become exactly the fixtures of --fixtures",
    )
    parser.set_defaults(handler=run)


def _target(given: Optional[str], own: bool) -> Path:
    if given is None:
        return OWN_FIXTURES if own else FIXTURES_DIR
    return FIXTURES_DIR if given == KIT_WORD else Path(given)


def run(args: argparse.Namespace) -> int:
    """Generate every case (the kit's, or the port's own); write or check."""
    own = bool(args.cases)
    root = _target(args.fixtures, own)
    if own and root.resolve() == FIXTURES_DIR.resolve():
        raise UsageError(
            f"--fixtures {root} is the kit's corpus; --cases generates a port's own fixtures into a folder of its own "
            f"(default ./{OWN_FIXTURES}), run beside the kit's with `--fixtures {KIT_WORD} --fixtures DIR`"
        )
    if not args.check and root == FIXTURES_DIR and not in_checkout():
        raise UsageError(
            f"regen writes the kit checkout's fixtures/, and this kit is an installed package ({root} is its shipped "
            "corpus): use `conformance regen --check`, or --fixtures DIR to write a copy elsewhere"
        )
    if not args.check:
        refuse_installed_package(root, "--fixtures")
    # The schemas first: the fixtures are validated against the fixture schema, which a new op changes.
    schema_ok = True if own else _schema(args.check or not in_checkout())
    if not schema_ok:
        return 1
    cases = load_own_cases(args.cases) if own else all_cases()
    expected = generate(cases, root)
    drift = compare(expected, root) if args.check else write(expected, root)
    source = f" from {len(cases)} case(s) in {', '.join(str(folder) for folder in args.cases)}" if own else ""
    if drift.clean:
        print(f"fixtures are up to date ({len(expected)} files in {root}{source})")
        return 0
    for label, paths in (("stale", drift.stale), ("missing", drift.missing), ("extra", drift.extra)):
        for path in paths:
            print(f"{label}: {path.relative_to(root)}", file=sys.stdout)
    if args.check:
        again = "conformance regen"
        if own:
            again += "".join(f" --cases {shlex.quote(str(folder))}" for folder in args.cases)
            again += f" --fixtures {shlex.quote(str(root))}"
        hint = "" if own or root == FIXTURES_DIR else f" (for a port's own fixtures in {root}, name its cases with --cases DIR)"
        print(
            f"fixtures differ from what the reference generates{source}: {len(drift.stale)} stale, "
            f"{len(drift.missing)} missing, {len(drift.extra)} extra; run `{again}` and commit{hint}",
            file=sys.stderr,
        )
        return 1
    print(f"wrote {len(drift.stale) + len(drift.missing)} and removed {len(drift.extra)} fixture file(s) in {root}{source}")
    return 0


def _schema(check_only: bool) -> bool:
    """Check (or, in the checkout, write) the two generated schemas and the protocol's example; False when one is stale.

    docs/protocol.schema.json comes from the message types, fixtures/fixture.schema.json from
    the op table and the kit's other tables (conformance.fixture_schema), and the example reply
    of docs/protocol.md from the reference's run of its case (conformance.doc_example).
    """
    fresh = True
    protocol_doc = docs_dir() / "protocol.md"
    for path, text, what in (
        (docs_dir() / SCHEMA_FILE, schema_text(), "the protocol schema"),
        (FIXTURES_DIR / SCHEMA_NAME, fixture_schema_text(), "the fixture schema"),
        (protocol_doc, with_example(protocol_doc.read_text(encoding="utf-8")), "the protocol's example reply"),
    ):
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if check_only:
            print(f"{'stale' if current else 'missing'}: {path} ({what}); run `conformance regen` and commit")
            fresh = False
            continue
        write_atomic(path, text)
        print(f"wrote {path}")
    return fresh

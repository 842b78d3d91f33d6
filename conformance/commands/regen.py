"""``conformance regen [--check]``: write the canonical fixtures and the protocol schema, or check they are current.

In the kit's checkout it writes (or checks) the repository's ``fixtures/``.
In an installed kit ``--check`` proves that the corpus shipped in the package
is what its reference generates; writing there is refused (the package is not
the place to edit), unless ``--fixtures DIR`` names another folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..contract import docs_dir
from ..errors import UsageError
from ..files import write_atomic
from ..fixture import FIXTURES_DIR, in_checkout
from ..generate import all_cases, compare, generate, write
from ..protocol import protocol_schema

#: The adapter protocol's JSON Schema, generated from conformance/protocol.py next to docs/protocol.md.
SCHEMA_FILE = "protocol.schema.json"


def schema_text() -> str:
    """The canonical text of the protocol schema."""
    return json.dumps(protocol_schema(), indent=2) + "\n"


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("regen", help="regenerate fixtures/ from the reference engine")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 listing stale, missing and extra files")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES_DIR, help="fixtures folder (default: the kit's own)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Generate every case; write or check."""
    root: Path = args.fixtures
    if not args.check and root == FIXTURES_DIR and not in_checkout():
        raise UsageError(
            f"regen writes the kit checkout's fixtures/, and this kit is an installed package ({root} is its shipped "
            "corpus): use `conformance regen --check`, or --fixtures DIR to write a copy elsewhere"
        )
    expected = generate(all_cases(), root)
    drift = compare(expected, root) if args.check else write(expected, root)
    schema_ok = _schema(args.check or not in_checkout())
    if drift.clean and not schema_ok:
        return 1
    if drift.clean:
        print(f"fixtures are up to date ({len(expected)} files in {root})")
        return 0
    for label, paths in (("stale", drift.stale), ("missing", drift.missing), ("extra", drift.extra)):
        for path in paths:
            print(f"{label}: {path.relative_to(root)}", file=sys.stdout)
    if args.check:
        print(
            f"fixtures differ from what the reference generates: {len(drift.stale)} stale, "
            f"{len(drift.missing)} missing, {len(drift.extra)} extra; run `conformance regen` and commit",
            file=sys.stderr,
        )
        return 1
    print(f"wrote {len(drift.stale) + len(drift.missing)} and removed {len(drift.extra)} fixture file(s)")
    return 0


def _schema(check_only: bool) -> bool:
    """Check (or, in the checkout, write) docs/protocol.schema.json; False when it is stale."""
    path = docs_dir() / SCHEMA_FILE
    text = schema_text()
    current = path.read_text(encoding="utf-8") if path.exists() else None
    if current == text:
        return True
    if check_only:
        print(f"{'stale' if current else 'missing'}: {path} (the protocol schema); run `conformance regen` and commit")
        return False
    write_atomic(path, text)
    print(f"wrote {path}")
    return True

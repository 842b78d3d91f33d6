"""``conformance regen [--check]``: write the canonical fixtures, or check they are current.

In the kit's checkout it writes (or checks) the repository's ``fixtures/``.
In an installed kit ``--check`` proves that the corpus shipped in the package
is what its reference generates; writing there is refused (the package is not
the place to edit), unless ``--fixtures DIR`` names another folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import UsageError
from ..fixture import FIXTURES_DIR, in_checkout
from ..generate import all_cases, compare, generate, write


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

"""The ``conformance`` command: a thin dispatcher to one module per subcommand.

Exit codes: 0 when nothing unexpected happened, 1 on conformance failures (or
stale fixtures for ``regen --check``), 2 on usage or configuration errors.
User mistakes are reported as one clear line, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from . import __version__
from .commands import docs, explain, fuzz, init, list_cases, regen, run, train
from .errors import UsageError

COMMANDS = [run, list_cases, explain, regen, fuzz, train, docs, init]


def version_text() -> str:
    """The kit, protocol and fixture format versions, and where the corpus comes from."""
    from .fixture import FIXTURES_DIR, FORMAT_VERSION, in_checkout
    from .protocol import PROTOCOL_VERSION

    where = "the kit's checkout" if in_checkout() else "the installed package"
    return (
        f"conformance {__version__} (protocol {PROTOCOL_VERSION}, fixture format {FORMAT_VERSION}); "
        f"corpus: {FIXTURES_DIR} ({where})"
    )


class _Version(argparse.Action):
    """Print version_text() unwrapped (argparse's own version action re-wraps it) and exit."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: object, values: object, option: object = None) -> None:
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="conformance", description="Conformance kit for scalar reverse-mode autodiff engines.")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the versions and where the corpus comes from")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; returns the exit code."""
    from .cases.case import CaseError
    from .expected import ExpectedError
    from .fixture import FixtureBug
    from .program import ProgramError
    from .registry import RegistryError

    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return int(args.handler(args))
    except (UsageError, CaseError, ProgramError, RegistryError, ExpectedError) as error:
        print(f"conformance: error: {error}", file=sys.stderr)
        return 2
    except FixtureBug as error:
        print(f"conformance: fixture bug: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("conformance: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Whoever read stdout stopped (`conformance explain CASE | head`): end quietly, as a Unix tool does, with
        # stdout pointed at /dev/null so that the interpreter's last flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())

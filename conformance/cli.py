"""The ``conformance`` command: a thin dispatcher to one module per subcommand.

Exit codes: 0 when nothing unexpected happened, 1 on conformance failures (or
stale fixtures for ``regen --check``), 2 on usage or configuration errors.
User mistakes are reported as one clear line, never a traceback.
"""

from __future__ import annotations

import argparse
import difflib
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


class _Parser(argparse.ArgumentParser):
    """An argument parser that answers a misspelt option with the options it may have meant.

    argparse leaves the arguments a subcommand does not know to the top-level parser, which knows
    none of the subcommand's options; so each (sub)parser checks its own leftovers here, where its
    options are known, and names the closest (``--comand`` gets "did you mean --command?").
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Optional[Sequence[str]] = None, namespace: Optional[argparse.Namespace] = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Parse, and report leftover arguments as this parser's error, with suggestions for misspelt options."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self.suggestions(extras)}")
        return parsed, extras

    def suggestions(self, extras: Sequence[str]) -> str:
        """``; did you mean --x?`` for each leftover that looks like an option and is close to one of ours."""
        options = sorted(option for option in self._option_string_actions if option.startswith("--"))
        found = []
        for extra in extras:
            if not extra.startswith("-"):
                continue
            close = difflib.get_close_matches(extra.split("=", 1)[0], options, n=1, cutoff=0.6)
            if close:
                found.append(f"{extra.split('=', 1)[0]}: did you mean {close[0]}?")
        return ("; " + "; ".join(found)) if found else ""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand (each a ``_Parser``, which suggests close option names)."""
    parser = _Parser(prog="conformance", description="Conformance kit for scalar reverse-mode autodiff engines.")
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

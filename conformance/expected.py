"""Expected-failure lists: one TOML file per adapter, each entry a case pattern, a level and a reason.

    [[expected]]
    case = "structure/deep-chain-*"    # fnmatch pattern over case ids
    level = "*"                         # a level name, or * for every level
    reason = "micrograd's recursive topological sort raises RecursionError"
    bug = "recursive-topo"              # optional: the catalogue's name for the mistake (conformance.mutants)

A listed failure is *xfailed*; a listed result that passes is *xpassed*, a
stale entry that fails the gate. ``bug`` lets ``conformance fuzz`` recognise
the same mistake in a random program, which a case pattern cannot. An entry
with ``unreviewed = true`` is a draft that ``--update-expected`` wrote: it
xfails like any other, and every run warns until someone has reviewed its
reason and deleted the flag.
``write_expected`` rewrites the file from a run's results, keeping the
reasons of entries that still apply.
"""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from .files import write_atomic
from .mutants import BUGS
from .protocol import LEVELS
from .tomlfile import load_toml


class ExpectedError(ValueError):
    """A malformed expected-failures file; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class Expected:
    """One entry: which (case, level) results are known to fail, and why."""

    case: str
    level: str
    reason: str
    bug: Optional[str] = None
    """The catalogue's name (``conformance.mutants.BUGS``) for the mistake this entry stands for, if one is known."""
    unreviewed: bool = False
    """A draft written by ``--update-expected`` whose reason nobody has reviewed yet."""

    def matches(self, case: str, level: str) -> bool:
        """Whether this entry covers the result of ``case`` at ``level``."""
        return fnmatch.fnmatchcase(case, self.case) and self.level in ("*", level)


def load_expected(path: Optional[Path], *, missing_ok: bool = False) -> list[Expected]:
    """Read an expected-failures file (None: no list, no entries).

    A file that is named but missing is an error: a typo in a registry or on the command line would
    otherwise silently accept nothing and fail the gate for the wrong reason. ``missing_ok`` is for
    ``--update-expected``, which creates the file.
    """
    if path is None:
        return []
    if not path.exists():
        if missing_ok:
            return []
        raise ExpectedError(f"{path}: the expected-failures file does not exist (create it, empty, or fix the path)")
    data = load_toml(path, ExpectedError)
    entries = []
    for index, raw in enumerate(data.get("expected", [])):
        where = f"{path}: entry {index}"
        for key in ("case", "level", "reason"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise ExpectedError(f"{where}: field {key!r} must be a non-empty string")
        if raw["level"] not in (*LEVELS, "*"):
            raise ExpectedError(f"{where}: field 'level': {raw['level']!r} is not one of {', '.join(LEVELS)} or *")
        unknown = set(raw) - {"case", "level", "reason", "bug", "unreviewed"}
        if unknown:
            raise ExpectedError(f"{where}: unexpected field {sorted(unknown)[0]!r}")
        bug = raw.get("bug")
        if bug is not None:
            _check_bug(bug, where)
        unreviewed = raw.get("unreviewed", False)
        if not isinstance(unreviewed, bool):
            raise ExpectedError(f"{where}: field 'unreviewed' must be true or false, not {unreviewed!r}")
        entries.append(Expected(raw["case"], raw["level"], raw["reason"], bug, unreviewed))
    return entries


def _check_bug(bug: object, where: str) -> None:
    if not isinstance(bug, str):
        raise ExpectedError(f"{where}: field 'bug' must be a string naming a bug of the catalogue, not {bug!r}")
    if bug not in BUGS:
        close = difflib.get_close_matches(bug, [str(name) for name in BUGS], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ExpectedError(
            f"{where}: field 'bug': {bug!r} is not a bug of the catalogue ({hint}known: {', '.join(sorted(BUGS))})"
        )


def bugs_of(entries: Iterable[Expected]) -> dict[str, Expected]:
    """The catalogue bugs the entries name, each with the first entry that names it."""
    found: dict[str, Expected] = {}
    for entry in entries:
        if entry.bug is not None:
            found.setdefault(entry.bug, entry)
    return found


def unreviewed_warning(count: int, path: object) -> str:
    """The line every run prints while ``count`` entries of the file at ``path`` are unreviewed drafts."""
    if count == 1:
        return f"1 expected failure in {path} is an unreviewed draft: review its reason, then delete its `unreviewed = true`"
    return f"{count} expected failures in {path} are unreviewed drafts: review each reason, then delete its `unreviewed = true`"


def find(entries: Iterable[Expected], case: str, level: str) -> Optional[Expected]:
    """The first entry covering (case, level), if any."""
    return next((entry for entry in entries if entry.matches(case, level)), None)


def write_expected(path: Path, entries: list[Expected], header: str) -> None:
    """Write entries as TOML, atomically."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for entry in entries:
        lines += [
            "",
            "[[expected]]",
            f"case = {_quote(entry.case)}",
            f"level = {_quote(entry.level)}",
            f"reason = {_quote(entry.reason)}",
        ]
        if entry.bug is not None:
            lines.append(f"bug = {_quote(entry.bug)}")
        if entry.unreviewed:
            lines.append("unreviewed = true")
    write_atomic(path, "\n".join(lines) + "\n")


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return f'"{escaped}"'

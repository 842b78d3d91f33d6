"""Expected-failure lists: one TOML file per adapter, each entry a case pattern, a level and a reason.

    [[expected]]
    case = "structure/deep-chain-*"    # fnmatch pattern over case ids
    level = "*"                         # a level name, or * for every level
    reason = "micrograd's recursive topological sort raises RecursionError"
    bug = "recursive-topo"              # optional: the catalogue's name for the mistake (conformance list --bugs)

A listed failure is *xfailed*; a listed result that passes is *xpassed*, which
fails the gate: the entry is stale (it covers nothing that fails) or too broad
(it also covers levels or cases that pass). ``bug`` lets ``conformance fuzz``
recognise the same mistake in a random program, which a case pattern cannot.
An entry with ``unreviewed = true`` is a draft that ``--update-expected``
wrote: it xfails like any other, and every run warns until someone has
reviewed its reason and deleted the flag.

Every mistake in a file is a usage error naming the file, the entry (its
number, from 1, and its case) and the field: a file is read strictly because a
typo in it (``[[expect]]``, a case pattern that matches no case) would
otherwise accept nothing and fail the gate for the wrong reason, or worse,
keep a failure listed that nobody meant to list. ``expected_update`` rewrites
a file from a run's results, keeping its comments.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterable, Optional

from .mutants import BUGS
from .protocol import LEVELS
from .tomlfile import load_toml


class ExpectedError(ValueError):
    """A malformed expected-failures file; the message names the file, the entry and the field."""


#: The fields an entry may have, the first three required.
FIELDS = ("case", "level", "reason", "bug", "unreviewed")
#: How a message lists the values of ``level``.
LEVEL_CHOICES = f'{", ".join(LEVELS)} or "*"'


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
    number: int = field(default=0, compare=False)
    """The entry's place in its file, from 1 (0 for an entry not read from a file)."""

    def matches(self, case: str, level: str) -> bool:
        """Whether this entry covers the result of ``case`` at ``level``."""
        return fnmatch.fnmatchcase(case, self.case) and self.level in ("*", level)

    def label(self) -> str:
        """How messages name the entry: ``entry 2 (case ops/pow/*, level *)``."""
        where = f"entry {self.number} " if self.number else "the entry "
        return f"{where}(case {self.case}, level {self.level})"


def show(value: object) -> str:
    """A value as a TOML file writes it (strings quoted, booleans lower case), for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return json.dumps(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


def load_expected(path: Optional[Path], *, missing_ok: bool = False) -> list[Expected]:
    """Read an expected-failures file (None: no list, no entries), or raise ExpectedError.

    A file that is named but missing is an error: a typo in a registry or on the command line would
    otherwise silently accept nothing and fail the gate for the wrong reason. ``missing_ok`` is for
    ``--update-expected``, which creates the file. Whether each case pattern matches a case is
    ``check_cases``'s business: only the caller knows the corpus.
    """
    if path is None:
        return []
    if not path.exists():
        if missing_ok:
            return []
        raise ExpectedError(f"{path}: the expected-failures file does not exist (create it, empty, or fix the path)")
    return [_entry(raw, number, path) for number, raw in enumerate(_tables(load_toml(path, ExpectedError), path), 1)]


def _tables(data: dict[str, Any], path: Path) -> list[Any]:
    """The raw ``[[expected]]`` entries, after checking the file's top level."""
    for key in data:
        if key != "expected":
            close = difflib.get_close_matches(key, ["expected"], n=1, cutoff=0.5)
            hint = "did you mean [[expected]]? " if close else ""
            raise ExpectedError(
                f"{path}: unknown top-level key {show(key)} ({hint}an expected-failures file has only [[expected]] entries)"
            )
    tables = data.get("expected", [])
    if isinstance(tables, dict):
        raise ExpectedError(f"{path}: [expected] is a single table: write each entry as [[expected]], with double brackets")
    if not isinstance(tables, list):
        raise ExpectedError(f'{path}: "expected" must be a list of [[expected]] tables, got {show(tables)}')
    return tables


def _entry(raw: Any, number: int, path: Path) -> Expected:
    """One entry, checked field by field."""
    if not isinstance(raw, dict):
        raise ExpectedError(f"{path}: entry {number}: expected an [[expected]] table, got {show(raw)}")
    case = raw.get("case")
    where = f"{path}: entry {number} ([[expected]] case = {show(case)})" if isinstance(case, str) else f"{path}: entry {number}"
    unknown = [key for key in raw if key not in FIELDS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], FIELDS, n=1)
        hint = f"did you mean {show(close[0])}? " if close else ""
        raise ExpectedError(f"{where}: unknown field {show(unknown[0])} ({hint}fields: {', '.join(FIELDS)})")
    for key in ("case", "level", "reason"):
        if key not in raw:
            raise ExpectedError(f"{where}: field {show(key)} is missing")
        if key == "level" and raw[key] not in (*LEVELS, "*"):
            raise ExpectedError(f'{where}: field "level": expected one of {LEVEL_CHOICES}, got {show(raw[key])}')
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise ExpectedError(f"{where}: field {show(key)}: expected a non-empty string, got {show(raw[key])}")
    bug = raw.get("bug")
    if bug is not None:
        _check_bug(bug, where)
    unreviewed = raw.get("unreviewed", False)
    if not isinstance(unreviewed, bool):
        raise ExpectedError(f'{where}: field "unreviewed": expected true or false, got {show(unreviewed)}')
    return Expected(raw["case"], raw["level"], raw["reason"], bug, unreviewed, number)


def _check_bug(bug: object, where: str) -> None:
    if not isinstance(bug, str):
        raise ExpectedError(f'{where}: field "bug": expected a string naming a bug of the catalogue, got {show(bug)}')
    if bug not in BUGS:
        close = difflib.get_close_matches(bug, [str(name) for name in BUGS], n=3)
        hint = f"did you mean {' or '.join(show(name) for name in close)}? " if close else ""
        raise ExpectedError(
            f'{where}: field "bug": {show(bug)} is not a bug of the catalogue ({hint}`conformance list --bugs` lists them)'
        )


def unmatched(entries: Iterable[Expected], cases: Collection[str]) -> list[Expected]:
    """The entries whose case pattern matches none of ``cases``."""
    return [entry for entry in entries if not any(fnmatch.fnmatchcase(case, entry.case) for case in cases)]


def check_cases(path: Optional[Path], cases: Collection[str], *, missing_ok: bool = False) -> list[Expected]:
    """The file's entries, or ExpectedError for the first entry whose case pattern matches none of ``cases``.

    ``cases`` are the ids of the corpus the run reads (every case of its fixtures folders, not only
    the ones ``--case`` selects: an entry for a case outside this run is not a mistake).
    """
    entries = load_expected(path, missing_ok=missing_ok)
    for entry in unmatched(entries, cases)[:1]:
        close = difflib.get_close_matches(entry.case, sorted(cases), n=3)
        hint = f"; close: {', '.join(close)}" if close else ""
        raise ExpectedError(
            f'{path}: entry {entry.number} ([[expected]] case = {show(entry.case)}): field "case": '
            f"the pattern matches none of the {len(cases)} cases of the corpus{hint}"
        )
    return entries


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


def passed_message(
    entries: list[Expected], entry: Expected, case: str, level: str, failing: Collection[str], passing: Collection[str]
) -> str:
    """Why a result that ``entry`` lists as failing but that passed fails the gate, and what to do.

    ``failing`` and ``passing`` are the levels of the same case that failed and passed in this run.
    An entry that also covers failing levels of the case is too broad, not stale: it is to be
    narrowed, and the message names the levels it covers that pass. Only an entry that covers
    nothing failing is stale; the runner sees one case at a time, so for a pattern over several
    cases the message says how to tell.
    """
    covered_failing = [other for other in failing if find(entries, case, other) is entry]
    covered_passing = [other for other in LEVELS if other in passing and find(entries, case, other) is entry]
    listed = f"listed as an expected failure ({entry.reason!r}) but passed: {entry.label()}"
    if covered_failing:
        return (
            f"{listed} also covers levels that pass: {', '.join(covered_passing) or level} "
            f"(it fails at {', '.join(covered_failing)}); narrow its level"
        )
    if any(char in entry.case for char in "*?["):
        return (
            f"{listed} covers no level of {case} that fails: narrow its case pattern, "
            "or remove the stale entry if no case it covers fails"
        )
    return f"{listed} covers no level of {case} that fails: remove the stale entry"

"""Which fixtures folders a command reads: the kit's corpus, a port's own folders, or both.

``--fixtures`` is repeatable on ``run``, ``list`` and ``explain`` (and
``--conformance-fixtures`` in the pytest plugin): without it a command reads the
kit's corpus; a given list replaces that default, and the word ``kit`` names the
kit's corpus in it, so a port's gate runs the canonical corpus beside its own
regressions with ``--fixtures kit --fixtures ./conformance-fixtures``. (A folder
that is really called ``kit`` is written ``./kit``.) A case id found in two of
the folders is a usage error naming both: which of the two fixtures is meant
cannot be guessed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional, Sequence, Union

from .errors import UsageError
from .fixture import FIXTURES_DIR, Fixture, FixtureBug, fixture_ids, load_corpus, load_corpus_reporting

#: The word that names the kit's own corpus where a fixtures folder is expected.
KIT_WORD = "kit"

#: The help text of every repeatable fixtures option.
FIXTURES_HELP = (
    f"fixtures folder (repeatable; default: the kit's corpus; the word '{KIT_WORD}' names the kit's corpus, "
    f"e.g. --fixtures {KIT_WORD} --fixtures ./conformance-fixtures)"
)


def add_fixtures_option(parser: argparse.ArgumentParser) -> None:
    """Declare the repeatable ``--fixtures DIR`` option of a command that reads fixtures."""
    parser.add_argument("--fixtures", action="append", metavar="DIR", help=FIXTURES_HELP)


def fixture_dirs(given: Optional[Sequence[Union[str, Path]]]) -> list[Path]:
    """The folders to read: the kit's corpus when none is given, else the given ones (``kit`` for the kit's corpus)."""
    if not given:
        return [FIXTURES_DIR]
    return [FIXTURES_DIR if str(item) == KIT_WORD else Path(item) for item in given]


def _check_folders(roots: Sequence[Path]) -> None:
    seen: dict[Path, Path] = {}
    for root in roots:
        key = root.resolve()
        if key in seen:
            same = "" if seen[key] == root else f" (as {seen[key]})"
            raise UsageError(f"the fixtures folder {root} is given twice{same}")
        seen[key] = root
        if len(roots) > 1 and not root.is_dir():
            raise UsageError(f"the fixtures folder {root} does not exist")


def _check_unique(fixtures: list[Fixture], owner: dict[str, Path], root: Path) -> None:
    for fixture in fixtures:
        if fixture.id in owner:
            raise UsageError(
                f"case {fixture.id!r} is in two fixtures folders, {owner[fixture.id]} and {root}: "
                "rename or remove one of them (a case id names one fixture)"
            )
        owner[fixture.id] = root


def load_corpora(roots: Sequence[Path]) -> list[Fixture]:
    """Every fixture of every folder, validated (FixtureBug on the first bad one); a duplicate id is a UsageError."""
    _check_folders(roots)
    owner: dict[str, Path] = {}
    out: list[Fixture] = []
    for root in roots:
        fixtures = load_corpus(root)
        _check_unique(fixtures, owner, root)
        out += fixtures
    return out


def load_corpora_reporting(roots: Sequence[Path]) -> tuple[list[Fixture], list[FixtureBug]]:
    """Every fixture of every folder that loads, and a FixtureBug for each that does not; a duplicate id is a UsageError."""
    _check_folders(roots)
    owner: dict[str, Path] = {}
    out: list[Fixture] = []
    bugs: list[FixtureBug] = []
    for root in roots:
        fixtures, problems = load_corpus_reporting(root)
        _check_unique(fixtures, owner, root)
        out += fixtures
        bugs += problems
    return out, bugs


def corpora_ids(roots: Sequence[Path]) -> set[str]:
    """The id of every generated file in the folders (see ``conformance.fixture.fixture_ids``)."""
    return {name for root in roots for name in fixture_ids(root)}


def describe_folders(roots: Sequence[Path]) -> str:
    """The folders as a message names them: ``the fixtures folder A`` or ``the fixtures folders A, B``."""
    if len(roots) == 1:
        return f"the fixtures folder {roots[0]}"
    return f"the fixtures folders {', '.join(str(root) for root in roots)}"

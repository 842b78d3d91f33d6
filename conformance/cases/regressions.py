"""Regression cases found by differential fuzzing (``conformance fuzz --save``).

Each file in ``conformance/cases/regressions/`` holds one minimal program as a
JSON list of steps, named by the first 12 hex digits of the program's sha256
(``conformance.program.program_hash``); its case id is ``regressions/<name>``.
The name is checked against the content, so an edited program cannot keep an
id that no longer describes it: delete the file and save the new program.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..program import ProgramError, parse_program, program_hash
from ..wire import load_json_file
from .case import Case, CaseError

FOLDER = Path(__file__).resolve().parent / "regressions"
#: The id's hash prefix, in hex digits.
HASH_DIGITS = 12


def load_case(path: Path, source: Optional[str] = None) -> Case:
    """One regression case from its file; raise CaseError naming the file (as ``source``) on any defect.

    ``source`` names the file in messages and in the fixture's provenance; the kit's own
    regressions are ``conformance/cases/regressions/NAME``, a port's own are named by
    the caller (``conformance.generate.load_own_cases``).
    """
    if source is None:
        source = f"conformance/cases/regressions/{path.name}"
    raw = load_json_file(path, CaseError, source)
    try:
        program = parse_program(raw, source)
    except ProgramError as error:
        raise CaseError(str(error)) from None
    digest = program_hash(program)[:HASH_DIGITS]
    if path.stem != digest:
        raise CaseError(f"{source}: the program's hash starts {digest}, not {path.stem}: the file was edited or renamed")
    return Case(
        f"regressions/{digest}",
        f"A minimal program on which differential fuzzing (conformance fuzz) found an engine diverging from the reference "
        f"({len(program)} steps).",
        program,
        source,
    )


def cases(folder: Path = FOLDER) -> list[Case]:
    """Every regression case, sorted by id."""
    return [load_case(path) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []

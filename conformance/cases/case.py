"""A case definition: a program with its id and description, before the reference has run it.

Every source of cases makes these: the TOML files beside this module (read by
``conformance.generate.load_toml_cases``), the Python families
(``families``, ``llm``) and the saved regressions (``regressions``). The
generator turns each one into a fixture.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ..program import Program


@dataclass(frozen=True)
class Case:
    """A case definition before the reference has run it."""

    id: str
    description: str
    program: Program
    generator: str
    levels: Optional[tuple[str, ...]] = None
    notes: dict[str, Any] = field(default_factory=dict)
    catches: tuple[str, ...] = ()
    """Bugs of the catalogue (conformance.mutants) this case is written to catch; the fixture's description names them."""


class CaseError(ValueError):
    """A case definition that cannot become a fixture; the message names the file and case."""

"""The contract's rule map, read from docs/contract.md itself.

Every rule of the contract is written in docs/contract.md as a bold code id
(``**`backward.fresh-pass`**``) at the start of a paragraph or in the first
cell of a table row, followed by the fixtures that exercise it: the
backticked ids after ``Fixtures:`` in that paragraph, or the backticked ids
of the row's last cell. The document is the single source: this module
parses it, so the map a report prints cannot drift from the text a porter
reads. A test checks that every rule names at least one fixture and that
every named fixture exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Optional

from .fixture import PACKAGE_ROOT

#: Where the documents are: the copy a wheel carries (setup.py) or the checkout's docs/.
DOCS_DIRS = (Path(__file__).resolve().parent / "docs", PACKAGE_ROOT / "docs")

#: How a rule id is written: lowercase words joined by dots and dashes.
RULE_ID = r"[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+"

_RULE_START = re.compile(rf"^(?:\|\s*)?\*\*`({RULE_ID})`\*\*")
_SECTION = re.compile(r"^##\s+(\d+)\.\s+(.*)$")
_TICKED = re.compile(r"`([^`\s]+)`")


def docs_dir() -> Path:
    """The folder holding the porter's documents (contract, protocol, ...)."""
    return next((d for d in DOCS_DIRS if (d / "contract.md").exists()), DOCS_DIRS[-1])


def contract_path() -> Path:
    """docs/contract.md, wherever the kit runs from."""
    return docs_dir() / "contract.md"


@dataclass(frozen=True)
class Rule:
    """One rule of the contract: its id, its section's number and title, its first sentence, its fixtures."""

    id: str
    section: str
    title: str
    summary: str
    fixtures: tuple[str, ...]
    line: int

    def reference(self) -> str:
        """How a report points at this rule: ``backward.fresh-pass (section 5)``."""
        return f"{self.id} ({self.section})"


class ContractError(ValueError):
    """docs/contract.md is missing or a rule in it is malformed."""


def parse_rules(text: str, source: str = "docs/contract.md") -> list[Rule]:
    """Every rule in the contract's text, in document order.

    Raises ContractError for a rule id written twice or a rule with no fixtures.
    """
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    section, title = "preamble", ""
    header: list[str] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        heading = _SECTION.match(line)
        if heading:
            section, title = f"section {heading.group(1)}", heading.group(2).strip()
        if index + 1 < len(lines) and line.startswith("|") and re.match(r"^\|[\s|:-]+\|$", lines[index + 1]):
            header = _cells(line)
        match = _RULE_START.match(line)
        if not match:
            index += 1
            continue
        rule_id, start = match.group(1), index + 1
        if line.startswith("|"):
            cells = _cells(line)
            named = zip(header[1:-1], cells[1:-1]) if len(header) == len(cells) else (("", c) for c in cells[1:-1])
            body, fixtures = "; ".join(f"{name} {cell}".strip() for name, cell in named), _TICKED.findall(cells[-1])
            index += 1
        else:
            block = []
            while index < len(lines) and lines[index].strip():
                block.append(lines[index].strip())
                index += 1
            body = " ".join(block)
            _, _, listed = body.partition("Fixtures:")
            fixtures = _TICKED.findall(listed)
            body = body[match.end() :].split("Fixtures:")[0]
        if rule_id in seen:
            raise ContractError(f"{source}:{start}: rule {rule_id} is already defined at line {seen[rule_id]}")
        if not fixtures:
            raise ContractError(f"{source}:{start}: rule {rule_id} names no fixture (write 'Fixtures: `case/id`')")
        seen[rule_id] = start
        rules.append(Rule(rule_id, section, title, _first_sentence(body), tuple(fixtures), start))
    return rules


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _first_sentence(body: str) -> str:
    plain = re.sub(r"\*\*|`", "", body).strip()
    plain = re.sub(r"^\d+\.\s+", "", plain)
    end = re.search(r"(?<=[a-z0-9)\]])\.(\s|$)", plain)
    return plain[: end.start() + 1] if end else plain


@cache
def load_rules(path: Optional[Path] = None) -> tuple[Rule, ...]:
    """The rules of docs/contract.md (or of ``path``)."""
    path = path or contract_path()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ContractError(f"cannot read the contract {path}: {error.strerror or error}") from None
    return tuple(parse_rules(text, str(path)))


def rules_for_case(case_id: str, level: Optional[str] = None, limit: int = 3) -> list[Rule]:
    """The rules a case exercises, most specific first (fewest fixtures), at most ``limit``.

    The level rules (``level.*``) name example cases only, so they are left out of
    that ranking; with ``level``, that level's own rule comes last. Returns [] when
    the contract cannot be read, so a report never fails for want of a pointer.
    """
    try:
        rules = load_rules()
    except ContractError:
        return []
    listing = sorted(
        (rule for rule in rules if case_id in rule.fixtures and not rule.id.startswith("level.")),
        key=lambda rule: (len(rule.fixtures), rule.line),
    )[:limit]
    if level is not None:
        listing += [rule for rule in rules if rule.id == f"level.{level}"]
    return listing

"""``--update-expected``: rewrite an expected-failures file from a run's results, keeping what people wrote.

The file is a reviewed document: its header, the comment above an entry, a
comment at the end of a line, blank lines and the reviewers' reasons all
survive a rewrite (tomlkit reads the file with its layout). The entries are
gone through in file order, each claiming the results it covers that no
earlier entry claimed:

- an entry whose pattern matches no case of the corpus is removed;
- an entry that covers no result of this run (its cases were not selected, or
  were unsupported) is kept as it is;
- an entry that covers only results that pass is stale, and removed;
- an entry that covers results that fail and results that pass is too broad:
  it is narrowed in place (its level, or its cases) to what fails, keeping
  its comments and reason;
- a failing result that no entry covers gets a new draft entry
  (``unreviewed = true``) at the end.

``Update.notes`` says, one line each, which entries were removed or narrowed and why.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Collection, Iterable, Optional, Sequence

import tomlkit
from tomlkit.items import AoT, Comment, Table, Whitespace

from .expected import Expected
from .files import write_atomic
from .mutants import bug_named
from .protocol import LEVELS
from .runner import Outcome, Result


@dataclass(frozen=True)
class Observed:
    """One (case, level) result of the run that was compared: whether it failed, and a draft's reason and bug."""

    case: str
    level: str
    failed: bool
    reason: str = ""
    bug: Optional[str] = None


def observed_results(results: Iterable[Result]) -> list[Observed]:
    """A run's compared results, failed or passed, each failure with a draft's reason and bug (unsupported: left out)."""
    observed = []
    for result in results:
        if result.outcome in (Outcome.PASSED, Outcome.XPASSED):
            observed.append(Observed(result.case, result.level, failed=False))
        elif result.outcome in (Outcome.FAILED, Outcome.ERROR, Outcome.XFAILED):
            # Several likely bugs reproduce the same numbers on some cases: the draft names each, the review picks.
            reason = "; or ".join(result.diagnosis) if result.diagnosis else (result.message.splitlines() or ["failed"])[0]
            bug = next((bug_named(text) for text in result.diagnosis if bug_named(text)), None)
            observed.append(Observed(result.case, result.level, True, reason, bug))
    return observed


@dataclass
class Update:
    """What a rewrite did: the entries now in the file, and one note per entry removed or narrowed."""

    entries: list[Expected]
    notes: list[str] = field(default_factory=list)
    added: int = 0


@dataclass
class _Slot:
    """One entry of the old file and what becomes of it: kept, removed ([]), or replaced by narrower entries."""

    entry: Expected
    becomes: list[Expected]
    leading: str = ""  # the comment lines right above its [[expected]]
    header: str = "[[expected]]"
    table: Optional[Table] = None
    tail: str = ""  # comment lines right below its last key
    loose: str = ""  # what follows, up to the next entry's leading comments: blank lines, detached comments


@dataclass(frozen=True)
class Verdict:
    """What a run says about one entry: ``becomes`` the entries that should replace it ([] when it is to go)."""

    entry: Expected
    becomes: list[Expected]
    why: str = ""
    """Why it is to go, or what passing results it also covers (empty when it stays as it is)."""

    @property
    def removed(self) -> bool:
        """Whether the entry is to go (stale, shadowed, or matching no case)."""
        return not self.becomes

    @property
    def narrowed(self) -> bool:
        """Whether the entry is too broad, to be replaced by narrower ones."""
        return bool(self.becomes) and self.becomes != [self.entry]


def judge(
    old: list[Expected], observed: Sequence[Observed], cases: Optional[Collection[str]] = None
) -> tuple[list[Verdict], list[Observed]]:
    """A verdict on every entry, in file order, and the failing results no entry covers.

    Each entry claims the results it covers that no earlier entry claimed (the runner's first match).
    """
    ran = {(o.case, o.level): o for o in observed}
    unclaimed = dict(ran)
    verdicts = []
    for entry in old:
        if cases is not None and not any(fnmatch.fnmatchcase(case, entry.case) for case in cases):
            verdicts.append(Verdict(entry, [], "its case pattern matches no case of the corpus"))
            continue
        if not any(entry.matches(case, level) for case, level in ran):
            verdicts.append(Verdict(entry, [entry]))  # outside this run: kept as it is
            continue
        mine = [key for key in unclaimed if entry.matches(*key)]
        failing = [key for key in mine if ran[key].failed]
        passing = [key for key in mine if not ran[key].failed]
        if not failing:
            why = "every result it covers passed" if mine else "every result it covers is covered by an earlier entry"
            verdicts.append(Verdict(entry, [], why))
            continue
        for key in failing:
            del unclaimed[key]
        if passing:
            verdicts.append(Verdict(entry, _narrowed(entry, failing, passing), _covers(failing, passing)))
        else:
            verdicts.append(Verdict(entry, [entry]))
    return verdicts, [o for o in unclaimed.values() if o.failed]


def run_notes(entries: list[Expected], observed: Sequence[Observed]) -> list[str]:
    """After a run: one line per entry that is stale or too broad, saying what to do (``--update-expected`` would)."""
    notes = []
    for verdict in judge(entries, observed)[0]:
        if verdict.removed:
            notes.append(f"{verdict.entry.label()} is stale ({verdict.why}): remove it")
        elif verdict.narrowed:
            narrower = _listed(verdict.becomes)
            notes.append(f"{verdict.entry.label()} also covers {verdict.why}: narrow it to {narrower} (--update-expected does)")
    return notes


def update_expected(
    path: Path,
    old: list[Expected],
    observed: Sequence[Observed],
    header: str,
    cases: Optional[Collection[str]] = None,
) -> Update:
    """Rewrite the file at ``path`` (which holds ``old``) from ``observed``; ``cases``: the corpus's case ids.

    ``header`` is the comment that starts a new file; an existing file keeps its own.
    """
    verdicts, left = judge(old, observed, cases)
    update = Update([])
    slots = [_Slot(verdict.entry, verdict.becomes) for verdict in verdicts]
    for verdict in verdicts:
        if verdict.removed:
            update.notes.append(f"removed {verdict.entry.label()}: {verdict.why}")
        elif verdict.narrowed:
            update.notes.append(
                f"narrowed {verdict.entry.label()}: it also covered {verdict.why}; now {_listed(verdict.becomes)}"
            )
    drafts = [Expected(o.case, o.level, o.reason, o.bug, unreviewed=True) for o in left]
    update.added = len(drafts)
    update.entries = [entry for slot in slots for entry in slot.becomes] + drafts
    text, lost = _text(path, slots, drafts, header)
    if lost:
        update.notes.append(lost)
    write_atomic(path, text)
    return update


def _narrowed(entry: Expected, failing: list[tuple[str, str]], passing: list[tuple[str, str]]) -> list[Expected]:
    """What of ``entry`` fails: its pattern at each level where nothing it covers passes, else the failing cases."""
    passing_levels = {level for _, level in passing}
    narrower = []
    for level in LEVELS:
        cases = sorted(case for case, at in failing if at == level)
        if not cases:
            continue
        if level not in passing_levels:
            narrower.append(replace(entry, level=level))
        else:
            narrower += [replace(entry, case=case, level=level) for case in cases]
    return narrower


def _covers(failing: list[tuple[str, str]], passing: list[tuple[str, str]]) -> str:
    """The passing results an entry covers beside failing ones: the levels where nothing fails, the cases elsewhere."""
    failing_levels = {level for _, level in failing}
    levels = [level for level in LEVELS if any(at == level for _, at in passing) and level not in failing_levels]
    cases = sorted({case for case, level in passing if level in failing_levels})
    covers = []
    if levels:
        covers.append(f"levels that pass ({', '.join(levels)})")
    if cases:
        covers.append(f"cases that pass ({', '.join(cases[:5])}{' ...' if len(cases) > 5 else ''})")
    return " and ".join(covers)


def _listed(entries: list[Expected]) -> str:
    """Narrower entries as a note names them: their levels when they keep the case pattern, else each one."""
    if len({e.case for e in entries}) == 1:
        return f"case {entries[0].case}, level {', '.join(e.level for e in entries)}"
    return ", ".join(f"(case {e.case}, level {e.level})" for e in entries[:5]) + (" ..." if len(entries) > 5 else "")


def _text(path: Path, slots: list[_Slot], drafts: list[Expected], header: str) -> tuple[str, str]:
    """The new file: the old one's header, comments and layout, with the entries replaced; and a note on what was lost."""
    prelude, footer, lost = _comment(header), "", ""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if old.strip() and slots:
        prelude, footer, kept = _read_layout(old, slots)
        if not kept:
            lost = "its entries were an inline array: rewritten as [[expected]] tables, without the comments inside it"
    elif old.strip():
        prelude = old  # a file with no entries: all comment
    blocks = [prelude]
    for slot in slots:
        for index, entry in enumerate(slot.becomes):
            if index == 0 and slot.table is not None:
                for key in ("case", "level"):
                    if slot.table.get(key) != getattr(entry, key):
                        slot.table[key] = getattr(entry, key)
                blocks.append(slot.leading + slot.header + "\n" + _own(slot.table) + slot.tail)
            else:
                blocks.append(_fresh(entry))
        blocks.append(slot.loose)
    blocks += [_fresh(entry) for entry in drafts]
    blocks.append(footer)
    return "\n\n".join(text for text in (_trim(block) for block in blocks) if text) + "\n", lost


def _read_layout(text: str, slots: list[_Slot]) -> tuple[str, str, bool]:
    """Fill each slot's table and comments from the file; its header, its footer, and whether the entries were tables."""
    document = tomlkit.parse(text)
    at = next(index for index, (key, _) in enumerate(document.body) if key == "expected")
    before = "".join(item.as_string() for _, item in document.body[:at])
    after = "".join(item.as_string() for _, item in document.body[at + 1 :])
    tables = document.get("expected")
    if not isinstance(tables, AoT) or len(tables.body) != len(slots):
        return before, after, False  # an inline array of tables: rewritten plainly
    prelude, leading = _split_prelude(before)
    for index, (slot, table) in enumerate(zip(slots, tables.body)):
        slot.table, slot.leading = table, leading
        if table.trivia.comment:
            slot.header += (table.trivia.comment_ws or "  ") + table.trivia.comment
        trail = "".join(item.as_string() for item in _trailing(table))
        last = index == len(slots) - 1
        slot.tail, slot.loose, leading = _split_trail(trail, last)
    return prelude, leading + after, True


def _trailing(table: Table) -> list[Any]:
    """The comments and blank lines at the end of a table's body (tomlkit puts the next entry's comments there)."""
    body = table.value.body
    start = len(body)
    while start > 0 and body[start - 1][0] is None and isinstance(body[start - 1][1], (Comment, Whitespace)):
        start -= 1
    return [item for _, item in body[start:]]


def _own(table: Table) -> str:
    """The table's keys and the comments among them, without its trailing comments and blank lines."""
    full = table.as_string()
    trail = "".join(item.as_string() for item in _trailing(table))
    return full[: len(full) - len(trail)] if trail and full.endswith(trail) else full


def _split_prelude(text: str) -> tuple[str, str]:
    """The file's header, and the comment lines right above the first entry (after the header's last blank line)."""
    lines = text.splitlines(keepends=True)
    blanks = [index for index, line in enumerate(lines) if not line.strip()]
    if not blanks:
        return text, ""  # one block of comments above the first entry: the header, not that entry's
    return "".join(lines[: blanks[-1] + 1]), "".join(lines[blanks[-1] + 1 :])


def _split_trail(text: str, last: bool) -> tuple[str, str, str]:
    """A table's trailing text as (comments right below it, what is loose, comments right above the next entry)."""
    lines = text.splitlines(keepends=True)
    blanks = [index for index, line in enumerate(lines) if not line.strip()]
    if not blanks:
        return (text, "", "") if last else ("", "", text)
    first, final = blanks[0], blanks[-1]
    return "".join(lines[:first]), "".join(lines[first : final + 1]), "".join(lines[final + 1 :])


def _fresh(entry: Expected) -> str:
    table = tomlkit.table()
    table.add("case", entry.case)
    table.add("level", entry.level)
    table.add("reason", entry.reason.replace("\n", " "))
    if entry.bug is not None:
        table.add("bug", entry.bug)
    if entry.unreviewed:
        table.add("unreviewed", True)
    return "[[expected]]\n" + table.as_string()


def _comment(text: str) -> str:
    return "".join(f"# {line}\n" if line else "#\n" for line in text.splitlines())


def _trim(text: str) -> str:
    """The text without blank lines at its start and end."""
    lines = text.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)

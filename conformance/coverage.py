"""How much of the selected corpus a run actually compared on one adapter, and when that is nothing.

A gate is green only when something was checked: an adapter whose hello declares
no op or no level, or a filter that leaves it nothing comparable, gets every
(case, level) result unsupported and no failure, and a green run of nothing
must not pass for conformance. ``coverage_line`` is the per-adapter line every
report shows ("compared 212 of 446 (case, level) results; 234 unsupported: ...")
and ``nothing_compared`` the one line that makes such a run fail, saying what the
adapter declared and what the selected cases use.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable, Optional

from .fixture import Fixture
from .protocol import LEVELS
from .runner import AdapterRun, Outcome, Result

#: The CLI's option that accepts a run in which an adapter compared nothing (the plugin has its own twin).
ALLOW_FLAG = "--allow-nothing-compared"


def compared(run: AdapterRun) -> int:
    """How many of the run's (case, level) results were compared field by field (passed or wrong, listed or not)."""
    return sum(1 for result in run.results if result.compared > 0)


def gap_label(result: Result) -> str:
    """An unsupported result's reason in a few words: ``no trace``, ``no op pow``, ``no error kind cycle``."""
    message = result.message
    if message.startswith("needs op "):
        return "no op " + message.removeprefix("needs op ")
    if message.startswith("needs feature "):
        return "no feature " + message.removeprefix("needs feature ")
    if message.startswith("expects typed errors"):  # the whole case: every level of it
        return "no errors"
    if "does not declare this level" in message:
        return f"no {result.level}"
    kind = re.search(r"expects error kind (\S+),", message)
    if kind:
        return f"no error kind {kind.group(1)}"
    if message.startswith("nothing to compare"):
        return "nothing to compare"
    return message


def unsupported_reasons(run: AdapterRun) -> Counter[str]:
    """The run's unsupported results counted by their reason in a few words (``gap_label``)."""
    return Counter(gap_label(r) for r in run.results if r.outcome == Outcome.UNSUPPORTED)


def coverage_line(run: AdapterRun) -> str:
    """``compared N of M (case, level) results; K unsupported: no trace (120), no order (114)``, and what was not compared."""
    text = f"compared {compared(run)} of {len(run.results)} (case, level) results"
    reasons = unsupported_reasons(run)
    if reasons:
        shown = ", ".join(f"{label} ({count})" for label, count in reasons.most_common(6))
        more = f", and {len(reasons) - 6} more reason(s)" if len(reasons) > 6 else ""
        text += f"; {sum(reasons.values())} unsupported: {shown}{more}"
    errors, missed = run.count(Outcome.ERROR), run.count(Outcome.NOT_RUN)
    if errors:
        text += f"; {errors} error(s), no answer to compare"
    if missed:
        text += f"; {missed} not run"
    return text


def coverage_json(run: AdapterRun) -> dict[str, Any]:
    """The coverage as report data: the counts, the unsupported reasons, and the line the terminal shows."""
    return {
        "compared": compared(run),
        "results": len(run.results),
        "unsupported": run.count(Outcome.UNSUPPORTED),
        "unsupported_reasons": dict(unsupported_reasons(run).most_common()),
        "line": coverage_line(run),
    }


def closest_agreeing(run: AdapterRun) -> str:
    """How close the closest agreeing float came to its bound, or "" when no result passed (nothing agreed to say it of)."""
    at = run.largest_share_at
    if at is not None:
        return f"{run.largest_share:.2g} of its bound (at {at.case} [{at.level}])"
    if any(r.outcome == Outcome.PASSED and r.compared for r in run.results):
        return "every float the same bits"
    return ""


def _listed(values: Iterable[str], order: Optional[tuple[str, ...]] = None) -> str:
    items = sorted(set(values), key=(lambda v: order.index(v) if v in order else len(order)) if order else None)
    return ", ".join(items) if items else "none"


def nothing_compared(
    run: AdapterRun,
    fixtures: list[Fixture],
    *,
    levels: Optional[list[str]] = None,
    allow: str = ALLOW_FLAG,
    filters: str = "--case",
) -> Optional[str]:
    """The one line that fails a run in which this adapter compared nothing, or None when it compared something.

    Only an adapter that ran and failed nothing is judged: unavailable, given up on (its own diagnosis says
    why), interrupted and failing runs (their errors say why) are not, nor a selection of no case.
    ``levels`` is a level filter (the plugin's); ``allow`` and ``filters`` name the options of the caller
    (CLI or plugin) that the line points to.
    """
    if not run.available or run.down is not None or run.interrupted or run.unexpected or not fixtures or compared(run):
        return None
    hello = run.handshake
    needed_levels = [level for fixture in fixtures for level in fixture.levels]
    if levels is not None:
        kept = [level for level in needed_levels if level in levels]
        if not kept:
            return (
                f"NOTHING COMPARED {run.name}: the level filter ({_listed(levels, LEVELS)}) keeps none of the levels "
                f"the {len(fixtures)} selected case(s) list ({_listed(needed_levels, LEVELS)}); widen the filter, "
                f"or pass {allow} if that is intended"
            )
        needed_levels = kept
    needed_ops = [op for fixture in fixtures for op in fixture.ops]
    declared = "no hello" if hello is None else f"ops {_listed(hello.ops)}; levels {_listed(hello.levels, LEVELS)}"
    reasons = ", ".join(label for label, _ in unsupported_reasons(run).most_common(4)) or "none"
    return (
        f"NOTHING COMPARED {run.name}: 0 of {len(run.results)} (case, level) results were compared (unsupported: "
        f"{reasons}). Its hello declares {declared}; the {len(fixtures)} selected case(s) use ops "
        f"{_listed(needed_ops)} at levels {_listed(needed_levels, LEVELS)}. Declare in the hello what the engine "
        f"supports, check {filters}, or pass {allow} if that is intended"
    )

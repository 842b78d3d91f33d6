"""A diagnosis consistent with the whole run: a mistake is named only if nothing the engine passed contradicts it.

Each failed result's diagnosis (``conformance.diagnose``) names the catalogue's mistakes that
reproduce that one result. Seen alone, a name can be wrong for the engine: a mistake in a
graph walk that the catalogue does not have may reproduce one ``add`` case exactly as "a
wrong local derivative for add" does, while the engine passes every other ``add`` case. So,
after a run, every named mistake is replayed on the cases the engine passed (those the replay
can run: ``replayable`` and at most ``DIAGNOSIS_MAX_STEPS`` steps); a mistake whose variant
fails a (case, level) the engine passed is set aside everywhere, and the summary says which
passed result contradicts it. The summary then says whether one known mistake explains every
wrong answer, or which comes nearest and how many it explains.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional, Protocol, Sequence, TypeVar

from .compare import DEFAULT_PROFILE, FLOAT32_ULPS, compare_level
from .diagnose import DIAGNOSIS_MAX_STEPS, Diagnoser
from .fixture import REPLAY_MAX_STEPS, Fixture
from .mutants import BUGS, bug_named

#: The outcomes (``runner.Outcome``'s values) of a wrong answer (an expected failure still is one), and of an
#: answer that agreed.
_WRONG = ("failed", "xfailed")
_AGREED = ("passed", "xpassed")


class Judged(Protocol):
    """What this module reads of a result (``runner.Result``, a frozen dataclass)."""

    @property
    def case(self) -> str: ...
    @property
    def level(self) -> str: ...
    @property
    def outcome(self) -> str: ...
    @property
    def diagnosis(self) -> tuple[str, ...]: ...
    @property
    def compared(self) -> int: ...
    @property
    def single_precision(self) -> bool: ...
    @property
    def float32_rounding(self) -> bool: ...


R = TypeVar("R", bound=Judged)


@dataclass(frozen=True)
class SetAside:
    """A mistake named for some failure that the variant of the catalogue would also have failed elsewhere."""

    description: str
    case: str
    level: str
    """The (case, level) the engine passed and the mistake's variant fails."""

    def describe(self) -> str:
        """One line: which name was dropped, and the passed result that contradicts it."""
        return f"not named: {self.description} (that mistake also fails {self.case} [{self.level}], which this engine passed)"


@dataclass(frozen=True)
class Explanation:
    """What the catalogue says of one adapter's wrong answers, taken together."""

    wrong: int
    """How many (case, level) results were wrong answers (failed, or expected to fail and failed)."""
    counts: tuple[tuple[str, int], ...] = ()
    """Each mistake still named, with how many wrong answers it reproduces, most first."""
    set_aside: tuple[SetAside, ...] = field(default=())
    unreplayed: int = 0
    """How many of the wrong answers are in cases too large to replay (over ``DIAGNOSIS_MAX_STEPS`` steps)."""
    single_precision: int = 0
    """How many of the wrong answers differ only by float32 rounding (``compare.single_precision``)."""
    float32_rounded: int = 0
    """How many of those show float32's rounding of a normal float, not only its underflow or overflow."""

    def line(self) -> Optional[str]:
        """The summary line every report shows, or None when there was no wrong answer."""
        if not self.wrong:
            return None
        replayed = self.wrong - self.unreplayed
        note = (
            f" ({self.unreplayed} failure(s) in cases of over {DIAGNOSIS_MAX_STEPS} steps were not replayed)"
            if self.unreplayed
            else ""
        )
        if not replayed:
            return f"no failure was replayed through the catalogue{note}"
        if self.counts and self.counts[0][1] == replayed:
            every = "every failure" if not self.unreplayed else "every failure it could replay"
            return f"one known mistake explains {every}: {self.counts[0][0]}{note}"
        if self.counts:
            description, explained = self.counts[0]
            return (
                f"no known mistake explains every failure; the nearest, {description}, explains {explained} of {replayed}{note}"
            )
        return f"no known mistake explains any of the {replayed} failure(s){note}"

    def precision_line(self) -> Optional[str]:
        """One line when wrong answers differ from the contract by float32 rounding alone, or None."""
        if not self.single_precision or 2 * self.single_precision < self.wrong:
            return None  # a few wrong floats that happen to be float32 numbers near the right one say nothing
        if not self.float32_rounded:
            return None  # underflow to 0 or overflow to inf alone is what a float64 formula that gives out early does too
        how = (
            f"the contract's value as float32 makes it (within {FLOAT32_ULPS} float32 ulps; infinite past float32's "
            "largest value, underflowed below its smallest normal one)"
        )
        if self.single_precision == self.wrong:
            return (
                f"every differing float of the {self.wrong} failure(s) is {how}: "
                "this engine computes in single precision, not in float64 as the contract does"
            )
        return f"{self.single_precision} of the {self.wrong} failures differ only as float32 would: each differing float is {how}"

    def lines(self) -> list[str]:
        """The summary line, the single-precision line, then one line per name set aside."""
        head = [line for line in (self.line(), self.precision_line()) if line]
        return head + [each.describe() for each in self.set_aside]

    def to_json(self) -> dict[str, Any]:
        """The explanation as report data."""
        return {
            "summary": self.line(),
            "wrong": self.wrong,
            "unreplayed": self.unreplayed,
            "single_precision": self.single_precision,
            "precision": self.precision_line(),
            "named": [{"mistake": description, "explains": count} for description, count in self.counts],
            "set_aside": [{"mistake": s.description, "case": s.case, "level": s.level} for s in self.set_aside],
        }


def explain_run(
    results: Sequence[R],
    fixtures: Mapping[str, Fixture],
    diagnoser: Diagnoser,
    profile: str = DEFAULT_PROFILE,
    *,
    edges: bool = True,
) -> tuple[list[R], Explanation]:
    """The results with every contradicted name removed from their diagnoses, and the run's explanation.

    ``fixtures`` maps case ids to the fixtures the results were compared against; ``diagnoser``
    is the one that named the mistakes (its replays are remembered, so each (case, mistake) runs
    once); ``profile`` and ``edges`` are how the adapter was compared.
    """
    wrong = [r for r in results if _is_wrong(r)]
    named = {hint for r in wrong for hint in r.diagnosis if bug_named(hint) is not None}
    agreed = [r for r in results if r.outcome in _AGREED and _can_replay(fixtures.get(r.case))]
    agreed.sort(key=lambda r: (fixtures[r.case].size, r.case, r.level))
    set_aside: list[SetAside] = []
    for description in sorted(named):
        contradiction = _contradiction(description, agreed, fixtures, diagnoser, profile, edges)
        if contradiction is not None:
            set_aside.append(SetAside(description, *contradiction))
    dropped = {s.description for s in set_aside}
    kept = [
        replace(r, diagnosis=tuple(h for h in r.diagnosis if h not in dropped))  # type: ignore[type-var]
        if dropped & set(r.diagnosis)
        else r
        for r in results
    ]
    tally: dict[str, int] = {}
    for r in kept:
        if _is_wrong(r):
            for hint in r.diagnosis:
                if bug_named(hint) is not None:
                    tally[hint] = tally.get(hint, 0) + 1
    order = {description: index for index, description in enumerate(BUGS.values())}
    counts = tuple(sorted(tally.items(), key=lambda item: (-item[1], order[item[0]])))
    unreplayed = sum(1 for r in wrong if not _can_replay(fixtures.get(r.case)))
    single = sum(1 for r in wrong if r.single_precision)
    rounded = sum(1 for r in wrong if r.single_precision and r.float32_rounding)
    return kept, Explanation(len(wrong), counts, tuple(set_aside), unreplayed, single, rounded)


def _is_wrong(result: Judged) -> bool:
    """A wrong answer: a failed comparison (an expected failure too), not an adapter's error."""
    return result.outcome in _WRONG and result.compared > 0


def _can_replay(fixture: Optional[Fixture]) -> bool:
    return fixture is not None and fixture.size <= min(DIAGNOSIS_MAX_STEPS, REPLAY_MAX_STEPS)


def _contradiction(
    description: str,
    agreed: Sequence[Judged],
    fixtures: Mapping[str, Fixture],
    diagnoser: Diagnoser,
    profile: str,
    edges: bool,
) -> Optional[tuple[str, str]]:
    """The first (case, level) the engine passed that the mistake's variant fails, if any."""
    bug = bug_named(description)
    assert bug is not None, description  # only the catalogue's own descriptions are looked up
    for result in agreed:
        fixture = diagnoser.view(fixtures[result.case])
        simulated = diagnoser.simulate(fixture, bug)
        if simulated is None:
            continue  # the variant cannot run this program: it says nothing either way
        if compare_level(fixture, simulated, result.level, limit=1, profile=profile, edges=edges)[0]:
            return result.case, result.level
    return None

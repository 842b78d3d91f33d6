"""A minimal reproducer for a failing (case, level): the case's program shrunk against the adapter.

A failing case of the corpus may have thousands of steps (the LLM programs, the deep chains); the
porter needs the few that show the mistake. ``reproduce`` shrinks the program while the adapter still
fails the same level with a first difference of the same kind (the same field of a step: a value, a
stored gradient, an error field, a pass record's field) and, when the diagnosis named mistakes, still
shows one of them:

- a large program is first cut down by replacing whole runs of operations by leaves holding the
  reference's values for them (delta debugging over the operations: halves, then quarters, ...),
  after which every step nothing uses any more is dropped;
- then ``conformance.shrink`` deletes steps, bypasses operations, replaces single operations by
  leaves and simplifies numbers, as it does for the fuzzer.

Every candidate is compared exactly as the run compared the case (``fuzz.examine``), within a time
budget per case; a reproducer found when the budget ran out is still smaller, and says it may not be
minimal.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any, Optional

from .compare import Difference
from .diagnose import Diagnoser
from .execute import run_program
from .fixture import Fixture
from .program import LEAF_OPS, Program, ProgramError, Step, program_to_json
from .shrink import shrink_program
from .transport import Transport

#: Seconds one failing case may spend shrinking, by default.
REPRODUCER_SECONDS = 10.0
#: Programs with more steps than this are first cut down by replacing runs of operations by leaves.
CUT_FROM_STEPS = 40


@dataclass(frozen=True)
class Reproducer:
    """The smallest program found that fails like a case did."""

    case: str
    level: str
    program: Program
    difference: Optional[Difference]
    diagnosis: tuple[str, ...]
    original_steps: int
    seconds: float
    complete: bool
    """False when the time budget ran out before no smaller program could be found."""
    rerun: str = ""
    """The command that re-runs it, once it was saved as a case (``conformance run --reproducers``)."""

    def lines(self) -> list[str]:
        """The reproducer as the reports print it: a heading, one step a line, its first difference."""
        state = "" if self.complete else "; the time budget ran out, so a smaller one may exist"
        head = f"minimal reproducer: {len(self.program)} of the case's {self.original_steps} steps{state}"
        lines = [head, *(f"  {index:>2}  {step.describe()}" for index, step in enumerate(self.program))]
        if self.difference is not None:
            lines.append(f"  its first difference: {self.difference.describe()}")
        lines.append(f"  re-run: {self.rerun}" if self.rerun else "  save it as a case with --reproducers DIR")
        return lines

    def to_json(self) -> dict[str, Any]:
        """The reproducer as report data: the program in the fixture format, and how it was found."""
        return {
            "case": self.case,
            "level": self.level,
            "program": program_to_json(self.program),
            "difference": self.difference.describe() if self.difference is not None else None,
            "steps": len(self.program),
            "original_steps": self.original_steps,
            "seconds": round(self.seconds, 3),
            "complete": self.complete,
            "rerun": self.rerun or None,
        }


def difference_kind(difference: Optional[Difference]) -> str:
    """What a first difference is about, without which step or node: ``gradients``, ``pass.nodes.pass_adjoint``, ..."""
    if difference is None:
        return ""
    path = re.sub(r"^observations\[\d+\]\.?", "", difference.path)
    path = re.sub(r"\[[^\]]*\]", "", path)
    return "gradients" if path.startswith("gradients") else path


def reproduce(
    transport: Transport,
    fixture: Fixture,
    level: str,
    profile: str,
    *,
    diagnosis: tuple[str, ...] = (),
    seconds: float = REPRODUCER_SECONDS,
    diagnoser: Optional[Diagnoser] = None,
) -> Optional[Reproducer]:
    """The case's program shrunk against the adapter while it fails ``level`` the same way; None if it no longer fails.

    ``diagnosis`` is what the run named for the failure: a smaller program must keep one of those
    names (when there were any). ``seconds`` bounds the whole search.
    """
    from .fuzz import Divergence, examine  # the fuzzer's comparison: the same fixture building and levels

    started = time.monotonic()
    deadline = started + seconds
    diagnoser = diagnoser or Diagnoser()
    named = set(diagnosis)
    first = examine(transport, fixture.program, (level,), profile)
    if first is None or first.fault is not None or first.level != level:
        return None
    kind = difference_kind(first.difference)
    best: list[Divergence] = [first]
    timed_out = [False]

    def still(program: Program) -> Optional[Divergence]:
        if time.monotonic() > deadline:
            timed_out[0] = True
            return None
        found = examine(transport, program, (level,), profile)
        if found is None or found.fault is not None or found.level != level or difference_kind(found.difference) != kind:
            return None
        if named:
            hints = diagnoser.diagnose(found.fixture, list(found.observations), level, profile, edges=found.edges)
            if not named & set(hints):
                return None
        best[0] = found
        return found

    program = fixture.program
    if len(program) > CUT_FROM_STEPS:
        program = _cut(program, still, deadline, timed_out)
    shrunk = shrink_program(program, still, deadline=deadline)
    result = shrunk or best[0]
    return Reproducer(
        fixture.id,
        level,
        result.program,
        result.difference,
        diagnosis,
        len(fixture.program),
        time.monotonic() - started,
        not timed_out[0],
    )


def _cut(program: Program, still: Any, deadline: float, timed_out: list[bool]) -> Program:
    """Delta debugging over the operations: replace as many as possible by leaves, dropping what nothing uses."""
    try:
        seen = run_program(program, record_pass=False)
    except ProgramError:
        return program
    leaves: dict[int, Step] = {}
    for index, (step, observation) in enumerate(zip(program, seen)):
        value = observation.value
        if step.id is None or step.op in LEAF_OPS or observation.error is not None or value is None or not math.isfinite(value):
            continue
        leaves[index] = Step(id=step.id, op="variable" if observation.tracked else "constant", value=value)
    todo = sorted(leaves)
    done: set[int] = set()
    current = program
    chunks = 2
    while todo and time.monotonic() < deadline:
        size = max(1, len(todo) // chunks)
        progressed = False
        for start in range(0, len(todo), size):
            chunk = set(todo[start : start + size])
            candidate = _pruned(tuple(leaves[i] if i in done | chunk else step for i, step in enumerate(program)))
            if candidate != current and still(candidate) is not None:
                done |= chunk
                current = candidate
                todo = [i for i in todo if i not in chunk]
                progressed = True
                break
            if time.monotonic() > deadline:
                timed_out[0] = True
                return current
        if progressed:
            chunks = max(chunks - 1, 2)
        elif size == 1:
            break
        else:
            chunks = min(chunks * 2, len(todo))
    return current


def _pruned(program: Program) -> Program:
    """The program without the creations no later step uses (every backward and zero_grad is kept)."""
    used: set[str] = set()
    kept: list[Step] = []
    for step in reversed(program):
        if step.id is None or step.id in used:
            kept.append(step)
            used.update(step.operands)
            if step.output is not None:
                used.add(step.output)
    return tuple(reversed(kept))


def reproduce_run(
    results: list[Any],
    transport: Transport,
    fixtures: dict[str, Fixture],
    profile: str,
    *,
    seconds: float,
    per_case: float = REPRODUCER_SECONDS,
    diagnoser: Optional[Diagnoser] = None,
) -> tuple[dict[tuple[str, str], Reproducer], list[str]]:
    """A reproducer for each failed (case, level) of a run, smallest cases first, within ``seconds`` in all.

    The adapter is still open (``transport``). A reproducer found at one level of a case is tried at the
    case's other failing levels first, and shared where it fails them the same way. Returns the
    reproducers by (case, level), and one note per failure left without one (and why).
    """
    from .fuzz import examine

    started = time.monotonic()
    diagnoser = diagnoser or Diagnoser()
    failed = [r for r in results if r.outcome == "failed" and r.case in fixtures]
    failed.sort(key=lambda r: (fixtures[r.case].size, r.case))
    found: dict[tuple[str, str], Reproducer] = {}
    by_case: dict[str, list[Reproducer]] = {}
    skipped = 0
    for result in failed:
        left = seconds - (time.monotonic() - started)
        if left <= 0:
            skipped += 1
            continue
        fixture = fixtures[result.case]
        shared = None
        for earlier in by_case.get(result.case, ()):
            again = examine(transport, earlier.program, (result.level,), profile)
            if again is not None and again.fault is None and again.level == result.level:
                shared = Reproducer(
                    result.case,
                    result.level,
                    earlier.program,
                    again.difference,
                    result.diagnosis,
                    earlier.original_steps,
                    0.0,
                    earlier.complete,
                )
                break
        reproducer = shared or reproduce(
            transport,
            fixture,
            result.level,
            profile,
            diagnosis=result.diagnosis,
            seconds=min(per_case, left),
            diagnoser=diagnoser,
        )
        if reproducer is not None:
            found[result.case, result.level] = reproducer
            by_case.setdefault(result.case, []).append(reproducer)
    notes = []
    if skipped:
        notes.append(
            f"{skipped} failed result(s) got no minimal reproducer: the run's shrinking budget ({seconds:.0f} s) was "
            "spent on smaller cases first; --shrink-seconds gives it more, --case picks one"
        )
    return found, notes

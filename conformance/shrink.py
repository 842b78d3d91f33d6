"""Shrink a divergent program to the steps and values that make it diverge.

hypothesis shrinks what it drew, but it cannot delete a step from the middle of a
program whose later steps name ids by position, and under ``--keep-going`` it does
not shrink at all. ``shrink_program`` does it here, as a loop of passes each of which
keeps a change only when ``still`` says the program still diverges the same way:

- delete a step nothing later names (an op whose result nothing uses, a backward or
  zero_grad of an unrelated node), as long as one backward is left;
- bypass an operation: its later uses take one of its operands instead;
- replace an operation by a leaf holding the reference's value for it (a variable
  when the result is tracked, a constant otherwise), which frees its operands;
- simplify numbers: leaf values, seeds and exponents towards 1, 2, 0, -1, 0.5, ...,
  and a seed of 1.0 is left out;
- name the nodes n0, n1, ... in creation order.

Two divergences whose shrunk programs agree are then one divergence, wherever hypothesis
started them: ``--keep-going`` compares signatures after shrinking (conformance/fuzz.py).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Iterator, Optional, TypeVar

import msgspec

from .execute import run_program
from .program import LEAF_OPS, Program, ProgramError, Step

T = TypeVar("T")

#: Numbers a shrunk program prefers, simplest first.
SIMPLE_VALUES = (1.0, 2.0, 0.0, -1.0, 0.5, -2.0, 3.0)
#: At most this many candidate programs are tried for one divergence.
SHRINK_BUDGET = 400


def shrink_program(
    program: Program,
    still: Callable[[Program], Optional[T]],
    budget: int = SHRINK_BUDGET,
    *,
    deadline: Optional[float] = None,
) -> Optional[T]:
    """The last result of ``still`` on the smallest program reached from ``program``; None if no change held.

    ``still(candidate)`` returns the divergence the candidate shows, or None when it does
    not diverge the same way; it is called at most ``budget`` times, and not after ``deadline``
    (a ``time.monotonic()`` value), when one is given.
    """
    current, found, tries = program, None, [0]

    def attempt(candidate: Program) -> bool:
        nonlocal current, found
        if deadline is not None and time.monotonic() > deadline:
            tries[0] = budget  # out of time: every later attempt is refused at once
        if candidate == current or tries[0] >= budget:
            return False
        tries[0] += 1
        if not _runs(candidate):
            return False
        result = still(candidate)
        if result is None:
            return False
        current, found = candidate, result
        return True

    changed = True
    while changed and tries[0] < budget:
        changed = False
        for make in (_deletions, _bypasses, _leaf_replacements, _simpler_numbers):
            # Each pass restarts from the program the last kept change left.
            progress = True
            while progress and tries[0] < budget:
                progress = any(attempt(candidate) for candidate in make(current))
                changed = changed or progress
    attempt(renamed(current))
    return found


def _runs(program: Program) -> bool:
    """Whether the reference can run the program: a simpler value must not make a named creation fail."""
    try:
        run_program(program, record_pass=False)
    except ProgramError:
        return False
    return True


def _deletions(program: Program) -> Iterator[Program]:
    """The program without one step that no later step names, from the last step back."""
    for index in reversed(range(len(program))):
        step = program[index]
        rest = program[:index] + program[index + 1 :]
        if step.id is not None and any(step.id in (*later.operands, later.output) for later in rest[index:]):
            continue
        if not any(later.op == "backward" for later in rest):
            continue
        yield rest


def _bypasses(program: Program) -> Iterator[Program]:
    """The program without one operation, every later use of its result taking one of its operands instead."""
    for index, step in enumerate(program):
        if step.id is None or step.op in LEAF_OPS or step.repeat is not None:
            continue
        for operand in dict.fromkeys(step.operands):
            names = {step.id: operand}
            later = [
                msgspec.structs.replace(
                    s,
                    operands=tuple(names.get(a, a) for a in s.operands),
                    output=names.get(s.output, s.output) if s.output is not None else None,
                )
                for s in program[index + 1 :]
            ]
            yield program[:index] + tuple(later)


def _leaf_replacements(program: Program) -> Iterator[Program]:
    """The program with one successful operation replaced by a leaf of the reference's value and tracked flag."""
    observations = run_program(program, record_pass=False)
    for index, (step, seen) in enumerate(zip(program, observations)):
        if step.id is None or step.op in LEAF_OPS or step.repeat is not None:
            continue
        if seen.error is not None or seen.value is None or not math.isfinite(seen.value):
            continue
        leaf = Step(id=step.id, op="variable" if seen.tracked else "constant", value=seen.value)
        yield program[:index] + (leaf,) + program[index + 1 :]


def _simpler(value: float) -> list[float]:
    """Numbers simpler than ``value``, simplest first (none for a number already among the simplest)."""
    for rank, simple in enumerate(SIMPLE_VALUES):
        if value == simple and math.copysign(1.0, value) == math.copysign(1.0, simple):
            return list(SIMPLE_VALUES[:rank])
    more = [float(round(value))] if math.isfinite(value) and abs(value) < 1e6 else []
    return [v for v in (*SIMPLE_VALUES, *more) if v != value or math.copysign(1.0, v) != math.copysign(1.0, value)]


def _simpler_numbers(program: Program) -> Iterator[Program]:
    """The program with one leaf value, seed or exponent made simpler."""
    for index, step in enumerate(program):
        variants: list[Step] = []
        if step.op in LEAF_OPS and step.value is not None:
            variants = [msgspec.structs.replace(step, value=v) for v in _simpler(step.value)]
        elif step.op == "backward" and step.seed is not None:
            # No seed is seed 1.0, the simplest of all.
            simpler = [None, *(v for v in _simpler(step.seed) if v != 1.0)]
            variants = [msgspec.structs.replace(step, seed=v) for v in simpler]
        elif step.op == "pow" and step.exponent is not None:
            variants = [msgspec.structs.replace(step, exponent=v) for v in _simpler(step.exponent)]
        for variant in variants:
            yield program[:index] + (variant,) + program[index + 1 :]


def renamed(program: Program) -> Program:
    """The program with its nodes named n0, n1, ... in creation order."""
    names: dict[str, str] = {}
    steps = []
    for step in program:
        if step.id is not None:
            names[step.id] = f"n{len(names)}"
        steps.append(
            msgspec.structs.replace(
                step,
                id=names.get(step.id) if step.id is not None else None,
                operands=tuple(names[a] for a in step.operands),
                output=names[step.output] if step.output is not None else None,
            )
        )
    return tuple(steps)

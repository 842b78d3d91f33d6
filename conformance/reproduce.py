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
from typing import Any, Iterable, Optional

import msgspec

from .compare import Difference
from .diagnose import DIAGNOSIS_MAX_STEPS, Diagnoser, diagnose_error
from .fixture import Fixture
from .mutants import BUGS, Bug
from .program import LEAF_OPS, Program, Step
from .protocol import Observation
from .reproducer import Reproducer
from .shrink import shrink_program
from .transport import Transport

#: Seconds one failing case may spend shrinking, by default.
REPRODUCER_SECONDS = 10.0
#: Programs with more steps than this are first cut down by replacing runs of operations by leaves.
CUT_FROM_STEPS = 40
#: Programs with more steps than this first try the one-op programs around the node the first difference names.
LOCAL_FROM_STEPS = 8


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
    difference: Optional[Difference] = None,
    seconds: float = REPRODUCER_SECONDS,
    diagnoser: Optional[Diagnoser] = None,
) -> Optional[Reproducer]:
    """The case's program shrunk against the adapter while it fails ``level`` the same way; None if it no longer fails.

    ``diagnosis`` is what the run named for the failure: a smaller program must keep one of those
    names (when there were any). ``difference`` is the run's first difference at that level (the case
    is run again to find it when it is not given). ``seconds`` bounds the whole search.
    """
    from .fuzz import Divergence, examine  # the fuzzer's comparison: the same fixture building and levels

    started = time.monotonic()
    deadline = started + seconds
    diagnoser = diagnoser or Diagnoser()
    named = set(diagnosis)
    if difference is None:
        first = examine(transport, fixture.program, (level,), profile)
        if first is None or first.fault is not None or first.level != level:
            return None
        difference = first.difference
    kind = difference_kind(difference)
    best: list[Optional[Divergence]] = [None]
    timed_out = [False]

    def still(program: Program) -> Optional[Divergence]:
        if time.monotonic() > deadline:
            timed_out[0] = True
            return None
        found = examine(transport, program, (level,), profile)
        if found is None or found.fault is not None or found.level != level or difference_kind(found.difference) != kind:
            return None
        if named:
            hints = diagnoser.diagnose(found.fixture, list(found.observations), level, profile, edges=found.edges, among=named)
            if not named & set(hints):
                return None
        best[0] = found
        return found

    made = {step.id: seen for step, seen in zip(fixture.program, fixture.expected) if step.id is not None}
    program = fixture.program
    if len(program) > LOCAL_FROM_STEPS:
        program = next((small for small in _local(program, difference, made) if still(small) is not None), program)
    if len(program) > LOCAL_FROM_STEPS:
        truncated = _through_first_difference(program, difference)
        if truncated != program and still(truncated) is not None:
            program = truncated
    if len(program) > CUT_FROM_STEPS:
        program = _cut(program, made, still, deadline, timed_out)
    shrunk = shrink_program(program, still, deadline=deadline)
    result = shrunk or best[0]
    return Reproducer(
        fixture.id,
        level,
        result.program if result is not None else fixture.program,
        result.difference if result is not None else difference,
        diagnosis,
        len(fixture.program),
        time.monotonic() - started,
        not timed_out[0],
    )


def _through_first_difference(program: Program, difference: Optional[Difference]) -> Program:
    """The steps up to the one the first difference is at: nothing after a step changes what it observed."""
    found = re.match(r"observations\[(\d+)\]", difference.path) if difference is not None else None
    if found is None:
        return program
    return _pruned(program[: int(found.group(1)) + 1])


#: Where a difference's path names a node: a stored gradient, a pass record's node, an edge by (node:slot).
_NODE_IN_PATH = (r"gradients\.([^.\[]+)$", r"pass\.nodes\[([^\]]+)\]", r"pass\.edges\[([^\]:]+):\d+\]")


def _named_node(difference: Optional[Difference]) -> Optional[str]:
    """The node a difference's path names, if it names one."""
    for pattern in _NODE_IN_PATH:
        found = re.search(pattern, difference.path) if difference is not None else None
        if found is not None:
            return found.group(1)
    return None


def _on_leaves(ops: list[Step], made: dict[str, Observation], walks: Program = ()) -> Optional[Program]:
    """The operations on leaves holding the reference's values for the operands they do not create, then a backward of the last.

    ``walks`` (the case's backward and zero_grad steps) replaces that one backward: each is made again, in its order
    and with its seed, on the last operation.
    """
    created = {step.id for step in ops if step.id is not None}
    leaves: dict[str, Step] = {}
    for step in ops:
        for operand in step.operands:
            if operand in created or operand in leaves:
                continue
            seen = made.get(operand)
            if seen is None or seen.value is None or not math.isfinite(seen.value):
                return None
            leaves[operand] = Step(id=operand, op="variable" if seen.tracked else "constant", value=seen.value)
    used = {operand for step in ops for operand in step.operands}
    tops = [step.id for step in ops if step.id is not None and step.id not in used]
    joined: list[Step] = []
    top = tops[-1] if tops else ops[-1].id
    if top is None:
        return None
    for other in tops[-2::-1] if len(tops) > 1 else ():
        # Several results no other one uses: add them up, so that one backward reaches every one.
        name = _fresh(f"sum{len(joined)}", created | set(leaves))
        joined.append(Step(id=name, op="add", operands=(other, top)))
        top = name
    again = tuple(msgspec.structs.replace(step, output=top) for step in walks) or (Step(op="backward", output=top),)
    return (*leaves.values(), *ops, *joined, *again)


def _fresh(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` with primes until no node has it."""
    while name in taken:
        name += "'"
    return name


def _local(program: Program, difference: Optional[Difference], made: dict[str, Observation]) -> Iterable[Program]:
    """Small programs taken from the case around the node the first difference names, the smallest first.

    First each operation that creates or uses the node, alone on leaves holding the reference's values for
    its operands, then a backward of it: most mistakes of one op's rule or of one edge show there already.
    Then the first 2, 4, 8, ... operations that depend on the node, on leaves, with a backward of the last:
    a mistake that takes a chain to show (a derivative wrong by a little, compounded) shows in one of them.
    """
    node = _named_node(difference)
    if node is None:
        return
    ops = [step for step in program if step.id is not None and step.op not in LEAF_OPS]
    walks = tuple(step for step in _through_first_difference(program, difference) if step.id is None)
    shapes = ((), walks) if len(walks) > 1 else ((),)
    for step in ops:
        if step.id == node or node in step.operands:
            for shape in shapes:
                single = _on_leaves([step], made, shape)
                if single is not None:
                    yield single
    reached = {node}
    chain = []
    for step in ops:
        if step.id is not None and (step.id == node or reached & set(step.operands)):
            reached.add(step.id)
            chain.append(step)
    size = 2
    while size < len(chain):
        for shape in shapes:
            window = _on_leaves(chain[:size], made, shape)
            if window is not None:
                yield window
        size *= 2


def _cut(program: Program, made: dict[str, Observation], still: Any, deadline: float, timed_out: list[bool]) -> Program:
    """Delta debugging over the operations: replace as many as possible by leaves, dropping what nothing uses."""
    leaves: dict[int, Step] = {}
    for index, step in enumerate(program):
        seen = made.get(step.id) if step.id is not None else None
        if step.op in LEAF_OPS or seen is None or seen.error is not None or seen.value is None:
            continue
        if math.isfinite(seen.value):
            leaves[index] = Step(id=step.id, op="variable" if seen.tracked else "constant", value=seen.value)
    todo = sorted(leaves)
    done: set[int] = set()
    current = program
    chunks = 2
    while todo and time.monotonic() < deadline:
        size = max(1, len(todo) // chunks)
        progressed = False
        for start in range(0, len(todo), size):
            chunk = set(todo[start : start + size])
            replaced = done | chunk
            candidate = _pruned(tuple(leaves[i] if i in replaced else step for i, step in enumerate(program)))
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
    started = time.monotonic()
    diagnoser = diagnoser or Diagnoser()
    failed = [r for r in results if r.outcome == "failed" and r.case in fixtures]
    failed.sort(key=lambda r: (fixtures[r.case].size, r.case))
    found: dict[tuple[str, str], Reproducer] = {}
    by_case: dict[str, list[Reproducer]] = {}
    named: list[Reproducer] = []  # shrunk ones whose failure the catalogue named, to try on later failures first
    unshrunk: list[str] = []
    deep: list[str] = []
    skipped = 0
    for result in failed:
        if _depth_fault(result.first_difference):
            # Protocol 2.1: the engine raised at a step for the graph's depth (a recursion limit). Only a program
            # about as deep shows it: no small reproducer exists, and the search would spend its budget for nothing.
            deep.append(f"{result.case} [{result.level}]")
            continue
        left = seconds - (time.monotonic() - started)
        if left <= 0:
            skipped += 1
            continue
        reproducer = _shared(result, transport, by_case.get(result.case, ()), profile, diagnoser, same_case=True)
        if reproducer is None and (result.diagnosis or fixtures[result.case].size > DIAGNOSIS_MAX_STEPS):
            # A case too large for the catalogue's replay was not diagnosed: a smaller case's reproducer that
            # fails it the same way is the answer it gets (said as such: the same level and kind of difference).
            reproducer = _shared(result, transport, named, profile, diagnoser, same_case=False)
        if reproducer is None:
            reproducer = reproduce(
                transport,
                fixtures[result.case],
                result.level,
                profile,
                diagnosis=result.diagnosis,
                difference=result.first_difference,
                seconds=min(per_case, left),
                diagnoser=diagnoser,
            )
            if reproducer is not None and reproducer.diagnosis and not _unshrunk(reproducer):
                named.append(reproducer)
        if reproducer is not None and _unshrunk(reproducer):
            unshrunk.append(f"{result.case} [{result.level}]")
            reproducer = None
        if reproducer is not None:
            found[result.case, result.level] = reproducer
            by_case.setdefault(result.case, []).append(reproducer)
    notes = []
    if unshrunk:
        notes.append(
            f"the shrinking budget ran out before a smaller program was found for {', '.join(unshrunk)}; "
            "--shrink-seconds gives it more"
        )
    if deep:
        notes.append(
            f"no smaller program is sought for {', '.join(deep)}: the engine faulted there for the graph's depth "
            f"({BUGS[Bug.RECURSIVE_TOPO]}), which only a program about as deep shows"
        )
    if skipped:
        notes.append(
            f"{skipped} failed result(s) got no minimal reproducer: the run's shrinking budget ({seconds:.0f} s) was "
            "spent on smaller cases first; --shrink-seconds gives it more, --case picks one"
        )
    return found, notes


def _depth_fault(difference: Optional[Difference]) -> bool:
    """Whether a first difference is a step's fault (protocol 2.1) that a recursion limit or stack overflow explains."""
    actual = difference.actual if difference is not None else None
    return isinstance(actual, str) and actual.startswith("fault ") and diagnose_error(actual) == BUGS[Bug.RECURSIVE_TOPO]


def _unshrunk(reproducer: Reproducer) -> bool:
    """True when the time ran out before the search made the case any smaller: no reproducer, only a note."""
    return not reproducer.complete and reproducer.shared_from is None and len(reproducer.program) >= reproducer.original_steps


def _shared(
    result: Any,
    transport: Transport,
    earlier: Iterable[Reproducer],
    profile: str,
    diagnoser: Diagnoser,
    *,
    same_case: bool,
) -> Optional[Reproducer]:
    """An earlier reproducer that also fails ``result``'s level the same way, shared instead of shrinking again.

    From the same case (another level): it must fail this level with a first difference of the same kind.
    From another case: the same, and the catalogue must name one of the mistakes named for ``result`` on it,
    so that one small program stands for every failure one mistake makes, and two mistakes never share one.
    """
    from .fuzz import examine

    kind = difference_kind(result.first_difference)
    for candidate in earlier:
        if not same_case and candidate.level != result.level:
            continue
        if not same_case and result.diagnosis and not set(candidate.diagnosis) & set(result.diagnosis):
            continue
        again = examine(transport, candidate.program, (result.level,), profile)
        if again is None or again.fault is not None or again.level != result.level:
            continue
        if difference_kind(again.difference) != kind:
            continue
        names = set(result.diagnosis)
        if names:
            hints = diagnoser.diagnose(
                again.fixture, list(again.observations), result.level, profile, edges=again.edges, among=names
            )
            if not names & set(hints):
                continue
        return Reproducer(
            result.case,
            result.level,
            candidate.program,
            again.difference,
            result.diagnosis,
            candidate.original_steps,
            0.0,
            candidate.complete,
            shared_from=candidate.shared_from or (candidate.case, candidate.level),
        )
    return None

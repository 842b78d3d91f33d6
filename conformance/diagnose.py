"""Name the likely bug behind a wrong answer, by reproducing it.

For a failed (case, level), every variant of the broken-engine catalogue
(``conformance.mutants``) runs the same program; a variant reproduces the
failure only when it fails there too and its whole observation of every step
agrees with the adapter's: values, stored gradients, which steps fail and
with what error, and the failing level's own fields. Then its description is
the diagnosis; when no variant reproduces the failure, none is named (a guess
would send the porter after the wrong bug). Two patterns are also named directly: a backward that failed
but changed stored gradients, and a crash that reads like a recursion limit. In a one-op case whose values
agree, the local derivative the engine's gradients imply is shown beside the contract's (after any name).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Collection, Optional, Sequence

from .compare import DEFAULT_PROFILE, compare_level
from .fixture import Fixture, replayable
from .handshake import Handshake
from .mutants import BUGS, Bug, MutantEngine
from .program import LEAF_OPS
from .protocol import ERROR_KINDS, LEVELS, Observation

_RECURSION_WORDS = ("RecursionError", "maximum recursion depth", "stack overflow", "goroutine stack exceeds")


#: A case this many steps long or more is deep enough that a native recursion over its graph can overflow the stack.
DEEP_STEPS = 10_000

#: Programs longer than this are not re-run through the catalogue: one such program costs as
#: much as the rest of the corpus (a 10,000-deep chain, the LLM step), and every bug it
#: shows is also shown, and named, by a small case.
DIAGNOSIS_MAX_STEPS = 1000


class Diagnoser:
    """Names the likely bugs behind wrong answers, running each catalogue variant at most once per program.

    It remembers every variant's observations (``simulate``): a case failing at several
    levels is diagnosed once per level, and the fuzzer asks about the same program while it
    shrinks it. What it remembers belongs to whoever made it: the runner makes one per
    adapter session, the fuzzer one per fuzz run, so two runs (or two tests) never share it.
    Past ``max_entries`` remembered runs it forgets them all and starts again.
    """

    def __init__(
        self, max_entries: int = 2000, *, unchecked: Collection[str] = (), levels: Optional[Collection[str]] = None
    ) -> None:
        self.max_entries = max_entries
        self._simulated: dict[tuple[str, str, str], Optional[list[Any]]] = {}
        self.unchecked = frozenset(unchecked)
        """The error kinds the engine does not report: the catalogue's variants do not raise them either."""
        self.levels = frozenset(LEVELS if levels is None else levels)
        """The levels the engine declares: a variant must agree with its answers at those only."""
        self.hello: Optional[Handshake] = None
        """The declared engine (``declare``): its shape decides how a case is compared (``view``)."""

    def view(self, fixture: Fixture) -> Fixture:
        """The fixture as the declared engine is compared on it (``Handshake.view``)."""
        return self.hello.view(fixture) if self.hello is not None else fixture

    def declare(self, hello: Handshake) -> None:
        """Diagnose as the engine's hello declares it: variants that make only its checks, compared on its levels
        (and on its leaves' stored gradients only, for a leaves-only engine).

        An engine that reports no error kind (``error_kinds: []``) computes on where the contract raises; a
        variant that raised there would never agree with it, and no mistake could be named.
        """
        unchecked = frozenset(ERROR_KINDS) - frozenset(hello.error_kinds)
        if unchecked != self.unchecked:
            self._simulated.clear()
        self.unchecked, self.levels, self.hello = unchecked, frozenset(hello.levels), hello

    def diagnose(
        self,
        fixture: Fixture,
        observations: list[Any],
        level: str,
        profile: str = DEFAULT_PROFILE,
        *,
        edges: bool = True,
        among: Optional[Collection[str]] = None,
    ) -> list[str]:
        """Plain-words descriptions of the bugs that would produce these observations at this level.

        Floats are compared under ``profile``, as the failure itself was. Programs of more than
        DIAGNOSIS_MAX_STEPS steps get only the direct checks. ``edges=False`` compares ``trace``
        without edge records (``compare_level``). ``among`` (descriptions) replays only those
        catalogue bugs: the question a shrinker asks, "does it still show this mistake?".
        """
        found = []
        direct = _changed_on_failure(fixture, observations)
        if direct and level == "errors":
            found.append(direct)
        implied = implied_derivative(fixture, observations) if level in _GRADIENT_LEVELS else None
        if fixture.size > DIAGNOSIS_MAX_STEPS:
            return found
        for bug, description in BUGS.items():
            if bug == "recursive-topo" or (among is not None and description not in among):
                continue
            simulated = self.simulate(fixture, bug)
            if simulated is None:
                continue
            # The variant must itself fail here, and the adapter's answers must agree with the variant's.
            variant_fails = bool(compare_level(fixture, simulated, level, limit=1, profile=profile, edges=edges)[0])
            variant = replace(fixture, expected=tuple(simulated))
            if variant_fails and _reproduces(variant, observations, level, profile, edges, self.levels):
                if description not in found:
                    found.append(description)
        return found + ([implied] if implied else [])  # what the catalogue names first; then what the numbers imply

    def simulate(self, fixture: Fixture, bug: str) -> Optional[list[Any]]:
        """The observations of the catalogue variant ``bug`` on the fixture's program; None if it cannot run it.

        Each (case, program, bug) runs once; later calls answer from memory.
        """
        key = (fixture.id, fixture.provenance.get("program_sha256", ""), bug)
        if key not in self._simulated:
            if len(self._simulated) >= self.max_entries:
                self._simulated.clear()
            try:
                self._simulated[key] = MutantEngine(bug, unchecked=self.unchecked).run(fixture.program)
            except Exception:  # noqa: BLE001 - a variant that cannot run this program reproduces nothing
                self._simulated[key] = None
        return self._simulated[key]


def diagnose(
    fixture: Fixture, observations: list[Any], level: str, profile: str = DEFAULT_PROFILE, *, edges: bool = True
) -> list[str]:
    """``Diagnoser.diagnose`` with a diagnoser of its own, for one question; a run keeps one ``Diagnoser`` instead."""
    return Diagnoser().diagnose(fixture, observations, level, profile, edges=edges)


#: The levels every observation carries, whatever the adapter declares: together they compare
#: each step whole in both directions (a step that fails on one side only differs at
#: ``gradients`` when the variant succeeded there, and at ``errors`` when the variant failed).
_WHOLE_STEP_LEVELS = ("values", "gradients", "errors")


def _reproduces(
    variant: Fixture, observations: list[Any], level: str, profile: str, edges: bool = True, declared: Collection[str] = LEVELS
) -> bool:
    whole = {each for each in _WHOLE_STEP_LEVELS if each in declared}  # what the engine does not declare, it does not answer
    return not any(
        compare_level(variant, observations, each, limit=1, profile=profile, edges=edges)[0] for each in {level, *whole}
    )


#: The levels whose differences a wrong local derivative shows in (stored gradients, pass adjoints, edges).
_GRADIENT_LEVELS = ("gradients", "trace", "order")


def implied_derivative(fixture: Fixture, observations: Sequence[Observation]) -> Optional[str]:
    """In a one-op case whose values agree, the local derivative the engine's gradients imply, beside the contract's.

    The case is leaves, one op on them and a backward from the op's result: a leaf used in one slot then
    has the gradient seed * local derivative, so the engine's gradient over the seed is its local
    derivative. Named for the first operand whose gradient differs; None for any other case.
    """
    program = fixture.program
    ops = [index for index, step in enumerate(program) if step.creates and step.op not in LEAF_OPS]
    if len(ops) != 1 or len(observations) != len(program):
        return None
    at = ops[0]
    op = program[at]
    backwards = [index for index, step in enumerate(program) if step.op == "backward"]
    if op.repeat or not backwards or program[backwards[0]].output != op.id or backwards[0] < at:
        return None
    if any(program[i].op not in LEAF_OPS for i, step in enumerate(program) if step.creates and i != at):
        return None
    expected, actual = fixture.expected[at], observations[at]
    if expected.value is None or actual.value is None or expected.value != actual.value:
        return None  # the values differ: that difference is the one to read first
    seed = program[backwards[0]].seed
    seed = 1.0 if seed is None else seed
    step_expected, step_actual = fixture.expected[backwards[0]], observations[backwards[0]]
    if not seed or step_expected.gradients is None or step_actual.gradients is None or step_expected.error is not None:
        return None
    values = {step.id: fixture.expected[i].value for i, step in enumerate(program) if step.creates}
    kinds = {step.id: step.op for step in program if step.creates}
    for slot, operand in enumerate(op.operands):
        if op.operands.count(operand) != 1 or kinds[operand] != "variable":
            continue
        want, got = step_expected.gradients.get(operand), step_actual.gradients.get(operand)
        if want is None or got is None or want == got or not (math.isfinite(want) and math.isfinite(got)):
            continue
        where = ", ".join(f"{name} = {values[name]!r}" for name in op.operands)
        if op.exponent is not None:
            where += f", exponent {op.exponent!r}"
        return (
            f"{op.op}'s local derivative for slot {slot} ({operand}) at {where}: the engine's is {got / seed!r}, "
            f"the contract's {want / seed!r} (the values agree, and the gradient of {operand} over the seed is that derivative)"
        )
    return None


def diagnose_error(message: str, fixture: Optional[Fixture] = None) -> Optional[str]:
    """A diagnosis for an adapter error, when its message or stderr shows one (``fixture``: the case it ran).

    Recursion limits and stack overflows are named whatever the case; the exceptions a Python engine raises
    where the contract computes an infinity or nan are named when the case has the op that explains them.
    """
    if fixture is not None and ("SIGSEGV" in message or "SIGBUS" in message) and fixture.size >= DEEP_STEPS:
        return (
            f"{BUGS[Bug.RECURSIVE_TOPO]}, or a recursive destructor: a native engine that walks or frees a graph "
            f"{fixture.size} steps deep by recursion overflows its stack, and the process dies by a signal"
        )
    if any(word in message for word in _RECURSION_WORDS):
        return BUGS[Bug.RECURSIVE_TOPO]
    if fixture is None:
        return None
    ops = {step.op for step in fixture.program}
    pow_at_zero = any(step.op == "pow" and step.exponent == 0.0 for step in fixture.program)
    if "cannot be raised to a negative power" in message or ("ZeroDivisionError" in message and pow_at_zero):
        if pow_at_zero:
            return BUGS[Bug.POW_DERIVATIVE_AT_C_0] + "; in Python, 0.0 ** -1.0 raises ZeroDivisionError"
        return (
            "pow computed with Python's ** raises ZeroDivisionError for a zero base and a negative exponent, where the "
            "contract's value is infinite and the step fails with non-finite-value"
        )
    if "ZeroDivisionError" in message and "div" in ops:
        return (
            "a division by zero computed with Python's /, which raises ZeroDivisionError, where the contract's IEEE "
            "division gives an infinity or nan and the step fails with non-finite-value (or backward with a "
            "non-finite error)"
        )
    if "OverflowError" in message or "Numerical result out of range" in message or "math range error" in message:
        if "div" in ops and "Numerical result out of range" in message:
            return BUGS[Bug.DIV_DERIVATIVE_SQUARED] + "; in Python, b ** 2 raises OverflowError where b * b is inf"
        return (
            "a Python float operation (** or math.exp) raised OverflowError where the contract's result is infinite: "
            "the contract fails that step with non-finite-value (or backward with a non-finite error) instead"
        )
    if "math domain error" in message:
        return (
            "math.log (or another math function) raised ValueError outside its domain, where the contract's result is "
            "nan or -inf and the step fails with non-finite-value"
        )
    return None


def _changed_on_failure(fixture: Fixture, observations: list[Observation]) -> Optional[str]:
    previous: Optional[dict[str, float]] = None
    for step, observation in zip(fixture.program, observations):
        if step.id is not None:
            continue
        gradients = observation.gradients
        if observation.error is not None and previous is not None and gradients is not None:
            if any(gradients.get(name) != value for name, value in previous.items()):
                return BUGS[Bug.PARTIAL_COMMIT]
        if gradients is not None:
            previous = gradients
    return None


@dataclass(frozen=True)
class MutantScore:
    """How the corpus fares against one bug of the catalogue."""

    bug: str
    killed_by: Optional[tuple[str, str]]
    """The first (case, level) that fails, smallest programs first; level ``error`` when the engine crashes."""
    named_first_at: Optional[tuple[str, str]]
    """The first failing (case, level) whose diagnosis names this bug first, if any."""


def catalogue_score(corpus: list[Fixture], diagnosed: int = 5) -> list[MutantScore]:
    """Run every bug of the catalogue on the corpus in-process: is it caught, and is it named first?

    Fixtures are tried smallest program first (the ``replayable`` ones); for each bug at most
    ``diagnosed`` failing results are diagnosed (a diagnosis reruns the whole catalogue).
    """
    ordered = sorted(replayable(corpus), key=lambda fixture: (fixture.size, fixture.id))
    diagnoser = Diagnoser()
    scores = []
    for bug, description in BUGS.items():
        killed: Optional[tuple[str, str]] = None
        named: Optional[tuple[str, str]] = None
        tried = 0
        for fixture in ordered:
            if named is not None or tried >= diagnosed:
                break
            try:
                observations = MutantEngine(bug).run(fixture.program)
            except Exception as error:  # noqa: BLE001 - a crashing engine is caught as an adapter error
                killed = killed or (fixture.id, "error")
                tried += 1
                if diagnose_error(f"{type(error).__name__}: {error}", fixture) == description:
                    named = (fixture.id, "error")
                continue
            for level in fixture.levels:
                if not compare_level(fixture, observations, level, limit=1)[0]:
                    continue
                killed = killed or (fixture.id, level)
                tried += 1
                hints = diagnoser.diagnose(fixture, observations, level)
                if hints and hints[0] == description:
                    named = (fixture.id, level)
                    break
        scores.append(MutantScore(bug, killed, named))
    return scores

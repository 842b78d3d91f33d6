"""A minimal reproducer of a failed (case, level): the data the reports show (``conformance.reproduce`` finds it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .compare import Difference
from .program import Program, program_to_json


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
    shared_from: Optional[tuple[str, str]] = None
    """The (case, level) it was shrunk from, when it was shrunk from another case that fails by the same mistake."""

    def lines(self) -> list[str]:
        """The reproducer as the reports print it: a heading, one step a line (unless shared), its first difference.

        A reproducer shared from another case is printed there; here it gets the heading and its difference.
        """
        state = "" if self.complete else "; the time budget ran out, so a smaller one may exist"
        if self.shared_from is not None:
            case, level = self.shared_from
            whole = len(self.program) >= self.original_steps  # the source case could not be made smaller
            if whole and case == self.case:
                return [f"minimal reproducer: the case itself; no smaller program fails the same way{state}"]
            steps = (
                f"the {len(self.program)} steps of {case} (the whole case)"
                if whole
                else f"the {len(self.program)} steps shown at {case} [{level}]"
            )
            if case == self.case:
                head = f"minimal reproducer: {steps} fail this level too{state}"
            elif self.diagnosis:
                head = f"minimal reproducer: the same mistake's {steps[4:]} fail here the same way{state}"
            else:
                head = (
                    f"minimal reproducer: {steps} fail this level with the same kind of first difference "
                    f"(this case is too large to diagnose: the same mistake is likely, not shown){state}"
                )
            lines = [head]
        elif len(self.program) >= self.original_steps:
            return [f"minimal reproducer: the case itself; no smaller program fails the same way{state}"]
        else:
            head = f"minimal reproducer: {len(self.program)} of the case's {self.original_steps} steps{state}"
            lines = [head, *(f"  {index:>2}  {step.describe()}" for index, step in enumerate(self.program))]
        if self.difference is not None:
            lines.append(f"  its first difference: {self.difference.describe()}")
        if self.rerun:
            lines.append(f"  re-run: {self.rerun}")
        elif self.shared_from is None:
            lines.append("  save it as a case with --reproducers DIR")
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
            "shrunk_from": {"case": self.shared_from[0], "level": self.shared_from[1]} if self.shared_from else None,
            "rerun": self.rerun or None,
        }

"""Central-difference gradient check: an oracle independent of backward.

``gradcheck(f, inputs)`` builds ``f`` on variables to get the analytic
gradient by backward, and on constants at ``x +- step`` to get the numerical
one, ``(f(x+h) - f(x-h)) / 2h``. The default step is a power of two so that
``x +- h`` is exact for moderate x and a polynomial of low degree gives the
exact derivative (2x^2 at 2: analytic 8, numerical 8, scaled error 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .node import Node, constant, variable

DEFAULT_STEP = 2.0**-20
DEFAULT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class GradCheck:
    """One input's check: ``scaled_error = |analytic - numerical| / max(1, |analytic|, |numerical|)``."""

    analytic: float
    numerical: float
    scaled_error: float
    tolerance: float

    @property
    def passed(self) -> bool:
        """True when the scaled error is within the tolerance."""
        return self.scaled_error <= self.tolerance


def gradcheck(
    f: Callable[..., Node],
    inputs: Sequence[float],
    *,
    step: float = DEFAULT_STEP,
    tolerance: float = DEFAULT_TOLERANCE,
) -> tuple[GradCheck, ...]:
    """Compare backward's gradient of ``f(*inputs)`` with central differences, per input."""
    leaves = [variable(x) for x in inputs]
    f(*leaves).backward()
    results = []

    def value_at(index: int, shifted: float) -> float:
        args = [constant(v) for v in inputs]
        args[index] = constant(shifted)
        return f(*args).value

    for index, x in enumerate(inputs):
        numerical = (value_at(index, x + step) - value_at(index, x - step)) / (2.0 * step)
        analytic = leaves[index].grad
        assert analytic is not None
        scaled = abs(analytic - numerical) / max(1.0, abs(analytic), abs(numerical))
        results.append(GradCheck(analytic, numerical, scaled, tolerance))
    return tuple(results)

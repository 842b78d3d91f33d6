"""A fake engine in single precision: the reference's answers with every float rounded to float32 on the way out.

Values past float32's range become infinities and tiny ones underflow, as a float32 engine's would; used by
tests/test_consistency.py to check that such an engine gets one line saying what its failures have in common.
"""

from __future__ import annotations

import math
import struct
import sys
from typing import Any

from conformance.execute import run_program
from conformance.program import DECLARABLE_OPS, Program
from conformance.protocol import Observation, observations_from_data
from conformance.serve import serve

HELLO = {
    "engine": {"name": "float32-fake", "version": "0", "language": "python"},
    "ops": list(DECLARABLE_OPS),
    "levels": ["values", "gradients", "errors", "trace", "order"],
    "features": ["seed", "repeat"],
}


def float32(value: Any) -> Any:
    """Every float in a JSON-ready value, rounded to float32 (an infinity past its range)."""
    if isinstance(value, float) and math.isfinite(value):
        try:
            return struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            return "inf" if value > 0 else "-inf"
    if isinstance(value, list):
        return [float32(each) for each in value]
    if isinstance(value, dict):
        return {key: float32(each) for key, each in value.items()}
    return value


def run_case(program: Program, records: bool) -> list[Observation]:
    """The reference's observations, in single precision."""
    raw = [float32(observation.to_json()) for observation in run_program(program, record_pass=records)]
    return observations_from_data(raw, program)


if __name__ == "__main__":
    # ``declared``: the hello says so ("precision": "float32"), and the harness compares it as such.
    sys.exit(serve({**HELLO, "precision": "float32"} if sys.argv[1:] == ["declared"] else HELLO, run_case))

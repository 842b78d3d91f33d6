"""The reference engine as an adapter: ``python -m conformance.reference_adapter``.

It speaks docs/protocol.md on stdin/stdout like any other engine, and ships
with the kit, so an installed kit can check itself from any folder, and a
porter can watch a correct adapter's replies (``echo '{"type":"hello",
"protocol":2}' | python -m conformance.reference_adapter``).

It sends no protocol 2.1 step faults, on purpose: the reference is the contract, so it
answers every step with a value, gradients or a contract error, and anything else it
raises is a bug of the kit, which should cost the case loudly rather than one step;
a program naming an id never created stays the case's error too (``by_steps`` would
make it a step's fault).
"""

from __future__ import annotations

import sys

import reference

from .execute import run_program
from .program import DECLARABLE_OPS, Program
from .protocol import Observation
from .serve import serve

HELLO = {
    "engine": {"name": "reference", "version": reference.__version__, "language": "python"},
    "ops": list(DECLARABLE_OPS),
    "levels": ["values", "gradients", "errors", "trace", "order"],
    "features": ["seed", "repeat"],
}


def run_case(program: Program, records: bool) -> list[Observation]:
    """The program on a fresh reference graph; pass records only when the harness reads them."""
    return run_program(program, record_pass=records)


def main() -> int:
    """Serve the protocol until shutdown or end of input."""
    return serve(HELLO, run_case)


if __name__ == "__main__":
    sys.exit(main())

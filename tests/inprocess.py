"""An engine called in this process, behind the transport interface the runner uses (tests only)."""

from __future__ import annotations

from conformance.program import DECLARABLE_OPS
from conformance.protocol import FEATURES, LEVELS
from conformance.transport import Handshake


class EngineTransport:
    """An engine given as a function from (program, records) to observations, with a hello of the test's choosing.

    Without ``hello`` it declares every op, level and feature under ``name``.
    """

    def __init__(self, name, engine, hello=None):
        self.engine = engine
        self.hello = hello or Handshake(name, "0", "python", frozenset(DECLARABLE_OPS), frozenset(LEVELS), frozenset(FEATURES))

    def handshake(self):
        return self.hello

    def run(self, case, program, timeout=None, *, records=True):
        return self.engine(program, records)

    def close(self):
        pass

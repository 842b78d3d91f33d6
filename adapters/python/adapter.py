"""The reference engine behind the adapter protocol, run as a subprocess like any other engine.

Usage: python adapters/python/adapter.py   (speaks docs/protocol.md on stdin/stdout)
"""

from __future__ import annotations

import sys

import reference
from conformance.execute import run_program
from conformance.program import DECLARABLE_OPS
from conformance.serve import serve

HELLO = {
    "engine": {"name": "reference", "version": reference.__version__, "language": "python"},
    "ops": list(DECLARABLE_OPS),
    "levels": ["values", "gradients", "errors", "trace", "order"],
    "features": ["seed"],
}

if __name__ == "__main__":
    sys.exit(serve(HELLO, run_program))

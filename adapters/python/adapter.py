"""The reference engine behind the adapter protocol, run as a subprocess like any other engine.

Usage: python adapters/python/adapter.py   (speaks docs/protocol.md on stdin/stdout)
The adapter itself ships inside the kit as ``python -m conformance.reference_adapter``.
"""

from __future__ import annotations

import sys

from conformance.reference_adapter import main

if __name__ == "__main__":
    sys.exit(main())

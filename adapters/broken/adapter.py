"""A deliberately broken engine behind the protocol: the reference with one classic bug.

Usage: python adapters/broken/adapter.py BUG   (BUG from conformance.mutants.BUGS)

The kit's own tests run the canonical corpus against every bug and check that
it fails and that the diagnosis names the bug (docs/broken-engines.md).
"""

from __future__ import annotations

import sys

from conformance.mutants import BUGS, MutantEngine
from conformance.program import DECLARABLE_OPS
from conformance.serve import serve


def main(argv: list[str]) -> int:
    """Serve the protocol with the named bug."""
    if len(argv) != 1 or argv[0] not in BUGS:
        print(f"usage: adapter.py BUG, where BUG is one of: {', '.join(BUGS)}", file=sys.stderr)
        return 2
    hello = {
        "engine": {"name": f"broken-{argv[0]}", "version": "1.0.0", "language": "python"},
        "ops": list(DECLARABLE_OPS),
        "levels": ["values", "gradients", "errors", "trace", "order"],
        "features": ["seed"],
    }
    return serve(hello, MutantEngine(argv[0]).run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

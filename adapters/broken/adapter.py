"""A deliberately broken engine behind the protocol: the reference with one classic bug.

Usage: python adapters/broken/adapter.py BUG   (BUG from conformance.mutants.BUGS)

The kit's own tests run the canonical corpus against every bug and check that
it fails and that the diagnosis names the bug (docs/broken-engines.md). It speaks
protocol 2.1 through ``conformance.serve.by_steps``: an exception the engine raises
at one step (recursive-topo's RecursionError on a deep chain) is that step's fault,
the steps that depend on it are skipped, and the rest of the case is compared.
"""

from __future__ import annotations

import sys

from conformance.mutants import BUGS, MutantEngine
from conformance.program import DECLARABLE_OPS
from conformance.serve import by_steps, serve


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
    return serve(hello, by_steps(MutantEngine(argv[0]).start))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

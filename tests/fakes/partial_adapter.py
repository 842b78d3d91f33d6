"""A fake adapter that declares less than everything: some error kinds, or pass records without edges.

Usage: partial_adapter.py [--error-kinds K,K,...] [--trace nodes|full] [--levels L,L,...]
                          [--edges omit|empty|keep] [--bug BUG] [--wrong-adjoint] [--hello-extra JSON]

The engine is the reference (or the catalogue variant BUG). ``--edges``
decides what a pass record carries in its ``edges`` (default: omitted when the
trace is ``nodes``); ``--wrong-adjoint`` adds 1 to the pass adjoint of every
pass's first tracked node, stored gradients untouched, a bug only ``trace``
sees. ``--hello-extra`` merges a JSON object into the hello. Used by
tests/test_partial.py.
"""

import argparse
import json
import sys

from conformance.mutants import MutantEngine
from conformance.program import DECLARABLE_OPS
from conformance.serve import serve


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--error-kinds")
    parser.add_argument("--trace", default="full")
    parser.add_argument("--levels")
    parser.add_argument("--edges", choices=("omit", "empty", "keep"))
    parser.add_argument("--bug")
    parser.add_argument("--wrong-adjoint", action="store_true")
    parser.add_argument("--hello-extra", default="{}")
    args = parser.parse_args()
    default_levels = "values,gradients,errors,trace" + (",order" if args.trace == "full" else "")
    hello = {
        "engine": {"name": "partial", "version": "0", "language": "python"},
        "ops": list(DECLARABLE_OPS),
        "levels": (args.levels or default_levels).split(","),
        "features": ["seed"],
        "trace": args.trace,
        **json.loads(args.hello_extra),
    }
    if args.error_kinds is not None:
        hello["error_kinds"] = [kind for kind in args.error_kinds.split(",") if kind]
    edges = args.edges or ("omit" if args.trace == "nodes" else "keep")
    engine = MutantEngine(args.bug)

    def run(program):
        observations = [observation.to_json() for observation in engine.run(program)]
        for observation in observations:
            record = observation.get("pass")
            if record is None:
                continue
            if edges == "omit":
                del record["edges"]
            elif edges == "empty":
                record["edges"] = []
            if args.wrong_adjoint:
                first = next(node for node in record["nodes"] if node["tracked"])
                first["pass_adjoint"] = first["pass_adjoint"] + 1.0
        return observations

    return serve(hello, run)


if __name__ == "__main__":
    sys.exit(main())

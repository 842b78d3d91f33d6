"""A fake adapter that stops responding in one of the ways new adapters do.

Usage: unresponsive_adapter.py MODE TOKEN [CASE]
TOKEN only marks the process (and its children) so a test can look for leftovers in the process table.

Modes:
    silent-hello  writes its hello without flushing stdout, then waits: the classic unflushed adapter
    hang-run      answers hello, then writes every result without flushing (never delivered)
    hang-one      answers everything, but sleeps forever on CASE
    deaf          answers hello, then stops reading stdin for good
    orphan        starts a child that inherits stdout and sleeps, then exits at once
"""

import os
import subprocess
import sys
import time

from conformance.execute import run_program
from conformance.program import DECLARABLE_OPS, parse_program
from conformance.wire import dumps_line, loads

HELLO = {
    "type": "hello",
    "protocol": 2,
    "engine": {"name": "unresponsive", "version": "0", "language": "python"},
    "ops": list(DECLARABLE_OPS),
    "levels": ["values", "gradients", "errors", "trace", "order"],
    "features": ["seed"],
}


# A block-buffered stdout whatever PYTHONUNBUFFERED says: what is not flushed is not delivered.
OUT = open(sys.stdout.fileno(), "w", buffering=1 << 16, closefd=False)  # noqa: SIM115


def main():
    mode, token = sys.argv[1], sys.argv[2]
    target = sys.argv[3] if len(sys.argv) > 3 else None
    print(f"unresponsive adapter starting in mode {mode}", file=sys.stderr, flush=True)
    if mode == "orphan":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", token])
        print("started the engine in the background", file=sys.stderr, flush=True)
        return
    for line in sys.stdin:
        request = loads(line)
        if request["type"] == "shutdown":
            return
        if request["type"] == "hello":
            OUT.write(dumps_line(HELLO) + "\n")
            if mode != "silent-hello":
                OUT.flush()
            if mode == "deaf":
                time.sleep(3600)
            continue
        case = request["case"]
        reply = {
            "type": "result",
            "case": case,
            "observations": [o.to_json() for o in run_program(parse_program(request["program"], case))],
        }
        if mode == "hang-one" and case == target:
            print(f"stuck on {case}", file=sys.stderr, flush=True)
            if os.environ.get("UNRESPONSIVE_STUCK_FILE"):  # tells a test that the hang has begun
                open(os.environ["UNRESPONSIVE_STUCK_FILE"], "w").close()  # noqa: SIM115
            time.sleep(3600)
        OUT.write(dumps_line(reply) + "\n")
        if mode != "hang-run":
            OUT.flush()


if __name__ == "__main__":
    main()

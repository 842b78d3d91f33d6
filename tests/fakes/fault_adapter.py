"""A fake adapter that misbehaves on purpose: the reference, except for one protocol fault.

Usage: fault_adapter.py FAULT [CASE]
The fault happens on every run of CASE (default: every case), or at the
handshake for handshake faults. Used by tests/test_transport_faults.py.
"""

import sys
import time

from conformance.execute import run_program
from conformance.program import DECLARABLE_OPS, parse_program
from conformance.wire import dumps_line, loads

HELLO = {
    "type": "hello",
    "protocol": 2,
    "engine": {"name": "fake", "version": "0", "language": "python"},
    "ops": list(DECLARABLE_OPS),
    "levels": ["values", "gradients", "errors", "trace", "order"],
    "features": ["seed"],
}


def send(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main():
    fault = sys.argv[1]
    target = sys.argv[2] if len(sys.argv) > 2 else None
    print(f"fake adapter starting with fault {fault}", file=sys.stderr)
    for line in sys.stdin:
        request = loads(line)
        if request["type"] == "hello":
            if fault == "exit-before-handshake":
                print("fatal: cannot initialise the engine", file=sys.stderr)
                sys.exit(3)
            if fault == "wrong-version":
                send(dumps_line({**HELLO, "protocol": 99}))
                continue
            if fault == "bad-hello":
                send(dumps_line({**HELLO, "ops": ["add", "sqrt"]}))
                continue
            send(dumps_line(HELLO))
            continue
        if request["type"] == "shutdown":
            return
        case = request["case"]
        observations = [o.to_json() for o in run_program(parse_program(request["program"], case))]
        reply = {"type": "result", "case": case, "observations": observations}
        if target is None or case == target:
            print(f"about to misbehave on {case}", file=sys.stderr)
            if fault == "crash":
                print("panic: index out of range [3] with length 3", file=sys.stderr)
                sys.exit(101)
            if fault == "hang":
                time.sleep(3600)
            if fault == "garbage":
                send("Segmentation fault (core dumped) -- not JSON")
                continue
            if fault == "partial":
                sys.stdout.write(dumps_line(reply)[:40])
                sys.stdout.flush()
                sys.exit(0)
            if fault == "oversized":
                send('{"type": "result", "padding": "' + "x" * 3_000_000 + '"}')
                continue
            if fault == "wrong-case":
                reply["case"] = "some/other-case"
            if fault == "wrong-count":
                reply["observations"] = observations[:-1]
            if fault == "error-reply":
                reply = {"type": "error", "case": case, "message": "unsupported step kind"}
            if fault == "log-on-stdout":
                send("DEBUG: computing gradients")
        send(dumps_line(reply))


if __name__ == "__main__":
    main()

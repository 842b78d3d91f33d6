"""A fake adapter that misbehaves on purpose: the reference, except for one protocol fault.

Usage: fault_adapter.py FAULT [CASE]
The fault happens on every run of CASE (default: every case), or at the
handshake for handshake faults. Used by tests/test_transport_faults.py.

Faults seen in real ports: ``segfault``/``abort`` (a crash by signal, as a stack overflow in
C++ or Rust ends), ``bare-nan`` (printf("%.17g") writes a bare nan deep in a long reply),
``jackson`` (Jackson's default "Infinity"/"NaN"), ``close-stdout`` (Jackson's
writeValue(System.out, ...) writes the hello without a newline and closes stdout),
``log-before-hello`` (a library logs to stdout at start-up; with FAULT_ONCE_FILE set, only on
the first start), ``escape-before-hello`` (mvn exec:java's ESC[0m), ``java-stack-overflow``
(a StackOverflowError's thousand frames on stderr), ``slow-start`` (a JVM), ``bad-hello-many``.
"""

import os
import re
import signal
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


def first_start():
    """True on the first start only, when FAULT_ONCE_FILE names a file that does not exist yet (it is created)."""
    marker = os.environ.get("FAULT_ONCE_FILE")
    if not marker:
        return True
    if os.path.exists(marker):
        return False
    open(marker, "w").close()  # noqa: SIM115
    return True


def killed_by(signum):
    sys.stdout.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def main():
    fault = sys.argv[1]
    target = sys.argv[2] if len(sys.argv) > 2 else None
    print(f"fake adapter starting with fault {fault}", file=sys.stderr)
    if fault == "slow-start":
        time.sleep(3)
    if fault == "log-before-hello" and first_start():
        send("[main] INFO  org.example.Engine - engine ready")
    for line in sys.stdin:
        request = loads(line)
        if request["type"] == "hello":
            if fault == "escape-before-hello":
                send("\x1b[0m" + dumps_line(HELLO))
                continue
            if fault == "close-stdout":
                sys.stdout.write(dumps_line(HELLO))  # no newline, and then the stream is closed
                sys.stdout.flush()
                os.close(1)
                continue
            if fault == "bad-hello-many":
                bad = {**HELLO, "ops": ["add", "cbrt"], "levels": ["values", "grads"], "trace": "edges"}
                bad["engine"] = {"name": "fake", "version": "0"}
                send(dumps_line(bad))
                continue
            if fault == "exit-before-handshake":
                print("fatal: cannot initialise the engine", file=sys.stderr)
                sys.exit(3)
            if fault == "wrong-version":
                send(dumps_line({**HELLO, "protocol": 99}))
                continue
            if fault == "bad-hello":
                send(dumps_line({**HELLO, "ops": ["add", "cbrt"]}))
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
            if fault == "segfault":
                killed_by(signal.SIGSEGV)
            if fault == "abort":
                killed_by(signal.SIGABRT)
            if fault == "java-stack-overflow":
                print('Exception in thread "main" java.lang.StackOverflowError', file=sys.stderr)
                for _ in range(1024):
                    print("\tat org.example.Node.backward(Node.java:42)", file=sys.stderr)
                sys.exit(1)
            if fault == "bare-nan":  # the last value of the reply, as printf("%.17g") writes a nan
                text = dumps_line(reply)
                last = list(re.finditer(r'"value":[-0-9.e+]+', text))[-1]
                send(text[: last.start()] + '"value":nan' + text[last.end() :])
                continue
            if fault == "jackson":
                text = dumps_line(reply)
                for wire_word, jackson in (('"inf"', '"Infinity"'), ('"-inf"', '"-Infinity"'), ('"nan"', '"NaN"')):
                    text = text.replace(wire_word, jackson)
                send(text)
                continue
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

"""``serve()`` keeps the protocol stream safe: what a hook prints to stdout reaches stderr, never the harness.

A Python adapter built on ``serve`` whose engine calls ``print()`` and writes to file descriptor 1
directly (as a C extension's ``printf`` does) still answers with protocol lines only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ADAPTER = """
import os, sys
from conformance.execute import run_program
from conformance.serve import serve

def run_case(program, records):
    print("print() from the engine")
    os.write(1, b"a C-level write to fd 1\\n")
    sys.stdout.write("sys.stdout.write from the engine\\n")
    return run_program(program, record_pass=records)

hello = {"engine": {"name": "noisy", "version": "0", "language": "python"}, "ops": ["add"],
         "levels": ["values", "gradients"], "features": []}
print("printed before serve() starts")
sys.exit(serve(hello, run_case))
"""


def test_a_hook_that_prints_to_stdout_leaves_the_protocol_intact_and_the_text_shows_on_stderr(tmp_path: Path) -> None:
    script = tmp_path / "noisy_adapter.py"
    script.write_text(ADAPTER)
    program = [{"id": "x", "op": "variable", "value": 2.0}, {"op": "backward", "output": "x"}]
    requests = [{"type": "hello", "protocol": 2}, {"type": "run", "case": "c", "program": program}, {"type": "shutdown"}]
    out = subprocess.run(
        [sys.executable, str(script)],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    # Only what came before serve() took over is on stdout; every line after it is a protocol message.
    first, *protocol = out.stdout.splitlines()
    assert first == "printed before serve() starts"
    replies = [json.loads(line) for line in protocol]
    assert [reply["type"] for reply in replies] == ["hello", "result"]
    assert replies[1]["observations"][0] == {"value": 2.0, "tracked": True}
    assert replies[1]["observations"][1]["gradients"] == {"x": 1.0}
    for text in ("print() from the engine", "a C-level write to fd 1", "sys.stdout.write from the engine"):
        assert text in out.stderr and text not in out.stdout


def test_serve_given_its_own_streams_leaves_the_process_stdout_alone() -> None:
    import io
    import os

    from conformance.serve import serve

    before = os.fstat(1)
    out = io.StringIO()
    assert serve({"engine": {}}, lambda program: [], io.StringIO('{"type": "hello"}\n'), out) == 0
    assert json.loads(out.getvalue())["type"] == "hello"
    assert sys.stdout is not sys.stderr and os.fstat(1) == before

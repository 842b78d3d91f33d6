"""The published protocol schema (docs/protocol.schema.json) validates every reply of every built-in adapter.

Each adapter is started as a porter's harness would start it, asked hello and then every canonical
case, and every line it writes to stdout is checked against the schema offline, with the
schema's own validator (jsonschema), not with the harness's decoder.
"""

from __future__ import annotations

import json
import subprocess

import jsonschema
import pytest

from conformance.commands.regen import SCHEMA_FILE, schema_text
from conformance.contract import docs_dir
from conformance.expected import find, load_expected
from conformance.fixture import FIXTURES_DIR, load_corpus
from conformance.protocol import PROTOCOL_VERSION, run_request
from conformance.registry import REGISTRY, load_registry
from conformance.runner import reads_records
from conformance.wire import dumps_line, loads

CORPUS = load_corpus(FIXTURES_DIR)
SCHEMA = json.loads((docs_dir() / SCHEMA_FILE).read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
#: torch is optional and never installed by the set-up; it is checked when present. tinygrad is left out: its
#: deepest cases take half a minute each (adapters/tinygrad/adapter.py).
ADAPTERS = ["python", "micrograd", "micrograd-rust", "autograd", "rust", "go", "torch"]


def test_the_committed_schema_is_the_generated_one():
    assert (docs_dir() / SCHEMA_FILE).read_text(encoding="utf-8") == schema_text()
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def _errors(line: str) -> list[str]:
    return [f"at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in VALIDATOR.iter_errors(loads(line))]


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_reply_of_a_built_in_adapter_matches_the_schema(name):
    adapter = load_registry(REGISTRY)[name]
    if adapter.missing():
        pytest.skip(f"{name}: {adapter.missing()}")
    failure = adapter.run_build()
    assert failure is None, failure
    hello = dumps_line({"type": "hello", "protocol": PROTOCOL_VERSION})
    shutdown = dumps_line({"type": "shutdown"})
    first = subprocess.run(adapter.argv(), cwd=adapter.cwd, input=f"{hello}\n{shutdown}\n", capture_output=True, text=True)
    features = set(loads(first.stdout.splitlines()[0]).get("features", []))
    # Every case, as the harness sends it (records:false where no level reads a pass record), but those
    # needing a feature the adapter does not declare (the million-node chain without repeat) and those its
    # expected failures list at every level: they may end the engine's process (micrograd-rust's SIGSEGV).
    expected = load_expected(adapter.expected_failures_path())
    known = {f.id for f in CORPUS if all(find(expected, f.id, level) for level in f.levels)}
    corpus = [f for f in CORPUS if set(f.features) <= features and f.id not in known]
    requests = [hello, *(run_request(f.id, f.program, reads_records(f.levels)).decode() for f in corpus), shutdown]
    done = subprocess.run(
        adapter.argv(), cwd=adapter.cwd, input="\n".join(requests) + "\n", capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == len(corpus) + 1
    bad = {index: problems for index, line in enumerate(lines) if (problems := _errors(line))}
    assert not bad, {("hello" if i == 0 else corpus[i - 1].id): p[:3] for i, p in list(bad.items())[:5]}


@pytest.mark.parametrize(
    "reply, where",
    [
        ({"type": "result", "case": "c", "observations": [{"value": "1.5", "tracked": True}]}, "observations/0"),
        (
            {"type": "result", "case": "c", "observations": [{"error": {"kind": "non-finite-seed", "seed": "inf", "node": "x"}}]},
            "error",
        ),
        (
            {"type": "result", "case": "c", "observations": [{"error": {"kind": "non-finite-leaf", "operation": "variable"}}]},
            "error",
        ),
        (
            {"type": "hello", "protocol": 1, "engine": {"name": "e", "version": "0", "language": "c"}, "ops": [], "levels": []},
            "protocol",
        ),
        (
            {
                "type": "hello",
                "protocol": 2,
                "engine": {"name": "e", "version": "0", "language": "c"},
                "ops": ["cbrt"],
                "levels": [],
            },
            "ops",
        ),
    ],
)
def test_the_schema_refuses_what_the_protocol_forbids(reply, where):
    # A number written as another string, an error with a field its kind does not have or
    # without one it has, the old protocol version, an op nobody knows.
    problems = _errors(json.dumps(reply))
    assert problems, reply
    assert any(where in problem for problem in problems), problems

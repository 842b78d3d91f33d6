"""Partial declarations in hello: a port that reports fewer error kinds, or pass records without edges."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.fixture import FIXTURES_DIR, load_corpus
from conformance.mutants import MutantEngine
from conformance.program import DECLARABLE_OPS
from conformance.protocol import CREATION_ERROR_KINDS, ERROR_KINDS, LEVELS
from conformance.runner import run_adapter
from conformance.transport import AdapterFault, DirectTransport, Handshake

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")
FAKE = f"{sys.executable} {ROOT / 'tests' / 'fakes' / 'partial_adapter.py'}"
#: Five of the eight kinds: one creation error and two backward errors left out.
LEFT_OUT = ("non-finite-leaf", "non-finite-contribution", "non-finite-accumulated-gradient")
FIVE_KINDS = [kind for kind in ERROR_KINDS if kind not in LEFT_OUT]
HELLO = {"type": "hello", "protocol": 2, "engine": {"name": "e", "version": "0", "language": "c"}, "ops": ["add"]}


def conformance(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, cwd=ROOT)


def run_json(tmp_path, command, *args):
    report = tmp_path / "report.json"
    out = conformance("run", "--command", command, "--json", report, *args)
    return out, json.loads(report.read_text())


def test_a_hello_without_the_new_fields_declares_every_error_kind_and_full_traces():
    hello = Handshake.parse({**HELLO, "levels": list(LEVELS)})
    assert hello.error_kinds == frozenset(ERROR_KINDS) and hello.trace == "full" and hello.partial() == []


def test_a_partial_hello_is_parsed_and_says_what_it_leaves_out():
    hello = Handshake.parse({**HELLO, "levels": ["values", "trace"], "error_kinds": FIVE_KINDS, "trace": "nodes"})
    assert hello.error_kinds == frozenset(FIVE_KINDS) and hello.trace == "nodes"
    assert hello.partial() == [
        "errors: 5 of 8 kinds (not non-finite-leaf, non-finite-contribution, non-finite-accumulated-gradient)",
        "trace: nodes only",
    ]


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"error_kinds": ["non-finite-leaf", "nan-seed"]}, "hello: field 'error_kinds': unknown 'nan-seed' (known: "),
        ({"error_kinds": "non-finite-leaf"}, "hello: at $.error_kinds: Expected `array | null`, got `str`"),
        ({"trace": "edges"}, "hello: field 'trace': 'edges' is not one of 'full', 'nodes'"),
        ({"trace": ["nodes"]}, "hello: at $.trace: Expected `str`, got `array`"),
        (
            {"trace": "nodes", "levels": ["values", "trace", "order"]},
            "hello: field 'trace': 'nodes' cannot be declared with the order level",
        ),
    ],
)
def test_an_unknown_or_contradictory_hello_value_is_a_handshake_error_naming_the_field(fields, message):
    with pytest.raises(AdapterFault) as raised:
        Handshake.parse({**HELLO, "levels": ["values"], **fields})
    assert raised.value.message.startswith(message)


def test_a_contradictory_hello_is_reported_on_the_command_line_and_no_case_runs(tmp_path):
    out, report = run_json(tmp_path, f"{FAKE} --trace nodes --levels values,trace,order", "--case", "seed/*")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "its hello was refused, so nothing was run on it" in out.stdout
    assert "hello: field 'trace': 'nodes' cannot be declared with the order level" in out.stdout
    assert report["adapters"][0]["passed"] == 0


def expected_gaps(fixture, kinds):
    """The (level -> kind) a port reporting only ``kinds`` cannot be compared at, read off the fixture's steps."""
    gaps = {}
    steps = list(zip(fixture.program, fixture.expected))
    for index, (_, observation) in enumerate(steps):
        kind = None if observation.error is None else observation.error.kind
        if kind is None or kind in kinds:
            continue
        later = [o for s, o in steps[index + 1 :] if s.op in ("backward", "zero_grad")]
        creation = kind in CREATION_ERROR_KINDS
        levels = {"values" if creation else "errors"}
        levels |= {"gradients"} if any(o.error is None for o in later) else set()
        levels |= {"errors"} if creation and any(o.error is not None for o in later) else set()
        levels |= {"trace"} if not creation and any(o.pass_ is not None for o in later) else set()
        for level in levels & set(fixture.levels):
            gaps.setdefault(level, kind)
    return gaps


def test_a_port_declaring_five_error_kinds_gets_exactly_the_levels_those_errors_touch_unsupported(tmp_path):
    out, report = run_json(tmp_path, f"{FAKE} --error-kinds {','.join(FIVE_KINDS)}")
    assert out.returncode == 0, out.stdout[-3000:]
    assert "declares less: errors: 5 of 8 kinds (not non-finite-leaf, non-finite-contribution" in out.stdout
    (adapter,) = report["adapters"]
    assert adapter["error_kinds"] == sorted(FIVE_KINDS) and adapter["partial"][0].startswith("errors: 5 of 8 kinds")
    # The fake declares the seed feature only: the million-node chain is unsupported for that, not for an error kind.
    repeated = {fixture.id for fixture in load_corpus(FIXTURES_DIR) if "repeat" in fixture.features}
    unsupported = {
        (r["case"], r["level"]): r["message"]
        for r in report["results"]
        if r["outcome"] == "unsupported" and r["case"] not in repeated
    }
    want = {
        (fixture.id, level): kind
        for fixture in load_corpus(FIXTURES_DIR)
        for level, kind in expected_gaps(fixture, FIVE_KINDS).items()
    }
    assert set(unsupported) == set(want)
    for key, kind in want.items():
        assert f"expects error kind {kind}, which the adapter does not report" in unsupported[key]
    # Spot checks: a creation error, a backward error with passes after it, and the rest of each case still runs.
    assert unsupported.keys() >= {("errors/non-finite-leaf-variable", "values"), ("errors/non-finite-contribution", "errors")}
    outcomes = {(r["case"], r["level"]): r["outcome"] for r in report["results"]}
    assert outcomes[("errors/non-finite-contribution", "values")] == "passed"
    assert all(outcome in ("passed", "unsupported") for outcome in outcomes.values())


class MutantTransport(DirectTransport):
    """A catalogue engine in-process, with the error kinds it declares."""

    def __init__(self, bug, kinds):
        self.engine = MutantEngine(bug)
        everything = (frozenset(DECLARABLE_OPS), frozenset(LEVELS), frozenset({"seed"}), frozenset(kinds))
        self.hello = Handshake("mutant", "0", "python", *everything)

    def handshake(self):
        return self.hello

    def run(self, case, program, timeout=None, *, records=True):
        return self.engine.run(program, records)

    def close(self):
        pass


@pytest.mark.parametrize(
    "bug, kind",
    [
        ("leaf-unchecked", "non-finite-leaf"),
        ("derivative-unchecked", "non-finite-local-derivative"),
        ("contribution-unchecked", "non-finite-contribution"),
        ("pass-adjoint-unchecked", "non-finite-pass-adjoint"),
        ("accumulation-unchecked", "non-finite-accumulated-gradient"),
    ],
)
def test_an_engine_without_one_check_passes_everything_comparable_once_it_leaves_that_kind_out(bug, kind):
    # The proof that the unsupported levels are the right ones: an engine that really lacks the check
    # fails where it claims the kind, and passes every level left once it does not.
    corpus = [fixture for fixture in load_corpus(FIXTURES_DIR) if fixture.size < 1000]
    claims = run_adapter("mutant", MutantTransport(bug, ERROR_KINDS), corpus, [])
    assert claims.count("failed") > 0
    honest = run_adapter("mutant", MutantTransport(bug, [k for k in ERROR_KINDS if k != kind]), corpus, [])
    assert honest.count("failed") == honest.count("error") == 0
    assert {r.case for r in honest.results if kind in r.message} >= {r.case for r in claims.results if r.outcome == "failed"}


@pytest.mark.parametrize("edges", ["omit", "empty"])
def test_a_port_with_node_only_traces_passes_trace_on_a_correct_engine(tmp_path, edges):
    out, report = run_json(tmp_path, f"{FAKE} --trace nodes --edges {edges}")
    assert out.returncode == 0, out.stdout[-3000:]
    assert "declares less: trace: nodes only" in out.stdout
    (adapter,) = report["adapters"]
    traced = sum(1 for fixture in load_corpus(FIXTURES_DIR) if "trace" in fixture.levels)  # every case with a pass record
    assert adapter["levels"]["trace"]["passed"] == traced and adapter["levels"]["trace"]["failed"] == 0
    assert adapter["levels"]["order"]["unsupported"] == traced and adapter["trace"] == "nodes"


def test_a_port_with_node_only_traces_fails_trace_when_a_pass_adjoint_is_wrong(tmp_path):
    out, report = run_json(tmp_path, f"{FAKE} --trace nodes --wrong-adjoint", "--case", "seed/reused-square")
    assert out.returncode == 1
    outcomes = {r["level"]: r for r in report["results"]}
    assert outcomes["trace"]["outcome"] == "failed" and outcomes["gradients"]["outcome"] == "passed"
    assert outcomes["trace"]["message"].startswith("step 3: observations[3].pass.nodes[x].pass_adjoint: expected 8.0, got 9.0")


def test_a_full_trace_port_that_omits_edges_still_fails(tmp_path):
    out, report = run_json(tmp_path, f"{FAKE} --edges omit", "--case", "seed/reused-square")
    assert out.returncode == 1
    (trace,) = [r for r in report["results"] if r["level"] == "trace"]
    # Edges left out read as no edges (allowed only with "trace": "nodes"), so the first one is missing.
    assert trace["outcome"] == "failed" and "pass.edges[loss:0]" in trace["message"]
    assert "operand edge missing" in trace["message"]

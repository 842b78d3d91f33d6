"""The harness survives every adapter fault: the case is charged with a clear error, the rest go on."""

from __future__ import annotations

import collections
import sys
import time
from pathlib import Path

import pytest

from conformance.fixture import load_corpus
from conformance.program import parse_program
from conformance.protocol import run_request
from conformance.runner import run_adapter
from conformance.transport import AHEAD, PIPE_BYTES, AdapterFault, SubprocessTransport

ROOT = Path(__file__).resolve().parent.parent
FAKE = Path(__file__).parent / "fakes" / "fault_adapter.py"
CASES = [f for f in load_corpus() if f.id in ("repeated/x-mul-x", "seed/reused-square", "structure/diamond")]
TARGET = "seed/reused-square"


def run_with(fault, target=TARGET, timeout=5.0, max_line=1_000_000):
    transport = SubprocessTransport([sys.executable, str(FAKE), fault, *([target] if target else [])], timeout=timeout)
    transport.max_line = max_line
    try:
        return run_adapter("fake", transport, CASES, []), transport
    finally:
        transport.close()


def outcomes(run):
    found = {}
    for result in run.results:
        found.setdefault(result.case, set()).add(result.outcome)
    return found


@pytest.mark.parametrize(
    "fault, message",
    [
        ("crash", "exited with status 101 during case seed/reused-square"),
        ("hang", "timed out after 1 s waiting for the adapter during case seed/reused-square"),
        ("garbage", "garbage on stdout during case seed/reused-square"),
        ("partial", "it wrote a partial line"),
        ("oversized", "oversized reply during case seed/reused-square"),
        ("wrong-case", "reply names case 'some/other-case'"),
        ("wrong-count", "result has 6 observations for 7 steps"),
        ("error-reply", "the adapter could not run the case: unsupported step kind"),
        ("log-on-stdout", "garbage on stdout"),
    ],
)
def test_a_fault_in_one_case_is_charged_to_it_and_the_other_cases_still_pass(fault, message):
    run, transport = run_with(fault, timeout=1.0 if fault == "hang" else 5.0)
    assert outcomes(run) == {"repeated/x-mul-x": {"passed"}, TARGET: {"error"}, "structure/diamond": {"passed"}}
    error = next(r for r in run.results if r.outcome == "error")
    assert message in error.message
    if fault in ("crash", "garbage", "hang"):
        assert "about to misbehave on seed/reused-square" in error.message  # the stderr tail is shown
    if fault != "log-on-stdout":
        assert transport.restarts == 1


def test_a_crash_shows_the_tail_of_stderr():
    run, _ = run_with("crash")
    error = next(r for r in run.results if r.outcome == "error")
    assert "panic: index out of range [3] with length 3" in error.message


@pytest.mark.parametrize(
    "fault, message",
    [
        ("exit-before-handshake", "exited with status 3 during the handshake"),
        ("wrong-version", "wrong protocol version: the adapter speaks 99, the harness speaks 2"),
        ("bad-hello", "hello: field 'ops': unknown 'sqrt'"),
    ],
)
def test_a_handshake_fault_errors_every_case_without_hanging(fault, message):
    run, _ = run_with(fault, target=None)
    errors = [r for r in run.results if r.outcome == "error"]
    assert errors and all(message in r.message for r in errors)
    if fault == "exit-before-handshake":
        assert "fatal: cannot initialise the engine" in run.results[0].message
        assert not run.down or not run.down.refused
    else:
        # A hello that came and was refused does not change between starts: one start, one diagnosis.
        assert {r.case for r in errors} == {run.results[0].case}
        assert {r.outcome for r in run.results if r.case != run.results[0].case} == {"not-run"}
        assert run.down is not None and run.down.refused and run.down.faults == 1
        assert run.down.describe().startswith("fake: its hello was refused, so nothing was run on it")
        assert message in run.down.describe()


def test_an_adapter_that_cannot_be_started_is_given_up_on_after_three_tries():
    transport = SubprocessTransport(["/nonexistent/adapter"], timeout=1)
    run = run_adapter("missing", transport, CASES + CASES, [])
    errors = [r for r in run.results if r.outcome == "error"]
    assert {r.case for r in errors} == {c.id for c in CASES}  # three failed starts, one per case
    assert "cannot start adapter /nonexistent/adapter" in errors[0].message
    assert {r.outcome for r in run.results[len(errors) :]} == {"not-run"}
    assert run.down is not None and run.down.faults == 3
    assert "cannot start adapter /nonexistent/adapter" in run.down.describe()


def test_a_healthy_adapter_stays_one_process_for_many_cases():
    run, transport = run_with("crash", target="no/such-case")
    assert {r.outcome for r in run.results} == {"passed"} and transport.restarts == 0


def test_requests_are_sent_ahead_and_change_no_result(monkeypatch):
    corpus = [f for f in load_corpus() if "repeat" not in f.features]
    runs = {}
    encoded: collections.Counter[str] = collections.Counter()

    def counted(case, program, records=True):
        encoded[case] += 1
        return run_request(case, program, records)

    monkeypatch.setattr("conformance.transport.run_request", counted)
    for ahead in (0, 2, AHEAD):
        encoded.clear()
        monkeypatch.setattr("conformance.runner.AHEAD", ahead)
        transport = SubprocessTransport([sys.executable, str(ROOT / "adapters/python/adapter.py")])
        asked = collections.Counter()
        send_ahead = transport.send_ahead

        def asking(case, program, records=True, send_ahead=send_ahead, asked=asked):
            asked[case] += 1
            return send_ahead(case, program, records=records)

        transport.send_ahead = asking
        try:
            runs[ahead] = run_adapter("python", transport, corpus, [])
        finally:
            transport.close()
        # The runner goes through the cases sent already only once: about one ask per case, not one per case and reply.
        assert sum(asked.values()) <= 2 * len(corpus)
        # Every case but the first is sent ahead, the large ones too (a part at a time, as the pipe takes them).
        assert transport.sent_ahead == (len(corpus) - 1 if ahead else 0)
        assert max(len(run_request(f.id, f.program)) for f in corpus) > 64 * 1024  # more than a default pipe holds
        # Each request is encoded once.
        assert max(encoded.values()) == 1 and len(encoded) == len(corpus)
    for ahead in (2, AHEAD):
        assert [(r.case, r.level, r.outcome) for r in runs[ahead].results] == [
            (r.case, r.level, r.outcome) for r in runs[0].results
        ]
    assert {r.outcome for r in runs[2].results} == {"passed"}


def test_a_case_sent_ahead_is_sent_again_after_the_case_before_it_crashed():
    run, transport = run_with("crash")
    assert transport.sent_ahead >= 1  # diamond was sent while the adapter was still alive
    assert outcomes(run)["structure/diamond"] == {"passed"}


def neg_chain(length):
    """A program of ``length`` negations of one variable, each its own step: about 30 request bytes a step."""
    steps = [{"id": "x", "op": "variable", "value": 0.5}]
    steps += [{"id": f"n{i}", "op": "neg", "operands": [steps[-1]["id"]]} for i in range(length)]
    return parse_program(steps, "test")


def deaf_adapter(token):
    """The fake that answers hello and then stops reading its input."""
    unresponsive = Path(__file__).parent / "fakes" / "unresponsive_adapter.py"
    return SubprocessTransport([sys.executable, str(unresponsive), "deaf", token])


def test_an_adapter_that_stops_reading_its_input_is_named_with_the_request_left_unsent():
    # A program whose request is larger than the pipe, to an adapter that answers hello and then stops reading.
    program = neg_chain(PIPE_BYTES // 30)
    assert len(run_request("big/chain", program)) > PIPE_BYTES
    transport = deaf_adapter("stops-reading")
    started = time.monotonic()
    try:
        with pytest.raises(AdapterFault) as fault:
            transport.run("big/chain", program, timeout=1.0)
    finally:
        transport.close()
    assert time.monotonic() - started < 10  # the start, a second of waiting, the kill
    message = str(fault.value)
    assert "timed out after 1 s writing the request during case big/chain" in message
    assert "the adapter stopped reading its input with" in message and "bytes of the request still unsent" in message
    assert fault.value.kind == "timeout" and "one line at a time" in fault.value.hint


def test_requests_sent_ahead_to_an_adapter_that_does_not_read_stop_at_a_bound():
    # Each request a third of the pipe: the pipe takes three, the harness keeps up to a pipe's worth more, then stops.
    program = neg_chain(PIPE_BYTES // 90)
    size = len(run_request("big/0", program))
    assert PIPE_BYTES // 4 < size < PIPE_BYTES // 2
    transport = deaf_adapter("bounded-ahead")
    try:
        transport.handshake()
        sent = [transport.send_ahead(f"big/{i}", program) for i in range(40)]
    finally:
        transport.close()
    accepted = sent.count(True)
    assert sent == [True] * accepted + [False] * (40 - accepted)
    assert 3 <= accepted <= 2 * PIPE_BYTES // size + 2

"""The harness survives every adapter fault: the case is charged with a clear error, the rest go on."""

from __future__ import annotations

import collections
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from conformance.faults import STDERR_LINES, StderrLog, quote
from conformance.fixture import load_corpus
from conformance.program import parse_program
from conformance.protocol import Misspelt, decode_reply, run_request
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
    if fault == "hang":  # it answered the case before: slow, not unflushed
        assert "the adapter answered 1 case(s), this one took over its budget of 1 s" in error.message
        assert "did the adapter flush stdout" not in error.message
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
        ("bad-hello", "hello: field 'ops': unknown 'cbrt'"),
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


def test_a_missing_executable_is_named_and_given_up_on_at_once():
    transport = SubprocessTransport(["/nonexistent/adapter"], timeout=1)
    run = run_adapter("missing", transport, CASES + CASES, [])
    errors = [r for r in run.results if r.outcome == "error"]
    assert {r.case for r in errors} == {CASES[0].id}  # one start: a missing file does not appear between starts
    assert "cannot start: no such file: /nonexistent/adapter" in errors[0].message
    assert {r.outcome for r in run.results[len(errors) :]} == {"not-run"}
    assert run.down is not None and run.down.refused and run.down.faults == 1
    assert run.down.verdict == "it cannot be started"
    assert run.down.describe().startswith("missing: it cannot be started, so nothing was run on it")
    assert "unresponsive" not in run.down.describe() and "timeouts or failed starts" not in run.down.describe()
    assert "not run: missing cannot be started" in run.results[-1].message


def test_a_file_that_is_not_executable_is_named_as_such(tmp_path):
    script = tmp_path / "adapter.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    transport = SubprocessTransport([str(script)])
    with pytest.raises(AdapterFault) as fault:
        transport.handshake()
    assert fault.value.kind == "spawn" and fault.value.final == "it cannot be started"
    assert f"cannot start: not executable: {script} (permission denied)" in fault.value.message
    assert "chmod +x" in fault.value.hint


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


def fault_transport(fault, target=None, **options):
    """A transport to the fault adapter, misbehaving on ``target`` (every case when None)."""
    return SubprocessTransport([sys.executable, str(FAKE), fault, *([target] if target else [])], **options)


def fault_on(fault, case_id, **options):
    """The AdapterFault the fault adapter raises on one case of the corpus."""
    fixture = next(f for f in load_corpus() if f.id == case_id)
    transport = fault_transport(fault, case_id, **options)
    try:
        with pytest.raises(AdapterFault) as raised:
            transport.run(fixture.id, fixture.program)
    finally:
        transport.close()
    return raised.value


@pytest.mark.parametrize("fault, name", [("segfault", "SIGSEGV"), ("abort", "SIGABRT")])
def test_a_crash_by_signal_names_the_signal(fault, name):
    error = fault_on(fault, TARGET)
    code = -getattr(signal, name)
    assert f"the adapter was killed by {name} (exit status {code}) during case seed/reused-square" in error.message
    assert "stack overflow" not in error.hint  # a small case: nothing says the stack


def test_a_crash_by_signal_on_a_deep_case_names_the_stack_overflow_it_usually_is():
    error = fault_on("segfault", "structure/deep-chain-10000")
    assert "killed by SIGSEGV (exit status -11) during case structure/deep-chain-10000" in error.message
    assert "this case is deep (10004 steps): a stack overflow is the usual cause" in error.hint
    assert "recursive walk" in error.hint and "recursive destructor of a linked chain of nodes" in error.hint


def test_a_crash_by_signal_on_a_deep_case_is_named_on_the_result_as_the_catalogues_recursive_walk():
    from conformance.mutants import BUGS, Bug
    from conformance.runner import Outcome, run_adapter

    deep = [f for f in load_corpus() if f.id in ("structure/deep-chain-10000", "seed/reused-square")]
    transport = fault_transport("segfault", "structure/deep-chain-10000")
    try:
        run = run_adapter("fake", transport, deep, [])
    finally:
        transport.close()
    by_case = {r.case: r for r in run.results}
    crashed = by_case["structure/deep-chain-10000"]
    assert crashed.outcome == Outcome.ERROR and "SIGSEGV" in crashed.message
    assert any(BUGS[Bug.RECURSIVE_TOPO] in hint and "recursive destructor" in hint for hint in crashed.diagnosis)
    assert by_case["seed/reused-square"].diagnosis == ()  # a crash-free small case is not given the name


def test_a_bare_nan_deep_in_a_reply_is_quoted_where_it_is_with_the_protocols_spelling():
    error = fault_on("bare-nan", "structure/fan-out-16")
    assert error.kind == "garbage"
    found = re.search(r"a reply during case structure/fan-out-16 is not valid JSON at byte (\d+) of (\d+): ", error.message)
    assert found and int(found.group(1)) > 1000  # well past what a 200-character excerpt shows
    assert '"value":nan' in error.message  # the bytes around the bad one
    assert 'the bare token nan is not how the protocol writes nan: write the string "nan"' in error.message
    assert "garbage on stdout" not in error.message and 'the JSON strings "nan", "inf" and "-inf"' in error.hint


def test_a_log_line_on_stdout_is_still_garbage_quoted_from_its_start():
    error = fault_on("garbage", TARGET)
    assert "garbage on stdout during case seed/reused-square: 'Segmentation fault (core dumped) -- not JSON' is not JSON" in (
        error.message
    )
    assert "logs and prints go to stderr" in error.hint


def test_jacksons_spelling_of_non_finite_floats_is_an_error_naming_the_token_and_the_protocols_word():
    cases = [f for f in load_corpus() if f.id in ("errors/non-finite-leaf-variable", "repeated/x-mul-x")]
    transport = fault_transport("jackson")
    try:
        run = run_adapter("jackson", transport, cases, [])
    finally:
        transport.close()
    assert outcomes(run) == {"errors/non-finite-leaf-variable": {"error"}, "repeated/x-mul-x": {"passed"}}
    error = next(r for r in run.results if r.outcome == "error")
    assert "case errors/non-finite-leaf-variable: the reply breaks the protocol: at $.observations[0].error.value:" in (
        error.message
    )
    assert '"Infinity" is not how the protocol writes inf: write the string "inf"' in error.message
    assert "Jackson" in error.message  # the hint


def test_a_reply_spelling_non_finite_floats_as_the_protocol_does_is_read():
    cases = [f for f in load_corpus() if f.id == "errors/non-finite-leaf-variable"]
    transport = fault_transport("crash", "no/such-case")
    try:
        run = run_adapter("fine", transport, cases, [])
    finally:
        transport.close()
    assert {r.outcome for r in run.results} == {"passed"}


def test_an_adapter_that_closes_its_stdout_is_told_so_and_why_with_its_line_quoted_as_text():
    transport = fault_transport("close-stdout", start_timeout=5)
    run = run_adapter("jackson", transport, CASES, [])
    transport.close()
    assert run.down is not None and run.down.verdict == "it closes its stdout" and run.down.faults == 1
    assert "unresponsive" not in run.down.describe()
    text = run.down.describe()
    assert "the adapter closed its stdout during the handshake and is still running" in text
    assert 'it wrote a partial line, with no newline: \'{"type":"hello"' in text
    assert "writeValue(System.out, ...)" in text and "every message must end with a newline" in text
    assert "bytearray" not in text and "closed its input" not in text


def test_a_log_line_before_the_hello_is_shown_verbatim_and_the_adapter_started_once_more():
    transport = fault_transport("log-before-hello")
    run = run_adapter("logger", transport, CASES, [])
    transport.close()
    assert run.down is not None and run.down.refused and run.down.verdict == "it writes text to stdout before its hello"
    message = run.down.describe()
    assert "garbage on stdout during the handshake: '[main] INFO  org.example.Engine - engine ready' is not JSON" in message
    assert "in two starts in a row" in message and "hello was refused" not in message
    assert sum(1 for r in run.results if r.outcome == "error") == len(CASES[0].levels)


def test_a_log_line_before_the_hello_of_one_start_only_costs_nothing(tmp_path):
    transport = fault_transport("log-before-hello", env={"FAULT_ONCE_FILE": str(tmp_path / "logged")})
    try:
        run = run_adapter("once", transport, CASES, [])
    finally:
        transport.close()
    assert (tmp_path / "logged").exists() and {r.outcome for r in run.results} == {"passed"}


def test_control_characters_before_the_hello_are_quoted_escaped():
    transport = fault_transport("escape-before-hello")
    try:
        with pytest.raises(AdapterFault) as raised:
            transport.handshake()
    finally:
        transport.close()
    text = str(raised.value)
    assert '\'\\x1b[0m{"type":"hello"' in text and "\x1b" not in text
    assert "mvn" in raised.value.hint


def test_a_java_stack_overflow_keeps_its_first_line_beside_the_tail_of_its_frames():
    error = fault_on("java-stack-overflow", TARGET)
    lines = error.stderr.splitlines()
    assert len(lines) <= 15
    assert 'Exception in thread "main" java.lang.StackOverflowError' in lines
    assert lines[-1] == "\tat org.example.Node.backward(Node.java:42)"
    assert any(re.fullmatch(r"\.\.\. \(\d+ lines left out\)", line) for line in lines)


def test_a_start_slower_than_the_handshake_timeout_names_the_option_and_building_first():
    transport = fault_transport("slow-start", start_timeout=1)
    try:
        with pytest.raises(AdapterFault) as raised:
            transport.handshake()
    finally:
        transport.close()
    assert "timed out after 1 s waiting for the adapter during the handshake" in raised.value.message
    assert "--handshake-timeout" in raised.value.hint and "build it first (`--build CMD`)" in raised.value.hint


def test_a_slow_large_case_after_answered_ones_points_at_an_exponential_walk():
    cases = [f for f in load_corpus() if f.id in ("repeated/x-mul-x", "structure/fan-out-1000")]
    transport = fault_transport("hang", "structure/fan-out-1000", timeout=1)
    try:
        run = run_adapter("slow", transport, cases, [])
    finally:
        transport.close()
    error = next(r for r in run.results if r.outcome == "error")
    assert "the adapter answered 1 case(s), this one took over its budget of 1 s" in error.message
    assert "for a case of 2002 steps, an exponential walk is the usual cause" in error.message
    assert "did the adapter flush stdout" not in error.message


def test_a_hello_with_several_bad_fields_names_every_one():
    run, _ = run_with("bad-hello-many", target=None)
    assert run.down is not None and run.down.refused
    message = run.down.message
    assert message.startswith("hello: ")
    for problem in (
        "at $.engine: Object missing required field `language`",
        "field 'ops': unknown 'cbrt'",
        "field 'levels': unknown 'grads'",
        "field 'trace': 'edges' is not one of 'full', 'nodes'",
    ):
        assert problem in message


def test_a_python_traceback_keeps_its_first_and_final_line_when_later_lines_push_them_out():
    log = StderrLog()
    log.add(b"Traceback (most recent call last):\n")
    for _ in range(40):
        log.add(b'  File "engine.py", line 12, in backward\n')
    log.add(b"RecursionError: maximum recursion depth exceeded\n")
    for index in range(30):
        log.add(f"adapter: case {index} done\n".encode())
    lines = log.excerpt().splitlines()
    assert len(lines) == STDERR_LINES
    assert lines[:2] == ["Traceback (most recent call last):", "RecursionError: maximum recursion depth exceeded"]
    assert lines[2] == "... (58 lines left out)"  # of 72: the 2 headlines and 12 of the tail are shown
    assert lines[-1] == "adapter: case 29 done"


def test_a_rust_panic_line_is_kept_and_a_short_log_is_shown_whole():
    log = StderrLog()
    log.add(b"thread 'main' panicked at src/graph.rs:42:9:\n")
    for index in range(20):
        log.add(f"note {index}\n".encode())
    assert log.excerpt().splitlines()[0] == "thread 'main' panicked at src/graph.rs:42:9:"
    short = StderrLog()
    for text in (b"one\n", b"two\n"):
        short.add(text)
    assert short.excerpt() == "one\ntwo"


def test_adapter_output_is_quoted_as_escaped_text():
    assert quote(bytearray(b'\x1b[0m{"type":"hello"}\xff')) == '\'\\x1b[0m{"type":"hello"}\\xff\''
    assert quote(b"x" * 300).endswith("'... (300 characters)")
    log = StderrLog()
    log.add(b"\x1b[31merror\x1b[0m\tdetail\r\n")
    assert log.excerpt() == "\\x1b[31merror\\x1b[0m\tdetail\\r"


def _reply(value: str) -> bytes:
    """A result of one creation whose value is written as ``value`` (raw JSON text)."""
    return b'{"type":"result","case":"t","observations":[{"value":' + value.encode() + b',"tracked":true}]}'


@pytest.mark.parametrize("spelling", ['"Infinity"', '"-Infinity"', '"NaN"', '"INF"', '"-nan"'])
@pytest.mark.parametrize("negative_zero", [False, True])  # with an integer -0 the reply takes the wire reader's way
def test_every_misspelt_non_finite_float_is_refused_whichever_way_the_reply_is_read(spelling, negative_zero):
    program = parse_program([{"id": "x", "op": "variable", "value": 1.0}], "t")
    line = _reply(spelling)
    if negative_zero:
        line = line.replace(b'"case":"t"', b'"case":"t","unknown":-0', 1)
    with pytest.raises(Misspelt, match=re.escape(f"at $.observations[0].value: {spelling} is not how the protocol writes")):
        decode_reply(line, "t", program)


def test_the_wire_spellings_and_finite_numbers_in_strings_are_still_read():
    program = parse_program([{"id": "x", "op": "variable", "value": 1.0}], "t")
    assert decode_reply(_reply('"-inf"'), "t", program)[0].value == float("-inf")
    assert decode_reply(_reply('"1.5"'), "t", program)[0].value == 1.5  # lenient, as docs/protocol.md says
    assert decode_reply(_reply("-0"), "t", program)[0].value == 0.0

"""Talking to an adapter: one transport interface, a subprocess and an in-process implementation.

``SubprocessTransport`` keeps one long-lived adapter process and survives
every fault it can show: a crash, a hang (a short handshake timeout and a
per-case timeout), an adapter that stops reading its input, a line that is not
JSON or not the expected message, an oversized line, a wrong protocol version,
an exit before the handshake, an exit while a process it started still holds
stdout open, a closed stdout, a command that cannot be executed. A fault is
raised as ``AdapterFault`` carrying its kind, a clear message (with what it
usually means) and an excerpt of the adapter's stderr; the messages and hints
are made in ``conformance.faults``, the hello is checked in ``conformance.handshake``
(both re-exported here). What a hint says may depend on what the transport has
seen: how many cases the adapter answered, and how many steps the case has.

The adapter runs in a process group of its own, and every kill ends the whole
group, so a hung adapter and any children it spawned never outlive the fault
or the run. ``InProcessTransport`` runs the reference directly, for measuring
the protocol's overhead.
"""

from __future__ import annotations

import collections
import fcntl
import os
import selectors
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, TypeVar

from .execute import run_program
from .faults import (
    CLOSED_HINT,
    FAULT_KINDS,
    FLUSH_HINT,
    LARGE_STEPS,
    MISSPELT_HINT,
    AdapterFault,
    StderrLog,
    escaped,
    exit_hint,
    exited,
    not_json,
    quote,
    spawn_fault,
)
from .handshake import Handshake
from .program import DECLARABLE_OPS, Program, program_size
from .protocol import (
    FEATURES,
    LEVELS,
    MAX_LINE_BYTES,
    AdapterErrorReply,
    Hello,
    Misspelt,
    NotJSON,
    Observation,
    ProtocolError,
    decode_hello,
    decode_reply,
    hello_request,
    run_request,
    shutdown_request,
)

__all__ = ["FAULT_KINDS", "AdapterFault", "Handshake", "InProcessTransport", "SubprocessTransport", "Transport"]

T = TypeVar("T")
#: Seconds an adapter has to answer hello. Starting a process takes milliseconds; an adapter that has not
#: answered in this time almost always forgot to flush stdout (docs/protocol.md, "Timeouts").
HANDSHAKE_TIMEOUT = 5.0
#: Seconds one case may take. Canonical cases run in milliseconds on every built-in adapter, the slowest
#: (deep chains, the LLM programs) in well under a second, so this is generous without letting a hung
#: adapter stall a CI job.
CASE_TIMEOUT = 10.0  # plus the allowance of case_timeout for long programs
#: Steps per second every adapter is assumed to reach at least: a long program's case timeout grows by
#: its steps at this rate (a repeated step counted once per application), so a million-node chain gets
#: CASE_TIMEOUT + 40 s, and a hang is still given up on in bounded time.
MIN_STEPS_PER_SECOND = 25_000
#: How many run requests the harness sends before their turn at most (docs/protocol.md, "Transport"), so
#: that the adapter works through the cases while the harness compares: with 64, the adapter of the python
#: reference sat idle for 20 ms at a time while the harness compared the LLM cases. Writing a request never
#: waits: what the pipe does not take at once is kept, and written whenever the harness waits on the adapter;
#: no more is sent ahead while PIPE_BYTES of requests wait unwritten, which bounds the memory it takes.
AHEAD = 1024
#: The pipe size asked for each way (Linux's default pipe-max-size): the corpus's largest reply fits.
PIPE_BYTES = 1 << 20
#: Seconds to wait for the rest of stdout after the adapter process itself exited.
_EXIT_GRACE = 0.3


def case_timeout(base: float, program: Program) -> float:
    """The seconds one case may take: ``base`` plus a whole second per MIN_STEPS_PER_SECOND steps of the program."""
    return base + program_size(program) // MIN_STEPS_PER_SECOND


class Transport(Protocol):
    """Runs whole programs on one engine: everything the runner uses of a transport, and nothing else.

    ``timeout`` is the base seconds one case may take (None: no limit, in-process); ``starts`` counts
    the engine's starts, so a change tells the runner the engine was started again and has none of the
    requests sent ahead to the one before.
    """

    @property
    def timeout(self) -> Optional[float]:
        """The base seconds one case may take (``case_timeout`` adds the program's allowance); None: no limit."""

    @property
    def starts(self) -> int:
        """How many times the engine was started: a change means the requests sent ahead are gone."""

    def handshake(self) -> Handshake:
        """Start the engine if needed and return its hello."""

    def run(self, case: str, program: Program, timeout: Optional[float] = None, *, records: bool = True) -> list[Observation]:
        """One observation per step, or raise AdapterFault; ``timeout`` overrides the transport's own.

        ``records`` False tells the engine that no pass record will be read (the run request's ``records``).
        """

    def send_ahead(self, case: str, program: Program, *, records: bool = True) -> bool:
        """Send the case's run request before its turn; True when it is (or was) sent, False when it cannot be."""

    def stderr_tail(self) -> str:
        """The last lines the engine wrote to stderr, for a wrong answer's report ("" when there is none)."""

    def close(self) -> None:
        """Stop the engine."""


class DirectTransport:
    """A transport whose engine is called in this process: no timeout, one start, nothing sent ahead, no stderr.

    A subclass gives ``handshake`` and ``run`` (the reference's, a variant's, a test's engine).
    """

    timeout: Optional[float] = None
    starts: int = 1

    def send_ahead(self, case: str, program: Program, *, records: bool = True) -> bool:
        """Nothing is sent ahead in-process: each case runs when it is asked for."""
        return False

    def stderr_tail(self) -> str:
        """An engine in this process has no stderr of its own."""
        return ""

    def close(self) -> None:
        """Nothing to stop."""


class InProcessTransport(DirectTransport):
    """The reference engine called directly: no process, no JSON."""

    def handshake(self) -> Handshake:
        """The reference's capabilities."""
        return Handshake("reference", "in-process", "python", frozenset(DECLARABLE_OPS), frozenset(LEVELS), frozenset(FEATURES))

    def run(self, case: str, program: Program, timeout: Optional[float] = None, *, records: bool = True) -> list[Observation]:
        """Run the program on the reference (no timeout applies in-process)."""
        return run_program(program, record_pass=records)


class SubprocessTransport:
    """One long-lived adapter process speaking docs/protocol.md, restarted after any fault."""

    def __init__(
        self,
        command: str | list[str],
        *,
        cwd: Optional[Path] = None,
        env: Optional[dict[str, str]] = None,
        timeout: float = CASE_TIMEOUT,
        start_timeout: float = HANDSHAKE_TIMEOUT,
        max_line: int = MAX_LINE_BYTES,
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.cwd = cwd
        self.env = {**os.environ, **(env or {})}
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.max_line = max_line
        self._child: Optional[_Child] = None
        """The running adapter process and all that belongs to it; None before the first start and after a kill."""
        self._stderr = StderrLog()  # the last process's stderr: still read after it was killed, for the fault
        self.starts = 0
        """How many times an adapter process was started."""
        self.restarts = 0
        """How many faults during a case restarted the adapter."""
        self.sent_ahead = 0
        """How many run requests were sent before their turn (``send_ahead``)."""
        self.answered = 0
        """How many cases the adapter has answered, over every start: a timeout after some is not a missing flush."""
        self._steps = 0  # the steps of the case being read (0 during the handshake), for what a fault usually means

    @property
    def process(self) -> Optional["subprocess.Popen[bytes]"]:
        """The adapter process running now, if any."""
        return self._child.process if self._child is not None else None

    @property
    def hello(self) -> Optional[Handshake]:
        """The running process's hello, once read."""
        return self._child.hello if self._child is not None else None

    @property
    def _live(self) -> "_Child":
        assert self._child is not None, "no adapter process is running"
        return self._child

    # -- process lifecycle ------------------------------------------------------

    def _spawn(self) -> None:
        """Start the process and send hello; ``_greet`` reads the answer."""
        self._stderr = StderrLog()
        try:
            # A session of its own: the adapter and everything it spawns form one process group,
            # which _kill ends as a whole.
            process = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as error:
            raise spawn_fault(self.argv, self.cwd, error) from None
        assert process.stdin is not None and process.stdout is not None
        os.set_blocking(process.stdin.fileno(), False)
        for pipe in (process.stdin, process.stdout):
            _widen(pipe.fileno())
        drain = threading.Thread(target=_drain_stderr, args=(process, self._stderr), daemon=True)
        drain.start()
        self._child = _Child(process, drain)
        self.starts += 1
        self._post(hello_request(), "the handshake")

    def _greet(self, timeout: float) -> Handshake:
        """The hello of the process ``_spawn`` started, read within ``timeout`` seconds from now."""
        self._live.greeting = False
        line = self._read_line(time.monotonic() + timeout, timeout, "the handshake")
        message: Hello | dict[str, Any]
        try:
            message = decode_hello(line)
        except NotJSON as error:
            raise self._not_json_fault(line, "the handshake", error) from None
        except ProtocolError as error:  # JSON, but not a hello: check it field by field, to name every problem
            if not isinstance(error.data, dict):
                raise AdapterFault(f"hello: {error}", kind="hello") from None
            message = error.data
        try:
            return Handshake.parse(message)
        except AdapterFault as fault:  # the adapter answered, and its answer is refused: no start will change it
            text = fault.message if fault.message.startswith(("hello", "wrong protocol")) else f"hello: {fault.message}"
            raise AdapterFault(text, kind="hello") from None

    def stderr_tail(self) -> str:
        """The last lines the adapter wrote to stderr (escaped), after the first line of an exception or panic."""
        return self._stderr.excerpt()

    def launch(self) -> None:
        """Start the adapter and send hello without waiting for the answer, which ``handshake`` reads.

        For a caller with other work to do meanwhile (``conformance run`` loads the corpus). A process
        that cannot be started is left to ``handshake``, which reports it as a failed start.
        """
        if self._child is None:
            try:
                self._spawn()
            except AdapterFault:
                self._kill()

    def handshake(self) -> Handshake:
        """Start the adapter (if it is not running, or only launched) and return its hello.

        A line that is not JSON before the hello (a library's log line on stdout) may be a one-off: the
        adapter is started once more, and only a second such line is final.
        """
        child = self._child
        if child is None or child.greeting or child.process.poll() is not None or child.hello is None:
            self._steps = 0
            greeting = child is not None and child.greeting
            if not greeting:  # launched, its hello not read yet: read it (also if it has exited since)
                self._kill()
            for attempt in (1, 2):
                try:
                    if not greeting:
                        self._spawn()
                    greeting = False
                    self._live.hello = self._greet(self.start_timeout)
                    break
                except AdapterFault as fault:
                    self._kill()  # first, so that everything the adapter logged has been read
                    if fault.kind == "garbage" and attempt == 1:
                        continue
                    raise self._start_fault(fault) from None
        hello = self._live.hello
        assert hello is not None
        return hello

    def _start_fault(self, fault: AdapterFault) -> AdapterFault:
        """A fault before a hello, as a failed start; a hello that came and was refused stays ``hello``."""
        if fault.kind == "garbage":
            return AdapterFault(
                f"{fault.message}; it came before the hello in two starts in a row, so the adapter was not started again",
                self.stderr_tail(),
                "garbage",
                fault.hint,
                final="it writes text to stdout before its hello",
            )
        if fault.kind == "closed":  # the same at every start: a closed stdout is no slow or flaky start
            return AdapterFault(fault.message, self.stderr_tail(), "closed", fault.hint, final="it closes its stdout")
        kind = fault.kind if fault.kind in ("timeout", "hello", "spawn") else "start"
        return AdapterFault(fault.message, self.stderr_tail(), kind, fault.hint, fault.final)

    def run(self, case: str, program: Program, timeout: Optional[float] = None, *, records: bool = True) -> list[Observation]:
        """Send one run request and return its observations; any fault restarts the adapter."""
        self.handshake()
        steps = program_size(program)
        limit = self.timeout + steps // MIN_STEPS_PER_SECOND if timeout is None else timeout  # case_timeout's sum
        deadline = time.monotonic() + limit
        if self._live.ahead and self._live.ahead[0] != case:
            self._kill()  # the replies to requests sent ahead would come first: start afresh
            self.handshake()
        self._steps = steps
        child = self._live
        try:
            if child.ahead:
                child.ahead_count[child.ahead.popleft()] -= 1  # sent already: the adapter may have answered it by now
            else:
                self._post(run_request(case, program, records), f"case {case}")
            line = self._read_line(deadline, limit, f"case {case}")
            observations = self._decoded(line, f"case {case}", lambda raw: decode_reply(raw, case, program))
            self.answered += 1
            return observations
        except AdapterFault as fault:
            self._kill()  # first, so that everything the adapter logged has been read
            self.restarts += 1
            raise fault.with_stderr(self.stderr_tail()) from None

    def send_ahead(self, case: str, program: Program, *, records: bool = True) -> bool:
        """Send the run request of the case to be run next, before its turn; True when it is (or was) sent.

        The adapter then works on it while the harness compares the reply before it; ``run`` for
        that case only reads the reply. Nothing is sent when the adapter is not running, AHEAD
        requests are already out, or PIPE_BYTES of requests wait unwritten. Sending never waits:
        what the pipe does not take at once is written while the harness waits for a reply.
        """
        child = self._child
        if child is None or child.hello is None:
            return False
        if child.ahead_count[case] > 0:
            return True
        if len(child.ahead) >= AHEAD or self._unsent() >= PIPE_BYTES or child.process.poll() is not None:
            return False
        self._post(run_request(case, program, records), f"case {case}")
        child.ahead.append(case)
        child.ahead_count[case] += 1
        self.sent_ahead += 1
        return True

    def close(self) -> None:
        """Ask the adapter to shut down, then make sure it and its process group are gone."""
        if self._child is not None and self._child.process.poll() is None:
            try:
                self._post(shutdown_request(), "shutdown")
                self._send_all("shutdown", time.monotonic() + 1.0, 1.0)
                self._child.process.wait(timeout=2)
            except (AdapterFault, subprocess.TimeoutExpired):
                pass
        self._kill()

    def _kill(self) -> None:
        """End the process and its group, and drop everything that belonged to it."""
        child, self._child = self._child, None
        if child is None:
            return
        process = child.process
        try:
            # The whole group: a hung adapter's children (a shell's command, a worker) go with it,
            # also after the adapter itself has exited.
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGKILL
            pass
        child.drain.join(timeout=2)
        for stream in (process.stdin, process.stdout, process.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    # -- lines -------------------------------------------------------------------

    def _post(self, line: bytes, during: str) -> None:
        """Queue one request line and write as much of the queue as the pipe takes now; never waits."""
        self._live.outbox.append((during, memoryview(line + b"\n")))
        self._write_some()

    def _unsent(self) -> int:
        return sum(len(data) for _, data in self._live.outbox)

    def _write_some(self) -> None:
        """Write queued request bytes until the pipe is full or the queue empty.

        An adapter that has exited (or closed its input) drops the queue: its replies to the
        requests it did read are still read, and the read after them names the exit.
        """
        stdin = self._live.process.stdin
        assert stdin is not None
        fd = stdin.fileno()
        while self._live.outbox:
            during, data = self._live.outbox[0]
            try:
                written = os.write(fd, data)
            except BlockingIOError:
                return
            except OSError:  # BrokenPipeError above all
                self._live.outbox.clear()
                return
            if written == len(data):
                self._live.outbox.popleft()
            else:
                self._live.outbox[0] = (during, data[written:])

    def _send_all(self, during: str, deadline: float, timeout: float) -> None:
        """Wait, never past the deadline, until every queued request byte is written."""
        stdin = self._live.process.stdin
        assert stdin is not None
        with selectors.DefaultSelector() as selector:
            selector.register(stdin.fileno(), selectors.EVENT_WRITE)
            while self._live.outbox:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._unread_fault(timeout, during)
                if not selector.select(min(remaining, 0.2)):
                    self._raise_ifexited(during)
                    continue
                self._write_some()

    def _unread_fault(self, timeout: float, during: str) -> AdapterFault:
        unsent = sum(len(data) for label, data in self._live.outbox if label == during)
        return AdapterFault(
            f"timed out after {timeout:g} s writing the request during {during}: the adapter stopped "
            f"reading its input with {unsent} bytes of the request still unsent",
            kind="timeout",
            hint="does the adapter read stdin one line at a time, and answer each request before the next?",
        )

    def _exit_fault(self, during: str) -> AdapterFault:
        """The fault for the end of stdout: an exit (its status, or the signal that killed it), or a closed stdout."""
        hint, kind = "", "exit"
        try:
            code = self._live.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            message = (
                f"the adapter closed its stdout during {during} and is still running, so nothing it writes can reach the harness"
            )
            hint, kind = CLOSED_HINT, "closed"
        else:
            message = exited(code, during)
            hint = exit_hint(code, self._steps)
        if self._live.buffer:
            message += f" (it wrote a partial line, with no newline: {quote(self._live.buffer)})"
            hint = (hint + "; " if hint else "") + "every message must end with a newline"
        return AdapterFault(message, self.stderr_tail(), kind=kind, hint=hint)

    def _raise_ifexited(self, during: str) -> None:
        """A fault when the adapter process is gone although a child of it still holds the pipes open."""
        code = self._live.process.poll()
        if code is not None:
            raise AdapterFault(
                f"{exited(code, during)}, and a process it started still holds its "
                "stdout open (the harness ended that process group)",
                self.stderr_tail(),
                kind="exit",
                hint="an adapter script that starts the engine in the background (or forks) must wait for it",
            )

    def _not_json_fault(self, line: bytes, during: str, error: NotJSON) -> AdapterFault:
        message, hint = not_json(line, during, error.position, str(error))
        return AdapterFault(message, self.stderr_tail(), kind="garbage", hint=hint)

    def _decoded(self, line: bytes, during: str, decode: Callable[[bytes], T]) -> T:
        """The message a reply line holds, or the fault that says what is wrong with it and where."""
        try:
            return decode(line)
        except NotJSON as error:
            raise self._not_json_fault(line, during, error) from None
        except AdapterErrorReply as reply:
            raise AdapterFault(f"the adapter could not run the case: {escaped(str(reply))}", kind="error-reply") from None
        except Misspelt as error:
            raise AdapterFault(f"{during}: the reply breaks the protocol: {error}", hint=MISSPELT_HINT) from None
        except ProtocolError as error:
            raise AdapterFault(f"{during}: the reply breaks the protocol: {error}") from None

    def _read_line(self, deadline: float, timeout: float, during: str) -> bytes:
        """The next line on stdout; queued request bytes are written meanwhile, as the adapter reads them."""
        process = self._live.process
        assert process.stdout is not None and process.stdin is not None
        stdout, stdin = process.stdout.fileno(), process.stdin.fileno()
        exited_at: Optional[float] = None
        writing = False
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            scanned = 0  # the buffer holds no newline before this offset: each byte is searched once
            while (end := self._live.buffer.find(b"\n", scanned)) < 0:
                scanned = len(self._live.buffer)
                if len(self._live.buffer) > self.max_line:
                    raise AdapterFault(
                        f"oversized reply during {during}: more than {self.max_line} bytes without a newline", kind="oversized"
                    )
                if bool(self._live.outbox) != writing:  # wait for room in the pipe only while there is something to write
                    writing = not writing
                    if writing:
                        selector.register(stdin, selectors.EVENT_WRITE)
                    else:
                        selector.unregister(stdin)
                now = time.monotonic()
                if now >= deadline:
                    if any(label == during for label, _ in self._live.outbox):
                        raise self._unread_fault(timeout, during)
                    raise self._timeout_fault(timeout, during)
                events = selector.select(min(deadline - now, 0.2))
                if not events:
                    # No data: is the adapter gone while something else keeps the pipe open?
                    if process.poll() is not None:
                        exited_at = exited_at or now
                        if now - exited_at >= _EXIT_GRACE:
                            self._raise_ifexited(during)
                    continue
                if any(key.fd == stdin for key, _ in events):
                    self._write_some()
                if not any(key.fd == stdout for key, _ in events):
                    continue
                chunk = os.read(stdout, 1 << 20)
                if not chunk:
                    raise self._exit_fault(during)
                self._live.buffer += chunk
        line = bytes(self._live.buffer[:end])
        del self._live.buffer[: end + 1]
        if len(line) > self.max_line:
            raise AdapterFault(f"oversized reply during {during}: {len(line)} bytes (limit {self.max_line})", kind="oversized")
        return line

    def _timeout_fault(self, timeout: float, during: str) -> AdapterFault:
        if self._live.buffer:
            wrote = f"it wrote a partial line with no newline: {quote(self._live.buffer)}"
            hint = "each reply must end with a newline, and stdout must be flushed after it"
        elif during == "the handshake":
            wrote = "it wrote nothing to stdout"
            slow = (
                f"a start slower than {timeout:g} s (a JVM, a `cargo run` that compiles first) needs a longer "
                "--handshake-timeout SECONDS (pytest: --conformance-handshake-timeout; registry: handshake_timeout), "
                "or build it first (`--build CMD`) and run the built program"
            )
            hint = slow if self.answered else f"{FLUSH_HINT}; or {slow}"
        elif self.answered:
            wrote = "it wrote nothing to stdout"
            hint = (
                f"the adapter answered {self.answered} case(s), this one took over its budget of {timeout:g} s: it is slow "
                "here rather than stuck on an unflushed reply"
            )
            if self._steps >= LARGE_STEPS:
                hint += (
                    f"; for a case of {self._steps} steps, an exponential walk is the usual cause: a zero_grad or backward "
                    "without a visited set walks a shared subgraph once per path to it"
                )
            hint += " (if it is only slow, give it longer with --timeout)"
        else:
            wrote = "it wrote nothing to stdout"
            hint = FLUSH_HINT
        return AdapterFault(
            f"timed out after {timeout:g} s waiting for the adapter during {during}; {wrote}",
            self.stderr_tail(),
            kind="timeout",
            hint=hint,
        )


@dataclass
class _Child:
    """One started adapter process and everything that belongs to it: made by ``_spawn``, dropped by ``_kill``."""

    process: "subprocess.Popen[bytes]"
    drain: threading.Thread
    """Reads its stderr into the transport's log until the process closes it."""
    hello: Optional[Handshake] = None
    greeting: bool = True
    """Hello sent, its answer not read yet (``launch``)."""
    buffer: bytearray = field(default_factory=bytearray)
    """Bytes read from its stdout, not yet a whole line."""
    outbox: collections.deque[tuple[str, memoryview]] = field(default_factory=collections.deque)
    """Request bytes the pipe has not taken yet, in order, each with what it is for ("case <id>")."""
    ahead: collections.deque[str] = field(default_factory=collections.deque)
    """Cases sent before their turn, in order."""
    ahead_count: collections.Counter[str] = field(default_factory=collections.Counter)
    """The same, counted by case."""


def _drain_stderr(process: "subprocess.Popen[bytes]", log: StderrLog) -> None:
    assert process.stderr is not None
    for raw in iter(process.stderr.readline, b""):
        log.add(raw)


def _widen(fd: int) -> None:
    """Give a pipe room for PIPE_BYTES where the system allows it (Linux), so that requests sent ahead
    and replies written ahead wait in the pipe rather than stopping their writer."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (AttributeError, OSError):  # not Linux, or above the system's pipe-max-size: the default stays
        pass

"""Talking to an adapter: one transport interface, a subprocess and an in-process implementation.

``SubprocessTransport`` keeps one long-lived adapter process and survives
every fault it can show: a crash, a hang (per-case timeout), a line that is
not JSON or not the expected message, an oversized line, a wrong protocol
version, an exit before the handshake. A fault is raised as ``AdapterFault``
carrying a clear message and the tail of the adapter's stderr; the process is
killed and started afresh for the next case. ``InProcessTransport`` runs the
reference directly, for measuring the protocol's overhead.
"""

from __future__ import annotations

import collections
import os
import selectors
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Protocol

from .execute import run_program
from .program import DECLARABLE_OPS, Program, program_to_json
from .wire import dumps_line, loads

PROTOCOL_VERSION = 1
MAX_LINE_BYTES = 64 * 1024 * 1024
LEVEL_NAMES = ("values", "gradients", "errors", "trace", "order")


class AdapterFault(Exception):
    """The adapter broke the protocol or crashed; ``stderr`` is the tail of its log."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.stderr = stderr

    def __str__(self) -> str:
        if not self.stderr.strip():
            return self.message
        tail = "\n".join("    " + line for line in self.stderr.rstrip().splitlines()[-15:])
        return f"{self.message}\n  adapter stderr (last lines):\n{tail}"


@dataclass(frozen=True)
class Handshake:
    """What the adapter said about itself in its hello."""

    name: str
    version: str
    language: str
    ops: frozenset[str]
    levels: frozenset[str]
    features: frozenset[str] = field(default_factory=frozenset)

    @staticmethod
    def parse(message: Any) -> "Handshake":
        """Check a hello reply; raise AdapterFault naming the first thing wrong with it."""
        if not isinstance(message, dict) or message.get("type") != "hello":
            raise AdapterFault(f"expected a hello reply, got {_clip(message)}")
        if message.get("protocol") != PROTOCOL_VERSION:
            raise AdapterFault(
                f"wrong protocol version: the adapter speaks {message.get('protocol')!r}, the harness speaks {PROTOCOL_VERSION}"
            )
        engine = message.get("engine")
        if not isinstance(engine, dict) or not all(isinstance(engine.get(k), str) for k in ("name", "version", "language")):
            raise AdapterFault("hello: field 'engine' must be an object with string name, version and language")
        sets = {}
        for key, allowed in (("ops", DECLARABLE_OPS), ("levels", LEVEL_NAMES), ("features", ("seed",))):
            raw = message.get(key, [] if key == "features" else None)
            if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
                raise AdapterFault(f"hello: field {key!r} must be a list of strings")
            unknown = sorted(set(raw) - set(allowed))
            if unknown:
                raise AdapterFault(f"hello: field {key!r}: unknown {unknown[0]!r} (known: {', '.join(allowed)})")
            sets[key] = frozenset(raw)
        return Handshake(engine["name"], engine["version"], engine["language"], sets["ops"], sets["levels"], sets["features"])


class Transport(Protocol):
    """Runs whole programs on one engine."""

    def handshake(self) -> Handshake:
        """Start the engine if needed and return its hello."""

    def run(self, case: str, program: Program) -> list[Any]:
        """One observation per step, or raise AdapterFault."""

    def close(self) -> None:
        """Stop the engine."""


class InProcessTransport:
    """The reference engine called directly: no process, no JSON."""

    def handshake(self) -> Handshake:
        """The reference's capabilities."""
        return Handshake(
            "reference", "in-process", "python", frozenset(DECLARABLE_OPS), frozenset(LEVEL_NAMES), frozenset({"seed"})
        )

    def run(self, case: str, program: Program) -> list[Any]:
        """Run the program on the reference."""
        return run_program(program)

    def close(self) -> None:
        """Nothing to stop."""


class SubprocessTransport:
    """One long-lived adapter process speaking docs/protocol.md, restarted after any fault."""

    def __init__(
        self,
        command: str | list[str],
        *,
        cwd: Optional[Path] = None,
        env: Optional[dict[str, str]] = None,
        timeout: float = 60.0,
        start_timeout: float = 60.0,
        max_line: int = MAX_LINE_BYTES,
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.cwd = cwd
        self.env = {**os.environ, **(env or {})}
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.max_line = max_line
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.hello: Optional[Handshake] = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._buffer = b""
        self._drain: Optional[threading.Thread] = None
        self.restarts = 0

    # -- process lifecycle ------------------------------------------------------

    def _start(self) -> Handshake:
        self._stderr = collections.deque(maxlen=200)
        self._buffer = b""
        try:
            self.process = subprocess.Popen(
                self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except OSError as error:
            raise AdapterFault(f"cannot start adapter {shlex.join(self.argv)}: {error.strerror or error}") from None
        self._drain = threading.Thread(target=self._drain_stderr, args=(self.process,), daemon=True)
        self._drain.start()
        self._send({"type": "hello", "protocol": PROTOCOL_VERSION}, "before the handshake")
        reply = self._receive(self.start_timeout, "the handshake")
        return Handshake.parse(reply)

    def _drain_stderr(self, process: "subprocess.Popen[bytes]") -> None:
        assert process.stderr is not None
        for raw in iter(process.stderr.readline, b""):
            self._stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def stderr_tail(self) -> str:
        """The last lines the adapter wrote to stderr."""
        return "\n".join(self._stderr)

    def handshake(self) -> Handshake:
        """Start the adapter (if it is not running) and return its hello."""
        if self.process is None or self.process.poll() is not None or self.hello is None:
            self._kill()
            try:
                self.hello = self._start()
            except AdapterFault as fault:
                self._kill()  # first, so that everything the adapter logged has been read
                raise AdapterFault(fault.message, self.stderr_tail()) from None
        return self.hello

    def run(self, case: str, program: Program) -> list[Any]:
        """Send one run request and return its observations; any fault restarts the adapter."""
        self.handshake()
        try:
            self._send({"type": "run", "case": case, "program": program_to_json(program)}, f"case {case}")
            reply = self._receive(self.timeout, f"case {case}")
            return self._check_result(reply, case, len(program))
        except AdapterFault as fault:
            self._kill()  # first, so that everything the adapter logged has been read
            self.restarts += 1
            raise AdapterFault(fault.message, self.stderr_tail()) from None

    def close(self) -> None:
        """Ask the adapter to shut down, then make sure it is gone."""
        if self.process is not None and self.process.poll() is None:
            try:
                self._send({"type": "shutdown"}, "shutdown")
                self.process.wait(timeout=3)
            except (AdapterFault, subprocess.TimeoutExpired):
                pass
        self._kill()

    def _kill(self) -> None:
        process, self.process, self.hello = self.process, None, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGKILL
            pass
        if self._drain is not None:
            self._drain.join(timeout=2)
        for stream in (process.stdin, process.stdout, process.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    # -- lines -------------------------------------------------------------------

    def _send(self, message: dict[str, Any], during: str) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            self.process.stdin.write((dumps_line(message) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise AdapterFault(self._exit_message(during), self.stderr_tail()) from None

    def _exit_message(self, during: str) -> str:
        assert self.process is not None
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return f"the adapter closed its input during {during}"
        return f"the adapter exited with status {code} during {during}"

    def _receive(self, timeout: float, during: str) -> Any:
        line = self._read_line(timeout, during)
        try:
            return loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise AdapterFault(
                f"garbage on stdout during {during}: {_clip(line)} is not JSON ({error})", self.stderr_tail()
            ) from None

    def _read_line(self, timeout: float, during: str) -> bytes:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                if len(self._buffer) > self.max_line:
                    raise AdapterFault(f"oversized reply during {during}: more than {self.max_line} bytes without a newline")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AdapterFault(
                        f"timed out after {timeout:g} s waiting for the adapter during {during}", self.stderr_tail()
                    )
                if not selector.select(remaining):
                    continue
                chunk = os.read(stdout.fileno(), 1 << 20)
                if not chunk:
                    partial = f" (it wrote a partial line: {_clip(self._buffer)})" if self._buffer else ""
                    raise AdapterFault(self._exit_message(during) + partial, self.stderr_tail())
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        if len(line) > self.max_line:
            raise AdapterFault(f"oversized reply during {during}: {len(line)} bytes (limit {self.max_line})")
        return line

    @staticmethod
    def _check_result(reply: Any, case: str, steps: int) -> list[Any]:
        if not isinstance(reply, dict):
            raise AdapterFault(f"expected a result object for case {case}, got {_clip(reply)}")
        if reply.get("type") == "error":
            raise AdapterFault(f"the adapter could not run the case: {reply.get('message', '(no message)')}")
        if reply.get("type") != "result":
            raise AdapterFault(f"expected a result for case {case}, got a message of type {reply.get('type')!r}")
        if reply.get("case") != case:
            raise AdapterFault(f"reply names case {reply.get('case')!r}, the request was {case!r}")
        observations = reply.get("observations")
        if not isinstance(observations, list) or len(observations) != steps:
            count = len(observations) if isinstance(observations, list) else "no"
            raise AdapterFault(f"result has {count} observations for {steps} steps")
        if not all(isinstance(item, dict) for item in observations):
            raise AdapterFault("every observation must be a JSON object")
        return observations


def _clip(value: Any, limit: int = 200) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"

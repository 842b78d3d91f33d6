"""What an adapter fault says: the fault type, its messages and hints, and how adapter output is quoted.

``AdapterFault`` is what ``conformance.transport`` raises for anything an adapter
does wrong. The helpers here turn what the harness saw (a line, an exit status, a
signal, the stderr the adapter wrote) into a message a porter can act on: adapter
output is always quoted as escaped text (a control character such as the ESC of a
colour code shows as ``\\x1b``, never raw, and never as a Python ``bytearray(...)``),
a line that is not JSON is quoted around its first bad byte, a signal is named, and
the stderr excerpt keeps the first line of an exception or panic as well as the tail.
"""

from __future__ import annotations

import collections
import re
import shlex
import signal
from pathlib import Path
from typing import Optional

from . import wire

#: How many lines of the adapter's stderr a fault shows.
STDERR_LINES = 15
#: Programs of at least this many steps (a repeated step counted once per application) are *deep*: the
#: 10,000- and 1,000,000-node chains. A crash there is most often a stack overflow.
DEEP_STEPS = 10_000
#: Programs of at least this many steps are *large*: a timeout there is most often an exponential walk.
LARGE_STEPS = 1_000

#: Fault kinds: an unresponsive adapter (``timeout``, ``start``) is given up on after a few in a row; one
#: whose hello was refused (``hello``), whose command cannot be executed at all (``spawn``) or which closes
#: its stdout before its hello (``closed``) at once. ``closed`` is a stdout closed by a process still running.
FAULT_KINDS = ("start", "spawn", "timeout", "hello", "exit", "closed", "garbage", "protocol", "oversized", "error-reply")

FLUSH_HINT = (
    "did the adapter flush stdout after each reply? (a reply still in an output buffer, or a read of stdin that waits "
    "for end of input instead of one line, looks exactly like this)"
)
LOGS_HINT = "stdout carries protocol messages only; logs and prints go to stderr"
NON_FINITE_HINT = (
    'the protocol writes nan, inf and -inf as the JSON strings "nan", "inf" and "-inf" (docs/protocol.md, "Numbers"); '
    'a bare nan or inf (printf("%.17g"), a hand-written writer) or NaN/Infinity is not JSON'
)


class AdapterFault(Exception):
    """The adapter broke the protocol or crashed; ``stderr`` is the excerpt of its log.

    ``kind`` is one of FAULT_KINDS; ``hint`` says what the fault usually means, when that is known;
    ``final`` is the verdict, in a few words, when starting the adapter again cannot help (a refused
    hello: ``its hello was refused``), and empty when it may.
    """

    def __init__(self, message: str, stderr: str = "", kind: str = "protocol", hint: str = "", final: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.stderr = stderr
        self.kind = kind
        self.hint = hint
        self.final = final or ("its hello was refused" if kind == "hello" else "")

    def with_stderr(self, stderr: str) -> "AdapterFault":
        """The same fault with the stderr excerpt read after the adapter was stopped."""
        return AdapterFault(self.message, stderr, self.kind, self.hint, self.final)

    def with_hint(self, hint: str) -> "AdapterFault":
        """The same fault with another hint (what the harness knows about the case it happened in)."""
        return AdapterFault(self.message, self.stderr, self.kind, hint, self.final)

    def __str__(self) -> str:
        text = self.message + (f"\n  hint: {self.hint}" if self.hint else "")
        if not self.stderr.strip():
            return text + "\n  adapter stderr: (empty)" if self.kind in ("timeout", "start", "exit", "closed") else text
        tail = "\n".join("    " + line for line in self.stderr.rstrip().splitlines()[-STDERR_LINES:])
        return f"{text}\n  adapter stderr (last lines):\n{tail}"


# -- quoting adapter output ------------------------------------------------------------

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escaped(text: str, keep_tabs: bool = False) -> str:
    """``text`` with every control or unprintable character written as an escape (``\\x1b``, ``\\n``, ``\\u200b``)."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char.isprintable() or (keep_tabs and char == "\t"):
            out.append(char)
        elif char in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[char])
        elif 0xDC80 <= ord(char) <= 0xDCFF:  # a byte that is not UTF-8, kept by surrogateescape
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def quote(data: bytes | bytearray | memoryview | str, limit: int = 200) -> str:
    """Adapter output as quoted, escaped text: ``'\\x1b[0m{"type":...'``, cut after ``limit`` characters."""
    text = bytes(data).decode("utf-8", "surrogateescape") if not isinstance(data, str) else data
    cut = len(text) > limit
    shown = escaped(text[:limit])
    return f"'{shown}'" + (f"... ({len(text)} characters)" if cut else "")


def quote_around(line: bytes, position: int, width: int = 40) -> str:
    """The bytes of ``line`` around ``position``, quoted and escaped, with ``...`` where it was cut."""
    start, end = max(0, position - width), min(len(line), position + width)
    text = escaped(line[start:end].decode("utf-8", "surrogateescape"))
    return ("..." if start > 0 else "") + f"'{text}'" + ("..." if end < len(line) else "")


# -- lines that are not JSON ------------------------------------------------------------

#: A non-finite float written as a bare token (not JSON), or a start of one: nan, -inf, NaN, Infinity, -nan(ind).
_BARE_NON_FINITE = re.compile(rb"[-+]?(?:nan|inf(?:inity)?)(?:\([a-z0-9]*\))?", re.IGNORECASE)


def not_json(line: bytes, during: str, position: Optional[int], reason: str) -> tuple[str, str]:
    """The message and hint for a line that is not JSON: free text (a log line), or a reply with a bad token.

    A line whose first character opens a JSON object is a reply that went wrong: it is quoted around
    its first bad byte (a bare nan is named, with the protocol's spelling); anything else is text that
    does not belong on stdout, quoted from its start.
    """
    stripped = line.lstrip()
    if stripped.startswith(b"{"):
        at = position if position is not None else len(line)
        token = _BARE_NON_FINITE.match(line, _token_start(line, at))
        if token:
            at = token.start()  # where the bad token starts, not the byte after it that msgspec may name
        if position is None:
            where = f"ends ({len(line)} bytes) before its JSON does"
        else:
            where = f"is not valid JSON at byte {at} of {len(line)}"
        message = f"a reply during {during} {where}: {quote_around(line, at)} ({reason})"
        if token:
            message += f"; {wire.spelling_problem(token.group().decode('ascii', 'replace'), bare=True)}"
            return message, NON_FINITE_HINT
        return message, "validate the adapter's lines against docs/protocol.schema.json; " + LOGS_HINT
    message = f"garbage on stdout during {during}: {quote(line)} is not JSON"
    if line.startswith(b"\x1b"):
        return message, (
            "the line starts with a terminal escape sequence (\\x1b[...): something writes colour codes to stdout "
            "(`mvn exec:java` does; run the program with `java` directly, or give mvn --batch-mode --quiet); " + LOGS_HINT
        )
    return message, LOGS_HINT


def _token_start(line: bytes, at: int) -> int:
    # msgspec names a byte in or just after the bad token: the "i" of "-inf", the comma after "nan" (which it took
    # for the start of null). The token is the run of letters (and a sign) that ends there.
    if at > 0 and not line[at : at + 1].isalpha():
        at -= 1
    while at > 0 and (line[at - 1 : at].isalpha() or line[at - 1 : at] in (b"-", b"+")):
        at -= 1
    return at


# -- exits and signals -------------------------------------------------------------------

_CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL}


def signal_name(code: int) -> Optional[str]:
    """The name of the signal behind a negative exit status (``-11`` is ``SIGSEGV``), or None."""
    if code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def exit_hint(code: int, steps: int) -> str:
    """What an exit status usually means for a case of ``steps`` steps ("" when nothing is known)."""
    name = signal_name(code)
    if name is None:
        return ""
    deep = steps >= DEEP_STEPS
    if name == "SIGKILL":
        return "SIGKILL comes from outside the adapter: most often the out-of-memory killer" + (
            f" (this case has {steps} steps: how much memory does a node take?)" if deep else ""
        )
    if deep and -code in _CRASH_SIGNALS:
        return (
            f"this case is deep ({steps} steps): a stack overflow is the usual cause, from a recursive walk (a recursive "
            "topological sort, backward or zero_grad), or from a recursive destructor of a linked chain of nodes (dropping a "
            "chain of Rc/shared_ptr/Box nodes frees them recursively, even after an iterative backward): walk and free "
            "iteratively"
        )
    if -code in _CRASH_SIGNALS:
        return f"{name} is a crash inside the adapter (a bad memory access, an abort or a failed assertion)"
    return ""


CLOSED_HINT = (
    "a program closes its stdout when a JSON library closes the stream it writes to (Jackson's "
    "ObjectMapper.writeValue(System.out, ...) does: disable JsonGenerator.Feature.AUTO_CLOSE_TARGET, or print "
    "writeValueAsString(...) with a newline), or with a `with` block or try-with-resources on stdout (`with sys.stdout:`, "
    "`with open(1, 'w')`), or a close of file descriptor 1; write every message to one stream that stays open"
)
MISSPELT_HINT = (
    'the adapter\'s JSON writer spells non-finite floats its own way (Jackson writes "Infinity" and "NaN" by '
    'default): write inf, -inf and nan as the strings "inf", "-inf" and "nan", as the protocol does'
)


def exited(code: int, during: str) -> str:
    """How the process ended: ``the adapter exited with status 3``, or was killed by a signal it names."""
    name = signal_name(code)
    if name is None:
        return f"the adapter exited with status {code} during {during}"
    return f"the adapter was killed by {name} (exit status {code}) during {during}"


def spawn_fault(argv: list[str], cwd: Optional[Path], error: OSError) -> AdapterFault:
    """Why the command cannot be executed at all: a missing file, one that is not executable, a missing folder."""
    program = argv[0] if argv else ""
    folder = Path(cwd) if cwd is not None else Path.cwd()
    where = f" (the adapter command {quote(shlex.join(argv), 300)}, run in {folder})"
    hint = ""
    if isinstance(error, FileNotFoundError):
        if cwd is not None and not folder.is_dir():
            what = f"no such folder: {folder} (the adapter's working directory)"
        elif "/" not in program:
            what = f"no such file: {program} (not found on PATH)"
        elif (folder / program).exists():
            what = f"no such file: the interpreter named on the first line (#!) of {program}"
        else:
            what = f"no such file: {program}"
            hint = "is it built? build it first (`--build CMD`), or check the path (a relative one starts where it runs)"
    elif isinstance(error, PermissionError):
        what = f"not executable: {program} (permission denied)"
        hint = f"make it executable (chmod +x {program}), or run it through its interpreter"
    else:
        what = f"{error.strerror or error}: {program}"
    return AdapterFault(f"cannot start: {what}{where}", kind="spawn", hint=hint, final="it cannot be started")


# -- the stderr excerpt ------------------------------------------------------------------

#: The first line of an exception, a panic or a fatal error, in the languages ports are written in.
_HEADLINE = re.compile(
    r"Exception in thread |Traceback \(most recent call last\)|^thread '.*' (panicked at|has overflowed its stack)"
    r"|^panic: |^fatal error: |^runtime: goroutine stack exceeds|^terminate called after throwing"
    r"|RecursionError|StackOverflowError|OutOfMemoryError|AddressSanitizer|^Segmentation fault"
)


class StderrLog:
    """The lines an adapter wrote to stderr: the last ones, and the first line of each exception or panic.

    A Java StackOverflowError prints its name and then a thousand frames: the tail alone shows only frames,
    so the headline is kept beside it. A Python traceback keeps its ``Traceback ...`` line and its final
    line (the exception). Lines are stored escaped.
    """

    def __init__(self, keep: int = 200, headlines: int = 3) -> None:
        self.lines: collections.deque[tuple[int, str]] = collections.deque(maxlen=keep)
        self.headlines: list[tuple[int, str]] = []
        self.max_headlines = headlines
        self.count = 0
        self._in_traceback = False

    def add(self, raw: bytes) -> None:
        """Take one line as read from the pipe."""
        line = escaped(raw.decode("utf-8", "surrogateescape").rstrip("\n"), keep_tabs=True)
        index, self.count = self.count, self.count + 1
        self.lines.append((index, line))
        if len(self.headlines) >= self.max_headlines:
            return
        if self._in_traceback and line and not line[0].isspace():
            self._in_traceback = False  # the exception that ends a Python traceback
            self.headlines.append((index, line))
        elif _HEADLINE.search(line):
            self._in_traceback = line.startswith("Traceback (most recent call last)")
            self.headlines.append((index, line))

    def excerpt(self, limit: int = STDERR_LINES) -> str:
        """At most ``limit`` lines: the headlines the tail does not show, a line saying what was left out, the tail."""
        lines = list(self.lines)
        if len(lines) <= limit:
            return "\n".join(text for _, text in lines)
        heads = [head for head in self.headlines if head[0] < lines[-(limit - 1 - len(self.headlines))][0]]
        if not heads:
            return "\n".join(text for _, text in lines[-limit:])
        tail = lines[-(limit - 1 - len(heads)) :]
        heads = [head for head in heads if head[0] < tail[0][0]]
        skipped = self.count - len(heads) - len(tail)  # between and after the headlines, before the tail
        marker = [f"... ({skipped} lines left out)"] if skipped else []
        return "\n".join([*(text for _, text in heads), *marker, *(text for _, text in tail)])

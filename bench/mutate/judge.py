"""Judge one mutant by the corpus alone: the corpus run against the adapter built from the mutated code.

The test command each mutation tool runs once per mutant (cosmic-ray for the reference,
cargo-mutants for the Rust port, go-mutesting for the Go port). Exit 0 means every case
passed (the mutant survived), 1 that the corpus killed it, 3 that the mutant does not build.

Usage::

    python bench/mutate/judge.py ENGINE --source DIR [--quick | --slow]   # judge one mutant
    python bench/mutate/judge.py serve                             # the judging server (run.py starts it)

``ENGINE`` is reference, rust or go; ``--source`` is the copy of the engine the tool
mutated (never the worktree itself). ``--quick`` leaves out the million-node chain, the
one case that takes seconds; a mutant that survives the quick run is run again on the
whole corpus before it counts as a survivor (``bench/mutate/run.py`` does that; ``--slow``
runs only what the quick run left out, for a recheck on the corpus the quick run saw).

Judging is ``conformance run --command ADAPTER`` (the same runner, the same gate: any
failed, errored, xpassed or not-run result kills the mutant), with the adapter's
expected-failures file for the ports. An unsupported result kills it too: each
unmutated engine supports every case of the corpus (its hello declares every op and
level the corpus uses), so a mutant whose hello declares less than its engine's (the Go
op table's ``Ops`` made empty, say) is told apart by the cases it no longer runs, where
the plain gate would count them as unsupported and pass it. On this shared 2-core machine the harness's own
start and corpus load cost more than the run, so when ``serve`` is running the judge
hands the mutant to it over a Unix socket: one process keeps the corpus loaded and
starts a fresh adapter process from the mutated copy for each mutant. Without the server
the judge runs ``conformance run`` itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import socketserver
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = Path(sys.executable).parent / "conformance"
#: The cases a quick run leaves out: seconds each, where every other case takes milliseconds.
SLOW_CASES = ("structure/deep-chain-1000000",)
#: What a case may take before the mutant counts as killed (a mutant that loops forever).
CASE_TIMEOUT = 20.0
#: Where the judging server listens.
SOCKET = Path(os.environ.get("MUTATE_JUDGE_SOCKET", ROOT / "build" / "mutate" / "judge.sock"))
#: The address space a native port's mutant may use (prlimit --as): the unmutated Rust and Go adapters run
#: the whole corpus, the million-node chain included, in it; a mutant whose memory grows with the number of
#: passes (survivors/many-passes-on-one-graph) runs out of it instead of slowing down the shared machine.
MEMORY_LIMIT = 1 << 30
#: Each port's expected-failures file (the reference has none).
EXPECTED = {
    "rust": ROOT / "adapters" / "rust" / "expected-failures.toml",
    "go": ROOT / "adapters" / "go" / "expected-failures.toml",
}


def adapter_command(engine: str, source: Path, adapter: Optional[str] = None) -> list[str]:
    """The command that starts the adapter built from the mutated copy at ``source`` (or the command ``adapter``)."""
    if adapter is not None:
        return shlex.split(adapter)
    if engine == "reference":
        # The adapter process imports ``reference`` from the mutated copy (PYTHONPATH comes
        # before the editable install); the harness, a separate process, keeps the real one.
        return ["env", f"PYTHONPATH={source}", "PYTHONDONTWRITEBYTECODE=1", sys.executable, "-m", "conformance.reference_adapter"]
    if engine == "rust":
        return limited(source / "target" / "release" / "scalar-adapter")
    if engine == "go":
        return limited(source / "bin" / "adapter")
    raise SystemExit(f"judge.py: unknown engine {engine!r} (reference, rust or go)")


def limited(binary: Path) -> list[str]:
    """The command that starts a native adapter with at most ``MEMORY_LIMIT`` bytes of address space."""
    return ["prlimit", f"--as={MEMORY_LIMIT}", "--", str(binary)]


def build(engine: str, source: Path, adapter: Optional[str] = None) -> bool:
    """Build the adapter from the mutated source; False when it does not build (the mutant is unviable)."""
    if adapter is not None:  # built by the mutation tool (cargo-mutants and go test build it for the test)
        return True
    if engine == "rust":
        step = ["cargo", "build", "--release", "--quiet", "-j", "1", "--bin", "scalar-adapter"]
    elif engine == "go":
        step = ["go", "build", "-o", "bin/adapter", "./cmd/adapter"]
    else:
        return True
    env = dict(os.environ, GOMAXPROCS="1", GOFLAGS="-p=1")
    return subprocess.run(step, cwd=source, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def judge_by_command(engine: str, source: Path, selection: str, adapter: Optional[str] = None) -> int:
    """Judge with ``conformance run`` itself (no server): its exit code."""
    if not build(engine, source, adapter):
        return 3
    command = [str(CONFORMANCE), "run", "--command", shlex.join(adapter_command(engine, source, adapter))]
    command += ["--timeout", str(CASE_TIMEOUT)]
    if engine in EXPECTED:
        command += ["--expected-failures", str(EXPECTED[engine])]
    if selection != "all":
        listing = subprocess.run([str(CONFORMANCE), "list"], capture_output=True, text=True, check=True).stdout
        for line in listing.splitlines():
            if line.strip() and (line.split()[0] in SLOW_CASES) == (selection == "slow"):
                command += ["--case", line.split()[0]]
    report = source / "judge-report.json"
    command += ["--json", str(report)]
    # The adapter runs in the mutated copy: `python -m` puts its folder first on sys.path.
    if subprocess.run(command, cwd=source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
        return 1
    # Every unmutated engine supports every case: an unsupported one is a hello that declares less.
    return 1 if any(adapter["unsupported"] for adapter in json.loads(report.read_text())["adapters"]) else 0


def judge(engine: str, source: Path, selection: str, adapter: Optional[str] = None) -> int:
    """Judge through the server when it runs, else by the command."""
    if not SOCKET.exists():
        return judge_by_command(engine, source, selection, adapter)
    request = {"engine": engine, "source": str(source), "selection": selection, "adapter": adapter}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        try:
            client.connect(str(SOCKET))
        except OSError:
            return judge_by_command(engine, source, selection, adapter)
        client.sendall(json.dumps(request).encode() + b"\n")
        reply = client.makefile("rb").readline()
    # A server that went away mid-request gives no verdict: judge by the command instead.
    return int(reply) if reply.strip() else judge_by_command(engine, source, selection, adapter)


class _Judge(socketserver.StreamRequestHandler):
    """One request: a JSON line naming the mutant; the reply is the verdict's exit code."""

    server: "_Server"

    def handle(self) -> None:
        request = json.loads(self.rfile.readline())
        adapter = request.get("adapter") or None
        code = self.server.verdict(request["engine"], Path(request["source"]), str(request["selection"]), adapter)
        self.wfile.write(f"{code}\n".encode())


class _Server(socketserver.UnixStreamServer):
    """The corpus loaded once; each request runs it against a fresh adapter process."""

    def __init__(self) -> None:
        from conformance.expected import load_expected
        from conformance.fixture import load_corpus

        self.corpus = load_corpus()
        self.selections = {
            "all": self.corpus,
            "quick": [fixture for fixture in self.corpus if fixture.id not in SLOW_CASES],
            "slow": [fixture for fixture in self.corpus if fixture.id in SLOW_CASES],
        }
        self.expected = {engine: load_expected(path) for engine, path in EXPECTED.items()}
        SOCKET.parent.mkdir(parents=True, exist_ok=True)
        SOCKET.unlink(missing_ok=True)
        super().__init__(str(SOCKET), _Judge)

    def verdict(self, engine: str, source: Path, selection: str, adapter: Optional[str] = None) -> int:
        """0: every case passed; 1: the corpus killed the mutant; 3: it does not build."""
        from conformance.runner import run_adapter
        from conformance.transport import SubprocessTransport

        if not build(engine, source, adapter):
            return 3
        env: dict[str, Any] = {"PYTHONDONTWRITEBYTECODE": "1"}
        transport = SubprocessTransport(adapter_command(engine, source, adapter), cwd=source, env=env, timeout=CASE_TIMEOUT)
        fixtures = self.selections[selection]
        try:
            run = run_adapter(engine, transport, fixtures, self.expected.get(engine, []), on_result=_stop_at_failure)
        finally:
            transport.close()
        return 1 if run.unexpected or run.interrupted or any(result.outcome in KILLING for result in run.results) else 0


class _Killed(KeyboardInterrupt):
    """The first result that fails the gate: the verdict is known, the rest of the corpus need not run."""


#: The outcomes that kill a mutant besides the runner's unexpected ones: each unmutated engine supports every case.
KILLING = ("unsupported",)


def _stop_at_failure(results: list[Any]) -> None:
    """End the run at the first result that kills the mutant (one that breaks the adapter would restart it per case)."""
    from conformance.runner import UNEXPECTED

    if any(result.outcome in UNEXPECTED or result.outcome in KILLING for result in results):
        raise _Killed("killed")


class _Terminated(BaseException):
    """SIGTERM: not a KeyboardInterrupt, which the runner would take for a verdict's end (a kill)."""


def _terminate(signum: int, frame: Any) -> None:
    raise _Terminated()


def serve() -> int:
    """Serve judgements until killed; the socket is removed on the way out.

    SIGTERM (run.py's ``terminate()``) raises ``_Terminated``, which the runner does not
    catch: a verdict it cuts short gives its client no reply, so the client judges that
    mutant by the command instead. As a KeyboardInterrupt it was caught by the runner as an
    interrupted run, replied as a kill, and left the server running (a pass sharing the
    server of one that ended got a false kill, and the ending pass waited for ever).
    """
    server = _Server()
    signal.signal(signal.SIGTERM, _terminate)  # terminate() removes the socket too
    print(f"judge: serving on {SOCKET} ({len(server.corpus)} cases loaded)", flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, _Terminated):
        pass
    finally:
        server.server_close()
        SOCKET.unlink(missing_ok=True)
    return 0


def main() -> int:
    """Parse the arguments and judge (or serve)."""
    if sys.argv[1:2] == ["serve"]:
        return serve()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("engine", choices=["reference", "rust", "go"])
    parser.add_argument("--source", type=Path, required=True, help="the mutated copy of the engine")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--quick", action="store_true", help="leave out the million-node chain")
    chosen.add_argument("--slow", action="store_true", help="only what --quick leaves out")
    parser.add_argument("--adapter", metavar="CMD", help="the adapter command the mutation tool built (no build here)")
    args = parser.parse_args()
    selection = "quick" if args.quick else "slow" if args.slow else "all"
    return judge(args.engine, args.source.resolve(), selection, args.adapter)


if __name__ == "__main__":
    sys.exit(main())

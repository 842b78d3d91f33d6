"""bench/mutate (``make mutate``): the equivalent list, the Go token applier, the survivor cases in the corpus.

The mutation runs themselves take an hour; these tests check the pieces a rerun relies on.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "mutate"))

import run  # noqa: E402
from judge import SLOW_CASES  # noqa: E402

from conformance.fixture import load_corpus  # noqa: E402


def test_the_committed_equivalent_list_parses_and_gives_every_mutant_a_reason():
    listed = run.load_equivalents()
    assert listed, "bench/mutate/equivalent.toml lists no mutant"
    for key, why in listed.items():
        assert key.count(" | ") >= 2, f"{key!r}: not a mutant key (file | line | operator)"
        assert len(why) > 20, f"{key!r}: the reason {why!r} says too little"


def test_an_equivalent_entry_without_a_reason_is_refused_with_its_file_and_index(tmp_path):
    path = tmp_path / "equivalent.toml"
    path.write_text('[[equivalent]]\nmutant = "a | b | c"\nwhy = ""\n')
    with pytest.raises(run.ListError, match=r"equivalent\.toml: equivalent entry 0: needs"):
        run.load_equivalents(path)


def test_a_malformed_equivalent_list_ends_make_mutate_with_one_line_and_exit_2(tmp_path, monkeypatch):
    bad = tmp_path / "equivalent.toml"
    bad.write_text("[[equivalent]\n")
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'bench' / 'mutate')!r}); import run, pathlib; "
        f"run.EQUIVALENT = pathlib.Path({str(bad)!r}); sys.argv = ['run.py', '--collect-only']; sys.exit(run.main())"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith(f"mutate: {bad}: not valid TOML")
    assert "Traceback" not in done.stderr


def test_the_go_token_applier_replaces_the_operator_at_its_column_as_gremlins_does(tmp_path):
    source = tmp_path / "op.go"
    source.write_text("package x\n\nfunc f(a, b float64) bool { return a <= b && -a < b }\n")

    def column(token: str) -> int:  # 1-based, in bytes, as gremlins reports it
        return source.read_text().splitlines()[2].index(token) + 1

    run.apply_gremlin(source, 3, column("<="), "CONDITIONALS_BOUNDARY")
    assert "return a < b && -a < b" in source.read_text()
    run.apply_gremlin(source, 3, column("-a"), "INVERT_NEGATIVES")
    assert "return a < b && +a < b" in source.read_text()
    run.apply_gremlin(source, 3, column("&&"), "INVERT_LOGICAL")
    assert "return a < b || +a < b" in source.read_text()


def test_each_survivor_case_is_in_the_corpus_and_names_the_mutant_it_was_written_for():
    survivors = [fixture for fixture in load_corpus() if fixture.id.startswith("survivors/")]
    assert len(survivors) >= 3
    for fixture in survivors:
        assert " on reference/" in fixture.description or " on adapters/" in fixture.description, fixture.id
        assert "Catches" in fixture.description, fixture.id


def test_the_quick_run_leaves_out_only_cases_that_exist():
    ids = {fixture.id for fixture in load_corpus()}
    assert set(SLOW_CASES) <= ids


def test_the_judge_kills_a_mutant_whose_hello_declares_less_than_its_engine(tmp_path, monkeypatch):
    # Every unmutated engine supports the whole corpus, so an unsupported result is a mutant's
    # smaller hello (the Go op table's Ops made empty), not a missing feature: it kills.
    import judge

    monkeypatch.setattr(judge, "SOCKET", tmp_path / "no-server.sock")
    fake = f"{sys.executable} {ROOT / 'tests' / 'fakes' / 'partial_adapter.py'}"
    assert judge.judge("reference", tmp_path, "quick", fake) == 0
    assert judge.judge("reference", tmp_path, "quick", f"{fake} --levels values,gradients,errors,trace") == 1


def test_a_verdict_cut_short_by_sigterm_is_no_kill_and_the_server_exits(tmp_path):
    # run.py terminates the judging server it started; another pass may be using it. The verdict
    # in progress must give no reply (its client then judges by the command), not a kill, and
    # the server must end and remove its socket rather than serve on.
    import json
    import signal
    import socket
    import time

    sock = tmp_path / "judge.sock"
    env = {**__import__("os").environ, "MUTATE_JUDGE_SOCKET": str(sock)}
    server = subprocess.Popen([sys.executable, str(ROOT / "bench" / "mutate" / "judge.py"), "serve"], env=env)
    try:
        for _ in range(300):
            if sock.exists():
                break
            time.sleep(0.1)
        assert sock.exists(), "the judging server did not start"
        # An adapter that never answers hello: the verdict is still in progress when SIGTERM comes.
        silent = f"{sys.executable} -c 'import time; time.sleep(30)'"
        request = {"engine": "rust", "source": str(tmp_path), "selection": "quick", "adapter": silent}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(sock))
            client.sendall(json.dumps(request).encode() + b"\n")
            time.sleep(1.0)
            server.send_signal(signal.SIGTERM)
            reply = client.makefile("rb").readline()
        assert reply.strip() == b"", f"a verdict cut short replied {reply!r}"
        assert server.wait(timeout=20) == 0
        assert not sock.exists()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()

"""The adapter registry: builds run once and are skipped while current; env and workdir reach the adapter."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from conformance.fixture import load_corpus
from conformance.registry import load_registry
from conformance.runner import run_adapter
from conformance.transport import SubprocessTransport

ROOT = Path(__file__).resolve().parent.parent

ENV_ADAPTER = f"""
import os, sys
sys.path.insert(0, {str(ROOT)!r})
from conformance.execute import run_program
from conformance.program import DECLARABLE_OPS
from conformance.serve import serve
name = os.environ["ENGINE_NAME"] + "@" + os.path.basename(os.getcwd())
hello = {{"engine": {{"name": name, "version": "1", "language": "python"}}, "ops": list(DECLARABLE_OPS),
          "levels": ["values"], "features": []}}
sys.exit(serve(hello, run_program))
"""


def _registry(tmp_path: Path, body: str) -> Path:
    # Relative paths in a registry resolve from the registry file's own folder.
    path = tmp_path / "adapters.toml"
    path.write_text(body)
    return path


def test_a_build_runs_once_and_again_only_when_an_input_changes(tmp_path):
    engine = tmp_path / "engine"
    (engine / "src").mkdir(parents=True)
    (engine / "src" / "lib.txt").write_text("v1")
    registry = _registry(
        tmp_path,
        '[adapter.built]\nworkdir = "engine"\ncommand = "bin/adapter"\n'
        'build = "mkdir -p bin && cp src/lib.txt bin/adapter && echo built >> builds.log"\n'
        'build_inputs = ["src"]\nbuild_output = "bin/adapter"\n',
    )
    adapter = load_registry(registry)["built"]
    assert adapter.cwd == engine
    assert not adapter.build_is_current()
    assert adapter.run_build() is None
    assert adapter.build_is_current() and adapter.run_build() is None
    assert (engine / "builds.log").read_text().count("built") == 1
    time.sleep(0.01)
    (engine / "src" / "lib.txt").write_text("v2")
    os.utime(engine / "src" / "lib.txt", (time.time() + 5, time.time() + 5))
    assert not adapter.build_is_current()
    assert adapter.run_build() is None
    assert (engine / "builds.log").read_text().count("built") == 2


def test_a_build_that_leaves_its_output_as_it_was_is_not_run_again_on_every_run(tmp_path):
    # cargo builds one binary of several and does not touch it when only another's source changed.
    engine = tmp_path / "engine"
    (engine / "src").mkdir(parents=True)
    (engine / "src" / "other.txt").write_text("v1")
    registry = _registry(
        tmp_path,
        '[adapter.built]\nworkdir = "engine"\ncommand = "bin/adapter"\n'
        'build = "mkdir -p bin && { test -e bin/adapter || echo v > bin/adapter; } && echo built >> builds.log"\n'
        'build_inputs = ["src"]\nbuild_output = "bin/adapter"\n',
    )
    adapter = load_registry(registry)["built"]
    assert adapter.run_build() is None
    past = time.time() - 60
    os.utime(engine / "bin" / "adapter", (past, past))  # older than the source, as after an edit of another binary
    assert not adapter.build_is_current()
    assert adapter.run_build() is None
    assert adapter.build_is_current(), adapter.build_reason()
    assert adapter.run_build() is None
    assert (engine / "builds.log").read_text().count("built") == 2


def test_a_failing_build_reports_the_command_status_and_output(tmp_path):
    registry = _registry(
        tmp_path, '[adapter.broken]\ncommand = "x"\nbuild = "echo compiler says no >&2; exit 7"\nbuild_output = "x"\n'
    )
    failure = load_registry(registry)["broken"].run_build()
    assert failure is not None
    assert "failed with status 7" in failure and "compiler says no" in failure


def test_env_and_workdir_reach_the_adapter_process(tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "adapter.py").write_text(ENV_ADAPTER)
    registry = _registry(
        tmp_path,
        '[adapter.envy]\nworkdir = "work"\ncommand = "{python} adapter.py"\nenv = { ENGINE_NAME = "envy-engine" }\n',
    )
    adapter = load_registry(registry)["envy"]
    assert adapter.argv()[0] == sys.executable
    transport = SubprocessTransport(adapter.argv(), cwd=adapter.cwd, env=adapter.env)
    try:
        run = run_adapter("envy", transport, [f for f in load_corpus() if f.id == "repeated/x-mul-x"], [])
    finally:
        transport.close()
    assert run.handshake is not None and run.handshake.name == "envy-engine@work"
    assert [r.outcome for r in run.results if r.level == "values"] == ["passed"]


def test_relative_paths_resolve_from_the_registry_folder_whatever_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "kit" / "work").mkdir(parents=True)
    (tmp_path / "kit" / "work" / "expected.toml").write_text("# none\n")
    registry = tmp_path / "kit" / "adapters.toml"
    registry.write_text('[adapter.a]\nworkdir = "work"\ncommand = "./run"\nexpected_failures = "work/expected.toml"\n')
    monkeypatch.chdir(tmp_path)
    adapter = load_registry(Path("kit/adapters.toml"))["a"]
    assert adapter.cwd == tmp_path / "kit" / "work"
    assert adapter.argv() == [str(tmp_path / "kit" / "work" / "run")]
    assert adapter.expected_failures_path() == tmp_path / "kit" / "work" / "expected.toml"


def test_a_missing_expected_failures_file_named_by_the_registry_is_an_error(tmp_path):
    import pytest

    from conformance.expected import ExpectedError, load_expected

    registry = _registry(tmp_path, '[adapter.a]\ncommand = "x"\nexpected_failures = "nosuch.toml"\n')
    with pytest.raises(ExpectedError, match="nosuch.toml: the expected-failures file does not exist"):
        load_expected(load_registry(registry)["a"].expected_failures_path())


def test_timeouts_in_the_registry_must_be_positive_seconds(tmp_path):
    import pytest

    from conformance.registry import RegistryError

    adapter = load_registry(_registry(tmp_path, '[adapter.a]\ncommand = "x"\ntimeout = 2.5\nhandshake_timeout = 1\n'))["a"]
    assert (adapter.timeout, adapter.handshake_timeout) == (2.5, 1.0)
    with pytest.raises(RegistryError, match="adapter 'b': field 'timeout' must be a positive number of seconds, got -1"):
        load_registry(_registry(tmp_path, '[adapter.b]\ncommand = "x"\ntimeout = -1\n'))

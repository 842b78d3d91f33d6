"""Opening an adapter: choose it, check its requirements, build it, read its expected failures, make its transport."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.errors import UsageError
from conformance.expected import ExpectedError
from conformance.launch import choose_adapters, open_adapter
from conformance.registry import RegistryError, ad_hoc, load_registry, split_command
from conformance.transport import CASE_TIMEOUT, HANDSHAKE_TIMEOUT, AdapterFault, SubprocessTransport


def _registry(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "adapters.toml"
    path.write_text(body)
    return path


def test_a_missing_requirement_makes_the_adapter_unavailable_before_anything_is_built(tmp_path):
    registry = _registry(
        tmp_path, '[adapter.a]\ncommand = "x"\nbuild = "touch built"\nrequires = { tools = ["no-such-tool-xyz"] }\n'
    )
    opened = open_adapter(load_registry(registry)["a"])
    assert opened.unavailable == "no-such-tool-xyz is not on PATH"
    assert opened.transport is None and opened.build_failure is None
    assert not (tmp_path / "built").exists()


def test_a_failed_build_is_reported_with_its_output_and_no_transport_is_made(tmp_path):
    body = '[adapter.a]\ncommand = "x"\nbuild = "echo compiler says no >&2; exit 7"\nbuild_output = "x"\n'
    registry = _registry(tmp_path, body)
    lines: list[str] = []
    opened = open_adapter(load_registry(registry)["a"], log=lines.append)
    assert opened.build_failure is not None and "failed with status 7" in opened.build_failure
    assert "compiler says no" in opened.build_failure
    assert opened.transport is None and opened.unavailable is None
    assert lines and lines[0].startswith("a: building with `echo compiler says no")


def test_timeouts_come_from_the_caller_then_the_registry_then_the_defaults(tmp_path):
    body = '[adapter.set]\ncommand = "x"\ntimeout = 2.5\nhandshake_timeout = 4\n[adapter.unset]\ncommand = "x"\n'
    registry = load_registry(_registry(tmp_path, body))
    given = open_adapter(registry["set"], timeout=1.0, handshake_timeout=3.0).transport
    from_registry = open_adapter(registry["set"]).transport
    defaults = open_adapter(registry["unset"]).transport
    assert given is not None and from_registry is not None and defaults is not None
    assert (given.timeout, given.start_timeout) == (1.0, 3.0)
    assert (from_registry.timeout, from_registry.start_timeout) == (2.5, 4.0)
    assert (defaults.timeout, defaults.start_timeout) == (CASE_TIMEOUT, HANDSHAKE_TIMEOUT)


def test_the_expected_failures_are_read_and_a_missing_file_is_an_error_unless_it_is_about_to_be_written(tmp_path):
    expected = tmp_path / "expected.toml"
    expected.write_text('[[expected]]\ncase = "ops/*"\nlevel = "*"\nreason = "on purpose"\n')
    opened = open_adapter(ad_hoc(f"{sys.executable} adapter.py", expected))
    assert [entry.reason for entry in opened.expected] == ["on purpose"]
    assert opened.transport is not None and opened.transport.argv == [sys.executable, "adapter.py"]
    missing = ad_hoc("x", tmp_path / "nosuch.toml")
    with pytest.raises(ExpectedError, match="nosuch.toml: the expected-failures file does not exist"):
        open_adapter(missing)
    assert open_adapter(missing, expected_missing_ok=True).expected == []


def test_choose_adapters_puts_the_command_first_then_the_named_adapters(tmp_path):
    registry = _registry(tmp_path, '[adapter.a]\ncommand = "a"\n[adapter.b]\ncommand = "b"\n')
    chosen = choose_adapters(command="./mine", names=["b"], expected_failures=Path("e.toml"), registry=registry)
    assert [a.name for a in chosen] == ["command", "b"]
    assert chosen[0].expected_failures == str(Path("e.toml").resolve())
    everything = choose_adapters(command=None, names=None, expected_failures=None, registry=registry)
    assert [a.name for a in everything] == ["a", "b"]
    assert [a.name for a in choose_adapters(command="./mine", names=None, expected_failures=None, registry=registry)] == [
        "command"
    ]


def test_choose_adapters_names_what_is_wrong_as_a_usage_error(tmp_path):
    registry = _registry(tmp_path, '[adapter.a]\ncommand = "a"\n')
    with pytest.raises(UsageError, match=r"--adapter 'nosuch' is not registered in .*adapters.toml \(known: a\)"):
        choose_adapters(command=None, names=["nosuch"], expected_failures=None, registry=registry)
    with pytest.raises(UsageError, match="no adapter registry at .*nothere.toml: give the adapter as --command CMD"):
        choose_adapters(command=None, names=None, expected_failures=None, registry=tmp_path / "nothere.toml")
    with pytest.raises(UsageError, match='--command "\'unclosed" cannot be split into arguments: No closing quotation'):
        choose_adapters(command="'unclosed", names=None, expected_failures=None, registry=registry)


def test_a_command_that_cannot_be_split_is_named_where_it_came_from(tmp_path):
    with pytest.raises(RegistryError, match="adapter 'a': field 'command' cannot be split into arguments: No closing"):
        load_registry(_registry(tmp_path, '[adapter.a]\ncommand = "run \'x"\n'))
    assert split_command("run 'a b' c", "here") == ["run", "a b", "c"]


def test_a_launched_adapter_is_greeted_later_and_a_failed_launch_is_a_failed_start(tmp_path):
    transport = SubprocessTransport([sys.executable, "-m", "conformance.reference_adapter"])
    try:
        transport.launch()
        assert transport.process is not None and transport.hello is None  # started, its hello not read yet
        pid = transport.process.pid
        assert transport.handshake().name == "reference"
        assert transport.process.pid == pid  # the launched process, not a second one
    finally:
        transport.close()
    missing = SubprocessTransport(["/nonexistent/adapter"])
    missing.launch()
    with pytest.raises(AdapterFault) as fault:
        missing.handshake()
    assert fault.value.kind == "spawn" and "cannot start: no such file: /nonexistent/adapter" in str(fault.value)
    dying = SubprocessTransport([sys.executable, "-c", "import sys; print('no engine here', file=sys.stderr); sys.exit(3)"])
    dying.launch()
    with pytest.raises(AdapterFault) as fault:
        dying.handshake()
    assert fault.value.kind == "start" and "exited with status 3 during the handshake" in str(fault.value)
    assert "no engine here" in fault.value.stderr

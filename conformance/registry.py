"""The adapter registry, ``adapters/adapters.toml``: what to run, how to build it, what it needs.

Each ``[adapter.NAME]`` table has:

    command            the adapter's command line (``{python}`` is the interpreter running the kit)
    description        one line for reports
    workdir            folder to run (and build) in (default: the registry file's folder)
    build              optional build command, run before the first case and skipped when up to date
    build_inputs       files or folders (relative to workdir) whose changes make the build stale
    build_output       the file the build produces; the build is up to date when it is newer than every input
    env                extra environment variables
    requires           {tools = [...], modules = [...]}: programs on PATH and Python modules it needs
    expected_failures  the expected-failures file; it must exist (an empty list is a file with no entries)
    timeout            seconds one case may take (default: conformance.transport.CASE_TIMEOUT)
    handshake_timeout  seconds the adapter has to answer hello (default: HANDSHAKE_TIMEOUT)

Every relative path (workdir, expected_failures) resolves from the folder the
registry file is in, so a registry works from any current directory. An
adapter whose requirements are missing is *unavailable*, with the reason.
Commands come only from this file or the user's command line, never from fixtures.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from .fixture import PACKAGE_ROOT
from .tomlfile import load_toml

#: The kit's own registry, in its checkout (an installed kit has none: use --registry or --command).
REGISTRY = PACKAGE_ROOT / "adapters" / "adapters.toml"
_KEYS = {
    "command",
    "description",
    "workdir",
    "build",
    "build_inputs",
    "build_output",
    "env",
    "requires",
    "expected_failures",
    "timeout",
    "handshake_timeout",
}


class RegistryError(ValueError):
    """A malformed registry; the message names the file, the adapter and the field."""


def split_command(command: str, where: str) -> list[str]:
    """An adapter command line as its arguments, split as a POSIX shell would (the kit's one place that does).

    Raises RegistryError ``<where> cannot be split into arguments: ...`` for an unclosed quote or the like.
    """
    try:
        return shlex.split(command)
    except ValueError as error:
        raise RegistryError(f"{where} cannot be split into arguments: {error}") from None


@dataclass(frozen=True)
class AdapterConfig:
    """One registered (or ad hoc) adapter."""

    name: str
    command: str
    root: Path
    description: str = ""
    workdir: Optional[str] = None
    build: Optional[str] = None
    build_inputs: tuple[str, ...] = ()
    build_output: Optional[str] = None
    env: dict[str, str] = field(default_factory=dict)
    tools: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    expected_failures: Optional[str] = None
    timeout: Optional[float] = None
    handshake_timeout: Optional[float] = None
    ad_hoc: bool = False
    """Given as a command, not registered: reports call it by its engine's name from hello."""

    @property
    def cwd(self) -> Path:
        """The folder the adapter runs in."""
        return self.root / self.workdir if self.workdir else self.root

    def argv(self) -> list[str]:
        """The command as an argument list, ``{python}`` expanded, relative programs resolved."""
        argv = [part.replace("{python}", sys.executable) for part in split_command(self.command, f"adapter {self.name!r}")]
        if argv and "/" in argv[0] and not Path(argv[0]).is_absolute():
            argv[0] = str(self.cwd / argv[0])
        return argv

    def missing(self) -> Optional[str]:
        """Why the adapter cannot run here, or None when every requirement is met."""
        for tool in self.tools:
            if shutil.which(tool) is None:
                return f"{tool} is not on PATH"
        for module in self.modules:
            if importlib.util.find_spec(module) is None:
                return f"Python module {module} is not installed"
        return None

    def expected_failures_path(self) -> Optional[Path]:
        """Where the expected-failures file lives, if the adapter has one."""
        return self.root / self.expected_failures if self.expected_failures else None

    def build_is_current(self) -> bool:
        """True when there is no build or its output is newer than every input."""
        return self.build_reason() is None

    def build_reason(self) -> Optional[str]:
        """Why the build must run (no output yet, or an input newer than it), or None when it is current."""
        if not self.build:
            return None
        if self.ad_hoc:
            return "a build given with the command runs before every session"
        if not self.build_output:
            return "it declares no build_output, so it always builds"
        output = self.cwd / self.build_output
        if not output.exists():
            return f"{self.build_output} does not exist yet"
        built = output.stat().st_mtime
        for entry in self.build_inputs:
            path = self.cwd / entry
            files = path.rglob("*") if path.is_dir() else [path]
            newer = next((f for f in files if f.is_file() and f.stat().st_mtime > built), None)
            if newer is not None:
                return f"{newer.relative_to(self.cwd)} is newer than {self.build_output}"
        return None

    def run_build(self, log: Any = None) -> Optional[str]:
        """Build if stale; returns None on success or the failure with the output's tail.

        ``log`` (a callable taking one line) hears what is built, why, and how long it took. The build runs in
        a process group of its own, ended as a whole if the harness is interrupted.
        """
        reason = self.build_reason()
        if self.build is None or reason is None:
            return None
        if log:
            log(f"{self.name}: building with `{self.build}` in {self.cwd} ({reason}); a first build can take a minute")
        started = time.monotonic()
        process = subprocess.Popen(
            self.build,
            shell=True,
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **self.env},
            start_new_session=True,
        )
        try:
            output, _ = process.communicate()
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        seconds = time.monotonic() - started
        if process.returncode != 0:
            tail = "\n".join(output.strip().splitlines()[-20:])
            return f"build command `{self.build}` failed with status {process.returncode} after {seconds:.1f} s:\n{tail}"
        output_path = self.cwd / self.build_output if self.build_output else None
        if output_path is not None and output_path.exists() and self.build_reason() is not None:
            # The build tool judged the output current and left it as it was (cargo does, when only an input
            # that this output does not depend on changed): mark it as built now, or every run builds again.
            os.utime(output_path)
        if log:
            log(f"{self.name}: built in {seconds:.1f} s")
        return None


def load_registry(path: Path = REGISTRY) -> dict[str, AdapterConfig]:
    """Read every adapter of a registry file, or raise RegistryError naming file, adapter and field."""
    data = load_toml(path, RegistryError, f"{path}: the adapter registry")
    tables = data.get("adapter")
    if not isinstance(tables, dict):
        raise RegistryError(f"{path}: expected [adapter.NAME] tables")
    root = path.resolve().parent
    return {name: _adapter(name, table, root, f"{path}: adapter {name!r}") for name, table in tables.items()}


def _adapter(name: str, table: Any, root: Path, where: str) -> AdapterConfig:
    if not isinstance(table, dict):
        raise RegistryError(f"{where}: must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise RegistryError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")

    def text(key: str, required: bool = False) -> Optional[str]:
        value = table.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            raise RegistryError(f"{where}: field {key!r} must be a non-empty string, got {value!r}")
        return value

    def strings(value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RegistryError(f"{where}: field {key!r} must be a list of strings, got {value!r}")
        return tuple(value)

    requires = table.get("requires", {})
    if not isinstance(requires, dict) or set(requires) - {"tools", "modules"}:
        raise RegistryError(f"{where}: field 'requires' must be a table with 'tools' and/or 'modules'")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise RegistryError(f"{where}: field 'env' must be a table of strings")

    def seconds(key: str) -> Optional[float]:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise RegistryError(f"{where}: field {key!r} must be a positive number of seconds, got {value!r}")
        return float(value)

    command = text("command", required=True)
    assert command is not None
    split_command(command, f"{where}: field 'command'")
    return AdapterConfig(
        name=name,
        command=command,
        root=root,
        description=table.get("description", ""),
        workdir=text("workdir"),
        build=text("build"),
        build_inputs=strings(table.get("build_inputs", []), "build_inputs"),
        build_output=text("build_output"),
        env=dict(env),
        tools=strings(requires.get("tools", []), "requires.tools"),
        modules=strings(requires.get("modules", []), "requires.modules"),
        expected_failures=text("expected_failures"),
        timeout=seconds("timeout"),
        handshake_timeout=seconds("handshake_timeout"),
    )


#: The name of an ad hoc adapter until its hello names the engine (``runner.engine_name``).
AD_HOC = "command"


def ad_hoc(
    command: str,
    expected_failures: Optional[Path] = None,
    *,
    root: Optional[Path] = None,
    build: Optional[str] = None,
    option: str = "--command",
) -> AdapterConfig:
    """An unregistered adapter given on the command line; relative paths resolve against ``root`` (the current folder).

    ``expected_failures`` is its expected-failures file, if one was given (resolved against ``root`` too);
    ``build`` a command run in ``root`` before the first case, every session (it has no ``build_output``).
    ``option`` names the option the command came from in an error.
    """
    folder = root or Path.cwd()
    split_command(command, f"{option} {command!r}")
    return AdapterConfig(
        name=AD_HOC,
        command=command,
        root=folder,
        description=command,
        build=build,
        expected_failures=str((folder / expected_failures).resolve()) if expected_failures else None,
        ad_hoc=True,
    )


def registered(registry: Path, names: Optional[Sequence[str]], option: str) -> list[AdapterConfig]:
    """The adapters ``names`` of the registry file (every one when names is None), in that order.

    Raises RegistryError for a malformed registry, or ``<option> 'NAME' is not registered in <registry> (known: ...)``.
    """
    adapters = load_registry(registry)
    for name in names or []:
        if name not in adapters:
            raise RegistryError(f"{option} {name!r} is not registered in {registry} (known: {', '.join(adapters)})")
    return [adapters[name] for name in (names if names is not None else adapters)]

"""The adapter registry, ``adapters/adapters.toml``: what to run, how to build it, what it needs.

Each ``[adapter.NAME]`` table has:

    command            the adapter's command line (``{python}`` is the interpreter running the kit)
    description        one line for reports
    workdir            folder to run (and build) in, relative to the project root (default: the root)
    build              optional build command, run before the first case and skipped when up to date
    build_inputs       files or folders whose changes make the build stale
    build_output       the file the build produces; the build is up to date when it is newer than every input
    env                extra environment variables
    requires           {tools = [...], modules = [...]}: programs on PATH and Python modules it needs
    expected_failures  the expected-failures file, relative to the project root

An adapter whose requirements are missing is *unavailable*, with the reason.
Commands come only from this file or the user's command line, never from fixtures.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .fixture import PACKAGE_ROOT
from .tomlfile import load_toml

REGISTRY = PACKAGE_ROOT / "adapters" / "adapters.toml"
_KEYS = {"command", "description", "workdir", "build", "build_inputs", "build_output", "env", "requires", "expected_failures"}


class RegistryError(ValueError):
    """A malformed registry; the message names the file, the adapter and the field."""


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

    @property
    def cwd(self) -> Path:
        """The folder the adapter runs in."""
        return self.root / self.workdir if self.workdir else self.root

    def argv(self) -> list[str]:
        """The command as an argument list, ``{python}`` expanded, relative programs resolved."""
        argv = [part.replace("{python}", sys.executable) for part in shlex.split(self.command)]
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
        if not self.build:
            return True
        if not self.build_output:
            return False
        output = self.cwd / self.build_output
        if not output.exists():
            return False
        built = output.stat().st_mtime
        for entry in self.build_inputs:
            path = self.cwd / entry
            files = path.rglob("*") if path.is_dir() else [path]
            if any(f.is_file() and f.stat().st_mtime > built for f in files):
                return False
        return True

    def run_build(self) -> Optional[str]:
        """Build if stale; returns None on success or the failure with the output's tail."""
        if self.build is None or self.build_is_current():
            return None
        result = subprocess.run(
            self.build, shell=True, cwd=self.cwd, capture_output=True, text=True, env={**os.environ, **self.env}
        )
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-20:])
            return f"build command `{self.build}` failed with status {result.returncode}:\n{tail}"
        return None


def load_registry(path: Path = REGISTRY) -> dict[str, AdapterConfig]:
    """Read every adapter of a registry file, or raise RegistryError naming file, adapter and field."""
    data = load_toml(path, RegistryError, f"{path}: the adapter registry")
    tables = data.get("adapter")
    if not isinstance(tables, dict):
        raise RegistryError(f"{path}: expected [adapter.NAME] tables")
    root = path.resolve().parent.parent
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
    command = text("command", required=True)
    assert command is not None
    try:
        shlex.split(command)
    except ValueError as error:
        raise RegistryError(f"{where}: field 'command' cannot be split into arguments: {error}") from None
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
    )


def ad_hoc(command: str) -> AdapterConfig:
    """An unregistered adapter given on the command line; relative paths resolve against the current folder."""
    try:
        shlex.split(command)
    except ValueError as error:
        raise RegistryError(f"--command {command!r} cannot be split into arguments: {error}") from None
    return AdapterConfig(name="command", command=command, root=Path.cwd(), description=command)

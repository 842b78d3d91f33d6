"""``conformance init LANG [DIR]``: write a starter adapter for a port in Python, Rust, Go, JavaScript, Java or C++.

The starters are package data (``conformance/starters/<lang>/``), so an installed
kit writes them anywhere. Each is a protocol loop the porter does not edit, one
file of engine hooks they fill in, an empty expected-failures file, a CI snippet,
a README and a ``pytest.ini`` (written from the starter's row below: ``pytest DIR``
runs the gate, building first). Nothing is ever overwritten: if any target file exists, nothing is
written at all. After writing, it prints the exact commands to build and run, and,
for a language that needs a build, the same gate with the kit running the build
first (``--build`` / ``--conformance-build``), so a stale binary is never checked.
A language without a starter gets the protocol and the Python starter as a model.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from ..errors import UsageError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

DEFAULT_DIR = "conformance-adapter"


@dataclass(frozen=True)
class Starter:
    """One language's starter: the file to edit, how to build it and the adapter command, both run from DIR's parent."""

    hooks: str
    build: str  # "" when nothing needs building; {dir} is the starter folder
    command: str


STARTERS = {
    "python": Starter("engine_hooks.py", "", "python3 {dir}/adapter.py"),
    "rust": Starter(
        "src/hooks.rs", "cargo build --release --manifest-path {dir}/Cargo.toml", "{dir}/target/release/conformance-adapter"
    ),
    "go": Starter("hooks.go", "go build -C {dir} -o adapter .", "{dir}/adapter"),
    "javascript": Starter("hooks.mjs", "", "node {dir}/adapter.mjs"),
    "java": Starter(
        "src/main/java/conformance/Hooks.java",
        "mvn -q -B -f {dir}/pom.xml package",
        "java -Xmx4g -jar {dir}/target/conformance-adapter.jar",
    ),
    "cpp": Starter("hooks.hpp", "make -C {dir}", "{dir}/adapter"),
}
#: Other spellings of a starter's language.
ALIASES = {"c++": "cpp", "js": "javascript", "node": "javascript", "py": "python", "golang": "go"}
LANGUAGES = tuple(STARTERS)
#: What a build or a test run may leave in a starter folder of the kit's checkout: never copied.
BUILD_OUTPUTS = ("__pycache__", "target", "adapter")
#: Files whose ``@DIR@`` becomes the folder the starter is written to, so their commands are exact.
TEMPLATES = ("README.md", "ci-snippet.yml")


#: The pytest settings written beside the starter: the gate as ``pytest DIR`` (or ``cd DIR && pytest``) runs it.
PYTEST_INI = "pytest.ini"


def pytest_ini(language: str) -> bytes:
    """The starter's pytest settings; the plugin reads an ini file's commands and paths from the ini file's folder."""
    build, command = commands(language, ".")
    lines = [
        "# The conformance gate as pytest runs it: `pytest DIR` from the folder above, or `cd DIR && pytest`.",
        "# The commands and paths below are read from this folder. Written by `conformance init`.",
        "[pytest]",
        "addopts = -p no:cacheprovider",
        "testpaths = .",
        f"norecursedirs = {' '.join(BUILD_OUTPUTS)} node_modules .git",
    ]
    if build:
        lines.append("# Built before the session, so the gate never checks a stale binary.")
        lines.append(f"conformance_build = {build}")
    lines += [f"conformance_command = {command}", "conformance_expected_failures = expected-failures.toml", ""]
    return "\n".join(lines).encode()


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Declare the subcommand."""
    parser = subparsers.add_parser("init", help=f"write a starter adapter for your engine ({', '.join(LANGUAGES)})")
    parser.add_argument("language", metavar="LANG", help=f"the starter's language: {', '.join(LANGUAGES)}")
    parser.add_argument("dir", nargs="?", default=DEFAULT_DIR, metavar="DIR", help=f"where to write it (default: {DEFAULT_DIR})")
    parser.set_defaults(handler=run)


def starter_files(language: str) -> Iterator[tuple[str, "Traversable"]]:
    """(relative path, packaged file) of every file of a language's starter."""
    stack: list[tuple[str, "Traversable"]] = [("", files("conformance") / "starters" / language)]
    while stack:
        prefix, folder = stack.pop()
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name in BUILD_OUTPUTS or entry.name.endswith(".pyc"):
                continue
            if entry.is_dir():
                stack.append((f"{prefix}{entry.name}/", entry))
            else:
                # Shipped without its dot (package data globs skip hidden files), written with it.
                name = ".gitignore" if entry.name == "gitignore" else entry.name
                yield f"{prefix}{name}", entry


def commands(language: str, folder: str) -> tuple[str, str]:
    """The build command ("" if none) and the adapter command, for a starter written to ``folder``."""
    starter = STARTERS[language]
    where = shlex.quote(folder.rstrip("/") or ".")
    return starter.build.format(dir=where), starter.command.format(dir=where)


def quote(command: str) -> str:
    """The command as one shell word, in double quotes when that is safe (it reads best)."""
    return f'"{command}"' if not any(c in command for c in '"$`\\!') else shlex.quote(command)


def write_all(target: Path, contents: list[tuple[str, bytes]], folder: str) -> None:
    """Write every file, or, if one write fails, remove what was written (files and new folders) and re-raise."""
    made: list[Path] = []
    try:
        for relative, data in contents:
            path = target / relative
            missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            made.extend(reversed(missing))
            if relative in TEMPLATES:
                data = data.replace(b"@DIR@", folder.encode())
            with open(path, "xb") as out:  # "x": never replace a file that appeared meanwhile
                made.append(path)
                out.write(data)
    except OSError:
        for path in reversed(made):
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink(missing_ok=True)
        raise


def run(args: argparse.Namespace) -> int:
    """Write the starter, or refuse before writing anything."""
    language = ALIASES.get(args.language.lower(), args.language.lower())
    if language not in STARTERS:
        raise UsageError(
            f"no starter for {args.language!r} (starters: {', '.join(LANGUAGES)}); write your adapter from"
            " `conformance docs protocol`, with `conformance init python` as a model of the loop"
        )
    target = Path(args.dir)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is a file, not a folder; nothing was written")
    found = list(starter_files(language))
    contents = [(relative, source.read_bytes()) for relative, source in found] + [(PYTEST_INI, pytest_ini(language))]
    for relative, _ in contents:
        path = target / relative
        if path.exists() or path.is_symlink():
            raise UsageError(f"{path} already exists; nothing was written (choose another DIR or move it away)")
    folder = shlex.quote(args.dir.rstrip("/") or ".")
    try:
        write_all(target, contents, folder)
    except OSError as error:
        raise UsageError(f"cannot write the starter to {target}: {error}; nothing was written") from None
    build, command = commands(language, args.dir)
    expected = shlex.quote(f"{args.dir.rstrip('/') or '.'}/expected-failures.toml")
    print(f"wrote a {language} starter adapter to {target}:")
    for relative, _ in contents:
        print(f"  {target / relative}")
    print(f"\nnext: connect the hooks in {target / STARTERS[language].hooks} to your engine, then run:")
    if build:
        print(f"  {build}")
    print(f"  conformance run --command {quote(command)} --expected-failures {expected}")
    if build:
        print("\nin CI and pytest, let the kit run the build first, so the gate never checks a stale binary:")
        print(f"  conformance run --build {quote(build)} --command {quote(command)} --expected-failures {expected}")
        print(
            f"  pytest --conformance-build {quote(build)} --conformance-command {quote(command)}"
            f" --conformance-expected-failures {expected}"
        )
    print(f"\nthe same gate under pytest, from {target / PYTEST_INI} (it builds first where a build is needed):")
    print(f"  pytest {shlex.quote(args.dir.rstrip('/') or '.')}")
    return 0

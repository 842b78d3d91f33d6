"""The documents an installed kit prints describe the installed kit.

Every document the wheel ships (setup.py's DOCS) is scanned for paths of this
repository and for commands that need it (a registered adapter, ``make``); each
must be shipped in the wheel or marked "(in the kit's repository)", on its line,
in its paragraph, in the paragraph just before its code block, or in its
section's heading. ``conformance docs`` lists and prints every document,
the protocol schema included.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.commands.docs import REPOSITORY_MARK
from conformance.tomlfile import load_toml

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "conformance")
#: The repository's top-level entries a document could name (the dev .venv included, as `.venv/bin/...`).
TOP = {path.name for path in ROOT.iterdir() if not path.name.startswith(".git")} | {".venv"}
PATH = re.compile(r"(?<![\w./<>-])(\.?[A-Za-z_][\w.-]*(?:/[\w.*<>-]+)*/?)")
REGISTERED = set(load_toml(ROOT / "adapters" / "adapters.toml", ValueError)["adapter"])


def shipped_docs() -> tuple[str, ...]:
    """setup.py's DOCS: the documents the wheel carries."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "DOCS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no DOCS")


def shipped(path: str) -> bool:
    """Whether the wheel carries path (a repository path: fixtures/ and docs/ are copied into the package)."""
    head, _, rest = path.partition("/")
    if head == "fixtures":
        return True
    if head == "docs":
        return not rest or rest in shipped_docs()
    if head not in ("conformance", "reference"):
        return False
    fixed = re.split(r"[<*]", path)[0]
    if fixed == path:
        return (ROOT / path).exists()
    folder = ROOT / fixed.rsplit("/", 1)[0]  # a placeholder (`<hash>`, `*`): its folder must be shipped
    return folder.is_dir() and any(folder.iterdir())


def units(text: str) -> list[tuple[str, str, bool, str]]:
    """The document as (heading, text, is_code, previous unit's text): fenced blocks whole, other text by paragraph."""
    out: list[tuple[str, str, bool, str]] = []
    heading, lines, previous = "", [], ""
    fence = False

    def close(code: bool) -> None:
        nonlocal lines, previous
        if lines:
            body = "\n".join(lines)
            indented = all(line.startswith("    ") for line in lines)
            out.append((heading, body, code or indented, previous))
            previous, lines = body, []

    for line in text.splitlines():
        if line.startswith("```"):
            if fence:
                lines.append(line)
                close(True)
            else:
                close(False)
                lines.append(line)
            fence = not fence
            continue
        if fence:
            lines.append(line)
        elif not line.strip():
            close(False)
        elif line.startswith("#"):
            close(False)
            heading = line
        else:
            lines.append(line)
    close(fence)
    return out


def problems(name: str, text: str) -> list[str]:
    """Every repository path or command in text that is neither shipped nor marked."""
    found = []
    for heading, body, code, previous in units(text):
        if REPOSITORY_MARK in heading or REPOSITORY_MARK in body or (code and REPOSITORY_MARK in previous):
            continue
        for token in PATH.findall(body):
            head = token.split("/")[0]
            if "/" in token and head in TOP and not shipped(token.rstrip("/.")):
                found.append(f"{name}: {token!r} is not in the wheel: {body.splitlines()[0][:80]!r}")
        for adapter in re.findall(r"--adapter[ =]([\w-]+)", body):
            if adapter in REGISTERED and "--registry" not in body:
                found.append(f"{name}: --adapter {adapter} needs the kit's registry: {body.splitlines()[0][:80]!r}")
        if code and re.search(r"^\s*\$?\s*make\b", body, re.M):
            found.append(f"{name}: make needs the kit's Makefile: {body.splitlines()[0][:80]!r}")
    return found


@pytest.mark.parametrize("name", [doc for doc in shipped_docs() if doc.endswith(".md")])
def test_every_path_and_command_of_a_shipped_document_is_shipped_or_marked_for_the_repository(name):
    assert problems(name, (ROOT / "docs" / name).read_text()) == []


def test_the_scan_flags_an_unmarked_repository_path_and_accepts_a_marked_one():
    bad = "Run `python adapters/broken/adapter.py stale`.\n\n    $ conformance run --adapter micrograd\n\n```\nmake test\n```\n"
    assert len(problems("x.md", bad)) == 3
    good = f"Run `python adapters/broken/adapter.py stale` {REPOSITORY_MARK}.\n\nIn the kit's repository:\n"
    good += f"\nThe commands below run {REPOSITORY_MARK}:\n\n    $ conformance run --adapter micrograd\n"
    good += "\nThe corpus is `fixtures/`; the schema `fixtures/fixture.schema.json`; see `conformance/mutants.py`.\n"
    assert problems("x.md", good) == []


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=ROOT)


def test_conformance_docs_lists_every_document_the_protocol_schema_included():
    listing = conformance("docs")
    assert listing.returncode == 0
    names = {line.split()[0] for line in listing.stdout.splitlines()}
    assert {Path(doc).stem if doc.endswith(".md") else doc for doc in shipped_docs()} <= names


def test_conformance_docs_prints_or_locates_the_protocol_schema():
    text = conformance("docs", "protocol.schema.json")
    assert text.returncode == 0 and text.stdout == (ROOT / "docs" / "protocol.schema.json").read_text()
    where = conformance("docs", "protocol.schema.json", "--path")
    assert where.returncode == 0 and Path(where.stdout.strip()) == ROOT / "docs" / "protocol.schema.json"
    missing = conformance("docs", "protocol.schema")
    assert missing.returncode == 2 and "protocol.schema.json" in missing.stderr and "Traceback" not in missing.stderr

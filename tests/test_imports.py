"""The kit's modules import one another without a cycle, counting imports inside functions too.

Every module under ``conformance/`` (but ``conformance/starters/``, templates copied
to users) is parsed with ``ast``; each ``import conformance.x`` and ``from .x import y``
becomes an edge to the module it names (``y`` itself when it is a module). A cycle
is a module that, through its imports, needs itself: it works only while nothing
changes the order modules load in, so the test fails and prints the cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable, Optional

PACKAGE = Path(__file__).resolve().parent.parent / "conformance"
EXCLUDED = ("starters",)


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, from its ``__init__.py``)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[0] in EXCLUDED:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join((package.name, *parts))] = path
    return modules


def imports_of(name: str, source: str, is_package: bool, modules: Iterable[str]) -> set[str]:
    """The modules among ``modules`` that module ``name`` imports, anywhere in its source."""
    known = set(modules)
    found: set[str] = set()
    own_package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(_known_prefix(alias.name, known) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module, node.level, own_package)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in known else _known_prefix(base, known))
    found.discard("")
    return found


def _resolve(module: Optional[str], level: int, own_package: str) -> str:
    if level == 0:
        return module or ""
    parts = own_package.split(".")
    if level - 1 > len(parts) - 1:
        raise ValueError(f"relative import beyond the top of {own_package}")
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base


def _known_prefix(dotted: str, known: set[str]) -> str:
    """The longest leading part of a dotted name that is one of the modules (``""`` for anything else)."""
    parts = dotted.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports."""
    files = module_files(package)
    return {
        name: imports_of(name, path.read_text(encoding="utf-8"), path.name == "__init__.py", files) - {name}
        for name, path in files.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> Optional[list[str]]:
    """One cycle of the graph as the modules along it, the first repeated at the end; None when there is none."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> Optional[list[str]]:
        path.append(node)
        on_path.add(node)
        for target in sorted(graph.get(node, ())):
            if target in on_path:
                return path[path.index(target) :] + [target]
            if target not in done:
                cycle = visit(target)
                if cycle:
                    return cycle
        on_path.discard(path.pop())
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def test_the_kits_import_graph_has_no_cycle():
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_graph_sees_relative_absolute_and_function_level_imports():
    graph = import_graph()
    assert "conformance.commands.run" in graph["conformance.cli"]  # from .commands import run: a module
    assert "conformance.launch" in graph["conformance.commands.run"]  # from ..launch import ...
    assert "conformance.commands.run" in graph["conformance.pytest_plugin"]  # imported inside a function
    assert not any(name.startswith("conformance.starters") for name in graph)


def test_imports_are_resolved_as_python_resolves_them():
    modules = {"k", "k.a", "k.b", "k.sub", "k.sub.c", "k.sub.d", "k.sub.e"}
    source = "import os\nfrom . import d\nfrom .. import a\nfrom ..sub import e as see\ndef f():\n    import k.b.missing\n"
    assert imports_of("k.sub.c", source, False, modules) == {"k.sub.d", "k.a", "k.sub.e", "k.b"}
    package = "from . import c\nfrom .d import x\nfrom .. import b\nfrom k import version\n"
    assert imports_of("k.sub", package, True, modules) == {"k.sub.c", "k.sub.d", "k.b", "k"}


def test_a_cycle_is_found_and_printed_along_its_modules():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"x": {"a"}, "a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]

"""The shape of the package: no import cycle inside ``traindoc``.

Imports are read with ``ast`` from every ``lib/traindoc/**/*.py`` (top-level, function-local and
``TYPE_CHECKING`` ones alike: an import moved into a function or behind ``TYPE_CHECKING`` still
couples the two modules) and resolved to modules: ``from . import x`` and ``from .pkg import
name`` point at the submodule ``x`` / ``pkg.name`` where there is one, else at the package.
A package's own ``__init__`` that Python runs before a submodule is not counted as an import
(only what a module names). Imports built at run time (``importlib.import_module(f"…")``) are
not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from conftest import ROOT

LIB = ROOT / "lib"
PACKAGE = "traindoc"



def module_name(path: Path) -> str:
    """``lib/traindoc/a/b.py`` -> ``traindoc.a.b``; a package's ``__init__.py`` -> the package."""
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {module_name(p): p for p in sorted((LIB / PACKAGE).rglob("*.py"))
            if "__pycache__" not in p.parts}


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that module ``name`` (at ``path``) imports."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    out: set[str] = set()

    def nearest(mod: str) -> str | None:
        """``mod`` or its nearest enclosing module that is one of ours."""
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        return mod or None

    for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    got = nearest(alias.name)
                    if got:
                        out.add(got)
            continue
        if node.level:
            base_parts = package.split(".")
            if node.level > 1:
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if base != PACKAGE and not base.startswith(PACKAGE + "."):
            continue
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            got = sub if sub in known else nearest(base)
            if got:
                out.add(got)
    out.discard(name)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    mods = modules()
    known = set(mods)
    return {name: imported(name, path, known) for name, path in mods.items()}


def cyclic_components(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.add(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(comp)
    return out


def a_cycle(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One cycle through the component's first module, as a path that ends where it starts."""
    start = min(comp)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & comp):
            if child == start:
                return [*paths[node], start]
            if child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    return sorted(comp)  # not reached: a component of two or more has a cycle


def describe(graph: dict[str, set[str]], comps: list[set[str]]) -> str:
    return "\n".join(" -> ".join(a_cycle(graph, c)) for c in comps)


def test_the_graph_sees_the_package() -> None:
    """The walk finds the reader and its one-way imports (so an empty graph cannot pass)."""
    graph = import_graph()
    assert "traindoc.reader.lines" in graph["traindoc.reader.fast"]
    assert "traindoc.reader.account" in graph["traindoc.reader.decode"]
    assert "traindoc.reader" in graph["traindoc"]  # `from .reader import load`: the package


def test_no_import_cycle() -> None:
    graph = import_graph()
    found = [c for c in cyclic_components(graph)]
    assert not found, "import cycle(s) inside traindoc:\n" + describe(graph, found)


def test_the_reader_imports_one_way() -> None:
    """Inside ``traindoc.reader`` each module imports only those below it, in this order."""
    order = ["account", "decode", "sink", "lines", "fast", "files", "pool", "progress", ""]
    graph = import_graph()
    rank = {f"traindoc.reader.{m}".rstrip("."): i for i, m in enumerate(order)}
    assert set(rank) == {m for m in graph if m == "traindoc.reader"
                         or m.startswith("traindoc.reader.")}
    for mod, i in rank.items():
        up = sorted(m for m in graph[mod] if m in rank and rank[m] >= i)
        assert not up, f"{mod} imports {up}, above it"
    # and nothing the reader reads from imports the reader back
    below = {m for mod in rank for m in graph[mod]} - set(rank)
    assert not {m for m in below if graph[m] & set(rank)}

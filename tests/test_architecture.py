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
import re
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
    order = ["account", "decode", "sink", "lines", "patterns", "scanners", "registry", "planner",
             "bulk", "fast", "files", "pool", "readback", "progress", ""]
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


# -- ARCHITECTURE.md stays in step with the code ----------------------------------------------
ARCH = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = ARCH.index(f"\n## {title}\n")
    end = ARCH.find("\n## ", start + 1)
    return ARCH[start:end if end != -1 else None]


def test_architecture_names_every_module() -> None:
    listed = set(re.findall(r"^\| `(traindoc/[\w/]+\.py)` \|", _section("Modules"), re.M))
    present = {str(p.relative_to(LIB)) for p in (LIB / PACKAGE).rglob("*.py")
               if "__pycache__" not in p.parts}
    assert not present - listed, f"add to ARCHITECTURE.md's Modules: {sorted(present - listed)}"
    assert not listed - present, f"gone, remove from ARCHITECTURE.md: {sorted(listed - present)}"


def test_architecture_lists_every_table_and_column() -> None:
    from traindoc.schema import COLLECTIVE_STATES, SCHEMAS

    rows = {m[0]: [c.strip() for c in m[1].split(",")]
            for m in re.findall(r"^\| `(\w+)` \| ([^|]+) \|", _section("Tables"), re.M)}
    assert set(rows) == set(SCHEMAS)
    for table, columns in SCHEMAS.items():
        assert rows[table] == list(columns), f"ARCHITECTURE.md's {table} columns"
    assert all(f"`{s}`" in _section("Tables") for s in COLLECTIVE_STATES)


def test_architecture_lists_every_fact(tmp_path: Path) -> None:
    import traindoc
    from traindoc.score import RUNBOOKS, diagnosis

    log = tmp_path / "job.log"
    log.write_text("nothing wrong here\n")
    incident = traindoc.load(log)
    documented = {m[0]: {f.strip() for f in m[1].split(",")} for m in re.findall(
        r"^  - `(\w+)`: ([^`]+?)(?=\n  - |\n- |\Z)", _section("The runbook contract"), re.M | re.S)}
    assert set(documented) == set(RUNBOOKS)
    for cls in RUNBOOKS:
        facts = diagnosis(cls)(incident).facts
        assert documented[cls] == set(facts), f"{cls}: {documented[cls] ^ set(facts)}"


def test_the_add_a_format_example_parses_its_real_line(tmp_path: Path) -> None:
    code = re.search(r"```python\n(.*?)```", _section("Adding a log format"), re.S)[1]
    ns: dict = {}
    exec(compile(code, "ARCHITECTURE.md", "exec"), ns)  # our own documentation
    (parser,) = ns["PARSERS"]
    assert all(n in parser.example for n in parser.needles)
    assert ns["parse_memory"](parser.example) == {
        "metric": "max_allocated_mib", "value": 30516.369140625, "iteration": 1}
    assert ns["parse_memory"]("after 1 iterations, memory is fine") is None
    from traindoc.schema import SCHEMAS

    assert set(ns["parse_memory"](parser.example)) <= set(SCHEMAS[parser.table])
    assert parser.example in (ROOT / "data" / "corpus" / "loss_spike" / "loss_spike-deepspeed-3742"
                              / "logs" / "job.log").read_text()


# -- the registry of failure classes (issue 28.4) ------------------------------------------------

def test_every_class_keeps_the_contract_and_exports_nothing_else() -> None:
    import inspect

    from traindoc.diagnose import CLASSES
    from traindoc.locations import runbooks_dir
    from traindoc.schema import TABLES

    for c in CLASSES:
        name = c.__name__.rsplit(".", 1)[1]
        analysis = next(n for n in c.__all__ if n.endswith("Analysis"))
        assert set(c.__all__) == {"NAME", "FACT_KEYS", "TABLES", "RUNBOOK", "analyse", "report",
                                  "diagnose", analysis}, name
        assert c.NAME == name and c.RUNBOOK == f"{name}.ipynb"
        assert (runbooks_dir() / c.RUNBOOK).is_file(), c.RUNBOOK
        assert c.TABLES and set(c.TABLES) <= set(TABLES), name
        assert c.FACT_KEYS and all(isinstance(k, str) for k in c.FACT_KEYS), name
        knobs = list(inspect.signature(c.analyse).parameters)[1:]
        doc = inspect.getdoc(c.analyse) or ""
        args = doc.split("Args:", 1)[1] if "Args:" in doc else ""
        missing = [k for k in knobs if not re.search(rf"^\s+{k}: ", args, re.M)]
        assert not missing, f"{name}.analyse: knobs without an Args entry: {missing}"


def _class_lists(tree: ast.AST, names: set[str]) -> Iterator[int]:
    """Lines of tuple, list or set literals naming three or more failure classes (a dict from
    a class to its own data is not a list of the classes)."""
    for node in ast.walk(tree):
        items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else []
        named = {i.value for i in items if isinstance(i, ast.Constant) and i.value in names}
        if len(named) >= 3:
            yield node.lineno


def test_the_registry_is_the_only_list_of_classes() -> None:
    """``diagnose.CLASSES`` is the one list: no other literal names the classes, nothing
    imports a class by a string built at run time."""
    from traindoc.diagnose import NAMES

    registry = LIB / PACKAGE / "diagnose" / "__init__.py"
    files = [*sorted((LIB / PACKAGE).rglob("*.py")), *sorted((ROOT / "tests").glob("*.py")),
             *sorted((ROOT / "benchmarks").glob("*.py"))]
    bad = []
    for path in files:
        if path == registry:
            continue
        text = path.read_text(encoding="utf-8")
        bad += [f"{path.relative_to(ROOT)}:{n}" for n in _class_lists(ast.parse(text), set(NAMES))]
        if re.search(r"import_module\(f?[\"']traindoc\.diagnose", text):
            bad.append(f"{path.relative_to(ROOT)}: importlib by string")
    assert not bad, f"lists of the failure classes besides diagnose.CLASSES: {bad}"

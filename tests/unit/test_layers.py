"""The package's import graph: each layer imports only layers below it (and itself), and no
module imports another's private names. Imports inside functions count as much as those at the top."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "sluice"

# Lowest first. Within a layer, modules may import each other; a layer never imports one above it.
LAYERS: list[set[str]] = [
    # what everything stands on (retry: the provider retry loop; jobs: the queued job's skeleton)
    {"errors", "config", "identity", "retry", "jobs"},
    {"parsing", "chunking", "embedding", "storage", "llm"},  # readers, splitters, providers, the object store
    {"db"},  # the tracking tables and their repositories
    {"vectors"},  # the runtime vector tables
    # who reaches what; what may enter (the kill switch, a private pool's cap and limits)
    {"access", "admission"},
    # knowledge bases and their names, the pipeline, the search service, teardowns, chat files and
    # attachments, source syncs
    {"bases", "ingest", "search", "teardown", "chat", "sync"},
    {"api"},  # the HTTP edge: bodies, errors, OpenAPI
    {"aws", "observability", "wiring"},  # adapters built once, the handler shapes, the composition root
    {"cli", "local"},  # the command and the local runtime
]
# A pair of layer members that must not import each other even though they share a layer.
APART = {("ingest", "search"), ("search", "ingest"), ("ingest", "sync"), ("search", "sync"), ("sync", "search")}


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "sluice" else None


def _layer(name: str) -> int:
    for i, layer in enumerate(LAYERS):
        if name in layer:
            return i
    raise AssertionError(f"sluice.{name} is in no layer of tests/unit/test_layers.py")


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
    return found


def _module_files() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        out.append((name, path))
    return out


def test_no_layer_imports_one_above_it_or_a_private_name():
    modules = _module_files()
    assert len(modules) > 60
    wrong: list[str] = []
    for name, path in modules:
        own = _top(name)
        if own is None:  # sluice/__init__.py
            continue
        for imported, names in _imports(path):
            other = _top(imported)
            if other is None or other == own:
                continue
            if _layer(other) > _layer(own) or (own, other) in APART:
                wrong.append(f"{name} imports {imported}")
            wrong += [f"{name} imports the private {imported}.{n}" for n in names if n.startswith("_")]
    assert not wrong, "\n".join(wrong)


def test_every_package_of_sluice_has_a_layer():
    tops = {p.name if p.is_dir() else p.stem for p in PACKAGE.iterdir()
            if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert tops == set().union(*LAYERS)


# SQL is written under db/ and vectors/ only: elsewhere no call of ``execute``/``executemany`` and no
# string that opens like a statement (the keywords in capitals, as this package writes SQL, so prose
# such as "Update the base" is not one).
SQL_HOMES = {"db", "vectors"}
_STATEMENT = re.compile(
    r"^\s*(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS|ALTER|CREATE|DROP|TRUNCATE"
    r"|COPY|LOCK\s+TABLE)\b", re.MULTILINE)


def _sql_outside_its_homes(name: str, tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("execute", "executemany"):
            found.append(f"{name}:{node.lineno} calls {node.func.attr}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _STATEMENT.search(node.value):
            found.append(f"{name}:{node.lineno} holds SQL {node.value.strip()[:40]!r}")
    return found


def test_sql_lives_under_db_and_vectors_only():
    wrong: list[str] = []
    for name, path in _module_files():
        if _top(name) in SQL_HOMES:
            continue
        wrong += _sql_outside_its_homes(name, ast.parse(path.read_text(encoding="utf-8")))
    assert not wrong, "\n".join(wrong)


def test_the_sql_check_finds_what_it_must_and_nothing_else():
    caught = _sql_outside_its_homes("m", ast.parse(
        'conn.execute("x")\n'
        'q = f"SELECT {cols} FROM t"\n'
        'r = """\n    UPDATE documents SET status = 1"""\n'
        'cur.executemany("y", [])\n'))
    assert sorted(c.split(" ", 1)[0] for c in caught) == ["m:1", "m:2", "m:3", "m:5"]
    assert _sql_outside_its_homes("m", ast.parse(
        'a = "Select the base."\nb = "Update the document, then retry."\nc = "WITH care"\n'
        'pool.submit(run)\nsfn.start_execution(x)\n')) == []


def _module_graph() -> dict[str, set[str]]:
    """Which sluice modules each imports (a ``from package import submodule`` names the submodule)."""
    names = {name for name, _ in _module_files()}
    graph: dict[str, set[str]] = {}
    for name, path in _module_files():
        edges = set()
        for imported, members in _imports(path):
            if imported not in names:
                continue
            subs = {f"{imported}.{m}" for m in members} & names
            edges |= subs or {imported}
            if set(members) - {s.rsplit(".", 1)[1] for s in subs}:
                edges.add(imported)
        graph[name] = edges - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_at_any_level():
    # Between layers the order above already forbids one; this finds those between modules of one
    # package, which a function-level import can hide (imports inside functions count here too).
    graph = _module_graph()
    assert len(graph) > 60
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_hidden_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []

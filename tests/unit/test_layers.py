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
    {"errors", "config", "identity", "retry", "jobs", "outbound"},  # outbound: where a writer's URL may lead
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


# Settings are read at the composition root and the edges only (issue 31): domain code is handed the
# sections it needs. The root and edges: sluice.config (their home), wiring, the handler shapes
# (observability, which checks a function's model at cold start), the command line and the local
# runtime; and these adapters, each reading the one section of what it adapts.
SETTINGS_READERS = {"config", "wiring", "observability", "cli", "local"}
SETTINGS_ADAPTERS = {
    "sluice.aws": "AWS clients: where AWS is, the bucket and its key",
    "sluice.db.connection": "the database's URL, secret, proxy and pool size",
    "sluice.db.migrations": "where the migration files are (AssetSettings)",
    "sluice.api.forms": "the direct-upload limit of a Lambda request, at the HTTP edge",
    "sluice.api.openapi": "where the committed OpenAPI document is (AssetSettings)",
    "sluice.embedding.catalog": "where the model catalog is (AssetSettings)",
    "sluice.embedding.local": "where the exported ONNX models are, and the inference threads",
    "sluice.embedding.tokens": "where the bundled model's tokenizer is (AssetSettings)",
    "sluice.embedding.endpoints": "the operator's endpoint policy, read by the guarded HTTP client",
    "sluice.parsing.ocr": "the deployment's OCR engine and Tesseract's languages and data",
    "sluice.parsing.textract": "Textract's endpoint, concurrency and deadline",
    "sluice.parsing.soffice": "where LibreOffice is (AssetSettings)",
}
# os.environ itself, beyond sluice.config: a process's environment handed on, or a library's switch.
ENVIRON_USERS = {
    "sluice.parsing.isolation": "copies the variables the parse child needs into its environment",
    "sluice.parsing.legacy_word": "hands LibreOffice the environment with a HOME of its own",
    "sluice.embedding.local": "turns off the tokenizers library's own thread pool (a switch, not a setting)",
}
_READS = {"get_settings", "current", "read"}


def _settings_reads(name: str, tree: ast.AST) -> list[str]:
    """Where a module reads settings or the environment itself: os.environ / os.getenv, a call of
    get_settings / current / read from sluice.config, or the whole Settings imported."""
    from_config = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   and node.module == "sluice.config" for a in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                and node.attr in ("environ", "getenv"):
            found.append(f"{name}:{node.lineno} reads os.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and {"environ", "getenv"} & {
                a.name for a in node.names}:
            found.append(f"{name}:{node.lineno} imports os.environ")
        elif isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id in _READS & from_config) or (
                    isinstance(f, ast.Attribute) and f.attr in _READS and isinstance(f.value, ast.Name)
                    and f.value.id == "config"):
                found.append(f"{name}:{node.lineno} reads settings")
    if "Settings" in from_config:
        found.append(f"{name} imports the whole Settings")
    return found


def test_settings_are_read_only_at_the_root_and_the_edges():
    wrong: list[str] = []
    reading: set[str] = set()
    for name, path in _module_files():
        if _top(name) in SETTINGS_READERS:
            continue
        for finding in _settings_reads(name, ast.parse(path.read_text(encoding="utf-8"))):
            reading.add(name)
            environ = "os." in finding
            allowed = ENVIRON_USERS if environ else SETTINGS_ADAPTERS
            if name not in allowed:
                wrong.append(finding)
    assert not wrong, "\n".join(wrong)
    # Each allowance is still needed: one that reads nothing any more is taken off the list.
    assert set(SETTINGS_ADAPTERS) | set(ENVIRON_USERS) <= reading


def test_the_settings_check_finds_each_kind_of_read():
    caught = _settings_reads("m", ast.parse(
        "import os\nfrom sluice.config import Settings, current, get_settings\nfrom sluice import config\n"
        "a = os.environ.get('X')\nb = get_settings().x\nc = current(PoolSettings)\nd = config.read(S)\n"
        "e = os.getenv('Y')\n"))
    assert sorted(caught) == ["m imports the whole Settings", "m:4 reads os.environ", "m:5 reads settings",
                              "m:6 reads settings", "m:7 reads settings", "m:8 reads os.getenv"]
    assert _settings_reads("m", ast.parse("from sluice.config import PoolSettings\n"
                                          "def f(s: PoolSettings): return vault.read(s.x), current(1)\n")) == []

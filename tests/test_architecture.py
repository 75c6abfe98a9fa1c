"""The layering ARCHITECTURE.md describes, checked on the source: imports go down, never up."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kafkadump"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _target(module: str, node: ast.ImportFrom) -> str | None:
    if not node.level:
        return node.module
    package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _runtime_nodes(tree: ast.AST):
    """Every node, except those under ``if TYPE_CHECKING:`` (annotations only, never imported)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            todo.append(child)


def _imports(module: str, typed: bool = False) -> list[tuple[str, str | None]]:
    """(imported module, imported name or None) for every import in ``module``, at any depth (with
    ``typed``, those under ``if TYPE_CHECKING:`` too)."""
    out: list[tuple[str, str | None]] = []
    tree = ast.parse(MODULES[module].read_text())
    for node in (ast.walk(tree) if typed else _runtime_nodes(tree)):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.startswith("kafkadump")]
        elif isinstance(node, ast.ImportFrom):
            target = _target(module, node)
            if target and target.startswith("kafkadump"):
                for a in node.names:
                    full = f"{target}.{a.name}"
                    out.append((full, None) if full in MODULES else (target, a.name))
    return out


GRAPH = {m: {t for t, _ in _imports(m) if t in MODULES} for m in MODULES}
# type-only imports included: no cycle and no private name even in annotations
TYPED_GRAPH = {m: {t for t, _ in _imports(m, typed=True) if t in MODULES} for m in MODULES}


def test_nothing_outside_the_cli_imports_it():
    outside = {m: sorted(t for t in ts if t == "kafkadump.cli" or t.startswith("kafkadump.cli."))
               for m, ts in GRAPH.items() if not m.startswith("kafkadump.cli") and m != "kafkadump.__main__"}
    assert {m: ts for m, ts in outside.items() if ts} == {}


def test_no_module_imports_another_modules_private_name():
    private = [(m, t, name) for m in MODULES for t, name in _imports(m, typed=True)
               if name and name.startswith("_") and not name.startswith("__")]
    assert private == []


def test_no_module_reads_another_modules_private_attribute():
    """``module._name`` through an imported module object (``from . import decoder`` then
    ``decoder._PLANS``) is a private name too."""
    found = []
    for m, path in MODULES.items():
        tree = ast.parse(path.read_text())
        modules = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   for a in node.names if f"{_target(m, node)}.{a.name}" in MODULES}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.append((m, f"{node.value.id}.{node.attr}"))
    assert found == []


def test_no_import_through_importlib():
    users = [m for m, p in MODULES.items() if "import_module(" in p.read_text()]
    assert users == []


@pytest.mark.parametrize("graph", [GRAPH, TYPED_GRAPH], ids=["runtime", "with-type-only-imports"])
def test_no_import_cycles(graph):
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
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
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == []


LOWER = ("kafkadump.decoders", "kafkadump.sources", "kafkadump.base")
UPPER = ("kafkadump.cli", "kafkadump.spark", "kafkadump.render", "kafkadump.reports", "kafkadump.objects")


def test_decoders_never_import_renderers_reports_or_the_cli():
    up = {m: sorted(t for t in TYPED_GRAPH[m] if t.startswith(UPPER)) for m in MODULES if m.startswith(LOWER)}
    assert {m: ts for m, ts in up.items() if ts} == {}


def test_graph_is_not_empty():
    assert len(MODULES) > 50 and sum(len(t) for t in GRAPH.values()) > 100


# ARCHITECTURE.md's picture, top to bottom: one folder per layer; a module imports only from its own
# layer or the ones below, counting the imports under ``if TYPE_CHECKING:``
LAYERS = [
    ("kafkadump.cli", "kafkadump.__main__"),
    ("kafkadump.spark",),
    ("kafkadump.render",),
    # the JSON contract, built from the plain data the reports compute
    ("kafkadump.objects",),
    ("kafkadump.reports",),
    # the decoders and the sources they read are one layer (sources type their buffers as the decoders do)
    ("kafkadump.decoders", "kafkadump.sources"),
    ("kafkadump.base",),
    ("kafkadump.accel",),
    ("kafkadump",),
]


def _layer(module: str) -> int:
    best, rank = -1, len(LAYERS)
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    return rank


def test_every_module_is_in_a_layer_folder():
    """Nothing at the top of the package but its face (``__init__``, ``__main__``)."""
    loose = sorted(m for m in MODULES if m != "kafkadump" and _layer(m) == len(LAYERS) - 1)
    assert loose == []


@pytest.mark.parametrize("graph", [GRAPH, TYPED_GRAPH], ids=["runtime", "with-type-only-imports"])
def test_imports_go_down_the_layers(graph):
    up = sorted((m, t) for m in MODULES for t in graph[m] if _layer(t) < _layer(m))
    assert up == []

"""The package's layers (named in ``pearl_verl/__init__.py``): no import circle, no arrow up but the one named."""

import ast
from pathlib import Path

import networkx as nx

import pearl_verl

PACKAGE = Path(pearl_verl.__file__).parent
LAYERS = (
    {"errors", "ranges", "redact", "dims", "jsonl", "stats", "progress", "children", "out_paths", "write_whole", "listen",
     "config_flags", "resume_guard", "resources"},
    {"llm"},
    {"dialogue", "tutor", "student", "knowledge", "data", "judge", "advantage", "config"},
    {"eval", "sft", "compare", "view", "faults", "cluster", "models"},
    {"verl_plugin", "train_local"},
    {"cli"},
)
UPWARD_ON_PURPOSE = {("pearl_verl.compare.screenshot", "cli")}


def _imports() -> nx.DiGraph:
    """Module -> module it imports from pearl_verl, at any depth of the file (function-level imports too)."""
    graph = nx.DiGraph()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph.add_node(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("pearl_verl.") and name != module:
                    graph.add_edge(module, name)
    return graph


def _layer(module: str) -> int:
    room = module.split(".")[1]
    return next(i for i, layer in enumerate(LAYERS) if room in layer)


GRAPH = _imports()


def test_every_module_has_a_layer():
    rooms = {module.split(".")[1] for module in GRAPH if module.count(".")}
    assert rooms <= set().union(*LAYERS), f"place these in pearl_verl/__init__.py's layers: {rooms - set().union(*LAYERS)}"


def test_no_import_circle():
    circles = [c for c in nx.simple_cycles(GRAPH) if len(c) > 1]
    assert circles == []


def test_no_arrow_runs_up_but_the_one_named():
    upward = {(a, b.split(".")[1]) for a, b in GRAPH.edges if a.count(".") and b.count(".") and _layer(b) > _layer(a)}
    assert upward == UPWARD_ON_PURPOSE

"""The package's layers (named in ``pearl_verl/__init__.py``): no import circle, no arrow up but the one named,
also between the method's packages, whose commands (``*_cli`` modules) sit above them all."""

import ast
from pathlib import Path

import networkx as nx

import pearl_verl

PACKAGE = Path(pearl_verl.__file__).parent
LAYERS = (
    {"errors", "ranges", "redact", "dims", "jsonl", "stats", "progress", "children", "async_run", "out_paths",
     "write_whole", "listen", "config_flags", "resume_guard", "strict_dataclass", "row_kinds", "resources"},
    {"llm"},
    {"dialogue", "tutor", "student", "knowledge", "data", "judge", "advantage", "pearl_config"},
    {"eval", "sft", "compare", "view", "faults", "models"},
    {"verl_plugin", "train_local", "plan"},
    {"cli"},
)
METHOD = LAYERS[2]
METHOD_ORDER = ("dialogue", "tutor", "knowledge", "student", "data", "judge", "advantage", "pearl_config")
"""The method's packages, lowest first; its commands (``*_cli`` modules) come after them all."""
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


def _method_rank(module: str) -> int:
    return len(METHOD_ORDER) if module.rsplit(".", 1)[-1].endswith("_cli") else METHOD_ORDER.index(module.split(".")[1])


def test_the_method_names_each_package_once_in_order():
    assert set(METHOD_ORDER) == METHOD and len(METHOD_ORDER) == len(METHOD)


def test_no_arrow_runs_up_inside_the_method_and_its_commands_sit_on_top():
    inside = [(a, b) for a, b in GRAPH.edges if a.count(".") and b.count(".")
              and a.split(".")[1] in METHOD and b.split(".")[1] in METHOD]
    assert inside, "the method's packages import each other"
    upward = sorted((a, b) for a, b in inside if _method_rank(b) > _method_rank(a))
    assert upward == []


def test_no_arrow_runs_up_but_the_one_named():
    upward = {(a, b.split(".")[1]) for a, b in GRAPH.edges if a.count(".") and b.count(".") and _layer(b) > _layer(a)}
    assert upward == UPWARD_ON_PURPOSE

"""The forest is passed one way: a ``ForestLike`` at the edge, a ``Forest`` below it.

The functions the catalog names are the library's entry points: they accept
a handle or a root path (``forest.ForestLike``) and open it once. Every other
function that takes the forest takes the ``Forest``; the layers below the
handle name it only for annotations. Read from the source, so a signature
that drifts back to ``Forest | str | Path`` or a protocol of its own fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "memory_forest"
# Below the entry points but still at the edge: they turn a path into a handle inside a
# boundary that reports failures instead of raising (the gate), or name a root that each
# call opens again (the MCP server, hook installation), or are the handle's own openers.
EDGE_BESIDES_CATALOG = {"forest:of", "forest:__init__", "gate:consult", "gate:_lookup",
                        "gate:answer", "mcp_server:serve", "watcher:watch", "hooks:install"}


def catalog_calls() -> set[str]:
    text = "".join(path.read_text(encoding="utf-8")
                   for path in (PACKAGE / "catalog").glob("*.py"))
    return {f"{module}:{function}"
            for module, function in re.findall(r'"memory_forest\.([\w.]+):(\w+)"', text)}


FOREST_TYPE = re.compile(r"\b(Forest|ForestLike|Opened)\b")
LOOSE = re.compile(r"^$|\b(Any|object|str|Path)\b")


def forest_parameters() -> list[tuple[str, str, str]]:
    """(module:function, parameter, annotation) of every parameter annotated with a forest
    type, or named ``forest`` and annotated loosely (a path, ``Any``, nothing)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for arg in [*node.args.args, *node.args.kwonlyargs]:
                annotation = "" if arg.annotation is None else ast.unparse(arg.annotation)
                if FOREST_TYPE.search(annotation) or (arg.arg == "forest"
                                                      and LOOSE.search(annotation)):
                    found.append((f"{module}:{node.name}", arg.arg, annotation))
    return found


def test_the_forest_is_a_forest_below_the_edge_and_forest_like_only_at_it():
    edge = catalog_calls() | EDGE_BESIDES_CATALOG
    wrong = [(where, name, annotation) for where, name, annotation in forest_parameters()
             if annotation not in ("Forest", "ForestLike", "ForestLike | None")
             or (annotation.startswith("ForestLike") and where not in edge)]
    assert wrong == []


def test_every_entry_point_that_takes_a_forest_accepts_a_path_too():
    entry = catalog_calls()
    narrow = [(where, annotation) for where, name, annotation in forest_parameters()
              if where in entry and annotation == "Forest"]
    assert narrow == []
    assert sum(1 for where, _, annotation in forest_parameters()
               if where in entry and annotation == "ForestLike") >= 25


def test_the_names_of_the_old_ways_are_gone():
    source = "".join(path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py"))
    assert source.count("Forest | str") == 1  # the alias itself
    assert "ForestLike = Forest | str | os.PathLike[str]" in source
    assert "class Opened" not in source and "root_and_config" not in source

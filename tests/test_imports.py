"""Imports sit at the top of a module, where a reader sees what it depends on.

Two exceptions, both measured rather than declared: a module the per-turn processes load
(the gate and `retrieve --json` start every turn, so what they import is paid every turn)
may defer what the turn does not need, and any module may defer a heavy or optional
package. What those two processes may load at all is an allow-list below: a new import
on the per-turn path fails here until it is named.
"""

from __future__ import annotations

import sys

from turnimports import (
    PACKAGE,
    function_level_imports,
    heavy_modules,
    is_heavy,
    module_name,
    resolve,
    turn_modules,
)

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
}
# Third-party packages a turn may load: none. The standard library is the whole of it.
TURN_THIRD_PARTY: set[str] = set()
# What is there before our first line: the probe itself and setuptools' site hook.
STARTUP = {"__main__", "_distutils_hack"}


def test_what_a_turn_loads_is_on_the_allow_list():
    loaded = turn_modules()
    own = {name for name in loaded if name.startswith("memory_forest")}
    assert own <= TURN_OWN, sorted(own - TURN_OWN)
    third_party = {name.split(".")[0] for name in loaded} - set(sys.stdlib_module_names) \
        - {"memory_forest"} - STARTUP
    assert third_party <= TURN_THIRD_PARTY, sorted(third_party)
    # the list names what is really loaded, so a module that left the path leaves it too
    assert TURN_OWN <= own, sorted(TURN_OWN - own)


def test_function_level_imports_are_only_per_turn_or_heavy():
    turn = {name for name in turn_modules() if name.startswith("memory_forest")}
    heavy = heavy_modules()
    stray = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        if module in turn:
            continue
        for line, names in function_level_imports(path.read_text(encoding="utf-8")):
            absolute = [resolve(name, module, path.name == "__init__.py") for name in names]
            if not is_heavy(absolute, heavy):
                stray.append(f"{path.relative_to(PACKAGE.parent)}:{line} {absolute[0]}")
    assert not stray, "import these at the top of the module:\n" + "\n".join(stray)


def test_the_rule_sees_an_import_inside_a_function():
    source = ("import json\n\ndef load(text):\n    from .jsonio import load_object\n"
              "    return load_object(text)\n")
    [(line, names)] = function_level_imports(source)
    assert line == 4
    assert resolve(names[0], "memory_forest.writers.plans", False) == "memory_forest.writers.jsonio"
    assert resolve("..jsonio", "memory_forest.writers.plans", False) == "memory_forest.jsonio"
    assert resolve(".match", "memory_forest.credentials", True) == \
        "memory_forest.credentials.match"

"""Imports sit at the top of a module, where a reader sees what it depends on.

Two exceptions, both measured rather than declared: a module the per-turn processes load
(the gate and `retrieve --json` start every turn, so what they import is paid every turn)
may defer what the turn does not need, and any module may defer a heavy or optional
package. What those two processes may load at all is an allow-list (in turnimports.py,
which the journeys share): a new import on the per-turn path fails here until it is named.
"""

from __future__ import annotations

from turnimports import (
    PACKAGE,
    TURN_OWN,
    function_level_imports,
    heavy_modules,
    is_heavy,
    module_name,
    off_the_allow_list,
    resolve,
    turn_modules,
)


def test_what_a_turn_loads_is_on_the_allow_list():
    loaded = turn_modules()
    assert not off_the_allow_list(loaded), off_the_allow_list(loaded)
    # the list names what is really loaded, so a module that left the path leaves it too
    own = {name for name in loaded if name.startswith("memory_forest")}
    assert TURN_OWN <= own, sorted(TURN_OWN - own)


def test_the_allow_list_refuses_a_module_it_does_not_name():
    assert off_the_allow_list({"json", "memory_forest.cli", "memory_forest.index", "rich.table"}) \
        == ["memory_forest.index", "rich"]


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

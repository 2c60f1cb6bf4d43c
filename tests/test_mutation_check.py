"""``scripts/mutation_check.py`` stays in step with the code it breaks.

The full check runs the tests once per breakage (``make check``); these fast
tests catch a stale record at ``make test`` time: every replacement still
applies exactly once to today's source and leaves code that compiles, and
every test file a record names exists.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def load_script():
    spec = importlib.util.spec_from_file_location(
        "mutation_check", REPO / "scripts" / "mutation_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


mutation_check = load_script()


@pytest.mark.parametrize("breakage", mutation_check.BREAKAGES,
                         ids=[b.name for b in mutation_check.BREAKAGES])
def test_each_breakage_applies_once_and_compiles(breakage):
    source = REPO / "src" / "memory_forest" / breakage.file
    text = source.read_text(encoding="utf-8")
    broken = mutation_check.mutated(breakage, text)
    assert broken != text
    compile(broken, str(source), "exec")
    assert breakage.tests and all((REPO / test).is_file() for test in breakage.tests)


def test_a_replacement_that_does_not_apply_once_is_stale():
    record = mutation_check.Breakage("twice", "x.py", (("a", "b"),), ("tests/x.py",))
    for text in ("nothing", "a and a"):
        with pytest.raises(mutation_check.Stale, match="twice"):
            mutation_check.mutated(record, text)
    assert mutation_check.mutated(record, "just a") == "just b"


def test_breakage_names_are_unique():
    names = [b.name for b in mutation_check.BREAKAGES]
    assert len(names) == len(set(names))


def test_the_copy_shadows_the_installed_package(tmp_path):
    src = mutation_check.copy_package(tmp_path)
    mutation_check.check_shadowing(src)  # raises Stale when the installed package wins
    (src / "memory_forest").rename(src / "elsewhere")
    with pytest.raises(mutation_check.Stale, match="does not shadow"):
        mutation_check.check_shadowing(src)


def test_docs_list_exactly_the_breakages_the_check_runs():
    """docs/testing.md's table is the script's list; `--write-docs` refreshes it."""
    doc = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    block = doc[doc.index(mutation_check.BEGIN):doc.index(mutation_check.END)
                + len(mutation_check.END)]
    assert block == mutation_check.listing(), \
        "run: .venv/bin/python scripts/mutation_check.py --write-docs"
    rows = [line for line in block.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[0][2:] for row in rows] == [b.name for b in
                                                          mutation_check.BREAKAGES]

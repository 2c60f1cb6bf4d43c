"""The import-linter contract in pyproject.toml catches what it is there to catch.

``make test`` runs ``lint-imports`` on the tree itself; these tests run it on
a copy of the package with one import added, so they show that an import
running up a layer fails the check even when it hides inside a function,
that a module no layer holds fails it too, and that naming the ``Forest``
handle below it only for annotations does not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(tmp_path: Path, change: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over a copy of the package with ``change`` (file -> text) applied."""
    source = tmp_path / "src"
    shutil.copytree(REPO / "src" / "memory_forest", source / "memory_forest",
                    ignore=shutil.ignore_patterns("__pycache__", "example"))
    for name, text in change.items():
        path = source / "memory_forest" / name
        path.write_text(path.read_text(encoding="utf-8") + text if path.exists() else text,
                        encoding="utf-8")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    env = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run([str(LINT_IMPORTS), "--no-logo", "--no-cache"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)


def test_the_tree_as_it_is_keeps_the_contract(tmp_path):
    done = lint(tmp_path, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_an_import_up_a_layer_inside_a_function_breaks_it(tmp_path):
    """The ground reaching for the command line, lazily: still a broken contract."""
    done = lint(tmp_path, {"text.py": "\n\ndef _up():\n    from . import cli\n\n    return cli\n"})
    assert done.returncode == 1
    assert "memory_forest.text is not allowed to import memory_forest.cli" in done.stdout


def test_a_module_no_layer_holds_breaks_it(tmp_path):
    done = lint(tmp_path, {"stray.py": '"""A module nobody placed."""\n'})
    assert done.returncode == 1
    assert "memory_forest.stray" in done.stdout


def test_naming_the_handle_for_annotations_below_it_keeps_it(tmp_path):
    """The store and checks layers spell ``Forest`` in signatures under ``TYPE_CHECKING``."""
    done = lint(tmp_path, {"text.py": "\n\nfrom typing import TYPE_CHECKING\n\n"
                           "if TYPE_CHECKING:\n    from .forest import Forest\n\n\n"
                           "def _named(forest: Forest) -> None:\n    pass\n"})
    assert done.returncode == 0, done.stdout + done.stderr


def test_importing_the_handle_below_it_at_run_time_breaks_it(tmp_path):
    done = lint(tmp_path, {"snapshot.py": "\n\nfrom .forest import Forest as _Handle  # noqa\n"})
    assert done.returncode == 1
    assert "memory_forest.snapshot is not allowed to import memory_forest.forest" in done.stdout

"""Shared fixtures: example forests on the real filesystem, indexed with the real index."""

from __future__ import annotations

from pathlib import Path

import pytest
from forestkit import new_forest

from memory_forest import operations


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A fresh, indexed copy of the packaged example forest (safe to modify)."""
    root = new_forest(tmp_path, "example", example=True)
    operations.index(root)
    return root


@pytest.fixture(scope="module")
def shared_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One indexed example forest per module, for tests that only read it."""
    root = new_forest(tmp_path_factory.mktemp("shared"), "example", example=True)
    operations.index(root)
    return root

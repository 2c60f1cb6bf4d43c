"""A line whose one word is a directory forgot its question: a usage error, never a search of
the default root for the words of a path."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import one_object, run_cli


@pytest.fixture
def default_root(shared_example: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORY_FOREST_ROOT", str(shared_example))
    return shared_example


@pytest.mark.parametrize("command", ["retrieve", "route", "search"])
def test_a_lone_directory_is_root_without_its_query(default_root: Path, command: str):
    done = run_cli(command, default_root, "--json")
    error = one_object(done.stdout)["error"]
    assert done.code == 2 and error["code"] == "argument_missing"
    assert error["details"] == {"argument": "QUERY"}
    assert f"memory-forest {command} ROOT QUERY" in error["message"]
    assert "Traceback" not in done.stderr


def test_the_human_answer_names_the_code_and_the_fix(default_root: Path, tmp_path: Path):
    done = run_cli("retrieve", tmp_path)  # any directory, not only a forest
    assert done.code == 2 and done.stdout == ""
    assert "argument_missing" in done.stderr and "ROOT QUERY" in done.stderr


def test_a_lone_word_still_searches_the_default_root(default_root: Path):
    found = one_object(run_cli("retrieve", "kimchi", "--json").stdout)
    assert found["ok"] and found["count"] >= 1


def test_root_and_query_together_are_unchanged(default_root: Path):
    found = one_object(run_cli("retrieve", default_root, "kimchi", "--json").stdout)
    assert found["ok"] and found["count"] >= 1

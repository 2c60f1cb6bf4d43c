"""A user's day through the CLI, each answer held to the shape its tool publishes.

Every result is declared once (``memory_forest.results``); MCP publishes its JSON
Schema and the CLI prints the same dict with ``--json``. This journey writes a
note by hand, indexes, asks the way a person and an agent do (route, search,
retrieve, open, status, stats), remembers a fact and previews another, and
checks each printed object against the shape the catalog names for its
operation, and the published schema's required keys against what came back.
A turn through the gate still loads neither the shapes nor pydantic.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from forestkit import new_forest, write_doc
from pydantic import ValidationError

from memory_forest import catalog, schemas

NOTE = "04 stm/kitchen/fermentation/hot-sauce.md"
OPERATIONS = {operation.name: operation for operation in catalog.operations()}


def ask(root: Path, name: str, *args: str) -> dict:
    """Run one operation's command with --json; the answer, checked against its shape."""
    done = run_cli(*OPERATIONS[name].command, root, *args, "--json")
    assert done.code == 0 and "Traceback" not in done.stderr, (done.stdout, done.stderr)
    answer = done.json()
    shape = OPERATIONS[name].result
    schemas.validate(shape, answer)
    published = schemas.output_schema(shape)
    if "anyOf" not in published:  # a union's branches each hold their own required keys
        assert set(published["required"]) <= set(answer), (name, published["required"])
    return answer


def test_what_the_cli_prints_is_the_shape_the_tool_publishes(tmp_path):
    root = new_forest(tmp_path, example=True)
    write_doc(root, NOTE, "Hot sauce", "Brine the habanero peppers for two weeks, then blend.")
    assert run_cli("index", root, "--json").code == 0

    routed = ask(root, "route", "hot sauce")
    assert NOTE in [hit["path"] for hit in routed["results"]]
    found = ask(root, "search", "habanero")
    assert found["results"][0]["path"] == NOTE and found["results"][0]["verified"] is True
    trails = ask(root, "retrieve", "habanero peppers")
    assert trails["trails"][0]["nodes"][-1]["path"] == NOTE
    opened = ask(root, "open", NOTE)
    assert "habanero" in opened["body"] and opened["indexed"] is True
    assert ask(root, "status")["ready"] is True
    assert ask(root, "stats")["indexed"] >= 1

    filed = ask(root, "remember", "--tree", "kitchen", "--branch", "fermentation",
                "--leaf", "hot-sauce", "--content", "Add one carrot for sweetness.")
    assert filed["path"] == NOTE and filed["already_applied"] is False
    preview = ask(root, "remember", "--content", "Habanero peppers keep a week.", "--dry-run")
    assert preview["dry_run"] is True

    # The shapes are not a formality: an answer without a declared key does not pass.
    broken = {key: value for key, value in trails.items() if key != "ranking"}
    with pytest.raises(ValidationError):
        schemas.validate("RetrieveResult", broken)
    with pytest.raises(ValidationError):
        schemas.validate("OpenResult", {**opened, "body_included": False})


def test_a_turn_loads_no_shape(tmp_path):
    root = new_forest(tmp_path, example=True)
    assert run_cli("index", root, "--json").code == 0
    probe = ("import sys\nfrom memory_forest.cli import main\n"
             f"try:\n    main(['gate', {str(root)!r}])\nexcept SystemExit:\n    pass\n"
             "loaded = [m for m in ('memory_forest.results', 'memory_forest.schemas', "
             "'typing_extensions', 'pydantic') if m in sys.modules]\n"
             "sys.stderr.write(repr(loaded))\n")
    done = subprocess.run([sys.executable, "-c", probe], input=b"kimchi",
                          capture_output=True, timeout=60)
    assert b'"evidence_found"' in done.stdout
    assert done.stderr.decode() == "[]"

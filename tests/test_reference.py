"""The generated docs say what the catalog says, and a new operation reaches every surface."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from memory_forest import catalog
from memory_forest.reference import BEGIN, END, cli_reference, tool_reference, with_reference

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_checked_in_command_reference_is_the_generated_one():
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert with_reference(text) == text, "docs/cli.md is out of date: run 'make docs'"
    assert cli_reference() in text


def test_checked_in_tool_schemas_are_the_generated_ones():
    assert (DOCS / "mcp-tools.json").read_text(encoding="utf-8") == tool_reference(), \
        "docs/mcp-tools.json is out of date: run 'make docs'"


def test_a_stale_reference_is_replaced_and_the_prose_kept():
    stale = f"# Command line\n\nProse.\n\n{BEGIN}\nold help\n{END}\n"
    fresh = with_reference(stale)
    assert fresh.startswith("# Command line\n\nProse.\n\n") and "old help" not in fresh
    assert with_reference(fresh) == fresh


def test_stats_reaches_the_cli_the_tools_and_the_docs_from_one_declaration(shared_example):
    """``stats`` was added as one catalog entry and one function."""
    assert "stats" in catalog.by_name()
    done = run_cli("--json", "stats", shared_example)
    assert done.code == 0, done.stderr
    outcome = done.json()
    assert outcome["files"] == sum(row["files"] for row in outcome["layers"]) > 0
    assert outcome["index"] == "current" and outcome["problems"] == 0
    assert outcome["index_age_seconds"] >= 0
    assert "stats" in run_cli("--help").stdout
    assert "### `memory-forest stats`" in (DOCS / "cli.md").read_text(encoding="utf-8")
    tools = {tool["name"] for tool in json.loads((DOCS / "mcp-tools.json").read_text())}
    assert "stats" in tools

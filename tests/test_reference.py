"""The generated docs say what the catalog says, and a new operation reaches every surface."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from memory_forest import catalog
from memory_forest.reference import (
    BEGIN,
    END,
    TOOLS_BEGIN,
    TOOLS_END,
    cli_reference,
    tool_reference,
    tool_table,
    with_reference,
    with_tool_table,
)

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_checked_in_command_reference_is_the_generated_one():
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert with_reference(text) == text, "docs/cli.md is out of date: run 'make docs'"
    assert cli_reference() in text


def test_checked_in_tool_schemas_are_the_generated_ones():
    assert (DOCS / "mcp-tools.json").read_text(encoding="utf-8") == tool_reference(), \
        "docs/mcp-tools.json is out of date: run 'make docs'"


def test_checked_in_tool_table_is_the_generated_one():
    text = (DOCS / "agents.md").read_text(encoding="utf-8")
    assert text.count(TOOLS_BEGIN) == 1 and text.count(TOOLS_END) == 1
    assert with_tool_table(text) == text, "docs/agents.md is out of date: run 'make docs'"
    rows = [line for line in tool_table().splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [op.name for op in catalog.tools()]


def test_the_tool_table_says_what_the_published_schema_says():
    """Bounds, defaults and effects come from the schema a client reads, not from prose."""
    rows = {row.split("`")[1]: row for row in tool_table().splitlines() if row.startswith("| `")}
    assert "`limit` (1-100, default 10)" in rows["route"]
    assert "`wait` (0-30, default 30)" in rows["capture"]  # the CLI waits longer; a tool never
    assert "`events` (required, object or list)" in rows["capture"]
    assert "`status` (pending, accepted, rejected, stale)" in rows["proposals_list"]
    assert "| read-only |" in rows["open"] and "| writes, only adds |" in rows["remember"]
    assert "`memory-forest proposals accept`" in rows["proposals_accept"]
    assert "include_body" not in rows["search"]  # a CLI-only parameter


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

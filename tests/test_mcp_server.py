"""The MCP server, end to end: the real ``memory-forest serve`` subprocess and the SDK client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from forestkit import new_forest, write_doc

from memory_forest import operations, registry

mcp = pytest.importorskip("mcp", reason="the optional 'mcp' SDK is not installed; CI installs "
                          "it through the dev extras (pip install 'memory-forest[mcp]')")
anyio = pytest.importorskip("anyio")

KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
DAILY = "05 daily/2026-11-28.md"
SENTINEL = "Quixoticsentinel"


def wire(result: Any) -> dict[str, Any]:
    """A tool result as it travels (camelCase keys), the same in SDK 1.x and 2.x."""
    return result.model_dump(by_alias=True, exclude_none=True)


class Session:
    """A connected SDK client session with small helpers for tool calls."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result = wire(await self.session.call_tool(name, arguments or {}))
        structured = result["structuredContent"]
        # The text content carries the same object, for clients that ignore structure.
        assert json.loads(result["content"][0]["text"]) == structured
        assert structured["ok"] is not result.get("isError", False)
        return structured

    async def error(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = await self.call(name, arguments)
        assert outcome["ok"] is False and outcome["operation"] == name
        return outcome["error"]


def serve(root: Path, scenario: Callable[[Session], Awaitable[None]], errlog: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "memory_forest", "serve", str(root)])
        with errlog.open("w") as log:
            async with stdio_client(params, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await scenario(Session(session))

    anyio.run(main)


@pytest.fixture
def forest(tmp_path: Path) -> Path:
    root = new_forest(tmp_path, example=True)
    write_doc(root, "04 stm/kitchen/fermentation/pantry.md", "Pantry check",
              f"The shelf with the {SENTINEL} jars was restocked.", "stm-pantry")
    operations.index(root)
    return root


def test_tools_are_listed_with_schemas_and_read_only_annotations(forest, tmp_path):
    async def scenario(client: Session) -> None:
        listed = await client.session.list_tools()
        tools = {tool.name: wire(tool) for tool in listed.tools}
        assert list(tools) == [operation.name for operation in registry.OPERATIONS]
        assert {"route", "search", "retrieve", "open", "status"} <= set(tools)
        for operation in registry.OPERATIONS:
            tool = tools[operation.name]
            assert tool["annotations"]["readOnlyHint"] is operation.read_only
            assert tool["inputSchema"] == operation.arguments.model_json_schema()
            assert tool["outputSchema"] == operation.result.model_json_schema()
            assert len(tool["description"]) > 80
        assert set(tools["route"]["inputSchema"]["properties"]) == {"query", "limit", "layer"}
        assert set(tools["retrieve"]["inputSchema"]["properties"]) == \
            {"query", "limit", "query_plan"}
        assert set(tools["open"]["inputSchema"]["properties"]) == {"path",
                                                                   "allow_source_layers"}
        assert tools["open"]["inputSchema"]["required"] == ["path"]

    serve(forest, scenario, tmp_path / "stderr.log")


def test_read_tools_answer_with_structured_content(forest, tmp_path):
    async def scenario(client: Session) -> None:
        routed = await client.call("route", {"query": "kimchi", "limit": 3})
        assert routed["operation"] == "route" and routed["results"][0]["path"] == KIMCHI
        found = await client.call("retrieve", {"query": SENTINEL})
        assert found["count"] == 1 and found["body_included"] is False
        assert [n["layer"] for n in found["trails"][0]["nodes"]] == ["01 xltm", "02 ltm",
                                                                     "03 mtm", "04 stm"]
        planned = await client.call("retrieve", {
            "query": "drip pressure",
            "query_plan": {"schema_version": 1, "probes": [{"query": "배추김치"}]}})
        assert planned["probes"] == 1 and any(
            not trail["original_query_matched"] for trail in planned["trails"])
        searched = await client.call("search", {"query": "sesame", "layer": ["stm", "daily"]})
        assert searched["count"] >= 1 and "body" not in searched["results"][0]
        status = await client.call("status")
        assert status["ready"] is True and status["index"]["state"] == "current"
        assert status["documents"] == 13 and status["next_step"] is None

    serve(forest, scenario, tmp_path / "stderr.log")
    # Bodies never reach the server's log, only the client.
    assert SENTINEL not in (tmp_path / "stderr.log").read_text()


def test_open_reads_a_fresh_body_and_refuses_the_rest(forest, tmp_path):
    async def scenario(client: Session) -> None:
        opened = await client.call("open", {"path": KIMCHI})
        assert opened["body"] == (forest / KIMCHI).read_text(encoding="utf-8")
        assert opened["body_included"] is True and opened["title"] == "Kimchi batch 7"
        pantry = await client.call("open", {"path": "04 stm/kitchen/fermentation/pantry.md"})
        assert SENTINEL in pantry["body"]
        for outside in ("../etc/passwd", "/etc/passwd", "01 xltm/../../x.md",
                        ".memory-forest/index.sqlite3", "04 stm\\kitchen\\x.md"):
            error = await client.error("open", {"path": outside})
            assert error["code"].startswith("route_"), (outside, error)
        error = await client.error("open", {"path": DAILY})
        assert error["code"] == "source_layer_not_allowed"
        daily = await client.call("open", {"path": DAILY, "allow_source_layers": True})
        assert daily["layer"] == "05 daily"
        error = await client.error("open", {"path": "04 stm/kitchen/fermentation/none.md"})
        assert error["code"] == "not_found"
        # Changed since indexing: fail closed, never the old or the new bytes.
        (forest / KIMCHI).write_text("rewritten after indexing\n", encoding="utf-8")
        error = await client.error("open", {"path": KIMCHI})
        assert error["code"] == "index_stale" and error["details"] == {"path": KIMCHI}
        write_doc(forest, "04 stm/kitchen/fermentation/new.md", "New", "not indexed yet")
        error = await client.error("open", {"path": "04 stm/kitchen/fermentation/new.md"})
        assert error["code"] == "index_stale"
        found = await client.error("retrieve", {"query": "kimchi"})
        assert found["code"] == "index_stale"

    serve(forest, scenario, tmp_path / "stderr.log")
    assert SENTINEL not in (tmp_path / "stderr.log").read_text()


def test_errors_carry_the_cli_codes(forest, tmp_path):
    async def scenario(client: Session) -> None:
        cases = [
            ("route", {"query": "kimchi", "limit": 0}, "limit_out_of_range"),
            ("route", {"query": ""}, "query_empty"),
            ("route", {"query": "?!"}, "query_not_searchable"),
            ("route", {"query": "kimchi", "layer": ["attic"]}, "unknown_layer"),
            ("route", {"query": "kimchi", "limit": "5"}, "usage_error"),
            ("route", {"query": "kimchi", "extra": True}, "usage_error"),
            ("route", {}, "usage_error"),
            ("retrieve", {"query": "q", "query_plan": {"schema_version": 2, "probes": []}},
             "query_plan_bad_schema_version"),
            ("retrieve", {"query": "q", "query_plan": {"schema_version": 1,
                                                       "probes": [{"query": "x"}] * 9}},
             "query_plan_too_many_probes"),
            ("open", {"path": KIMCHI, "allow_source_layers": "yes"}, "usage_error"),
            ("no_such_tool", {}, "unknown_tool"),
        ]
        for name, arguments, code in cases:
            error = await client.error(name, arguments)
            assert error["code"] == code, (name, arguments, error)
            assert set(error) == {"code", "message", "details"}
        invalid = await client.error("route", {"query": "kimchi", "limit": "secret-value"})
        assert invalid["details"] == {"fields": ["limit"]}
        assert "secret-value" not in json.dumps(invalid)

    serve(forest, scenario, tmp_path / "stderr.log")


def test_cli_and_tool_give_the_same_code(forest, tmp_path):
    done = subprocess.run([sys.executable, "-m", "memory_forest", "--json", "route",
                           str(forest), "kimchi", "--limit", "0"],
                          capture_output=True, text=True, timeout=60)
    cli_code = json.loads(done.stdout)["error"]["code"]

    async def scenario(client: Session) -> None:
        error = await client.error("route", {"query": "kimchi", "limit": 0})
        assert error["code"] == cli_code == "limit_out_of_range"

    serve(forest, scenario, tmp_path / "stderr.log")


def test_a_forest_without_an_index_answers_with_index_missing(tmp_path):
    root = new_forest(tmp_path, example=True)

    async def scenario(client: Session) -> None:
        assert (await client.error("route", {"query": "kimchi"}))["code"] == "index_missing"
        assert (await client.error("open", {"path": KIMCHI}))["code"] == "index_missing"
        status = await client.call("status")
        assert status["ready"] is False and "memory-forest index" in status["next_step"]

    serve(root, scenario, tmp_path / "stderr.log")

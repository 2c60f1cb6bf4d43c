"""MCP for every client: the MCP Inspector (the TypeScript SDK), the Python SDK and raw frames.

Clients built on the TypeScript SDK (Claude Desktop, Claude Code, Cursor,
the MCP Inspector) check a tool result's structured content against the
tool's output schema, even on an error. So every tool is called here through
the Inspector's CLI, once to succeed and once to fail, and its printed
answer must carry the result or the stable error code. The Inspector is
installed once into pytest's cache directory; without node and npm the
tests fail (CI installs Debian's packages), they never skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from forestkit import canonical_state, new_forest, write_doc

from memory_forest import catalog, operations

mcp = pytest.importorskip("mcp", reason="the optional 'mcp' SDK is installed with the dev "
                          "extras (pip install -e '.[mcp]')")

INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"
KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
CELLAR = "04 stm/kitchen/fermentation/cellar-log.md"
TIMEOUT = 120


def event(event_id: str, text: str, day: str) -> dict[str, Any]:
    return {"event_id": event_id, "observed_at": f"2026-12-0{day}T08:00:00Z",
            "source": "journey", "kind": "note", "payload": {"text": text}}


# --- the TypeScript SDK, through the MCP Inspector ------------------------------------------


@pytest.fixture(scope="session")
def inspector(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Inspector's package directory, installed once and kept in pytest's cache
    (in a temporary directory when the cache is turned off)."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.fail(f"'{tool}' is not on PATH: the MCP Inspector tests need Node.js "
                        "(apt-get install nodejs npm)")
    cache = getattr(request.config, "cache", None)
    prefix = Path(cache.mkdir("mcp-inspector-0.15.0")) if cache is not None \
        else tmp_path_factory.mktemp("mcp-inspector")
    package = prefix / "node_modules" / "@modelcontextprotocol"
    if not (package / "inspector-cli" / "build" / "index.js").is_file():
        done = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit",
                               "--no-fund", "--loglevel=error", INSPECTOR],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
    return package


def server(root: Path) -> list[str]:
    return [sys.executable, "-m", "memory_forest", "serve", str(root)]


def inspect_call(inspector: Path, root: Path, tool: str, **arguments: Any) -> dict[str, Any]:
    """What ``mcp-inspector --cli ... --method tools/call`` prints, parsed."""
    pairs = [part for key, value in arguments.items()
             for part in ("--tool-arg", f"{key}={value}")]
    done = subprocess.run(["node", str(inspector / "inspector-cli" / "build" / "index.js"),
                           *server(root), "--method", "tools/call", "--tool-name", tool, *pairs],
                          capture_output=True, text=True, timeout=TIMEOUT)
    # The Inspector prints the result on stdout, or its own failure on stderr (exit 1).
    assert done.returncode == 0, (tool, done.stderr[-2000:])
    return json.loads(done.stdout)


def succeeded(printed: dict[str, Any], tool: str) -> dict[str, Any]:
    assert printed.get("isError", False) is False, printed
    outcome = printed["structuredContent"]
    assert outcome["ok"] is True and outcome["operation"] == tool
    # JavaScript holds a number as a double: a larger integer (mtime_ns) arrives rounded.
    assert as_doubles(json.loads(printed["content"][0]["text"])) == as_doubles(outcome)
    return outcome


def as_doubles(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: as_doubles(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_doubles(item) for item in value]
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def failed(printed: dict[str, Any], tool: str) -> dict[str, Any]:
    assert printed["isError"] is True and "structuredContent" not in printed, printed
    [block] = printed["content"]
    outcome = json.loads(block["text"])
    assert outcome["ok"] is False and outcome["operation"] == tool
    assert set(outcome["error"]) == {"code", "message", "details"}
    return outcome["error"]


def ts_client(inspector: Path, root: Path, calls: list[tuple[str, dict[str, Any]]]
              ) -> list[dict[str, Any]]:
    """Tool results through the TypeScript SDK's own client, the one the Inspector runs on.

    The Inspector's CLI turns an argument into an object only when its schema
    says ``"type": "object"``, so a capture's ``events`` (one event or a
    list) cannot be passed with it.
    """
    script = inspector.parent.parent / "journey-client.mjs"  # beside node_modules: it resolves
    script.write_text(TS_CLIENT, encoding="utf-8")
    done = subprocess.run(["node", str(script), json.dumps(
        {"command": server(root)[0], "args": server(root)[1:], "calls": calls})],
        capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


TS_CLIENT = """
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const spec = JSON.parse(process.argv[2]);
const client = new Client({ name: "journey", version: "1" });
await client.connect(new StdioClientTransport({ command: spec.command, args: spec.args }));
await client.listTools();  // as the Inspector does: the output schemas are now checked
const results = [];
for (const [name, args] of spec.calls) {
  results.push(await client.callTool({ name, arguments: args }));
}
await client.close();
console.log(JSON.stringify(results));
"""


@pytest.fixture
def forest(tmp_path: Path) -> Path:
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    return root


def test_every_tool_succeeds_and_fails_readably_in_the_inspector(inspector, forest):
    """A success and an error of every tool in the catalog, as a TypeScript client sees them."""
    successes: dict[str, Callable[[dict[str, Any]], None]] = {}
    errors: list[tuple[str, dict[str, Any], str]] = [
        ("route", {"query": "kimchi", "limit": 0}, "limit_out_of_range"),
        ("search", {"query": "?!"}, "query_not_searchable"),
        ("retrieve", {"query": "kimchi", "until": "next week"}, "time_invalid"),
        # The case a user first met: the error must arrive as not_found.
        ("open", {"path": "04 stm/kitchen/fermentation/no-such-leaf.md"}, "not_found"),
        ("status", {"verbose": "true"}, "usage_error"),
        ("stats", {"layer": "stm"}, "usage_error"),
        ("capture", {"events": "not an event"}, "capture_not_object"),
        # ... and `remember` with `text` for `content`.
        ("remember", {"text": "Kimchi batch 8 started."}, "usage_error"),
        ("consolidate", {"limit": 0}, "consolidate_limit_invalid"),
        ("proposals_list", {"status": "lost"}, "proposal_status_invalid"),
        ("proposals_show", {"proposal_id": "p-20260101T000000000Z-00000000"},
         "proposal_not_found"),
        ("proposals_accept", {"proposal_id": "p-20260101T000000000Z-00000000"},
         "proposal_not_found"),
        ("proposals_reject", {"proposal_id": "nonsense"}, "proposal_not_found"),
        ("move", {"source": "stm-no-such-leaf", "to": "kitchen/fermentation"},
         "document_missing"),
        ("forget", {"source": "01 xltm/XLTM.md"}, "forget_layer_unsupported"),
    ]
    reads = {
        "route": ({"query": "kimchi"}, lambda o: o["results"][0]["path"] == KIMCHI),
        "search": ({"query": "kimchi"}, lambda o: o["count"] >= 1),
        "retrieve": ({"query": "kimchi batch"}, lambda o: o["trails"][0]["nodes"][-1]["path"]
                     == KIMCHI),
        "open": ({"path": KIMCHI}, lambda o: o["body"] == (forest / KIMCHI).read_text()),
        "status": ({}, lambda o: o["ready"] is True),
        "stats": ({}, lambda o: o["indexed"] >= 12),
        "remember": ({"content": "The cellar stays at 4 C in winter.", "tree": "kitchen",
                      "branch": "fermentation", "leaf": "cellar-log", "wait": 20},
                     lambda o: o["path"] == CELLAR and o["created"] is True),
    }

    def read(tool: str) -> None:
        arguments, check = reads[tool]
        outcome = succeeded(inspect_call(inspector, forest, tool, **arguments), tool)
        assert check(outcome), (tool, outcome)
        successes[tool] = check

    def error(case: tuple[str, dict[str, Any], str]) -> None:
        tool, arguments, code = case
        assert failed(inspect_call(inspector, forest, tool, **arguments), tool)["code"] == code

    def review() -> None:
        """capture, then the review loop: each step needs the one before it."""
        [captured] = ts_client(inspector, forest, [("capture", {
            "events": [event("evt-j-1", "Cellarsentinel shelf cleared.", "1"),
                       event("evt-j-2", "Cellarsentinel jars labelled.", "2")],
            "wait": 20})])
        assert succeeded(captured, "capture")["captured"] == 2
        first = succeeded(inspect_call(inspector, forest, "consolidate", limit=1, wait=20),
                          "consolidate")["proposal"]["proposal_id"]
        rejected = inspect_call(inspector, forest, "proposals_reject", proposal_id=first,
                                reason="not now", wait=20)
        assert succeeded(rejected, "proposals_reject")["status"] == "rejected"
        second = succeeded(inspect_call(inspector, forest, "consolidate", limit=1, wait=20),
                           "consolidate")["proposal"]["proposal_id"]
        shown = succeeded(inspect_call(inspector, forest, "proposals_show",
                                       proposal_id=second), "proposals_show")
        assert shown["proposal"]["status"] == "pending"
        accepted = inspect_call(inspector, forest, "proposals_accept", proposal_id=second,
                                wait=20)
        assert succeeded(accepted, "proposals_accept")["status"] == "accepted"
        listed = succeeded(inspect_call(inspector, forest, "proposals_list"), "proposals_list")
        assert {p["proposal_id"]: p["status"] for p in listed["proposals"]} == {
            first: "rejected", second: "accepted"}
        successes.update(dict.fromkeys(("capture", "consolidate", "proposals_reject",
                                        "proposals_show", "proposals_accept",
                                        "proposals_list"), bool))

    def relocate() -> None:
        """move a leaf the other calls do not read, then forget it where it went."""
        moved = "04 stm/greenhouse/irrigation/zaatar-blend.md"
        outcome = succeeded(inspect_call(inspector, forest, "move", source="stm-zaatar-blend",
                                         to="greenhouse/irrigation", wait=20), "move")
        assert outcome["path"] == moved and outcome["id"] == "stm-zaatar-blend"
        outcome = succeeded(inspect_call(inspector, forest, "forget", source=moved, wait=20),
                            "forget")
        assert [item["path"] for item in outcome["removed"]] == [moved]
        successes.update(dict.fromkeys(("move", "forget"), bool))

    with ThreadPoolExecutor(max_workers=3) as pool:
        jobs = [pool.submit(review), pool.submit(relocate)]
        jobs += [pool.submit(read, tool) for tool in reads]
        jobs += [pool.submit(error, case) for case in errors]
        for job in jobs:
            job.result()
    tools = {operation.name for operation in catalog.tools()}
    assert set(successes) == tools and {tool for tool, _, _ in errors} == tools


# --- the Python SDK ----------------------------------------------------------------------------

def python_client(root: Path, calls: list[tuple[str, dict[str, Any]]],
                  errlog: Path) -> list[dict[str, Any]]:
    """Tool results through the Python SDK's stdio client, as they travel."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    results: list[dict[str, Any]] = []

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=server(root)[1:],
                                       env=dict(os.environ))  # the code under test
        with errlog.open("w") as log:
            async with stdio_client(params, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for name, arguments in calls:
                        result = await session.call_tool(name, arguments)
                        results.append(result.model_dump(by_alias=True, exclude_none=True))

    anyio.run(main)
    return results


def test_a_hand_written_note_is_found_and_errors_read_in_the_python_sdk(forest, tmp_path):
    """A note written by hand, indexed, found and opened; then the user's two errors."""
    write_doc(forest, CELLAR, "Cellar log", "The Vaultsentinel cellar holds 4 C all winter.",
              "stm-cellar-log")
    operations.index(forest)
    found, opened, missing, misnamed = python_client(forest, [
        ("retrieve", {"query": "Vaultsentinel cellar"}),
        ("open", {"path": CELLAR}),
        ("open", {"path": "04 stm/kitchen/fermentation/no-such-leaf.md"}),
        ("remember", {"text": "Kimchi batch 8 started."}),
    ], tmp_path / "server.log")
    assert found["structuredContent"]["trails"][0]["nodes"][-1]["path"] == CELLAR
    assert "Vaultsentinel" in opened["structuredContent"]["body"]
    for result, code in ((missing, "not_found"), (misnamed, "usage_error")):
        assert result["isError"] is True and "structuredContent" not in result
        assert json.loads(result["content"][0]["text"])["error"]["code"] == code
    assert "Vaultsentinel" not in (tmp_path / "server.log").read_text()


# --- raw frames ----------------------------------------------------------------------------------

INITIALIZE = [
    json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
]


def exchange(root: Path, lines: list[bytes]) -> list[dict[str, Any]]:
    """Send the lines, then close stdin: the answers in order, initialize's left out."""
    done = subprocess.run(server(root), input=b"\n".join(
        [line.encode() for line in INITIALIZE] + lines) + b"\n", capture_output=True,
        timeout=TIMEOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr[-2000:]
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    # Refusals are written as their lines are read, maybe before initialize is answered.
    [initialized] = [answer for answer in answers if answer["id"] == 0]
    assert "result" in initialized
    return [answer for answer in answers if answer["id"] != 0]


def call_line(request_id: int, tool: str, arguments: str) -> bytes:
    return (f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
            f'"params":{{"name":"{tool}","arguments":{arguments}}}}}').encode()


def tool_code(answer: dict[str, Any]) -> str:
    result = answer["result"]
    assert result["isError"] is True and "structuredContent" not in result
    return json.loads(result["content"][0]["text"])["error"]["code"]


def test_every_malformed_frame_is_answered_and_the_server_keeps_going(forest):
    lines = [
        b"{not json",
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]',
        b'{"jsonrpc":"2.0","id":{"n":2},"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":[3],"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":4}',
        b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":5.5,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":6,"id":7,"method":"tools/list"}',
        b'{"jsonrpc":"1.0","id":8,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":9,"method":"tools/list","params":[1]}',
        b'{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"cursor":"\xff"}}',
        b'{"jsonrpc":"2.0","method":"notifications/bogus","params":{"a":1,"a":2}}',
        b"",
        b'{"jsonrpc":"2.0","id":11,"method":"tools/list"}',
    ]
    answers = exchange(forest, lines)
    errors = [(a["id"], a["error"]["code"]) for a in answers[:-1]]
    assert errors == [(None, -32700), (None, -32600), (None, -32600), (None, -32600),
                      (None, -32600), (4, -32600), (None, -32600), (None, -32600),
                      (None, -32600), (8, -32600), (9, -32600), (None, -32700)]
    # The notification got no answer; the last request got its own.
    assert answers[-1]["id"] == 11 and len(answers[-1]["result"]["tools"]) == len(
        catalog.tools())


def test_repeated_keys_are_refused_with_the_cli_codes_and_write_nothing(forest, tmp_path):
    events = tmp_path / "events.json"
    events.write_text('{"observed_at":"2026-12-01T08:00:00Z","source":"a","source":"b",'
                      '"kind":"note","payload":"p"}', encoding="utf-8")
    cli = subprocess.run([sys.executable, "-m", "memory_forest", "--json", "capture",
                          str(forest), "--file", str(events)],
                         capture_output=True, text=True, timeout=TIMEOUT)
    before = canonical_state(forest)
    answers = exchange(forest, [
        call_line(1, "capture", '{"events":' + events.read_text() + "}"),
        call_line(2, "capture", '{"events":[' + events.read_text() + "]}"),
        call_line(3, "retrieve", '{"query":"kimchi","query_plan":{"schema_version":1,'
                                 '"probes":[],"probes":[{"query":"x"}]}}'),
        call_line(4, "proposals_accept", '{"proposal_id":"p-20260101T000000000Z-00000000",'
                                         '"summaries":{"e":"a","e":"b"}}'),
        call_line(5, "remember", '{"content":"a fact","content":"another fact"}'),
        call_line(6, "route", '{"query":"kimchi","limit":NaN}'),
        call_line(7, "route", '{"query":"\\ud800"}'),
        b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"route",'
        b'"name":"open","arguments":{"query":"kimchi"}}}',
        call_line(9, "route", '{"query":"kimchi"}'),
    ])
    by_id = {answer["id"]: answer for answer in answers}
    assert json.loads(cli.stdout)["error"]["code"] == "capture_duplicate_key"
    assert tool_code(by_id[1]) == tool_code(by_id[2]) == "capture_duplicate_key"
    assert tool_code(by_id[3]) == "query_plan_duplicate_key"
    assert tool_code(by_id[4]) == "summaries_duplicate_key"
    assert [tool_code(by_id[n]) for n in (5, 6, 7, 8)] == ["usage_error"] * 4
    refused = json.loads(by_id[5]["result"]["content"][0]["text"])["error"]
    assert refused["details"] == {"reason": "duplicate_key", "fields": ["content"]}
    assert "fact" not in json.dumps(refused)  # the values are never echoed
    assert by_id[9]["result"]["structuredContent"]["results"][0]["path"] == KIMCHI
    assert canonical_state(forest) == before

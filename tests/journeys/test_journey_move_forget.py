"""Journey: a fact lands in the inbox, a note written by hand links to it, the agent moves
it where it belongs and later forgets it; the gate follows each step.

Every step is a real process (the CLI, the gate as a host runs it, the MCP server with
the SDK client); the forest is a real directory with its SQLite index.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from forestkit import new_forest

from memory_forest import operations, schemas

INBOX_LEAF = "04 stm/inbox/inbox/heron.md"
PLACED = "04 stm/greenhouse/irrigation/heron.md"
NOTE = "03 mtm/greenhouse/pond.md"
QUESTION = "where does the quixotic heron nest?"


def run(*args: Any, stdin: str | None = None) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "memory_forest", *map(str, args)],
                          input=stdin, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def gate_paths(root: Path) -> dict[str, bool]:
    """The leaves the gate's trails end in, each with whether its trail is complete."""
    code, receipt = run("gate", root, stdin=QUESTION)
    assert code == 0 and receipt["lookup_completed"] is True, receipt
    return {trail["nodes"][-1]["path"]: trail["complete"]
            for trail in receipt["retrieve"]["trails"]}


def write_note(root: Path, target: str) -> None:
    """A branch note typed in an editor, linking to the heron leaf."""
    (root / NOTE).write_text(
        "---\ntitle: Pond\n---\n# Pond\n\nUp: [[02 ltm/greenhouse_LTM|Greenhouse]]\n\n"
        f"The heron ([[{target[:-3]}|see the leaf]]) fishes here at dawn.\n", encoding="utf-8")
    os.chmod(root / NOTE, 0o600)


def test_inbox_fact_moved_then_forgotten_as_the_gate_sees_it(tmp_path):
    root = new_forest(tmp_path, example=True)
    code, out = run("remember", root, "--tree", "inbox", "--branch", "inbox", "--leaf", "heron",
                    "--title", "Heron", "--content",
                    "The quixotic heron nests in the reeds by the pond.", "--json")
    assert code == 0 and out["path"] == INBOX_LEAF, out
    leaf_id = (root / INBOX_LEAF).read_text().split('id: "', 1)[1].split('"', 1)[0]
    write_note(root, INBOX_LEAF)
    assert gate_paths(root) == {INBOX_LEAF: True}

    code, moved = run("move", root, leaf_id, "--to", "greenhouse/irrigation", "--json")
    assert code == 0, moved
    assert moved["path"] == PLACED and moved["id"] == leaf_id and moved["relinked"] == [NOTE]
    assert "[[04 stm/greenhouse/irrigation/heron|see the leaf]]" in (root / NOTE).read_text()
    found = gate_paths(root)  # the hand note, now indexed, may be found too
    assert found[PLACED] is True and INBOX_LEAF not in found
    code, audited = run("audit", root, "--json")
    assert code == 0 and audited["summary"]["errors"] == 0, audited

    code, forgotten = run("forget", root, PLACED, "--json")
    assert code == 0, forgotten
    assert forgotten["removed"][0]["path"] == PLACED
    assert forgotten["removed"][0]["id"] == leaf_id
    assert forgotten["dangling"] == [{"path": NOTE, "target": PLACED}]
    assert PLACED not in gate_paths(root)
    code, indexed = run("index", root, "--json")
    assert code == 0
    assert [(p["path"], p["code"], p["level"]) for p in indexed["problems"]] == \
        [(NOTE, "link_unresolved", "warning")]


def test_a_leaf_deleted_by_hand_is_still_on_the_trail_and_forget_tidies_it(tmp_path):
    root = new_forest(tmp_path, example=True)
    run("remember", root, "--tree", "greenhouse", "--branch", "irrigation", "--leaf", "heron",
        "--content", "The quixotic heron nests in the reeds by the pond.", "--json")
    run("remember", root, "--tree", "greenhouse", "--branch", "irrigation", "--leaf", "egret",
        "--content", "The quixotic egret visits the pond in winter.", "--json")
    os.unlink(root / PLACED)
    code, indexed = run("index", root, "--json")
    assert code == 0 and [p["code"] for p in indexed["problems"]] == ["link_child_missing"]
    assert "memory-forest forget" in indexed["problems"][0]["message"]
    trails = gate_paths(root)
    assert trails == {"04 stm/greenhouse/irrigation/egret.md": True}
    code, tidied = run("forget", root, PLACED, "--json")
    assert code == 0 and tidied["tidied"] == "03 mtm/greenhouse/irrigation.md", tidied
    code, audited = run("audit", root, "--json")
    assert code == 0, audited


mcp = pytest.importorskip("mcp", reason="the optional 'mcp' SDK is not installed")
anyio = pytest.importorskip("anyio")


def test_move_and_forget_over_mcp(tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    root = new_forest(tmp_path, example=True)
    operations.index(root)
    seen: dict[str, Any] = {}

    async def call(session: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = (await session.call_tool(name, arguments)).model_dump(by_alias=True)
        return json.loads(answer["content"][0]["text"])

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                       args=["-m", "memory_forest", "serve", str(root)])
        with (tmp_path / "stderr.log").open("w") as log:
            async with stdio_client(params, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    seen["preview"] = await call(session, "move", {
                        "source": "stm-zaatar-blend", "to": "greenhouse/irrigation",
                        "dry_run": True})
                    seen["move"] = await call(session, "move", {
                        "source": "stm-zaatar-blend", "to": "greenhouse/irrigation"})
                    seen["exists"] = await call(session, "move", {
                        "source": "stm-kimchi-batch-7", "to": "greenhouse/irrigation/"
                        "zaatar-blend"})
                    seen["forget"] = await call(session, "forget", {
                        "source": "04 stm/greenhouse/irrigation/zaatar-blend"})
                    seen["not_empty"] = await call(session, "forget", {
                        "source": "03 mtm/kitchen/fermentation"})

    anyio.run(main)
    moved = "04 stm/greenhouse/irrigation/zaatar-blend.md"
    assert seen["preview"]["dry_run"] is True and seen["preview"]["path"] == moved
    # Each answer is what the tool's published output schema describes.
    schemas.validate("MovePreview", seen["preview"])
    schemas.validate("MoveReceipt", seen["move"])
    schemas.validate("ForgetReceipt", seen["forget"])
    for name in ("MoveResult", "ForgetResult"):
        assert schemas.output_schema(name)["type"] == "object"
    assert seen["move"]["ok"] is True and seen["move"]["id"] == "stm-zaatar-blend"
    assert seen["exists"]["error"]["code"] == "move_target_exists"
    assert seen["forget"]["removed"][0]["path"] == moved
    assert seen["forget"]["tidied"] == "03 mtm/greenhouse/irrigation.md"
    assert seen["not_empty"]["error"]["code"] == "forget_not_empty"
    assert not (root / moved).exists()
    report = operations.audit(root)
    assert report["ok"], report["issues"]

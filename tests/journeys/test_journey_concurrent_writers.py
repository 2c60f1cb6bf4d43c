"""Journey: several agents write at once, with the flags they would use, and nothing is lost.

Agents and hooks do not retry a write that failed for contention. So the
writers started together here use default flags, through the real CLI in
separate processes, and every one must be acknowledged; the forest must then
hold each fact and event exactly once, pass validate and audit, and answer
retrieve with each fact. ``--wait 0`` still fails at once; waiters are served
in the order they arrived, and one killed while waiting blocks nobody; an
agent over MCP waits its turn without asking for it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli

from memory_forest import lock

FACT_WORDS = ("zarfwort", "quillback", "mossglint", "thimbleroot", "vellichor", "brackenfuse")
LEAF = "04 stm/kitchen/pickles/jar-{n}.md"


def start(*args: str | Path, stdin: str | None = None) -> subprocess.Popen[str]:
    """One agent's write: the real CLI in its own process, default flags unless given."""
    proc = subprocess.Popen([sys.executable, "-m", "memory_forest", *map(str, args), "--json"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
    assert proc.stdin is not None
    proc.stdin.close()
    return proc


def finish(proc: subprocess.Popen[str]) -> tuple[int, dict]:
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    code = proc.wait(timeout=300)
    assert "Traceback" not in err, err
    [line] = out.splitlines()  # one JSON object, success or failure
    return code, json.loads(line)


def event_line(event_id: str, text: str) -> str:
    return json.dumps({"event_id": event_id, "observed_at": "2026-11-30T09:00:00Z",
                       "source": "agent", "kind": "note", "payload": {"text": text}}) + "\n"


def istm_lines(root: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((root / "06 istm").glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def waiting_pids(root: Path) -> set[int]:
    """The processes whose ticket (their staged lock directory) stands beside the lock."""
    name = lock.lock_path(root).name
    pids = set()
    for entry in os.scandir(root.parent):
        if entry.name.startswith(name + ".") and entry.name.endswith(".new"):
            owner = lock.read_owner(Path(entry.path))
            if owner is not None:
                pids.add(owner["pid"])
    return pids


def until_waiting(root: Path, proc: subprocess.Popen[str]) -> None:
    """Block until ``proc`` stands in line (it is a real process: its start-up takes a while)."""
    for _ in range(3000):
        if proc.pid in waiting_pids(root):
            return
        assert proc.poll() is None, "the writer ended before it waited for the lock"
        time.sleep(0.01)
    raise AssertionError("the writer never queued for the lock")


def beside(root: Path) -> list[str]:
    return sorted(name for name in os.listdir(root.parent)
                  if name.startswith(lock.lock_path(root).name))


def test_agents_writing_at_once_are_all_acknowledged_and_all_found(example_forest):
    root = example_forest
    assert run_cli("index", root, "--json").code == 0
    remembers = [start("remember", root, "--tree", "kitchen", "--branch", "pickles",
                       "--leaf", f"jar-{n}", "--title", f"Jar {n}",
                       "--content", f"The {word} jar {n} keeps its brine at 4 percent.")
                 for n, word in enumerate(FACT_WORDS)]
    captures = [start("capture", root, "-",
                      stdin=event_line(f"crowd-{n}-a", f"hook event {n}")
                      + event_line(f"crowd-{n}-b", f"hook event {n}, second"))
                for n in range(6)]
    outcomes = [finish(proc) for proc in remembers + captures]
    assert [(code, outcome["ok"]) for code, outcome in outcomes] == [(0, True)] * 12, [
        outcome.get("error") for _, outcome in outcomes]

    # Every event acknowledged is stored exactly once, and nothing else was stored.
    acknowledged = [i for _, outcome in outcomes[6:] for i in outcome["event_ids"]]
    stored = [record["event_id"] for record in istm_lines(root)]
    assert sorted(acknowledged) == sorted(i for i in stored if i.startswith("crowd-"))
    assert len(acknowledged) == 12 and len(stored) == len(set(stored))
    # Every fact is filed once, in its own leaf, and captured once.
    markdown = [path.read_text(encoding="utf-8") for path in root.rglob("*.md")]
    for n, word in enumerate(FACT_WORDS):
        assert sum(text.count(word) for text in markdown) == 1, word
        assert word in (root / LEAF.format(n=n)).read_text(encoding="utf-8")
        assert sum(word in json.dumps(record) for record in istm_lines(root)) == 1, word
    assert beside(root) == []  # no lock, no ticket, no debris left behind

    for check in ("validate", "audit"):
        outcome = run_cli(check, root, "--json").json()
        assert outcome["ok"] and outcome["summary"] == {"errors": 0, "warnings": 0}, outcome
    for n, word in enumerate(FACT_WORDS):
        found = run_cli("retrieve", root, word, "--json").json()
        ends = [trail["nodes"][-1]["path"] for trail in found["trails"]]
        assert ends == [LEAF.format(n=n)], (word, ends)
        assert all(node["verified"] for trail in found["trails"] for node in trail["nodes"])


def test_wait_0_fails_at_once_while_another_writer_holds_the_lock(example_forest):
    root = example_forest
    before = istm_lines(root)
    owner = lock.acquire(root, "another agent's remember")
    try:
        # A writer that waited would still be waiting here: the lock is never released.
        done = subprocess.run([sys.executable, "-m", "memory_forest", "capture", str(root), "-",
                               "--wait", "0", "--json"], input=event_line("fast-1", "now"),
                              capture_output=True, text=True, timeout=20)
        assert lock.read_owner(lock.lock_path(root))["token"] == owner["token"]
    finally:
        lock.release(root, owner)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "lock_held" and error["details"]["pid"] == os.getpid()
    assert error["details"]["command"] == "another agent's remember"
    assert "--wait" in error["message"]
    assert istm_lines(root) == before and beside(root) == []


def test_waiters_get_the_lock_in_the_order_they_arrived(example_forest):
    root = example_forest
    owner = lock.acquire(root, "a long write")
    waiters = []
    try:
        for n in range(4):  # each starts only once the one before it stands in line
            proc = start("capture", root, "-", stdin=event_line(f"order-{n}", f"arrived {n}"))
            until_waiting(root, proc)
            waiters.append(proc)
    finally:
        lock.release(root, owner)
    results = [finish(proc) for proc in waiters]
    assert [code for code, _ in results] == [0, 0, 0, 0], results
    # Capture appends under the lock, so the shard's order is the order the lock was taken.
    stored = [r["event_id"] for r in istm_lines(root) if r["event_id"].startswith("order-")]
    assert stored == ["order-0", "order-1", "order-2", "order-3"]


def test_a_waiter_killed_in_line_blocks_nobody(example_forest):
    root = example_forest
    owner = lock.acquire(root, "a long write")
    try:
        first = start("capture", root, "-", stdin=event_line("killed-1", "never stored"))
        until_waiting(root, first)
        second = start("capture", root, "-", stdin=event_line("after-kill-1", "stored"))
        until_waiting(root, second)
        first.send_signal(signal.SIGKILL)
        assert first.wait(timeout=60) == -signal.SIGKILL
        assert first.pid in waiting_pids(root)  # its ticket is left behind...
    finally:
        lock.release(root, owner)
    code, outcome = finish(second)  # ...and the writer behind it is served all the same
    assert code == 0 and outcome["event_ids"] == ["after-kill-1"]
    stored = [r["event_id"] for r in istm_lines(root)]
    assert "after-kill-1" in stored and "killed-1" not in stored
    assert beside(root) == []  # the dead waiter's ticket went with the next acquire
    assert run_cli("audit", root, "--json").json()["ok"]


def rpc(proc: subprocess.Popen[str], message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def answer(proc: subprocess.Popen[str], request_id: int) -> dict:
    assert proc.stdout is not None
    for line in proc.stdout:
        message = json.loads(line)
        if message.get("id") == request_id:
            return message
    raise AssertionError(f"the server closed without answering request {request_id}")


def test_an_agent_over_mcp_waits_its_turn_without_asking(example_forest, tmp_path):
    """The MCP writer tools wait by default too: a remember sent while a maintenance job
    holds the lock is answered once the job is done, not refused."""
    pytest.importorskip("mcp")
    root = example_forest
    server = subprocess.Popen([sys.executable, "-m", "memory_forest", "serve", str(root)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=(tmp_path / "serve.log").open("w"), text=True)
    try:
        rpc(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "journey", "version": "0"}}})
        assert "result" in answer(server, 1)
        rpc(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        owner = lock.acquire(root, "maintain")
        try:
            rpc(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "remember", "arguments": {
                    "tree": "kitchen", "branch": "pickles", "leaf": "jar-mcp",
                    "title": "Jar MCP", "content": "The glimmerwick jar waited its turn."}}})
            until_waiting(root, server)
        finally:
            lock.release(root, owner)
        reply = answer(server, 2)["result"]
        assert reply.get("isError") is not True, reply
        assert reply["structuredContent"]["path"] == "04 stm/kitchen/pickles/jar-mcp.md"
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=60)
    found = run_cli("retrieve", root, "glimmerwick", "--json").json()
    assert [trail["nodes"][-1]["path"] for trail in found["trails"]] == [
        "04 stm/kitchen/pickles/jar-mcp.md"]


def test_a_host_that_gives_up_on_a_waiting_hook_leaves_nothing_behind(example_forest):
    """A hook runner's timeout stops a capture that is still in line: it reports
    ``interrupted`` (exit 143), takes its ticket with it, and the writer behind it goes on."""
    root = example_forest
    owner = lock.acquire(root, "a long write")
    try:
        stopped = start("capture", root, "-", stdin=event_line("stopped-1", "never stored"))
        until_waiting(root, stopped)
        behind = start("capture", root, "-", stdin=event_line("behind-1", "stored"))
        until_waiting(root, behind)
        stopped.send_signal(signal.SIGTERM)
        code, outcome = finish(stopped)
        assert (code, outcome["error"]["code"]) == (143, "interrupted")
        assert stopped.pid not in waiting_pids(root)
    finally:
        lock.release(root, owner)
    assert finish(behind)[0] == 0
    stored = [r["event_id"] for r in istm_lines(root)]
    assert "behind-1" in stored and "stopped-1" not in stored
    assert beside(root) == []

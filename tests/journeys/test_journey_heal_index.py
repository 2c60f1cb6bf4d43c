"""A writer killed mid-commit leaves a hot journal; the next turn and the next write go on.

The journey a user lives after a crash: an index writer is killed in the
middle of its commit (SQLite's hot journal is left beside a half-written
index), then the user's next prompt goes through the Claude Code hook and a
fact is written with ``remember``. Neither may fail or block on derived state:
the journal is rolled back, the turn finds the same evidence as before the
crash, and the new fact is found by the turn after.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import run_cli
from forestkit import STATE_DIR, canonical_state, leave_hot_journal, new_forest

JOURNAL = Path(STATE_DIR) / "index.sqlite3-journal"


def hook_turn(root: Path, prompt: str) -> dict:
    """The gate as Claude Code runs it: hook JSON on stdin, one answer on stdout, exit 0."""
    hook = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt})
    done = subprocess.run([sys.executable, "-m", "memory_forest", "gate", str(root),
                           "--format", "claude-code"], input=hook, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    answer = json.loads(done.stdout)
    assert "decision" not in answer, answer  # the turn is never blocked
    context = answer["hookSpecificOutput"]["additionalContext"]
    return json.loads(context.splitlines()[-1])


def tree_paths(nodes: list[dict]) -> set[str]:
    return {node["path"] for node in nodes} | {
        path for node in nodes for path in tree_paths(node.get("under", []))}


def test_a_killed_index_writer_blocks_neither_the_next_turn_nor_the_next_write(tmp_path):
    root = new_forest(tmp_path, example=True)
    assert run_cli("index", root, "--json").json()["ok"]
    before = hook_turn(root, "How long does the kimchi ferment?")
    assert before["status"] == "evidence_found"
    canonical = canonical_state(root)

    leave_hot_journal(root)
    assert run_cli("doctor", root, "--json").json()["damaged"] == [
        {"piece": JOURNAL.as_posix(), "code": "index_hot_journal", "found": "hot journal",
         "fix": "memory-forest index ROOT"}]

    after = hook_turn(root, "How long does the kimchi ferment?")
    assert after["lookup_completed"] is True and after["status"] == "evidence_found"
    assert tree_paths(after["untrusted"]["tree"]) == tree_paths(before["untrusted"]["tree"])
    assert not (root / JOURNAL).exists()  # rolled back, not deleted by hand
    assert canonical_state(root) == canonical

    wrote = run_cli("remember", root, "Kimchi batch 9 fermented for 12 days at 4 C.", "--json")
    assert wrote.code == 0 and wrote.json()["ok"], wrote.stdout
    found = hook_turn(root, "How many days did kimchi batch 9 ferment?")
    assert found["status"] == "evidence_found"
    assert wrote.json()["path"] in tree_paths(found["untrusted"]["tree"])
    assert run_cli("doctor", root, "--json").json()["damaged"] == []

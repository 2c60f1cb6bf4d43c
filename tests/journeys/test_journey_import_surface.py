"""A day of turns pays only for the turn: what each per-turn process loads stays on its list.

The journey: a note written by hand is indexed; the hook asks about it through the gate;
``remember`` files a new fact (a writer, free to load the whole write path); the next turn
asks through ``retrieve --json`` and then the gate again, and both find the fact. Each
per-turn process is a fresh interpreter whose modules, read once its answer is printed,
are all on the allow-list: our retrieval path and the standard library, no writer, no
build, no renderer and no third-party package. The writer in between does load the
write path, so the list is no accident of an idle forest.
"""

from __future__ import annotations

import json

from conftest import run_cli
from forestkit import hook_context, new_forest, write_doc
from turnimports import loaded, off_the_allow_list

NOTE = "04 stm/garden/tomatoes/watering.md"


def test_each_turn_loads_only_the_allowed_modules_between_writes(tmp_path):
    root = new_forest(tmp_path, example=True)
    write_doc(root, NOTE, "Tomato watering",
              "Water the tomato beds at dawn, two litres a plant, never on the leaves.")
    assert run_cli("index", root, "--json").json()["documents"] >= 1

    hook = json.dumps({"hook_event_name": "UserPromptSubmit",
                       "prompt": "When do I water the tomato beds?"})
    answer, modules = loaded(["gate", str(root), "--format", "claude-code"], hook)
    _, context = hook_context(answer)
    assert NOTE in json.dumps(context), context
    assert off_the_allow_list(modules) == []

    wrote, writer = loaded(["remember", str(root), "The tomato beds get a mulch of straw "
                            "in June.", "--tree", "garden", "--branch", "tomatoes",
                            "--leaf", "mulch", "--json"])
    assert wrote["ok"], wrote
    assert "memory_forest.writers.remember" in writer  # a writer is not held to the list
    assert off_the_allow_list(writer) != []

    found, modules = loaded(["retrieve", str(root), "What mulch do the tomato beds get?",
                             "--json"])
    assert found["ok"] and "04 stm/garden/tomatoes/mulch.md" in json.dumps(found), found
    assert off_the_allow_list(modules) == []

    answer, modules = loaded(["gate", str(root)], "tomato mulch in June")
    assert answer["status"] == "evidence_found", answer
    assert "04 stm/garden/tomatoes/mulch.md" in json.dumps(answer)
    assert off_the_allow_list(modules) == []

"""A host runs the gate with its options, and each one shows in what the host reads.

The journey: a person writes notes by hand, indexes, and the host asks the
real ``memory-forest gate`` process about them with a limit, the lexical core,
a hook format with a small context budget, and ``--strict`` once a note is
edited behind the index. Every option travels in the gate's one options
object; this checks that none is lost on the way from the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import run_cli
from forestkit import new_forest, write_doc

NOTES = {
    "04 stm/kitchen/fermentation/sourdough-starter.md": "Sourdough starter feeding",
    "04 stm/kitchen/fermentation/sourdough-loaf.md": "Sourdough loaf proofing",
    "04 stm/kitchen/fermentation/sourdough-discard.md": "Sourdough discard crackers",
}


def gate(root: Path, turn: str, *options: str) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "memory_forest", "gate", str(root), *options],
                          input=turn.encode(), capture_output=True, timeout=60,
                          env=dict(os.environ, PYTHONIOENCODING="utf-8"))
    assert done.stderr == b"", done.stderr
    return done.returncode, json.loads(done.stdout)


def hook(prompt: str) -> str:
    return json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt})


def test_each_gate_option_reaches_the_answer(tmp_path):
    root = new_forest(tmp_path)
    for rel, title in NOTES.items():
        write_doc(root, rel, title, f"{title}: sourdough notes written by hand, "
                  "rye flour and water at 24 degrees.")
    assert run_cli("index", root, "--json").code == 0

    code, wide = gate(root, "sourdough rye flour")
    assert code == 0 and wide["route"]["count"] == 3
    code, narrow = gate(root, "sourdough rye flour", "--limit", "1", "--lexical")
    assert code == 0 and narrow["status"] == "evidence_found"
    assert narrow["route"]["count"] == 1 and narrow["retrieve"]["count"] <= 1
    assert narrow["retrieve"]["ranking"] == "lexical"

    code, answer = gate(root, hook("how do I feed the sourdough starter?"),
                        "--format", "claude-code", "--context-bytes", "1536")
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and "sourdough" in context and len(context.encode()) <= 1536
    # A limit the gate cannot serve is the hook line's fault: the turn goes through, saying so.
    code, through = gate(root, hook("sourdough"), "--format", "codex", "--limit", "11")
    said = json.loads(through["hookSpecificOutput"]["additionalContext"].splitlines()[-1])
    assert code == 0 and said["reason"] == "limit_out_of_range"
    assert said["lookup_completed"] is False and "hooks install" in said["fix"]

    # A note edited behind the index: served and flagged, unless --strict asks to refuse.
    stale = root / next(iter(NOTES))
    stale.write_text(stale.read_text() + "\nFed twice today.\n")
    code, flagged = gate(root, "sourdough starter feeding")
    assert code == 0 and next(iter(NOTES)) in flagged["unverified"]
    code, strict = gate(root, "sourdough starter feeding", "--strict")
    assert code == 1 and strict["error"]["code"] == "index_stale"
    code, blocked = gate(root, hook("sourdough starter feeding"), "--format", "claude-code",
                         "--strict")
    assert code == 0 and blocked["decision"] == "block"

"""``examples/memory-forest-retrieve/run-gate.sh`` runs end to end against the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "memory-forest-retrieve" / "run-gate.sh"


def test_the_gate_example_shows_every_outcome():
    beside = Path(sys.executable).with_name("memory-forest")
    command = str(beside) if beside.is_file() else shutil.which("memory-forest")
    assert command, "memory-forest is not installed in this environment"
    done = subprocess.run(["bash", str(SCRIPT), command], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    statuses = [answer.get("status") for answer in answers[:3]]
    assert statuses == ["evidence_found", "no_evidence", "noop"]
    assert answers[3]["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    passed = json.loads(answers[4]["hookSpecificOutput"]["additionalContext"].splitlines()[-1])
    assert passed["lookup_completed"] is False and passed["reason"] == "index_missing"
    assert passed["fix"] == "memory-forest index ROOT" and "decision" not in answers[4]


def test_the_example_says_that_a_prompt_is_advisory():
    for name in ("README.md", "system-prompt.md"):
        text = (SCRIPT.parent / name).read_text(encoding="utf-8")
        assert "advis" in text and "hook" in text

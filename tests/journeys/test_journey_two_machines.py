"""Journey: an agent captures on one machine, a person consolidates on another.

Machine A (a phone-side agent) captures a raw event and syncs; machine B, a plain
``git clone`` of the shared remote, syncs, consolidates, reviews and accepts the
proposal, and syncs back; the next turn on A asks through the gate and gets the
reviewed leaf as a trail, while the raw event is no longer offered as unfiled.
Everything runs through the real CLI against a bare remote in tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FACT = "The apricot tree by the north fence needs a copper spray before bud break."
QUESTION = "what does the apricot tree need before bud break?"


pytestmark = pytest.mark.usefixtures("hermetic_git")


def on(host: str, *args: str | Path,
       stdin: str | None = None) -> dict:
    """Run one CLI command as machine ``host`` and return its JSON object."""
    env = dict(os.environ, MEMORY_FOREST_HOST=host)
    proc = subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args),
                           "--json"], input=stdin or "", capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_capture_on_one_machine_consolidate_on_the_other_answer_on_the_first(
        tmp_path: Path) -> None:
    remote, a, b = tmp_path / "remote.git", tmp_path / "A", tmp_path / "B"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    on("alpha", "init", a, "--example")
    event = {"observed_at": "2026-12-01T09:00:00Z", "source": "phone", "kind": "note",
             "payload": {"text": FACT}}
    captured = on("alpha", "capture", a, "-", stdin=json.dumps(event))
    (event_id,) = captured["event_ids"]
    assert on("alpha", "sync", a, "--init", remote)["pushed"] is True

    before = on("alpha", "gate", a, stdin=QUESTION)
    assert [item["event_id"] for item in before["retrieve"]["unfiled"]] == [event_id]

    subprocess.run(["git", "clone", "-q", str(remote), str(b)], check=True)
    on("beta", "sync", b)
    proposed = on("beta", "consolidate", b)
    summaries = [entry["summary"] for day in proposed["proposal"]["days"]
                 for entry in day["entries"]]
    assert FACT in summaries
    proposal_id = Path(proposed["path"]).stem
    accepted = on("beta", "proposals", "accept", b, proposal_id)
    leaf = next(item["target"] for item in accepted["dispositions"]
                if item["target"] and "apricot" in item["target"])
    assert on("beta", "sync", b)["pushed"] is True

    pulled = on("alpha", "sync", a)
    assert pulled["pulled"]["commits"] >= 1
    after = on("alpha", "gate", a, stdin=QUESTION)
    assert after["status"] == "evidence_found"
    trail = after["retrieve"]["trails"][0]
    assert trail["complete"] is True and trail["nodes"][-1]["path"] == leaf
    assert all(node["verified"] for node in trail["nodes"])
    assert event_id not in [item["event_id"] for item in after["retrieve"]["unfiled"]]
    for root in (a, b):
        assert on("alpha", "audit", root)["ok"] is True
    assert (a / leaf).read_bytes() == (b / leaf).read_bytes()

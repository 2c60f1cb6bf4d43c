"""Journey: a review decision taken on one machine holds on the other.

Machine A captures a raw event, consolidates and rejects the proposal, and
syncs. Machine B (a plain ``git clone`` of the shared remote) syncs, captures
an event of its own and consolidates: the source A rejected is still there as
raw evidence, but it is not proposed again. B accepts its proposal and syncs;
A syncs and consolidates: nothing either machine decided comes back. Then the
decisions survive the loss of A's derived state. Everything runs through the
real CLI against a bare remote in tmp_path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("hermetic_git")

REFUSED = "The apricot tree by the north fence might want a copper spray, maybe."
KEPT = "The rain barrel by the shed overflows after every storm; it needs a second barrel."


def on(host: str, *args: str | Path, stdin: str | None = None) -> dict:
    """Run one CLI command as machine ``host`` and return its JSON object."""
    env = dict(os.environ, MEMORY_FOREST_HOST=host)
    proc = subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args),
                           "--json"], input=stdin or "", capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def capture(host: str, root: Path, text: str, observed: str) -> str:
    event = {"observed_at": observed, "source": "phone", "kind": "note",
             "payload": {"text": text}}
    done = on(host, "capture", root, "-", stdin=json.dumps(event))
    (event_id,) = done["event_ids"]
    return f"{done['shard']}#{event_id}"


def proposed(outcome: dict) -> set[str]:
    """Every source a consolidate result proposes (events and promoted Daily entries)."""
    proposal = outcome["proposal"] or {"days": [], "promotions": []}
    return {source["pointer"] for day in proposal["days"] for entry in day["entries"]
            for source in entry["sources"]} | {
        item["source"]["pointer"] for item in proposal["promotions"]}


def test_a_rejection_on_one_machine_and_an_accept_on_the_other_both_hold(
        tmp_path: Path) -> None:
    remote, a, b = tmp_path / "remote.git", tmp_path / "A", tmp_path / "B"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    on("alpha", "init", a, "--example")
    refused = capture("alpha", a, REFUSED, "2026-12-01T09:00:00Z")
    assert on("alpha", "sync", a, "--init", remote)["pushed"] is True

    first = on("alpha", "consolidate", a)
    rejected_sources = proposed(first)
    assert refused in rejected_sources  # with the example's unpromoted Daily entries
    rejected = on("alpha", "proposals", "reject", a, first["proposal"]["proposal_id"],
                  "--reason", "not a fact yet")
    assert rejected["decision"].startswith("06 istm/") and ".alpha.jsonl#" in \
        rejected["decision"]  # canonical, in A's own shard
    assert on("alpha", "sync", a)["pushed"] is True

    subprocess.run(["git", "clone", "-q", str(remote), str(b)], check=True)
    on("beta", "sync", b)
    kept = capture("beta", b, KEPT, "2026-12-02T09:00:00Z")
    on("beta", "index", b)
    unfiled = on("beta", "gate", b, stdin="apricot tree copper spray")["retrieve"]["unfiled"]
    assert refused.partition("#")[2] in [item["event_id"] for item in unfiled]  # still evidence
    second = on("beta", "consolidate", b)
    assert proposed(second) == {kept}, "a source rejected on A was proposed again on B"
    on("beta", "proposals", "accept", b, second["proposal"]["proposal_id"])
    assert on("beta", "sync", b)["pushed"] is True

    assert on("alpha", "sync", a)["pulled"]["commits"] >= 1
    again = on("alpha", "consolidate", a)
    assert again["proposal"] is None, proposed(again)
    for root in (a, b):
        assert on("alpha", "audit", root)["ok"] is True

    # Proposals, receipts and the index are derived: lost, they take no decision with them.
    for child in (a / ".memory-forest").iterdir():
        if child.name != "forest.json":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    on("alpha", "index", a)
    assert on("alpha", "consolidate", a)["proposal"] is None
    assert on("beta", "consolidate", b)["proposal"] is None

"""Journey: facts nothing fits pile up in the inbox; a branch that fits some of them appears,
and consolidate proposes moving them there and a new branch for the rest that share a topic;
accepting empties the inbox, rejecting keeps it and is never asked again.

Every step is the real CLI in a subprocess (and the gate as a host runs it) over a real
forest directory with its SQLite index.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from forestkit import new_forest

from memory_forest import schemas
from memory_forest.writers.markdown import metadata

INBOX = "04 stm/inbox/inbox"
HIVES = ["The beehive frames need fresh wax foundation.",
         "Beehive queen spotted laying eggs on the new frames."]
BIKES = ["The bicycle chain squeaks after the rain.",
         "Bicycle tyre went flat on the commute.",
         "The bicycle brakes need new pads."]
QUESTION = "what do the bicycle brakes and tyre need?"


def run(*args: Any, stdin: str | None = None) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "memory_forest", *map(str, args)],
                          input=stdin, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def ok(*args: Any) -> dict[str, Any]:
    code, out = run(*args, "--json")
    assert code == 0 and out["ok"], out
    return out


def filled_forest(parent: Path) -> tuple[Path, dict[str, str]]:
    """An example forest whose inbox holds five facts (path -> id), then a beekeeping
    branch that two of them fit."""
    root = new_forest(parent, example=True)
    ids = {}
    for text in HIVES + BIKES:
        placed = ok("remember", root, "--content", text)
        assert placed["path"].startswith(INBOX + "/"), placed["placement"]
        ids[placed["path"]] = metadata((root / placed["path"]).read_text())["id"]
    ok("remember", root, "--tree", "garden", "--branch", "beekeeping", "--leaf", "hive-notes",
       "--title", "Beehive frames and wax", "--content",
       "Beehive frames, wax foundation, and when the queen is laying.")
    return root, ids


def test_consolidate_empties_the_inbox_and_the_gate_finds_the_leaves_moved(tmp_path):
    root, ids = filled_forest(tmp_path)
    made = ok("consolidate", root)
    proposal = made["proposal"]
    assert made["counts"]["moves"] == 2 and made["counts"]["branches"] == 1, proposal
    moves = {item["source"]["pointer"]: item for item in proposal["moves"]}
    assert {path for path in ids if "beehive" in path} == set(moves)
    assert {(item["placement"]["tree"], item["placement"]["branch"])
            for item in moves.values()} == {("garden", "beekeeping")}
    assert all(item["placement"]["reason"]["rule"] in ("confident", "dense")
               for item in moves.values())
    [branch] = proposal["branches"]
    assert branch["title"] == "Bicycle" and "bicycle" in branch["terms"]
    assert {item["source"]["pointer"] for item in branch["leaves"]} == \
        {path for path in ids if "bicycle" in path}
    shown = subprocess.run([sys.executable, "-m", "memory_forest", "proposals", "show", root,
                            proposal["proposal_id"]], capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0 and "new branch" in shown.stdout, shown.stderr
    assert "inbox leaves a branch now fits" in shown.stdout

    accepted = ok("proposals", "accept", root, proposal["proposal_id"])
    schemas.validate("ProposalAcceptResult", accepted)
    new_branch = f"03 mtm/{branch['tree']}/{branch['branch']}.md"
    assert accepted["branches"] == [new_branch]
    moved = {item["from"]: item for item in accepted["moved"]}
    assert set(moved) == set(ids)
    assert not list((root / INBOX).glob("*.md"))  # the inbox is empty
    inbox_note = (root / "03 mtm/inbox/inbox.md").read_text()
    branch_note = (root / new_branch).read_text()
    hives_note = (root / "03 mtm/garden/beekeeping.md").read_text()
    for old, item in moved.items():
        assert item["id"] == ids[old]  # the id travels with the leaf
        assert metadata((root / item["to"]).read_text())["id"] == ids[old]
        assert not (root / old).exists() and old[:-3] not in inbox_note
        holder = hives_note if "/garden/beekeeping/" in item["to"] else branch_note
        assert f"[[{item['to'][:-3]}|" in holder
    code, receipt = run("gate", root, stdin=QUESTION)
    assert code == 0 and receipt["lookup_completed"] is True, receipt
    ends = {trail["nodes"][-1]["path"]: trail["complete"]
            for trail in receipt["retrieve"]["trails"]}
    bikes = {item["to"] for item in moved.values() if "bicycle" in item["to"]}
    assert bikes & set(ends) and all(ends[path] for path in bikes & set(ends)), ends
    audit = ok("audit", root)
    assert audit["summary"] == {"errors": 0, "warnings": 0}, audit["issues"]
    again = ok("consolidate", root)  # the moves' own ISTM events are no captures to file
    assert again["proposal"] is None, again["proposal"]


def test_a_rejected_move_is_not_proposed_again(tmp_path):
    root, ids = filled_forest(tmp_path)
    proposal = ok("consolidate", root)["proposal"]
    rejected = ok("proposals", "reject", root, proposal["proposal_id"], "--reason", "not now")
    shard, _, event_id = rejected["decision"].partition("#")
    [decision] = [json.loads(line) for line in (root / shard).read_text().splitlines()
                  if event_id in line]
    assert sorted(decision["payload"]["leaves"]) == sorted(ids.values())
    assert {path for path in ids if (root / path).exists()} == set(ids)  # nothing moved
    (root / ".memory-forest/proposals" / f"{proposal['proposal_id']}.json").unlink()
    ok("index", root, "--full")  # the derived state rebuilt: the decision still counts
    again = ok("consolidate", root)
    assert again["proposal"] is None, again["proposal"]
    audit = ok("audit", root)
    assert audit["summary"] == {"errors": 0, "warnings": 0}, audit["issues"]

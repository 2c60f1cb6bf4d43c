"""consolidate's inbox proposals: which inbox leaves it proposes to move, when a group of them
becomes a new branch, and what accept does when a leaf changed since. Real forests (the
packaged example), the real index."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from writerkit import contents

from memory_forest import indexreader
from memory_forest.errors import ForestError
from memory_forest.forest import Forest
from memory_forest.jsonio import dumps
from memory_forest.store import lookups
from memory_forest.writers import plans, proposals
from memory_forest.writers.consolidate import consolidate
from memory_forest.writers.forget import forget
from memory_forest.writers.inbox import MIN_CLUSTER, leaf_text
from memory_forest.writers.markdown import metadata
from memory_forest.writers.move import move
from memory_forest.writers.remember import remember
from memory_forest.writers.view import View

INBOX = "04 stm/inbox/inbox"


def inbox_fact(root: Path, text: str) -> str:
    done = remember(root, content=text)
    assert done["path"].startswith(INBOX + "/"), done["placement"]
    return done["path"]


def beekeeping(root: Path) -> None:
    remember(root, content="Beehive frames, wax foundation, and when the queen is laying.",
             tree="garden", branch="beekeeping", leaf="hive-notes", title="Beehive frames")


def test_an_inbox_leaf_a_branch_now_fits_is_proposed_there_with_its_id(example):
    path = inbox_fact(example, "The beehive frames need fresh wax foundation.")
    assert consolidate(example)["counts"]["moves"] == 0  # nothing fits it yet
    beekeeping(example)
    made = consolidate(example)
    [move] = made["proposal"]["moves"]
    assert move["source"]["pointer"] == path
    assert move["id"] == metadata((example / path).read_text())["id"]
    assert (move["placement"]["tree"], move["placement"]["branch"]) == ("garden", "beekeeping")
    assert move["placement"]["leaf"] == Path(path).stem  # it keeps its name
    assert move["placement"]["reason"]["rule"] == "confident"


def test_a_pending_proposal_keeps_its_leaves_out_of_the_next(example):
    inbox_fact(example, "The beehive frames need fresh wax foundation.")
    beekeeping(example)
    assert consolidate(example)["counts"]["moves"] == 1
    assert consolidate(example)["proposal"] is None


@pytest.mark.parametrize("shared", [MIN_CLUSTER - 1, MIN_CLUSTER])
def test_a_new_branch_needs_enough_leaves_sharing_a_topic(example, shared):
    texts = ["The bicycle chain squeaks after the rain.", "Bicycle tyre went flat on the commute.",
             "The bicycle brakes need new pads."][:shared]
    paths = {inbox_fact(example, text) for text in texts}
    made = consolidate(example)["proposal"]
    branches = made["branches"] if made else []
    if shared < MIN_CLUSTER:
        assert branches == []
        return
    [branch] = branches
    assert {item["source"]["pointer"] for item in branch["leaves"]} == paths
    assert branch["title"] == "Bicycle" and branch["branch"] == "bicycle"
    assert all(item["placement"]["reason"]["rule"] == "new_branch" for item in branch["leaves"])


def test_the_leaf_text_leaves_out_what_the_writers_put_around_the_fact(example):
    path = inbox_fact(example, "The beehive frames need fresh wax foundation.")
    view = View(Forest.open(example))
    try:
        text = leaf_text(view, path)
    finally:
        view.close()
    assert "beehive frames need fresh wax foundation" in text.casefold()
    assert "istm" not in text and "Remembered" not in text and "Up:" not in text


def test_accept_refuses_a_leaf_changed_since_and_writes_nothing(example):
    path = inbox_fact(example, "The beehive frames need fresh wax foundation.")
    beekeeping(example)
    proposal_id = consolidate(example)["proposal"]["proposal_id"]
    with (example / path).open("a", encoding="utf-8") as handle:
        handle.write("\nAnd the smoker needs fuel.\n")
    before = contents(example)
    with pytest.raises(ForestError) as caught:
        proposals.accept(example, proposal_id)
    assert caught.value.code == "proposal_stale"
    assert {"pointer": path, "reason": "changed"} in caught.value.details["sources"]
    assert contents(example) == before
    assert proposals.show(example, proposal_id)["proposal"]["status"] == "stale"


def test_a_stored_move_must_name_an_stm_leaf(example):
    inbox_fact(example, "The beehive frames need fresh wax foundation.")
    beekeeping(example)
    document = consolidate(example)["proposal"]
    assert plans.parse("proposal", dumps(document)).moves[0].id
    broken = copy.deepcopy(document)
    broken["moves"][0]["source"]["pointer"] = "05 daily/2026-11-28.md"
    with pytest.raises(ForestError) as caught:
        plans.parse("proposal", dumps(broken))
    assert caught.value.code == "plan_bad_source"
    older = {key: value for key, value in document.items() if key not in ("moves", "branches")}
    assert plans.parse("proposal", dumps(older)).moves == []  # written before moves existed


def test_what_move_and_forget_log_is_no_capture_to_file(example):
    path = inbox_fact(example, "The beehive frames need fresh wax foundation.")
    other = inbox_fact(example, "Bicycle tyre went flat on the commute.")
    beekeeping(example)
    moved = move(example, path, "garden/beekeeping")
    forgot = forget(example, other)
    con = indexreader.connect(example)
    try:
        unfiled = {item.anchor for item in lookups.unfiled(con)}
    finally:
        con.close()
    assert moved["event_id"] not in unfiled and forgot["event_id"] not in unfiled
    assert consolidate(example)["proposal"]["moves"] == []

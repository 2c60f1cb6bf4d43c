"""Consolidation with review: consolidate proposes, an agent or a person accepts or rejects.

Real forests (the packaged example), the real index, the real CLI where the promise is
about the CLI. The example holds one unfiled source of its own: the Daily entry
``d-20261128-tomato``, which no structured record cites.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from writerkit import assert_whole, contents, event, istm_records, state, write_json

from memory_forest import indexreader, lock, operations, schemas, testhooks
from memory_forest.errors import ForestError
from memory_forest.forest import Forest
from memory_forest.maintain import maintain
from memory_forest.mcp_server import call
from memory_forest.statefiles import proposal_rel, receipt_rel
from memory_forest.store import lookups
from memory_forest.writers import proposals
from memory_forest.writers.capture import capture_events
from memory_forest.writers.consolidate import consolidate, shorten
from memory_forest.writers.markdown import metadata
from memory_forest.writers.promote import promote

BOILER = "Boiler service booked for 9 December with the heating engineer."
TOMATO = "05 daily/2026-11-28.md#d-20261128-tomato"
SHARD = "06 istm/{day}.jsonl"


def capture(root: Path, text: str, event_id: str, observed: str = "2026-12-01T08:00:00Z"
            ) -> str:
    """Capture one event; return its pointer."""
    done = capture_events(root, [event(0, event_id=event_id, observed_at=observed,
                                       payload={"text": text})])
    return f"{done['shard']}#{event_id}"


def new_entries(proposal: dict) -> list[dict]:
    return [entry for day in proposal["days"] for entry in day["entries"]]


def entry_for(proposal: dict, pointer: str) -> dict:
    return next(entry for entry in new_entries(proposal)
                if pointer in [source["pointer"] for source in entry["sources"]])


def leaf_of(placement: dict) -> str:
    return f"04 stm/{placement['tree']}/{placement['branch']}/{placement['leaf']}.md"


def ordered_unfiled(root: Path) -> list[str]:
    con = indexreader.connect(root)
    try:
        return [f"{item.path}#{item.anchor}" for item in lookups.unfiled(con)]
    finally:
        con.close()


def unfiled(root: Path) -> set[str]:
    return set(ordered_unfiled(root))


def cli(*args, crash: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(testhooks.CRASH_ENV, None)
    if crash:
        env[testhooks.CRASH_ENV] = crash
    return subprocess.run([sys.executable, "-m", "memory_forest", *map(str, args), "--json"],
                          capture_output=True, text=True, env=env, timeout=120)


# --- the flow ---------------------------------------------------------------------------------


def test_consolidate_then_accept_files_the_event_and_nothing_is_proposed_twice(example):
    pointer = capture(example, BOILER, "boiler-1")
    assert pointer in unfiled(example) and TOMATO in unfiled(example)
    before = contents(example)
    made = consolidate(example)
    assert contents(example) == before, "consolidate changed a canonical file"
    proposal = made["proposal"]
    assert made["path"] == proposal_rel(proposal["proposal_id"])
    stored = example / made["path"]
    assert stored.stat().st_mode & 0o777 == 0o600
    assert stored.parent.stat().st_mode & 0o777 == 0o700
    assert json.loads(stored.read_text()) == proposal
    assert proposal["status"] == "pending" and proposal["transaction_id"] == \
        f"accept-{proposal['proposal_id']}"

    entry = entry_for(proposal, pointer)
    assert entry["summary"] == BOILER  # deterministic: the event's own text
    assert entry["entry_id"].startswith("d-20261201-boiler-service")
    [day] = [day for day in proposal["days"] if entry in day["entries"]]
    assert day["date"] == "2026-12-01"  # the day it was observed
    line = next(raw for raw in (example / pointer.split("#")[0]).read_bytes().split(b"\n")
                if b"boiler-1" in raw)
    assert entry["sources"][0]["fingerprint"] == proposals.fingerprint_text(line.decode())
    [promotion] = [item for item in proposal["promotions"]
                   if item["source"]["pointer"] == TOMATO]
    assert set(entry["placement"]) == {"tree", "branch", "leaf", "title", "action", "score",
                                       "reason"}

    accepted = proposals.accept(example, proposal["proposal_id"])
    assert accepted["ok"] and accepted["already_applied"] is False
    assert accepted["status"] == "accepted" and accepted["proposal_id"] == \
        proposal["proposal_id"]
    assert accepted["transaction_id"] == proposal["transaction_id"]
    schemas.validate("ProposalAcceptResult", accepted)

    daily = (example / "05 daily/2026-12-01.md").read_text()
    assert f"## {entry['entry_id']}\n\n{BOILER}\n\nSources: `{pointer}`" in daily
    leaf_path = leaf_of(entry["placement"])
    leaf = (example / leaf_path).read_text()
    cited = f"05 daily/2026-12-01.md#{entry['entry_id']}"
    assert f"Promoted from `{cited}`:\n\n{BOILER}" in leaf
    assert cited in metadata(leaf)["sources"]
    tomato_leaf = (example / leaf_of(promotion["placement"])).read_text()
    assert f"Promoted from `{TOMATO}`:" in tomato_leaf
    assert TOMATO in metadata(tomato_leaf)["sources"]
    assert {item["leaf"] for item in accepted["entries"]} == {
        leaf_path, leaf_of(promotion["placement"])}
    assert_whole(example)

    assert pointer not in unfiled(example) and TOMATO not in unfiled(example)
    again = consolidate(example)
    assert again["proposal"] is None and again["message"] == "nothing to consolidate"
    assert again["path"] is None
    assert proposals.stored_ids(Forest.open(example)) == [proposal["proposal_id"]]
    assert proposals.show(example, proposal["proposal_id"])["proposal"]["status"] == "accepted"


def test_a_rejected_proposal_keeps_its_sources_out_of_the_next_one(example):
    first = capture(example, BOILER, "boiler-1")
    proposal = consolidate(example)["proposal"]
    before = state(example)
    rejected = proposals.reject(example, proposal["proposal_id"], reason="wrong place")
    assert rejected["status"] == "rejected" and rejected["already_rejected"] is False
    schemas.validate("ProposalRejectResult", rejected)
    after = state(example)
    shard, _, event_id = rejected["decision"].partition("#")
    assert {path for path in after if after[path] != before.get(path)} == {shard}
    [decision] = [record for record in istm_records(example)
                  if record["event_id"] == event_id]
    assert (decision["kind"], decision["payload"]) == ("proposal_decision", {
        "decision": "rejected", "proposal_id": proposal["proposal_id"],
        "sources": [first, TOMATO],
        "reason": "wrong place"})
    assert consolidate(example)["proposal"] is None
    second = capture(example, "The cellar door hinge squeaks again.", "hinge-1")
    later = consolidate(example)["proposal"]
    assert [source["pointer"] for entry in new_entries(later) for source in entry["sources"]] \
        == [second] and later["promotions"] == []
    assert first in unfiled(example)  # still findable as raw evidence, just not proposed
    shown = proposals.show(example, proposal["proposal_id"])["proposal"]
    assert (shown["status"], shown["reason"]) == ("rejected", "wrong place")
    assert proposals.reject(example, proposal["proposal_id"])["already_rejected"] is True
    with pytest.raises(ForestError) as refused:
        proposals.accept(example, proposal["proposal_id"])
    assert refused.value.code == "proposal_rejected"
    listed = proposals.list_proposals(example)
    assert [(row["proposal_id"], row["status"]) for row in listed["proposals"]] == [
        (proposal["proposal_id"], "rejected"), (later["proposal_id"], "pending")]
    assert [row["proposal_id"] for row in
            proposals.list_proposals(example, status="pending")["proposals"]] == \
        [later["proposal_id"]]


def test_events_of_one_day_placed_in_one_leaf_become_one_entry(example):
    one = capture(example, "Kimchi batch 7 fermentation: added more salt to the brine.", "k-1")
    two = capture(example, "Kimchi batch 7 fermentation: the brine is clear again.", "k-2",
                  observed="2026-12-01T19:00:00Z")
    other_day = capture(example, "Kimchi batch 7 fermentation: jars moved to the cellar.",
                        "k-3", observed="2026-12-02T07:00:00Z")
    proposal = consolidate(example)["proposal"]
    for day in proposal["days"]:  # the rule, whatever leaf placement chose
        leaves = [leaf_of(entry["placement"]) for entry in day["entries"]]
        assert len(leaves) == len(set(leaves)), "two entries of one day share a leaf"
    first, second = entry_for(proposal, one), entry_for(proposal, two)
    # Both continue the kimchi record: placement appends them to it, so they are one entry.
    assert leaf_of(first["placement"]) == "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    assert first is second and len(first["sources"]) == 2
    assert first["summary"].split("\n") == [
        "- Kimchi batch 7 fermentation: added more salt to the brine.",
        "- Kimchi batch 7 fermentation: the brine is clear again."]
    later = entry_for(proposal, other_day)
    assert later is not first and leaf_of(later["placement"]) == leaf_of(first["placement"])
    ids = [entry["entry_id"] for entry in new_entries(proposal)]
    assert len(ids) == len(set(ids))


def test_an_event_about_another_batch_is_never_filed_into_this_batch_leaf(example):
    pointer = capture(example, "Kimchi batch 8 tasted sour", "k-8")
    proposal = consolidate(example)["proposal"]
    placement = entry_for(proposal, pointer)["placement"]
    # Batch 7's leaf is the closest record, but it is another batch: a leaf of its own.
    assert (placement["branch"], placement["action"]) == ("fermentation", "new_leaf")
    assert leaf_of(placement) == "04 stm/kitchen/fermentation/kimchi-batch-8-tasted-sour.md"
    assert placement["reason"]["other_instance"] == {
        "leaf": "04 stm/kitchen/fermentation/kimchi-batch-7.md", "differs": {"numbers": ["7"]}}


def test_the_limit_bounds_a_proposal_and_the_rest_waits(example):
    pointers = [capture(example, f"Pantry item {n} was restocked.", f"pantry-{n}",
                        observed=f"2026-12-0{n + 1}T08:00:00Z") for n in range(4)]
    waiting = ordered_unfiled(example)
    assert set(waiting) == {TOMATO, *pointers}
    made = consolidate(example, limit=2)
    assert made["counts"]["sources"] == 2 and made["remaining"] == 3  # 4 events + tomato
    forest = Forest.open(example)
    taken = set(proposals.pointers(proposals.load(forest, made["proposal"]["proposal_id"])))
    assert taken == set(waiting[:2])  # in lookups.unfiled's order: oldest first
    rest = consolidate(example, limit=1000)
    assert rest["remaining"] == 0
    assert set(proposals.pointers(proposals.load(forest, rest["proposal"]["proposal_id"]))) \
        == set(waiting[2:])
    with pytest.raises(ForestError) as bad:
        consolidate(example, limit=0)
    assert bad.value.code == "consolidate_limit_invalid" and bad.value.exit_code == 2


def test_entry_ids_are_unique_across_daily_records_and_proposals(example):
    capture(example, "Drip check on bed C.", "drip-1", observed="2026-11-28T10:00:00Z")
    first = consolidate(example)["proposal"]
    capture(example, "Drip check on bed C.", "drip-2", observed="2026-11-28T11:00:00Z")
    second = consolidate(example)["proposal"]
    ids = [entry["entry_id"] for proposal in (first, second) for entry in new_entries(proposal)]
    assert ids == ["d-20261128-drip-check-on-bed-c", "d-20261128-drip-check-on-bed-c-2"]
    proposals.accept(example, second["proposal_id"])
    proposals.accept(example, first["proposal_id"])
    daily = (example / "05 daily/2026-11-28.md").read_text()
    assert daily.count("## d-20261128-drip-check-on-bed-c\n") == 1
    assert daily.count("## d-20261128-drip-check-on-bed-c-2\n") == 1
    assert_whole(example)


def test_summaries_are_made_short_and_plain():
    text = "word " * 100
    short = shorten(" ".join(text.split()))
    assert len(short) <= 240 and short.endswith("\u2026") and " " not in short[-2:]
    assert shorten("short") == "short"


# --- review: summaries, staleness, ids --------------------------------------------------------


def test_summaries_replace_the_generated_text_and_are_redacted(example):
    pointer = capture(example, BOILER, "boiler-1")
    proposal = consolidate(example)["proposal"]
    entry = entry_for(proposal, pointer)
    mine = ("Boiler serviced on 9 December; next one due in 2027. "
            "password=hunter2secret")  # release-audit: allow
    with pytest.raises(ForestError) as unknown:
        proposals.accept(example, proposal["proposal_id"], summaries={"d-nope": "x"})
    assert unknown.value.code == "summaries_unknown_entry"
    with pytest.raises(ForestError) as promoted:  # an existing entry's text is the Daily's
        proposals.accept(example, proposal["proposal_id"],
                         summaries={"d-20261128-tomato": "x"})
    assert promoted.value.code == "summaries_unknown_entry"
    accepted = proposals.accept(example, proposal["proposal_id"],
                                summaries={entry["entry_id"]: mine})
    assert accepted["redactions"] == {"assignment": 1}
    daily = (example / "05 daily/2026-12-01.md").read_text()
    leaf = (example / leaf_of(entry["placement"])).read_text()
    for text in (daily, leaf):
        assert "Boiler serviced on 9 December; next one due in 2027. " \
            "password=[REDACTED:assignment]" in text
        assert BOILER not in text and "hunter2secret" not in text
    receipt = example / receipt_rel(proposal["transaction_id"])
    assert "hunter2secret" not in receipt.read_text()
    assert_whole(example)


def test_a_retry_returns_the_receipt_and_other_summaries_are_refused(example):
    pointer = capture(example, BOILER, "boiler-1")
    proposal = consolidate(example)["proposal"]
    entry_id = entry_for(proposal, pointer)["entry_id"]
    done = proposals.accept(example, proposal["proposal_id"], summaries={entry_id: "Mine."})
    after = state(example)
    again = proposals.accept(example, proposal["proposal_id"], summaries={entry_id: "Mine."})
    assert again["already_applied"] is True and again["touched"] == done["touched"]
    assert state(example) == after
    with pytest.raises(ForestError) as other:
        proposals.accept(example, proposal["proposal_id"], summaries={entry_id: "Other."})
    assert other.value.code == "proposal_already_accepted"
    with pytest.raises(ForestError) as reject:
        proposals.reject(example, proposal["proposal_id"])
    assert reject.value.code == "proposal_already_accepted"
    assert state(example) == after


@pytest.mark.parametrize("edit", ["event_changed", "event_deleted", "daily_entry_changed",
                                  "entry_promoted", "entry_id_taken"])
def test_a_source_changed_after_proposing_makes_accept_stale(example, tmp_path, edit):
    pointer = capture(example, BOILER, "boiler-1")
    proposal = consolidate(example)["proposal"]
    entry = entry_for(proposal, pointer)
    shard = example / pointer.split("#")[0]
    daily = example / "05 daily/2026-11-28.md"
    expected = {"pointer": pointer, "reason": "changed"}
    if edit == "event_changed":  # a hand edit: the index has not seen it
        shard.write_text(shard.read_text().replace("heating engineer", "plumber"))
    elif edit == "event_deleted":
        shard.write_text("".join(line for line in shard.read_text().splitlines(True)
                                 if "boiler-1" not in line))
        operations.index(example)
        expected["reason"] = "missing"
    elif edit == "daily_entry_changed":
        daily.write_text(daily.read_text().replace("base watering", "drip watering"))
        expected = {"pointer": TOMATO, "reason": "changed"}
    elif edit == "entry_promoted":  # something else filed it since
        promote(example, write_json(tmp_path / "plan.json", {
            "schema_version": 1, "transaction_id": "promote-tomato",
            "entry_ids": ["d-20261128-tomato"],
            "route": {"tree": "greenhouse", "tree_title": "Greenhouse", "branch": "irrigation",
                      "branch_title": "Irrigation", "leaf": "tomato-leaf-spots"}}))
        expected = {"pointer": TOMATO, "reason": "cited"}
    else:
        from memory_forest.writers.daily import apply_daily

        apply_daily(example, write_json(tmp_path / "daily.json", {
            "schema_version": 1, "transaction_id": "daily-taken", "date": "2026-12-01",
            "entries": [{"entry_id": entry["entry_id"], "summary": "Taken.",
                         "source_record_ids": ["evt-20261128-0001"]}]}))
        expected = {"pointer": f"05 daily/2026-12-01.md#{entry['entry_id']}",
                    "reason": "entry_exists"}
    before = state(example)
    with pytest.raises(ForestError) as stale:
        proposals.accept(example, proposal["proposal_id"])
    assert stale.value.code == "proposal_stale"
    assert stale.value.details["sources"] == [expected]
    assert state(example) == before
    assert not (example / receipt_rel(proposal["transaction_id"])).exists()
    assert proposals.show(example, proposal["proposal_id"])["proposal"]["status"] == "stale"
    # The refused proposal names nothing any more: what is still unfiled is proposed afresh.
    fresh = consolidate(example)["proposal"]
    assert set(proposals.pointers(proposals.load(Forest.open(example), fresh["proposal_id"]))) == \
        unfiled(example)
    if edit in ("daily_entry_changed", "entry_id_taken"):  # the forest is whole: accept it
        assert proposals.accept(example, fresh["proposal_id"])["ok"]
        assert_whole(example)


def test_unknown_and_malformed_ids_are_refused(example):
    with pytest.raises(ForestError) as missing:
        proposals.accept(example, "p-20261130T090000123Z-5f2a9c01")
    assert missing.value.code == "proposal_not_found"
    for bad in ("../receipts/x", "p/x", "", ".hidden"):
        with pytest.raises(ForestError) as invalid:
            proposals.show(example, bad)
        assert invalid.value.code == "proposal_id_invalid" and invalid.value.exit_code == 2


def test_a_damaged_proposal_file_is_reported_and_the_rest_listed(example):
    capture(example, BOILER, "boiler-1")
    good = consolidate(example)["proposal"]["proposal_id"]
    broken = "p-20261130T090000123Z-00000000"
    path = example / proposal_rel(broken)
    path.write_text('{"schema_version": 1}')
    os.chmod(path, 0o600)
    listed = proposals.list_proposals(example)
    assert [row["proposal_id"] for row in listed["proposals"]] == [good]
    assert listed["problems"] == [{"path": proposal_rel(broken), "code": "proposal_corrupt",
                                   "message": listed["problems"][0]["message"]}]
    with pytest.raises(ForestError) as corrupt:
        proposals.accept(example, broken)
    assert corrupt.value.code == "proposal_corrupt"


# --- maintain, CLI, tools ---------------------------------------------------------------------


def test_maintain_consolidate_makes_a_proposal_and_accepts_nothing(example, tmp_path):
    capture(example, BOILER, "boiler-1")
    before = contents(example)
    log = tmp_path / "run.jsonl"
    run = maintain(example, consolidate=True, log=log)
    assert run["ok"], run
    step = run["steps"]["consolidate"]
    assert step["ok"] and step["sources"] == 2 and step["proposal"] is not None
    assert contents(example) == before
    [row] = proposals.list_proposals(example)["proposals"]
    assert row["status"] == "pending" and row["proposal_id"] == step["proposal"]
    assert BOILER not in log.read_text()  # ids and counts only
    quiet = maintain(example, consolidate=True)
    assert quiet["steps"]["consolidate"]["proposal"] is None
    assert "consolidate" not in maintain(example)["steps"]
    assert len(proposals.stored_ids(Forest.open(example))) == 1


def test_the_cli_consolidates_lists_and_accepts(example, tmp_path):
    pointer = capture(example, BOILER, "boiler-1")
    made = cli("consolidate", example, "--limit", "10")
    assert made.returncode == 0, made.stdout + made.stderr
    proposal = json.loads(made.stdout)["proposal"]
    entry_id = entry_for(proposal, pointer)["entry_id"]
    listed = cli("proposals", "list", example)
    assert listed.returncode == 0
    assert [row["proposal_id"] for row in json.loads(listed.stdout)["proposals"]] == \
        [proposal["proposal_id"]]
    shown = cli("proposals", "show", example, proposal["proposal_id"])
    assert json.loads(shown.stdout)["proposal"] == proposal
    human = subprocess.run([sys.executable, "-m", "memory_forest", "proposals", "show",
                            str(example), proposal["proposal_id"]],
                           capture_output=True, text=True, timeout=60)
    assert entry_id in human.stdout and BOILER in human.stdout and pointer in human.stdout
    summaries = write_json(tmp_path / "summaries.json", {entry_id: "Boiler serviced."})
    accepted = cli("proposals", "accept", example, proposal["proposal_id"],
                   "--summaries", summaries)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    receipt = json.loads(accepted.stdout)
    assert receipt["status"] == "accepted" and receipt["operation"] == "proposals_accept"
    assert "Boiler serviced." in (example / "05 daily/2026-12-01.md").read_text()
    missing = cli("proposals", "accept", example, "p-20261130T090000123Z-5f2a9c01")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"]["code"] == "proposal_not_found"
    bad = cli("proposals", "accept", example, proposal["proposal_id"], "--summaries",
              write_json(tmp_path / "bad.json", ["not", "an", "object"]))
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == \
        "summaries_not_object"
    assert json.loads(cli("proposals", "list", example, "--status", "accepted").stdout)[
        "count"] == 1


def test_the_tools_answer_with_their_result_models(example):
    pointer = capture(example, BOILER, "boiler-1")
    made = call(example, "consolidate", {"limit": 50})
    schemas.validate("ConsolidateResult", made)
    proposal_id = made["proposal"]["proposal_id"]
    entry_id = entry_for(made["proposal"], pointer)["entry_id"]
    schemas.validate("ProposalsListResult", call(example, "proposals_list", {}))
    schemas.validate("ProposalShowResult",
        call(example, "proposals_show", {"proposal_id": proposal_id}))
    accepted = call(example, "proposals_accept", {"proposal_id": proposal_id,
                                                 "summaries": {entry_id: "Serviced."}})
    assert accepted["ok"], accepted
    schemas.validate("ProposalAcceptResult", accepted)
    again = call(example, "proposals_accept", {"proposal_id": proposal_id,
                                              "summaries": {entry_id: "Serviced."}})
    assert again["already_applied"] is True
    schemas.validate("ProposalAcceptResult", again)
    nothing = call(example, "consolidate", {})
    assert nothing["ok"] and nothing["proposal"] is None
    schemas.validate("ConsolidateResult", nothing)
    capture(example, "The cellar door hinge squeaks again.", "hinge-1")
    other = call(example, "consolidate", {})["proposal"]["proposal_id"]
    rejected = call(example, "proposals_reject", {"proposal_id": other, "reason": "noise"})
    schemas.validate("ProposalRejectResult", rejected)
    wrong = call(example, "proposals_accept", {"proposal_id": other, "summaries": [1]})
    assert wrong["ok"] is False and wrong["error"]["code"] == "summaries_invalid"


# --- crashes ----------------------------------------------------------------------------------

STEPS = ["staged", "journaled", "writing", "written", "indexed", "receipted"]
ROLLED_BACK = {"staged", "journaled", "writing"}


@pytest.mark.parametrize("step", [*STEPS, "proposal_mark"])
def test_a_killed_accept_is_recovered_and_a_retry_completes_exactly_once(example, step):
    pointer = capture(example, BOILER, "boiler-1")
    proposal = consolidate(example)["proposal"]
    proposal_id = proposal["proposal_id"]
    entry = entry_for(proposal, pointer)
    before = state(example)
    crash = f"replace:{proposal_id}.json" if step == "proposal_mark" else step
    killed = cli("proposals", "accept", example, proposal_id, crash=crash)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    if step == "proposal_mark":  # committed and unlocked; only the status rewrite was cut
        assert lock.state(example)["state"] == "free"
        listed = proposals.list_proposals(example)["proposals"]
        assert [row["status"] for row in listed] == ["accepted"]
        assert proposals.load(Forest.open(example), proposal_id).status == "pending"
    else:
        report = operations.doctor(example, repair=True)
        assert report["journal"] == {"state": "clear"} and report["lock"] == {"state": "free"}
        if step in ROLLED_BACK:
            assert state(example) == before
    assert_whole(example)
    retry = cli("proposals", "accept", example, proposal_id)
    assert retry.returncode == 0, retry.stdout + retry.stderr
    done = json.loads(retry.stdout)
    assert done["already_applied"] is (step not in ROLLED_BACK)
    assert proposals.load(Forest.open(example), proposal_id).status == "accepted"
    daily = (example / "05 daily/2026-12-01.md").read_text()
    assert daily.count(f"## {entry['entry_id']}\n") == 1
    leaf = (example / leaf_of(entry["placement"])).read_text()
    cited = f"05 daily/2026-12-01.md#{entry['entry_id']}"
    assert leaf.count(f"Promoted from `{cited}`") == 1
    assert metadata(leaf)["sources"].count(cited) == 1
    assert_whole(example)
    assert consolidate(example)["proposal"] is None


@pytest.mark.parametrize("step", ["journaled", "writing", "indexed"])
def test_a_stop_signal_during_accept_undoes_it_and_a_retry_completes(example, step):
    pointer = capture(example, BOILER, "boiler-1")
    proposal = consolidate(example)["proposal"]
    before = state(example)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("MEMORY_FOREST_TEST_")}
    stopped = subprocess.run(
        [sys.executable, "-m", "memory_forest", "proposals", "accept", str(example),
         proposal["proposal_id"], "--json"], capture_output=True, text=True, timeout=120,
        env={**env, testhooks.SIGNAL_ENV: f"{step}:SIGTERM"})
    assert stopped.returncode == 143, stopped.stdout + stopped.stderr
    assert json.loads(stopped.stdout)["error"]["code"] == "interrupted"
    assert lock.state(example) == {"state": "free"}
    assert state(example) == before  # undone, no journal left to recover
    assert proposals.show(example, proposal["proposal_id"])["proposal"]["status"] == "pending"
    done = proposals.accept(example, proposal["proposal_id"])
    assert done["already_applied"] is False and pointer in \
        (example / "05 daily/2026-12-01.md").read_text()
    assert_whole(example)


def test_decisions_outlive_the_derived_state(example):
    """Proposals, receipts and the index can all be rebuilt or lost: the decisions are in
    the forest, so nothing decided is proposed again and nothing undecided is forgotten."""
    refused = capture(example, BOILER, "boiler-1")
    first = consolidate(example)["proposal"]
    proposals.reject(example, first["proposal_id"], reason="not worth a record")
    kept = capture(example, "The cellar door hinge squeaks again.", "hinge-1",
                   observed="2026-12-02T08:00:00Z")
    second = consolidate(example)["proposal"]
    accepted = proposals.accept(example, second["proposal_id"])
    assert accepted["decision"].endswith(f"#accepted-{second['proposal_id']}")
    waiting = capture(example, "Seed order for the spring arrives in January.", "seeds-1",
                      observed="2026-12-03T08:00:00Z")
    state_dir = example / ".memory-forest"
    for child in state_dir.iterdir():
        if child.name != "forest.json":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    operations.index(example)

    again = consolidate(example)["proposal"]
    proposed = {pointer for entry in new_entries(again)
                for pointer in [source["pointer"] for source in entry["sources"]]}
    assert proposed == {waiting} and again["promotions"] == []
    assert refused in unfiled(example) and kept not in unfiled(example)
    assert_whole(example)


@pytest.mark.parametrize("step", [*STEPS, "proposal_mark"])
def test_a_killed_reject_is_recovered_and_the_decision_written_once(example, step):
    """A reject is a write like any other: killed anywhere, it is undone or finished, and a
    retry leaves exactly one decision; killed after its commit, the proposal already reads
    as rejected, and no later consolidate proposes its sources."""
    pointer = capture(example, BOILER, "boiler-1")
    proposal_id = consolidate(example)["proposal"]["proposal_id"]
    crash = f"replace:{proposal_id}.json" if step == "proposal_mark" else step
    killed = cli("proposals", "reject", example, proposal_id, "--reason", "no", crash=crash)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    if step != "proposal_mark":
        operations.doctor(example, repair=True)
    if step not in ROLLED_BACK:
        listed = proposals.list_proposals(example)["proposals"]
        assert [row["status"] for row in listed] == ["rejected"]
    assert_whole(example)
    retry = cli("proposals", "reject", example, proposal_id, "--reason", "no")
    assert retry.returncode == 0, retry.stdout + retry.stderr
    assert json.loads(retry.stdout)["already_rejected"] is (step not in ROLLED_BACK)
    assert proposals.load(Forest.open(example), proposal_id).status == "rejected"
    decisions = [record for record in istm_records(example)
                 if record["kind"] == "proposal_decision"]
    assert [record["event_id"] for record in decisions] == [f"rejected-{proposal_id}"]
    assert consolidate(example)["proposal"] is None and pointer in unfiled(example)

"""Unfiled captures: an ISTM event or Daily entry no record has promoted is found by
``retrieve`` and the gate after the trails, never inside one, and re-hashed like a trail
node; once a record cites it, it is filed and no longer listed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import raises_code

from memory_forest import gate, gate_receipt, index, indexreader, retrieve, schemas
from memory_forest.documents import split_frontmatter
from memory_forest.forest import Forest
from memory_forest.store import lookups
from memory_forest.writers.capture import capture_events, inline_events
from memory_forest.writers.daily import apply_daily
from memory_forest.writers.promote import promote
from memory_forest.writers.remember import remember

BOILER = "Boiler service booked for 9 December; the engineer brings a new flue gasket."
UNFILED_KEYS = {"kind", "layer", "path", "event_id", "anchor", "observed_at", "score", "sha256",
                "verified", "changed_since_index", "current_sha256", "missing", "read_error"}


def capture(root: Path, text: str = BOILER, observed_at: str = "2026-12-01T08:00:00Z") -> dict:
    return capture_events(root, inline_events({
        "observed_at": observed_at, "source": "test-agent", "kind": "note",
        "payload": {"text": text}}))


def write_json(path: Path, data: dict) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return os.fspath(path)


def unfiled_of(root: Path, query: str, **options) -> list[dict]:
    return retrieve.retrieve(root, query, **options)["unfiled"]


def trail_paths(outcome: dict) -> list[str]:
    return [node["path"] for trail in outcome["trails"] for node in trail["nodes"]]


def test_a_capture_is_found_under_unfiled_and_never_in_a_trail(example):
    out = capture(example)
    [event_id] = out["event_ids"]
    outcome = retrieve.retrieve(example, "when is the boiler service?")
    assert [(u["kind"], u["path"], u["event_id"], u["anchor"]) for u in outcome["unfiled"]] == \
        [("event", out["shard"], event_id, None)]
    [item] = outcome["unfiled"]
    assert set(item) == UNFILED_KEYS
    assert item["layer"] == "06 istm" and item["observed_at"] == "2026-12-01T08:00:00Z"
    assert item["verified"] is True and item["score"] > 0
    assert item["sha256"] == item["current_sha256"]
    assert not any(path.startswith(("05 daily", "06 istm")) for path in trail_paths(outcome))
    # The trails come first in the result, the raw captures after them.
    assert list(outcome).index("trails") < list(outcome).index("unfiled")


def test_a_remembered_fact_is_filed_by_its_own_leaf(example):
    out = remember(example, "house", "heating", "boiler", "Boiler", BOILER)
    outcome = retrieve.retrieve(example, "boiler service")
    assert outcome["unfiled"] == []
    assert out["path"] in trail_paths(outcome)
    assert store_unfiled(example) == [("entry", "05 daily/2026-11-28.md", "d-20261128-tomato")]


def store_unfiled(root: Path) -> list[tuple[str, str, str]]:
    con = indexreader.connect(root)
    try:
        return [(f.kind, f.path, f.anchor) for f in lookups.unfiled(con)]
    finally:
        con.close()


def test_daily_then_promote_files_the_event_then_the_entry(example, tmp_path):
    [event_id] = capture(example)["event_ids"]
    apply_daily(example, write_json(tmp_path / "d.json", {
        "schema_version": 1, "transaction_id": "d-boiler", "date": "2026-12-01", "entries": [
            {"entry_id": "d-20261201-boiler", "source_record_ids": [event_id],
             "summary": "Boiler service on 9 December."}]}))
    # The Daily entry cites the event, so the event is filed; the entry itself is not yet.
    assert [(u["kind"], u["path"], u["anchor"]) for u in unfiled_of(example, "boiler")] == \
        [("entry", "05 daily/2026-12-01.md", "d-20261201-boiler")]
    promote(example, write_json(tmp_path / "p.json", {
        "schema_version": 1, "transaction_id": "p-boiler", "entry_ids": ["d-20261201-boiler"],
        "route": {"tree": "house", "tree_title": "House", "branch": "heating",
                  "branch_title": "Heating", "leaf": "boiler"}}))
    assert unfiled_of(example, "boiler") == []
    assert "04 stm/house/heating/boiler.md" in trail_paths(retrieve.retrieve(example, "boiler"))


def test_unfiled_is_oldest_first_and_a_bare_or_wrong_layer_citation_files_nothing(example):
    capture(example, "Late frost on the cold frame.", "2026-12-02T07:00:00Z")
    capture(example, "Early frost on the cold frame.", "2026-11-29T07:00:00Z")
    con = indexreader.connect(example)
    try:
        found = lookups.unfiled(con)
        assert [f.observed_at for f in found] == sorted(f.observed_at for f in found)
        assert len(lookups.unfiled(con, limit=1)) == 1
        cited = lookups.citing(con, ["06 istm/2026-11-28.jsonl#evt-20261128-0003",
                                   "05 daily/2026-11-28.md#d-20261128-tomato"])
        assert cited == {"06 istm/2026-11-28.jsonl#evt-20261128-0003":
                         ["04 stm/kitchen/fermentation/kimchi-batch-7.md"],
                         "05 daily/2026-11-28.md#d-20261128-tomato": []}
        matching = lookups.unfiled_matching(con, '"frost"', 5)
        assert [f.observed_at for f, _ in matching] and all(s > 0 for _, s in matching)
        assert lookups.unfiled_matching(con, '"frost"', 5, since="2026-12-01T00:00:00Z")[0][0] \
            .observed_at == "2026-12-02T07:00:00Z"
    finally:
        con.close()
    # The example's Life Archive record cites the Daily record by its bare path: that files
    # no entry (and the archive is not a layer that promotes).
    assert ("entry", "05 daily/2026-11-28.md", "d-20261128-tomato") in store_unfiled(example)


def test_no_unfiled_leaves_them_out(example):
    capture(example)
    assert unfiled_of(example, "boiler service")
    assert unfiled_of(example, "boiler service", no_unfiled=True) == []


def test_a_capture_changed_after_indexing_is_flagged_or_fails_strict(example):
    out = capture(example)
    shard = example / out["shard"]
    with open(shard, "a", encoding="utf-8") as handle:
        handle.write("\n")
    [item] = unfiled_of(example, "boiler service")
    assert item["verified"] is False and item["changed_since_index"] is True
    assert item["current_sha256"] != item["sha256"]
    error = raises_code(lambda: retrieve.retrieve(example, "boiler service", strict=True),
                        "index_stale")
    assert error.details == {"path": out["shard"]}
    receipt = gate.consult(example, b"boiler service")
    assert out["shard"] in receipt["unverified"]


def test_the_gate_receipt_and_the_hook_name_unfiled_captures_never_their_text(example):
    out = capture(example)
    [event_id] = out["event_ids"]
    receipt = gate.consult(example, b"when is the boiler service?")
    gate_receipt.GateReceipt.model_validate(receipt)
    assert receipt["status"] == "evidence_found"
    assert [(u["path"], u["event_id"]) for u in receipt["retrieve"]["unfiled"]] == \
        [(out["shard"], event_id)]
    hook, code = gate.answer(example, json.dumps({"prompt": "when is the boiler service?"})
                             .encode(), gate.Options(format="claude-code", limit=5))
    context = hook["hookSpecificOutput"]["additionalContext"]
    prose, data = context.split("\n", 1)
    assert code == 0 and "1 raw capture(s)" in prose and "unreviewed" in prose
    assert out["shard"] not in prose and event_id not in prose
    assert json.loads(data)["untrusted"]["unfiled"] == [
        {"path": out["shard"], "kind": "event",
         "entries": [{"event_id": event_id, "observed_at": "2026-12-01T08:00:00Z"}]}]
    assert "flue gasket" not in context and "engineer" not in context


def test_a_turn_that_only_matches_a_capture_is_evidence(example):
    capture(example, "Quixotic sentinel phrase only in a capture.")
    receipt = gate.consult(example, b"quixotic sentinel")
    assert receipt["retrieve"]["trails"] == [] and receipt["retrieve"]["unfiled"]
    assert receipt["status"] == "evidence_found"


def run_json(*args: str) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "memory_forest", "--json", *args],
                          capture_output=True, text=True, timeout=60)
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout + done.stderr
    return done.returncode, json.loads(lines[0])


def test_the_cli_prints_unfiled_after_trails(example):
    out = capture(example)
    code, outcome = run_json("retrieve", os.fspath(example), "boiler service")
    assert code == 0
    schemas.validate("RetrieveResult", outcome)
    assert [u["event_id"] for u in outcome["unfiled"]] == out["event_ids"]
    assert set(outcome["unfiled"][0]) == UNFILED_KEYS
    code, outcome = run_json("retrieve", os.fspath(example), "boiler service", "--no-unfiled")
    assert code == 0 and outcome["unfiled"] == []


def test_unfiled_captures_are_bounded(example):
    capture_events(example, inline_events([
        {"observed_at": f"2026-12-01T08:{n:02d}:00Z", "source": "t", "kind": "note",
         "payload": {"text": f"boiler reading {n}"}} for n in range(retrieve.UNFILED_LIMIT + 3)]))
    assert len(unfiled_of(example, "boiler reading")) == retrieve.UNFILED_LIMIT



def cite_from(root: Path, rel: str, *pointers: str) -> None:
    """Add ``pointers`` to the frontmatter ``sources`` of an existing document."""
    path = root / rel
    meta, body, _ = split_frontmatter(path.read_text(encoding="utf-8"))
    sources = meta.get("sources", [])
    meta["sources"] = [*([sources] if isinstance(sources, str) else sources), *pointers]
    # JSON is YAML: one flow mapping keeps every other field as it was.
    path.write_text(f"---\n{json.dumps(meta, default=str)}\n---\n{body}", encoding="utf-8")


def test_only_the_layers_that_promote_a_capture_file_it(example):
    out = capture(example)
    [event_id] = out["event_ids"]
    event = f"{out['shard']}#{event_id}"
    entry = "05 daily/2026-11-28.md#d-20261128-tomato"
    # An event is promoted into a Daily entry or an STM leaf, a Daily entry into STM, MTM or
    # LTM: a branch citing an event, or an archive record citing an entry, files neither.
    cite_from(example, "03 mtm/greenhouse/irrigation.md", event)
    cite_from(example, "00 life_archive/2025-first-greenhouse-season.md", entry)
    index.build(Forest.open(example))
    assert ("event", out["shard"], event_id) in store_unfiled(example)
    assert ("entry", "05 daily/2026-11-28.md", "d-20261128-tomato") in store_unfiled(example)
    cite_from(example, "02 ltm/greenhouse_LTM.md", entry)
    cite_from(example, "04 stm/greenhouse/irrigation/tomato-leaf-spots.md", event)
    index.build(Forest.open(example))
    assert store_unfiled(example) == []


def test_an_unfiled_capture_behind_many_filed_better_matches_is_found(example):
    """The best matches are ranked first and judged after: when all of them are filed, the
    search looks further down rather than answering nothing."""
    strong = capture_events(example, inline_events([
        {"observed_at": "2026-12-01T08:00:00Z", "source": "t", "kind": "note",
         "payload": {"text": f"boiler boiler boiler {n}"}} for n in range(30)]))
    weak = capture(example, "the boiler, among many other words about the heating and the "
                            "cellar and the pipes and the tank")
    leaf = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    cite_from(example, leaf, *(f"{strong['shard']}#{event_id}" for event_id in strong["event_ids"]))
    index.build(Forest.open(example))
    found = unfiled_of(example, "boiler")
    assert [u["event_id"] for u in found] == weak["event_ids"]

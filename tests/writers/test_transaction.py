"""The transaction engine: retries, receipts, the lock, and undoing a handled failure."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading

import pytest
from forestkit import index_rows
from writerkit import assert_whole, contents, event, jsonl, state, write_json

from memory_forest import lock, operations, testhooks
from memory_forest.errors import ForestError
from memory_forest.jsonio import dumps
from memory_forest.writers import journal
from memory_forest.writers.capture import capture_events, parse_input
from memory_forest.writers.daily import apply_daily
from memory_forest.writers.remember import remember

RECEIPTS = ".memory-forest/receipts"


def remember_one(root, content="fact", **kw):
    return remember(root, "kitchen", "fermentation", "miso", "Miso", content, **kw)


def test_exact_retry_returns_the_original_receipt_and_changes_nothing(example_forest):
    operations.index(example_forest)
    first = remember_one(example_forest, transaction_id="tx-miso-1")
    assert first["already_applied"] is False
    before, rows = state(example_forest), index_rows(example_forest)
    again = remember_one(example_forest, transaction_id="tx-miso-1")
    assert again["already_applied"] is True
    assert {k: v for k, v in again.items() if k != "already_applied"} == \
        {k: v for k, v in first.items() if k != "already_applied"}
    assert state(example_forest) == before and index_rows(example_forest) == rows


def test_a_different_request_under_a_used_id_fails(example_forest, tmp_path):
    remember_one(example_forest, transaction_id="tx-1")
    before = contents(example_forest)
    with pytest.raises(ForestError) as info:
        remember_one(example_forest, content="another fact", transaction_id="tx-1")
    assert info.value.code == "transaction_id_conflict"
    source = tmp_path / "e.jsonl"
    source.write_bytes(jsonl([event(1)]))
    with pytest.raises(ForestError) as info:
        capture_events(example_forest, parse_input(source.read_bytes()),
                       transaction_id="tx-1")  # another operation
    assert info.value.code == "transaction_id_conflict"
    assert contents(example_forest) == before


def test_plan_retries_use_the_plan_transaction_id(example_forest, tmp_path):
    plan = {"schema_version": 1, "transaction_id": "daily-7", "date": "2026-11-30",
            "entries": [{"entry_id": "d-7", "source_record_ids": ["evt-20261128-0001"],
                         "summary": "x"}]}
    assert apply_daily(example_forest, write_json(tmp_path / "a.json", plan))["ok"]
    assert apply_daily(example_forest, write_json(tmp_path / "b.json", plan))["already_applied"]
    plan["entries"][0]["summary"] = "changed"
    with pytest.raises(ForestError) as info:
        apply_daily(example_forest, write_json(tmp_path / "c.json", plan))
    assert info.value.code == "transaction_id_conflict"


def test_every_transaction_gets_its_own_id(empty_forest):
    ids = {remember(empty_forest, "t", "b", f"l{n}", "L", "x")["transaction_id"]
           for n in range(5)}
    assert len(ids) == 5


def test_receipts_are_private_and_bind_request_and_hashes(example_forest):
    operations.index(example_forest)
    rel = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    old = (example_forest / rel).read_bytes()
    out = remember(example_forest, "kitchen", "fermentation", "kimchi-batch-7", "K", "more",
                   transaction_id="tx-r")
    path = example_forest / RECEIPTS / "tx-r.json"
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700
    receipt = json.loads(path.read_text(encoding="utf-8"))
    assert receipt == {k: v for k, v in out.items()
                       if k not in ("ok", "schema_version", "already_applied")} | {
                           "operation": "remember"}
    request = {"tree": "kitchen", "branch": "fermentation", "leaf": "kimchi-batch-7",
               "title": "K", "content": "more", "source": "memory-forest", "tree_title": None,
               "branch_title": None, "tags": []}
    assert receipt["plan_sha256"] == hashlib.sha256(
        dumps({"operation": "remember", "request": request}).encode()).hexdigest()
    touched = {item["path"]: item for item in receipt["touched"]}
    assert touched[rel]["before_sha256"] == hashlib.sha256(old).hexdigest()
    for item in receipt["touched"]:
        assert item["after_sha256"] == hashlib.sha256(
            (example_forest / item["path"]).read_bytes()).hexdigest()
    assert receipt["check"]["validate"]["errors"] == receipt["check"]["audit"]["errors"] == 0
    assert receipt["index"]["mode"] == "paths"
    assert not (example_forest / ".memory-forest/journal").exists()


def test_the_first_write_builds_the_index(empty_forest):
    out = remember(empty_forest, "t", "b", "l", "L", "x")
    assert out["index_built"]["mode"] == "full"
    assert "index_built" not in remember(empty_forest, "t", "b", "l", "L", "y")
    assert_whole(empty_forest)


def test_a_foreign_index_schema_is_rebuilt_and_the_write_goes_on(example_forest):
    operations.index(example_forest)
    from forestkit import set_meta

    set_meta(example_forest, "schema_version", "999")
    out = remember_one(example_forest)  # derived state never stops a write
    assert out["ok"] and out["index_built"]["rebuilt"] == "schema_mismatch"
    assert operations.index(example_forest)["mode"] == "incremental"
    assert_whole(example_forest)


def test_a_held_lock_fails_at_once_or_is_waited_for(example_forest):
    owner = lock.acquire(example_forest, "someone else")
    try:
        before = contents(example_forest)
        with pytest.raises(ForestError) as info:  # how fast: scripts/bench_fail_fast.py
            remember_one(example_forest, wait=0)
        assert info.value.code == "lock_held" and info.value.details["command"] == "someone else"
        assert contents(example_forest) == before
        releaser = threading.Timer(0.3, lock.release, (example_forest, owner))
        releaser.start()
        assert remember_one(example_forest, wait=10)["ok"]
        releaser.join()
    finally:
        lock.release(example_forest, owner)
    assert not lock.lock_path(example_forest).exists()


@pytest.mark.parametrize("step", ["staged", "journaled", "writing", "written", "indexed",
                                  "receipted"])
def test_a_handled_failure_at_any_step_restores_bytes_and_index(example_forest, monkeypatch,
                                                                step):
    operations.index(example_forest)
    before, rows = state(example_forest), index_rows(example_forest)
    monkeypatch.setenv(testhooks.FAIL_ENV, step)
    with pytest.raises(OSError):
        remember(example_forest, "garden", "beds", "bed-c", "Bed C", "x", transaction_id="tx-f")
    monkeypatch.delenv(testhooks.FAIL_ENV)
    assert state(example_forest) == before  # bytes, modes and mtimes
    assert index_rows(example_forest) == rows
    assert not journal.pending(example_forest)
    assert not (example_forest / RECEIPTS / "tx-f.json").exists()
    assert not lock.lock_path(example_forest).exists()
    assert remember(example_forest, "garden", "beds", "bed-c", "Bed C", "x",
                    transaction_id="tx-f")["already_applied"] is False
    assert_whole(example_forest)


def test_a_failure_while_undoing_leaves_the_journal_for_repair(example_forest, monkeypatch):
    operations.index(example_forest)
    before, rows = state(example_forest), index_rows(example_forest)
    monkeypatch.setenv(testhooks.FAIL_ENV, "written,recovering")
    with pytest.raises(OSError):
        remember(example_forest, "garden", "beds", "bed-d", "Bed D", "x")
    monkeypatch.delenv(testhooks.FAIL_ENV)
    assert journal.describe(example_forest)["phase"] == "rolling_back"
    assert operations.doctor(example_forest)["journal"]["state"] == "interrupted"
    repaired = operations.doctor(example_forest, repair=True)
    assert repaired["repair"]["journal"]["action"] == "rolled_back"
    assert repaired["journal"] == {"state": "clear"}
    assert state(example_forest) == before and index_rows(example_forest) == rows
    assert_whole(example_forest)


def test_a_corrupt_receipt_is_reported_not_trusted(example_forest):
    remember_one(example_forest, transaction_id="tx-c")
    (example_forest / RECEIPTS / "tx-c.json").write_text("[]", encoding="utf-8")
    with pytest.raises(ForestError) as info:
        remember_one(example_forest, transaction_id="tx-c")
    assert info.value.code == "receipt_corrupt"


def test_a_journal_missing_an_image_stops_recovery_and_changes_nothing(example_forest,
                                                                       monkeypatch):
    monkeypatch.setenv(testhooks.FAIL_ENV, "writing,recovering")
    with pytest.raises(OSError):
        remember(example_forest, "garden", "beds", "bed-e", "Bed E", "x")
    monkeypatch.delenv(testhooks.FAIL_ENV)
    for image in (example_forest / ".memory-forest/journal").glob("before-*"):
        image.unlink()  # lose what the rollback still needs
    before = contents(example_forest)
    with pytest.raises(ForestError) as info:
        operations.doctor(example_forest, repair=True)
    assert info.value.code == "journal_corrupt"
    assert contents(example_forest) == before
    assert journal.describe(example_forest)["state"] == "interrupted"

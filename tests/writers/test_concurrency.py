"""Concurrency: one writer at a time, waiting writers all land, readers never see a
broken index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from writerkit import assert_whole, contents, event, istm_records, jsonl

from memory_forest import indexreader, lock, operations, retrieve
from memory_forest.errors import ForestError


def popen(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memory_forest", *map(str, args), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_twenty_concurrent_captures_each_land_exactly_once(example_forest, tmp_path):
    """A hook's capture is its only record of an event: twenty at once, none told to wait,
    all land."""
    operations.index(example_forest)
    procs = []
    for n in range(20):
        source = tmp_path / f"e{n}.jsonl"
        source.write_bytes(jsonl([event(n, event_id=f"c{n}-a"), event(n, event_id=f"c{n}-b")]))
        procs.append(popen("capture", example_forest, "--file", source))  # default flags
    acknowledged = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, out + err
        result = json.loads(out)
        assert result["captured"] == 2
        acknowledged += result["event_ids"]
    ids = [r["event_id"] for r in istm_records(example_forest)]
    assert len(acknowledged) == 40
    assert sorted(i for i in ids if i.startswith("c")) == sorted(acknowledged)
    assert len(ids) == len(set(ids))
    assert not lock.lock_path(example_forest).exists()
    assert_whole(example_forest)


def test_a_second_writer_with_wait_0_fails_at_once_with_lock_held(example_forest, tmp_path):
    before = contents(example_forest)
    source = tmp_path / "e.jsonl"
    source.write_bytes(jsonl([event(1)]))
    owner = lock.acquire(example_forest, "index")
    try:
        proc = popen("capture", example_forest, "--file", source, "--wait", "0")
        out, _ = proc.communicate(timeout=60)
    finally:
        lock.release(example_forest, owner)
    assert proc.returncode == 1
    error = json.loads(out)["error"]
    assert error["code"] == "lock_held" and error["details"]["command"] == "index"
    assert contents(example_forest) == before


def test_reads_during_writes_see_the_old_or_the_new_index(example_forest, tmp_path):
    operations.index(example_forest)
    stop = threading.Event()
    seen: list[int] = []
    problems: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                con = indexreader.connect(example_forest)
                try:
                    seen.append(con.execute("SELECT count(*) FROM docs").fetchone()[0])
                    orphans = con.execute("SELECT count(*) FROM terms WHERE rowid NOT IN "
                                          "(SELECT rowid FROM docs)").fetchone()[0]
                finally:
                    con.close()
                if orphans:
                    problems.append("full-text rows without a document")
                retrieve.search(example_forest, "pickles brine", layer=["stm"])
            except ForestError as exc:
                problems.append(exc.code)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(8):
            proc = popen("remember", example_forest, "--tree", "kitchen", "--branch", "pickles",
                         "--leaf", f"jar-{n}", "--title", f"Jar {n}", "--content",
                         f"pickles brine jar {n}", "--wait", "30")
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, out + err
    finally:
        stop.set()
        thread.join()
    assert problems == []
    # The reader really ran during the writes: it saw the index at two commits at least.
    assert len(set(seen)) >= 2, seen
    assert seen == sorted(seen)  # the document count only ever grows, one commit at a time
    assert set(seen) <= {12 + k for k in range(0, 4 + 8 + 1)}
    hits = retrieve.search(example_forest, "pickles brine", layer=["stm"], limit=20)
    assert hits["count"] == 8
    assert os.path.exists(example_forest / "03 mtm/kitchen/pickles.md")


@pytest.mark.parametrize("wait", ["nan", "inf", "-1", "4000", "-0.001"])
def test_wait_must_be_a_finite_number_of_seconds_up_to_an_hour(example_forest, tmp_path, wait):
    """NaN would wait forever, a negative wait means nothing: a usage error, in every
    command that waits for the lock, before anything is written."""
    before = contents(example_forest)
    source = tmp_path / "e.jsonl"
    source.write_bytes(jsonl([event(1)]))
    for args in (["capture", example_forest, "--file", source], ["index", example_forest],
                 ["doctor", example_forest, "--repair"]):
        proc = popen(*args, f"--wait={wait}")
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, out + err
        error = json.loads(out)["error"]
        assert error["code"] == "wait_out_of_range" and error["details"]["wait"]
    assert contents(example_forest) == before
    assert not lock.lock_path(example_forest).exists()


def test_the_largest_wait_is_accepted(example_forest):
    assert operations.index(example_forest, wait=lock.MAX_WAIT_SECONDS)["ok"] is True
    with pytest.raises(ForestError) as caught:
        operations.index(example_forest, wait=float("nan"))
    assert caught.value.code == "wait_out_of_range" and caught.value.exit_code == 2


@pytest.mark.parametrize("wait", [float("nan"), float("inf"), -1, 4000, 31])
def test_the_mcp_tools_refuse_the_same_waits(wait):
    from pydantic import ValidationError

    from memory_forest import catalog
    from memory_forest.mcp_server import arguments_model

    tools = catalog.by_name()
    event_args = {"observed_at": "2026-11-30T09:00:00Z", "source": "a", "kind": "note",
                  "payload": 1}
    with pytest.raises(ValidationError):
        arguments_model(tools["capture"]).model_validate({"events": event_args, "wait": wait})
    with pytest.raises(ValidationError):
        arguments_model(tools["remember"]).model_validate(
            {"tree": "t", "branch": "b", "leaf": "l", "title": "T", "content": "c",
             "wait": wait})


def test_a_ticket_that_cannot_be_proven_dead_does_not_block_the_line(example_forest, tmp_path):
    """A staged lock directory from another host, first in line, never claims the lock: the
    writers behind it wait until the lock has sat free a while, then go ahead."""
    path = lock.lock_path(example_forest)
    foreign = path.with_name(f"{path.name}.4242-0a1b2c3d.new")
    foreign.mkdir(mode=0o700)
    (foreign / lock.OWNER).write_text(json.dumps(
        {"pid": 4242, "host": "another-host.invalid", "started_at": "2026-11-30T09:00:00Z",
         "command": "remember", "token": "0" * 16, "ticket": time.time_ns() - 10**9}),
        encoding="utf-8")
    source = tmp_path / "e.jsonl"
    source.write_bytes(jsonl([event(1, event_id="behind-foreign")]))
    proc = popen("capture", example_forest, "--file", source)  # default flags
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert "behind-foreign" in [r["event_id"] for r in istm_records(example_forest)]
    assert foreign.is_dir()  # another host's directory is never removed


def test_a_stale_lock_is_not_waited_out(example_forest, tmp_path):
    """A lock whose owner is dead will never be released: even a writer told to wait an hour
    fails with lock_stale (the subprocess timeout is far below the hour)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    owner = lock.acquire(example_forest, "remember")
    owner["pid"] = child.pid
    (lock.lock_path(example_forest) / lock.OWNER).write_text(json.dumps(owner))
    source = tmp_path / "e.jsonl"
    source.write_bytes(jsonl([event(1)]))
    proc = popen("capture", example_forest, "--file", source, "--wait", "3600")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, out + err
    assert json.loads(out)["error"]["code"] == "lock_stale"
    assert lock.state(example_forest)["state"] == "stale"


def test_the_ticket_is_never_shown(example_forest):
    owner = lock.acquire(example_forest, "index")
    try:
        shown = lock.state(example_forest)["owner"]
    finally:
        lock.release(example_forest, owner)
    assert isinstance(owner["ticket"], int) and "ticket" not in shown and "token" not in shown

"""ISTM shards per machine: in a forest kept in git each machine appends to its own
``06 istm/<day>.<host>.jsonl``, and each machine's files are one hash chain.

Machines are simulated by ``MEMORY_FOREST_HOST`` in one forest, which is what two
replicas look like after a sync has brought both sides' shards together.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import socket
import subprocess
from pathlib import Path

import pytest
from conftest import check, issues_of, raises_code, write

from memory_forest import chain, operations, retrieve
from memory_forest.routes import parse_route
from memory_forest.writers import capture
from memory_forest.writers.remember import remember

OLD = "06 istm/2026-11-28.jsonl"  # the example's own shard, written before any git


def event(text: str, **fields) -> dict:
    return {"observed_at": "2026-12-01T09:00:00Z", "source": "test-agent", "kind": "note",
            "payload": {"text": text}, **fields}


def on(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv(chain.HOST_ENV, host)


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def lines(root: Path, rel: str) -> list[bytes]:
    return [line for line in (root / rel).read_bytes().split(b"\n") if line.strip()]


def prev_of(root: Path, rel: str, number: int = 0) -> str:
    return json.loads(lines(root, rel)[number])[chain.FIELD]


def tail_hash(root: Path, rel: str) -> str:
    return hashlib.sha256(lines(root, rel)[-1]).hexdigest()


def yesterday(day: str) -> str:
    return (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()


def broken(root: Path) -> list[tuple[str, str]]:
    return [(i["path"], i["message"].split(":")[0]) for i in check(root, "audit")["issues"]
            if i["code"] == "istm_chain_broken"]


# --- the host segment ------------------------------------------------------------------------


@pytest.mark.parametrize("raw, segment", [
    ("laptop", "laptop"),
    ("Ana's MacBook Pro.local", "ana-s-macbook-pro-local"),
    ("ÉCOLE_42", "cole-42"),
    ("build/../../etc", "build-etc"),
    ("x" * 100, "x" * 63),
    ("a" * 62 + "-b", "a" * 62),  # cut at 63, then no trailing '-'
    ("", "host"),
    ("---", "host"),
    ("日本", "host"),
    ("JSONL", "host"),  # would read as a doubled extension
])
def test_a_host_name_becomes_one_safe_segment_that_routes_accept(raw, segment):
    assert chain.host_segment(raw) == segment
    assert parse_route(f"06 istm/2026-12-01.{segment}.jsonl").name == f"2026-12-01.{segment}"


def test_the_host_is_the_environment_value_else_the_machine_name(monkeypatch):
    on(monkeypatch, "Desk Top")
    assert chain.this_host() == "desk-top"
    monkeypatch.setenv(chain.HOST_ENV, "")
    assert chain.this_host() == chain.host_segment(socket.gethostname())
    monkeypatch.delenv(chain.HOST_ENV)
    assert chain.this_host() == chain.host_segment(socket.gethostname())


# --- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["2026-12-01.jsonl", "events.jsonl", "2026-12-01.a.jsonl",
                                  "2026-12-01.build-7.jsonl", f"2026-12-01.{'h' * 63}.jsonl"])
def test_validate_accepts_every_istm_name(name):
    assert parse_route(f"06 istm/{name}").layer.key == "istm"


@pytest.mark.parametrize("name, code", [
    ("2026-12-01.Laptop.jsonl", "route_bad_shape"),
    ("2026-12-01.a_b.jsonl", "route_bad_shape"),
    ("2026-12-01..jsonl", "route_bad_shape"),
    ("2026-12-01.a.b.jsonl", "route_bad_shape"),
    ("2026-12-01.-a.jsonl", "route_bad_shape"),
    (f"2026-12-01.{'h' * 64}.jsonl", "route_bad_shape"),
    ("2026-12-01.jsonl.jsonl", "route_bad_shape"),
    ("2026-13-01.a.jsonl", "route_bad_shape"),
    ("events.a.jsonl", "route_bad_shape"),
    ("a.2026-12-01.jsonl", "route_bad_shape"),
    ("2026-12-01.a.JSONL", "route_extension_case"),
    ("2026-12-01.a.md", "route_bad_shape"),
])
def test_garbage_istm_names_keep_their_codes(name, code):
    raises_code(lambda: parse_route(f"06 istm/{name}"), code)


def test_validate_reports_a_garbage_shard_name_and_accepts_the_shards(example_forest, monkeypatch):
    git_init(example_forest)
    for host in ("a", "b"):
        on(monkeypatch, host)
        capture.capture_events(example_forest, [event(f"from {host}")])
    write(example_forest, "06 istm/2026-12-01.Bad_Host.jsonl", (example_forest / OLD).read_bytes())
    assert issues_of(check(example_forest, "validate")) == \
        [("06 istm/2026-12-01.Bad_Host.jsonl", "route_bad_shape")]


# --- where captures go -----------------------------------------------------------------------


def test_without_git_the_names_are_unchanged_whatever_the_host(example_forest, monkeypatch):
    on(monkeypatch, "a")
    out = capture.capture_events(example_forest, [event("no git here")])
    assert out["shard"] == f"06 istm/{out['captured_at'][:10]}.jsonl"
    assert prev_of(example_forest, out["shard"]) == tail_hash(example_forest, OLD)


def test_two_machines_capture_to_two_files_each_its_own_chain(example_forest, monkeypatch):
    git_init(example_forest)
    shards = {}
    for host in ("a", "b", "a", "b"):
        on(monkeypatch, host)
        out = capture.capture_events(example_forest, [event(f"{host} 1"), event(f"{host} 2")])
        shards.setdefault(host, set()).add(out["shard"])
    day = out["captured_at"][:10]
    assert shards == {"a": {f"06 istm/{day}.a.jsonl"}, "b": {f"06 istm/{day}.b.jsonl"}}
    for host in ("a", "b"):
        rel = f"06 istm/{day}.{host}.jsonl"
        records = [json.loads(line) for line in lines(example_forest, rel)]
        assert [r["payload"]["text"] for r in records] == [f"{host} 1", f"{host} 2"] * 2
        # A machine's first file starts its own chain: not after the files without a host,
        # nor after the other machine's.
        assert records[0][chain.FIELD] == chain.GENESIS
        for before, after in zip(lines(example_forest, rel), records[1:], strict=False):
            assert after[chain.FIELD] == hashlib.sha256(before).hexdigest()
    assert check(example_forest, "audit")["issues"] == []
    assert check(example_forest, "validate")["issues"] == []


def test_a_second_day_chains_to_the_same_machines_previous_day(example_forest, monkeypatch):
    # Yesterday's file without a host, from before the forest went into git: by name it is
    # nearer to a's today than a's own yesterday.
    out = capture.capture_events(example_forest, [event("before git")])
    os.rename(example_forest / out["shard"],
              example_forest / f"06 istm/{yesterday(out['captured_at'][:10])}.jsonl")
    git_init(example_forest)
    previous = {}
    for host in ("a", "b"):
        on(monkeypatch, host)
        out = capture.capture_events(example_forest, [event(f"{host} yesterday")])
        day = out["captured_at"][:10]
        # Yesterday's shard: today's, renamed, as the calendar would have named it.
        previous[host] = f"06 istm/{yesterday(day)}.{host}.jsonl"
        os.rename(example_forest / out["shard"], example_forest / previous[host])
    on(monkeypatch, "a")
    today = capture.capture_events(example_forest, [event("a today")])["shard"]
    assert today == f"06 istm/{day}.a.jsonl"
    assert prev_of(example_forest, today) == tail_hash(example_forest, previous["a"])
    assert prev_of(example_forest, today) != tail_hash(example_forest, previous["b"])
    assert broken(example_forest) == []
    # An edit of b's last line is b's chain's problem, never a's.
    rel = previous["b"]
    write(example_forest, rel, (example_forest / rel).read_bytes().replace(b"yesterday", b"then"))
    assert issues_of(check(example_forest, "audit")) == [(rel, "istm_sha256_mismatch")]
    # The end of a's yesterday is vouched for by a's today.
    rel = previous["a"]
    write(example_forest, rel, (example_forest / rel).read_bytes().replace(b"yesterday", b"then"))
    assert broken(example_forest) == [(today, "line 1")]


def test_remember_files_its_event_in_the_machines_shard_and_both_machines_retrieve(
        example, monkeypatch):
    git_init(example)
    on(monkeypatch, "laptop")
    fact = remember(example, "house", "heating", "boiler", "Boiler",
                    "The boiler's flue gasket was replaced on 9 December.")
    on(monkeypatch, "server")
    seen = capture.capture_events(example, [event("The greenhouse heater tripped at 3am.")])
    day = seen["captured_at"][:10]
    assert fact["shard"] == f"06 istm/{day}.laptop.jsonl"
    assert seen["shard"] == f"06 istm/{day}.server.jsonl"
    trails = retrieve.retrieve(example, "flue gasket")["trails"]
    assert any(node["path"] == fact["path"] for trail in trails for node in trail["nodes"])
    unfiled = retrieve.retrieve(example, "greenhouse heater")["unfiled"]
    assert [(u["path"], u["event_id"]) for u in unfiled] == \
        [(seen["shard"], seen["event_ids"][0])]
    assert check(example, "audit")["issues"] == []


# --- event ids across machines ---------------------------------------------------------------


def test_tool_ids_are_unique_across_machines_by_time_random_part_and_position(
        example_forest, monkeypatch):
    git_init(example_forest)
    ids = []
    for host in ("a", "b") * 20:
        on(monkeypatch, host)
        ids += capture.capture_events(example_forest, [event(host), event(host)])["event_ids"]
    assert len(set(ids)) == len(ids) == 80
    # The parts: evt-<capture time to the millisecond>-<4 random bytes>-<position in batch>.
    stamp, token, position = ids[0].removeprefix("evt-").split("-")
    assert len(stamp) == len("20261201T090000123Z") and stamp.endswith("Z")
    assert len(bytes.fromhex(token)) == 4 and position == "00001"
    assert capture.new_event_id(stamp, "00000000", 1) != capture.new_event_id(stamp, "00000001", 1)


def test_an_id_one_machine_stored_is_a_retry_on_the_other(example_forest, monkeypatch):
    git_init(example_forest)
    on(monkeypatch, "a")
    first = capture.capture_events(example_forest, [event("once", event_id="mine-1")])
    on(monkeypatch, "b")
    again = capture.capture_events(example_forest, [event("once", event_id="mine-1")])
    assert (again["captured"], again["duplicates"], again["shard"]) == (0, 1, None)
    raises_code(lambda: capture.capture_events(
        example_forest, [event("other", event_id="mine-1")]), "capture_event_conflict")
    assert operations.validate(example_forest)["issues"] == []
    assert first["shard"].endswith(".a.jsonl")


def test_one_id_in_two_machines_shards_is_still_reported_by_validate(
        example_forest, tmp_path, monkeypatch):
    """What two machines capturing one caller-given id before they sync leave after the
    merge: each shard holds it, and validate names both."""
    git_init(example_forest)
    shards = []
    for host in ("a", "b"):
        on(monkeypatch, host)
        shards.append(capture.capture_events(
            example_forest, [event(f"{host} said it", event_id="shared-1")])["shard"])
        # Before the sync, the other machine's shard is not there.
        os.rename(example_forest / shards[-1], tmp_path / host)
    for host, rel in zip(("a", "b"), shards, strict=True):
        os.rename(tmp_path / host, example_forest / rel)
    [issue] = check(example_forest, "validate")["issues"]
    assert (issue["path"], issue["code"]) == (shards[1], "istm_duplicate_event_id")
    assert "'shared-1' is used more than once" in issue["message"]

"""capture: events into the dated ISTM shard, redaction, idempotency, all or nothing."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import stat
import subprocess

import pytest
from writerkit import assert_whole, contents, event, istm_records, jsonl

from memory_forest import chain
from memory_forest.errors import ForestError
from memory_forest.jsonio import dumps
from memory_forest.writers import capture as cap


def run(root, tmp_path, records, **kw):
    source = tmp_path / f"events-{os.urandom(3).hex()}.jsonl"
    source.write_bytes(jsonl(records) if isinstance(records, list) else records)
    return cap.capture_events(root, cap.parse_input(source.read_bytes()), **kw)


def code_of(call) -> str:
    with pytest.raises(ForestError) as info:
        call()
    return info.value.code


def test_capture_fills_the_tool_fields_and_appends_to_the_capture_day(example_forest, tmp_path):
    before = contents(example_forest)
    out = run(example_forest, tmp_path, [event(1), event(2, event_id="mine-2")])
    assert out["ok"] and out["captured"] == 2 and out["duplicates"] == 0
    day = dt.datetime.now(dt.UTC).date().isoformat()
    assert out["shard"] == f"06 istm/{day}.jsonl"
    shard = example_forest / out["shard"]
    assert stat.S_IMODE(os.lstat(shard).st_mode) == 0o600
    lines = shard.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [line for line in lines] == [dumps(r) for r in records]  # canonical JSON lines
    for record in records:
        assert record["sha256"] == hashlib.sha256(dumps(record["payload"]).encode()).hexdigest()
        assert record["captured_at"] == out["captured_at"]
        assert record["captured_at"].endswith("Z")
    assert records[1]["event_id"] == "mine-2"
    assert records[0]["event_id"].startswith("evt-") and out["event_ids"][0] == \
        records[0]["event_id"]
    after = contents(example_forest)
    assert {p: d for p, d in after.items() if p != out["shard"]} == before
    assert_whole(example_forest)


def test_tool_ids_sort_in_capture_order(empty_forest, tmp_path):
    first = run(empty_forest, tmp_path, [event(n) for n in range(12)])["event_ids"]
    second = run(empty_forest, tmp_path, [event(n) for n in range(3)])["event_ids"]
    assert first == sorted(first) and first + second == sorted(first + second)


def test_example_event_hashes_follow_the_same_rule(example_forest):
    for record in istm_records(example_forest):
        assert record["sha256"] == hashlib.sha256(dumps(record["payload"]).encode()).hexdigest()


def test_a_single_json_object_spanning_lines_is_one_event(empty_forest, tmp_path):
    raw = json.dumps(event(1), indent=2).encode()
    assert run(empty_forest, tmp_path, raw)["captured"] == 1


def test_same_event_id_same_content_is_a_no_op(example_forest, tmp_path):
    run(example_forest, tmp_path, [event(1, event_id="e-1")])
    before = contents(example_forest)
    again = run(example_forest, tmp_path, [event(1, event_id="e-1")])
    assert again["captured"] == 0 and again["duplicates"] == 1 and again["touched"] == []
    assert contents(example_forest) == before
    # Also across shards: the example's own event in 06 istm/2026-11-28.jsonl.
    stored = istm_records(example_forest)[0]
    same = {k: stored[k] for k in ("event_id", "observed_at", "source", "kind", "payload")}
    assert run(example_forest, tmp_path, [same])["duplicates"] == 1


def test_same_event_id_different_content_fails_and_changes_nothing(example_forest, tmp_path):
    run(example_forest, tmp_path, [event(1, event_id="e-1")])
    before = contents(example_forest)
    assert code_of(lambda: run(example_forest, tmp_path, [event(2, event_id="e-1")])) == \
        "capture_event_conflict"
    assert code_of(lambda: run(example_forest, tmp_path, [
        event(3, event_id="e-9"), event(4, event_id="e-9")])) == "capture_event_conflict"
    assert contents(example_forest) == before


def test_a_duplicate_inside_one_batch_is_stored_once(empty_forest, tmp_path):
    out = run(empty_forest, tmp_path, [event(1, event_id="e-1"), event(1, event_id="e-1")])
    assert (out["captured"], out["duplicates"]) == (1, 1)
    assert len(istm_records(empty_forest)) == 1


def test_events_jsonl_is_read_for_existing_ids(reference_forest, tmp_path):
    assert code_of(lambda: run(reference_forest, tmp_path, [event(5, event_id="e1")])) == \
        "capture_event_conflict"


def test_a_batch_is_all_or_nothing(example_forest, tmp_path):
    before = contents(example_forest)
    bad = [event(1), event(2), {"observed_at": "2026-11-30T09:00:00Z", "source": "s",
                                "kind": "k"}]
    assert code_of(lambda: run(example_forest, tmp_path, bad)) == "capture_missing_field"
    assert contents(example_forest) == before


def test_redaction_happens_before_the_hash_and_is_counted(empty_forest, tmp_path):
    secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"  # release-audit: allow
    out = run(empty_forest, tmp_path, [event(1, payload={"text": f"push with {secret}",
                                                          "env": ["pass" + "word=x1", "ok"]},
                                             note=f"extra key {secret}")])
    assert out["redactions"] == {"github_token": 2, "assignment": 1}
    shard = (empty_forest / out["shard"]).read_text(encoding="utf-8")
    assert secret not in shard and "x1" not in shard
    record = istm_records(empty_forest)[0]
    assert record["sha256"] == hashlib.sha256(dumps(record["payload"]).encode()).hexdigest()


def test_a_number_under_a_secret_named_key_is_redacted(empty_forest, tmp_path):
    pin = 48213977
    out = run(empty_forest, tmp_path, [event(1, payload={"pass" + "word": pin, "count": 3,
                                                          "token": None, "secret": False})])
    assert out["redactions"] == {"secret_field": 1}
    payload = istm_records(empty_forest)[0]["payload"]
    assert payload == {"password": "[REDACTED:secret_field]", "count": 3, "token": None,
                       "secret": False}
    assert str(pin) not in (empty_forest / out["shard"]).read_text(encoding="utf-8")


@pytest.mark.parametrize("raw, code", [
    (b"\xff\xfe", "capture_not_utf8"),
    (b"", "capture_empty"),
    (b"\n\n", "capture_empty"),
    (b"[1, 2]", "capture_not_object"),
    (b'{"a": 1}\n[1]\n', "capture_not_object"),
    (b'{"a": 1}\n{"a": \n', "capture_invalid_json"),
    (b'{"a": 1, "a": 2}', "capture_duplicate_key"),
    (b'{"a": NaN}', "capture_non_finite"),
    (b'{"a": 1e999}', "capture_non_finite"),
])
def test_input_rejections(empty_forest, tmp_path, raw, code):
    assert code_of(lambda: run(empty_forest, tmp_path, raw)) == code


@pytest.mark.parametrize("change, code", [
    ({"captured_at": "2026-11-30T09:00:00Z"}, "capture_reserved_field"),
    ({"sha256": "x"}, "capture_reserved_field"),
    ({"prev": "0" * 64}, "capture_reserved_field"),
    ({"event_id": "has space"}, "capture_bad_event_id"),
    ({"event_id": 7}, "capture_bad_event_id"),
    ({"observed_at": "yesterday"}, "capture_bad_observed_at"),
    ({"observed_at": "2026-11-30T09:00:00"}, "capture_bad_observed_at"),  # no time zone
    ({"observed_at": "2026-11-30"}, "capture_bad_observed_at"),
    ({"source": ""}, "capture_bad_source"),
    ({"source": "a\nb"}, "capture_bad_source"),
    ({"kind": 3}, "capture_bad_kind"),
])
def test_event_rejections(empty_forest, tmp_path, change, code):
    assert code_of(lambda: run(empty_forest, tmp_path, [event(1, **change)])) == code


def test_too_many_events(empty_forest, tmp_path, monkeypatch):
    monkeypatch.setattr(cap, "MAX_EVENTS", 3)
    assert code_of(lambda: run(empty_forest, tmp_path, [event(n) for n in range(4)])) == \
        "capture_too_many_events"


# --- events given inline (the MCP tool) -------------------------------------------------------


def test_inline_events_are_the_same_request_as_a_file(empty_forest, tmp_path):
    batch = [event(1, event_id="inline-1"), event(2)]
    first = run(empty_forest, tmp_path, batch, transaction_id="tx-inline")
    inline = cap.capture_events(empty_forest, cap.inline_events(batch),
                                transaction_id="tx-inline")
    assert inline["already_applied"] is True
    assert inline["plan_sha256"] == first["plan_sha256"]
    single = cap.capture_events(empty_forest, cap.inline_events(batch[0]))
    assert (single["captured"], single["duplicates"]) == (0, 1)


@pytest.mark.parametrize("value, code", [
    ([], "capture_empty"),
    (None, "capture_not_object"),
    ("text", "capture_not_object"),
    ([event(1), [1]], "capture_not_object"),
    ([event(1, payload=float("inf"))], "capture_non_finite"),
    ({**event(1), "payload": {"a": float("nan")}}, "capture_non_finite"),
    ([event(1, payload={1, 2})], "capture_invalid_json"),
])
def test_inline_rejections(value, code):
    assert code_of(lambda: cap.inline_events(value)) == code


def test_inline_limits(monkeypatch):
    monkeypatch.setattr(cap, "MAX_EVENTS", 3)
    assert code_of(lambda: cap.inline_events([event(n) for n in range(4)])) == \
        "capture_too_many_events"
    monkeypatch.setattr(cap, "MAX_INPUT_BYTES", 200)
    assert code_of(lambda: cap.inline_events([event(n) for n in range(3)])) == \
        "capture_input_too_large"


def test_an_event_too_large(empty_forest, tmp_path):
    big = event(1, payload={"text": "x" * (cap.MAX_EVENT_BYTES + 1)})
    assert code_of(lambda: run(empty_forest, tmp_path, [big])) == "capture_event_too_large"


def test_a_full_shard_is_refused(empty_forest, tmp_path):
    config = empty_forest / ".memory-forest/forest.json"
    data = json.loads(config.read_text())
    data["limits"] = {"max_file_bytes": 2000}
    config.write_text(json.dumps(data))
    run(empty_forest, tmp_path, [event(1)])
    before = contents(empty_forest)
    assert code_of(lambda: run(empty_forest, tmp_path, [event(n) for n in range(20)])) == \
        "istm_shard_full"
    assert contents(empty_forest) == before


def test_a_hand_broken_shard_blocks_capture(example_forest, tmp_path):
    run(example_forest, tmp_path, [event(1)])
    shard = example_forest / "06 istm/2026-11-28.jsonl"
    shard.write_bytes(shard.read_bytes() + b"not json\n")
    assert code_of(lambda: run(example_forest, tmp_path, [event(2)])) == "forest_invalid"


# --- the hash chain ---------------------------------------------------------------------------


def sha(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def lines_of(root, rel) -> list[bytes]:
    return (root / rel).read_bytes().splitlines()


def test_each_line_names_the_hash_of_the_line_before_it(empty_forest, tmp_path):
    shard = run(empty_forest, tmp_path, [event(n) for n in range(3)])["shard"]
    run(empty_forest, tmp_path, [event(3), event(4)])  # a second batch appends to the chain
    lines = lines_of(empty_forest, shard)
    assert json.loads(lines[0])["prev"] == chain.GENESIS  # no earlier shard
    for before, line in zip(lines, lines[1:], strict=False):
        assert json.loads(line)["prev"] == sha(before)
    assert_whole(empty_forest)


def test_a_new_shard_chains_to_the_last_line_of_the_shard_before_it(example_forest, tmp_path):
    # An empty shard between them has no line to name, so the one before it counts.
    (example_forest / "06 istm/2026-11-29.jsonl").write_bytes(b"")
    (example_forest / "06 istm/2026-11-29.jsonl").chmod(0o600)
    shard = run(example_forest, tmp_path, [event(1)])["shard"]
    previous = lines_of(example_forest, "06 istm/2026-11-28.jsonl")[-1]
    assert json.loads(lines_of(example_forest, shard)[0])["prev"] == sha(previous)
    assert_whole(example_forest)


def test_the_next_day_chains_to_the_day_before(empty_forest, tmp_path):
    first = run(empty_forest, tmp_path, [event(1), event(2)])["shard"]
    (empty_forest / first).rename(empty_forest / "06 istm/2026-01-01.jsonl")
    shard = run(empty_forest, tmp_path, [event(3)])["shard"]
    last = lines_of(empty_forest, "06 istm/2026-01-01.jsonl")[-1]
    assert json.loads(lines_of(empty_forest, shard)[0])["prev"] == sha(last)
    assert_whole(empty_forest)


def test_a_large_earlier_shard_is_read_from_its_end(empty_forest, tmp_path):
    # A last line longer than one backward read, after a first line that fills a read.
    records = [event(1, event_id="old-1", payload={"text": "a" * (chain.TAIL_CHUNK + 7)}),
               event(2, event_id="old-2", payload={"text": "b" * (3 * chain.TAIL_CHUNK)})]
    for record in records:
        record.update(captured_at="2026-01-01T00:00:00Z",
                      sha256=hashlib.sha256(dumps(record["payload"]).encode()).hexdigest())
    old = b"".join(dumps(record).encode() + b"\n" for record in records)
    (empty_forest / "06 istm/2026-01-01.jsonl").write_bytes(old + b"\n\n")
    (empty_forest / "06 istm/2026-01-01.jsonl").chmod(0o600)
    shard = run(empty_forest, tmp_path, [event(3)])["shard"]
    assert json.loads(lines_of(empty_forest, shard)[0])["prev"] == sha(old.splitlines()[-1])


def test_a_shard_without_a_final_newline_chains_to_its_last_line(example_forest, tmp_path):
    day = dt.datetime.now(dt.UTC).date().isoformat()
    shard = run(example_forest, tmp_path, [event(1)])["shard"]
    assert shard == f"06 istm/{day}.jsonl"
    data = (example_forest / shard).read_bytes()
    (example_forest / shard).write_bytes(data.rstrip(b"\n"))
    run(example_forest, tmp_path, [event(2)])
    lines = lines_of(example_forest, shard)
    assert json.loads(lines[1])["prev"] == sha(lines[0])


@pytest.mark.parametrize("data", [
    b"", b"\n", b"one", b"one\n", b"one\ntwo", b"one\ntwo\n\n \n", b"\n\nthree\n",
    b"x" * 50 + b"\n" + b"y" * 23, b"x" * 23 + b"\n" + b"y" * 50 + b"\n" * 40,
    b"a\n" * 30 + b"\n" * 30,
])
def test_the_tail_read_finds_what_a_whole_read_finds(tmp_path, monkeypatch, data):
    monkeypatch.setattr(chain, "TAIL_CHUNK", 16)  # many backward reads over short files
    (tmp_path / "f.jsonl").write_bytes(data)
    assert chain.tail_line(tmp_path, "f.jsonl") == chain.last_line(data)
    assert chain.last_line(data) == next(
        (line for line in reversed(data.split(b"\n")) if line.strip()), None)


def test_in_a_forest_kept_in_git_capture_appends_to_this_machines_shard(example_forest,
                                                                          tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(example_forest)], check=True)
    monkeypatch.setenv(chain.HOST_ENV, "Lab Server 2")
    before = contents(example_forest)
    out = run(example_forest, tmp_path, [event(1), event(2)])
    day = dt.datetime.now(dt.UTC).date().isoformat()
    assert out["shard"] == f"06 istm/{day}.lab-server-2.jsonl"
    assert stat.S_IMODE(os.lstat(example_forest / out["shard"]).st_mode) == 0o600
    # The files without a host are another machine's chain: this one starts its own.
    assert json.loads(lines_of(example_forest, out["shard"])[0])["prev"] == chain.GENESIS
    assert {p: d for p, d in contents(example_forest).items() if p != out["shard"]} == before
    run(example_forest, tmp_path, [event(3)])
    assert len(lines_of(example_forest, out["shard"])) == 3
    assert_whole(example_forest)

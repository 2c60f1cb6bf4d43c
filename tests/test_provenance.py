"""Provenance: the ISTM hash chain and ``sources`` pointers, as ``audit`` and ``doctor`` see them.

Chains are written by ``capture`` (tests/writers/test_capture.py holds the
writer's side); here a forest is tampered with by hand, as an editor or an
attacker would, and ``audit`` must say where, while indexing, retrieval and
the gate keep working.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, check, issues_of, run_cli, write

from memory_forest import chain, gate, operations, retrieve, testhooks
from memory_forest.writers import capture

SHARD = "06 istm/2026-11-28.jsonl"
LEAF = "04 stm/kitchen/fermentation/kimchi-batch-7.md"


def event(n: int) -> dict:
    return {"observed_at": "2026-12-01T09:00:00Z", "source": "test-agent", "kind": "note",
            "payload": {"text": f"provenance event {n}"}}


def shard_lines(root: Path, rel: str) -> list[bytes]:
    return (root / rel).read_bytes().splitlines()


def set_lines(root: Path, rel: str, lines: list[bytes]) -> None:
    write(root, rel, b"".join(line + b"\n" for line in lines))


def today_shard(root: Path) -> str:
    out = capture.capture_events(root, [event(1), event(2), event(3)])
    return out["shard"]


def findings(outcome: dict, code: str) -> list[tuple[str, str]]:
    """(path, what was found) of each finding of ``code``; the fix every message ends with
    is checked and cut off."""
    from memory_forest.issues import FIXES

    found = [(i["path"], i["message"]) for i in outcome["issues"] if i["code"] == code]
    assert all(message.endswith(f": {FIXES[code]}") for _, message in found), found
    return [(path, message.removesuffix(f": {FIXES[code]}")) for path, message in found]


def unchain(root: Path) -> None:
    """Strip ``prev`` from every ISTM line: the forest as it was before chains existed."""
    for path in sorted((root / chain.ISTM_DIR).glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
        for record in records:
            record.pop(chain.FIELD, None)
        lines = [json.dumps(r, sort_keys=True, separators=(",", ":")).encode() for r in records]
        set_lines(root, f"{chain.ISTM_DIR}/{path.name}", lines)


# --- the example -----------------------------------------------------------------------------


def test_the_example_is_chained_and_audits_clean(example_forest):
    lines = shard_lines(example_forest, SHARD)
    assert json.loads(lines[0])[chain.FIELD] == chain.GENESIS
    for before, line in zip(lines, lines[1:], strict=False):
        assert json.loads(line)[chain.FIELD] == hashlib.sha256(before).hexdigest()
    assert check(example_forest, "audit")["issues"] == []


def test_init_example_output_audits_clean_through_the_cli(tmp_path):
    root = tmp_path / "fresh"
    assert run_cli("init", root, "--example", "--json").code == 0
    result = run_cli("audit", root, "--json")
    assert result.code == 0 and result.json()["issues"] == []


def test_the_example_script_finds_the_packaged_files_chained():
    proc = subprocess.run([sys.executable, str(REPO / "scripts/chain_example.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- tampering -------------------------------------------------------------------------------


def test_an_edited_line_is_reported_with_its_path_and_line_by_the_cli(example_forest):
    lines = shard_lines(example_forest, SHARD)
    lines[0] = lines[0].replace(b"1.2 bar", b"2.1 bar")
    set_lines(example_forest, SHARD, lines)
    result = run_cli("audit", example_forest, "--json")
    assert result.code == 1
    outcome = result.json()
    assert outcome["error"]["code"] == "audit_failed"
    broken = findings(outcome, "istm_chain_broken")
    assert broken == [(SHARD, broken[0][1])] and broken[0][1].startswith("line 2: ")
    # The edited line's own payload no longer matches its hash either.
    mismatch = findings(outcome, "istm_sha256_mismatch")
    assert [(p, m.split(":")[0]) for p, m in mismatch] == [(SHARD, "line 1")]


def test_a_deleted_line_is_reported_at_the_line_after_the_gap(example_forest):
    shard = today_shard(example_forest)
    lines = shard_lines(example_forest, shard)
    set_lines(example_forest, shard, [lines[0], lines[2]])
    outcome = check(example_forest, "audit")
    assert outcome["ok"] is False
    assert [m.split(":")[0] for _, m in findings(outcome, "istm_chain_broken")] == ["line 2"]
    assert issues_of(outcome) == [(shard, "istm_chain_broken")]


def test_deleting_the_first_line_breaks_the_link_to_the_previous_shard(example_forest):
    shard = today_shard(example_forest)
    set_lines(example_forest, shard, shard_lines(example_forest, shard)[1:])
    [(path, message)] = findings(check(example_forest, "audit"), "istm_chain_broken")
    assert path == shard and message.startswith("line 1: ") and SHARD in message


def test_the_last_line_of_an_older_shard_is_vouched_for_by_the_next_shard(example_forest):
    shard = today_shard(example_forest)
    set_lines(example_forest, SHARD, shard_lines(example_forest, SHARD)[:-1])
    outcome = check(example_forest, "audit")
    [(path, message)] = findings(outcome, "istm_chain_broken")
    assert path == shard and message.startswith("line 1: ")
    # The kimchi leaf cites the removed event: the pointer dangles now.
    assert (LEAF, "provenance_missing") in issues_of(outcome)


def test_a_deleted_shard_is_found_at_the_first_line_of_the_next(example_forest):
    shard = today_shard(example_forest)
    (example_forest / SHARD).unlink()
    assert [p for p, _ in findings(check(example_forest, "audit"), "istm_chain_broken")] == \
        [shard]


def test_a_changed_payload_in_the_newest_line_is_found_by_its_own_hash(example_forest):
    shard = today_shard(example_forest)
    lines = shard_lines(example_forest, shard)
    lines[-1] = lines[-1].replace(b"provenance event 3", b"provenance event 9")
    set_lines(example_forest, shard, lines)
    outcome = check(example_forest, "audit")
    assert issues_of(outcome) == [(shard, "istm_sha256_mismatch")]
    assert findings(outcome, "istm_sha256_mismatch")[0][1].startswith("line 3: ")


def test_lines_moved_out_of_order_are_reported(example_forest):
    lines = shard_lines(example_forest, SHARD)
    set_lines(example_forest, SHARD, [lines[1], lines[0], lines[2]])
    messages = [m.split(":")[0] for _, m in
                findings(check(example_forest, "audit"), "istm_chain_broken")]
    assert messages == ["line 1", "line 2", "line 3"]


def test_blank_lines_are_not_links_of_the_chain(example_forest):
    lines = shard_lines(example_forest, SHARD)
    set_lines(example_forest, SHARD, [lines[0], b"", lines[1], b"  ", lines[2]])
    outcome = check(example_forest, "audit")
    assert {code for _, code in issues_of(outcome)} == {"istm_blank_line"}
    assert outcome["ok"] is True


def test_each_machines_shards_are_their_own_chain_in_audit(example_forest, monkeypatch):
    """In a forest kept in git, a removal in one machine's files is found in that machine's
    next file, never in another machine's, which chains past nothing of it."""
    subprocess.run(["git", "init", "-q", str(example_forest)], check=True)
    shards = {}
    for host in ("a", "b"):
        monkeypatch.setenv(chain.HOST_ENV, host)
        shards[host] = today_shard(example_forest)
        day = shards[host].split("/")[1][:10]
        older = f"{chain.ISTM_DIR}/2026-01-01.{host}.jsonl"
        os.rename(example_forest / shards[host], example_forest / older)
        capture.capture_events(example_forest, [event(4)])
        assert json.loads(shard_lines(example_forest, shards[host])[0])[chain.FIELD] == \
            hashlib.sha256(shard_lines(example_forest, older)[-1]).hexdigest()
    assert shards == {host: f"{chain.ISTM_DIR}/{day}.{host}.jsonl" for host in ("a", "b")}
    assert check(example_forest, "audit")["issues"] == []
    (example_forest / f"{chain.ISTM_DIR}/2026-01-01.a.jsonl").unlink()
    assert findings(check(example_forest, "audit"), "istm_chain_broken") == [
        (shards["a"], "line 1: 'prev' does not name the genesis value, yet no earlier ISTM file "
                      "of its chain has a line (an earlier file or its lines were removed)")]
    older = f"{chain.ISTM_DIR}/2026-01-01.b.jsonl"
    set_lines(example_forest, older, shard_lines(example_forest, older)[1:])
    assert sorted(p for p, _ in findings(check(example_forest, "audit"), "istm_chain_broken")) \
        == [older, shards["a"]]


# --- forgiving reads -------------------------------------------------------------------------


def test_a_tampered_forest_still_indexes_retrieves_and_passes_the_gate(example):
    lines = shard_lines(example, SHARD)
    lines[1] = lines[1].replace(b"Brown spots", b"Black spots")
    set_lines(example, SHARD, lines)
    write(example, LEAF, (example / LEAF).read_text(encoding="utf-8").replace(
        "evt-20261128-0003", "evt-20261128-0099"))
    codes = {code for _, code in issues_of(check(example, "audit"))}
    assert {"istm_chain_broken", "istm_sha256_mismatch", "provenance_missing"} <= codes
    built = operations.index(example)
    assert built["ok"] and built["quarantined"] == 0
    assert not {p["code"] for p in built["problems"]} & codes
    assert operations.validate(example)["ok"] is True
    trails = retrieve.retrieve(example, "kimchi batch")["trails"]
    assert any(node["path"] == LEAF for trail in trails for node in trail["nodes"])
    receipt = gate.consult(example, b"how did kimchi batch 7 taste?")
    assert receipt["status"] == "evidence_found"


# --- source pointers -------------------------------------------------------------------------


@pytest.mark.parametrize("pointer, why", [
    ("06 istm/2026-11-28.jsonl#evt-20261128-0099", "holds no event 'evt-20261128-0099'"),
    ("06 istm/2026-11-27.jsonl#evt-20261128-0003", "no such file"),
    ("05 daily/2026-11-28.md#d-20261128-nothing", "holds no entry 'd-20261128-nothing'"),
    ("05 daily/2026-11-20.md", "no such file"),
    ("04 stm/kitchen/fermentation/gone.md", "no such file"),
])
def test_a_dangling_frontmatter_pointer_is_provenance_missing(example_forest, pointer, why):
    text = (example_forest / LEAF).read_text(encoding="utf-8")
    write(example_forest, LEAF, text.replace("06 istm/2026-11-28.jsonl#evt-20261128-0003",
                                             pointer))
    outcome = check(example_forest, "audit")
    [(path, message)] = findings(outcome, "provenance_missing")
    assert path == LEAF and pointer in message and message.endswith(why)
    assert outcome["ok"] is False and check(example_forest, "validate")["ok"] is True


@pytest.mark.parametrize("pointer", [
    "06 istm/2026-11-28.jsonl#evt-20261128-0002",  # an event
    "05 daily/2026-11-28.md#d-20261128-tomato",  # a Daily entry
    "05 daily/2026-11-28.md",  # a file
    "03 mtm/kitchen/fermentation",  # a Markdown file named without its extension
])
def test_pointers_that_resolve_are_fine(example_forest, pointer):
    text = (example_forest / LEAF).read_text(encoding="utf-8")
    write(example_forest, LEAF, text.replace("06 istm/2026-11-28.jsonl#evt-20261128-0003",
                                             pointer))
    assert check(example_forest, "audit")["issues"] == []


def test_a_daily_sources_line_naming_a_missing_event_is_reported(example_forest):
    daily = "05 daily/2026-11-28.md"
    text = (example_forest / daily).read_text(encoding="utf-8")
    write(example_forest, daily, text.replace("jsonl#evt-20261128-0002`",
                                              "jsonl#evt-20261128-0042`"))
    [(path, message)] = findings(check(example_forest, "audit"), "provenance_missing")
    assert path == daily and "06 istm/2026-11-28.jsonl#evt-20261128-0042" in message


def test_free_text_sources_are_not_pointers(example_forest):
    text = (example_forest / LEAF).read_text(encoding="utf-8")
    write(example_forest, LEAF, text.replace('"06 istm/2026-11-28.jsonl#evt-20261128-0003"',
                                             '"a call with Ana"'))
    assert check(example_forest, "audit")["issues"] == []


# --- before chains existed -------------------------------------------------------------------


def test_a_forest_written_before_chains_is_clean_and_doctor_counts_it(example_forest):
    today_shard(example_forest)
    unchain(example_forest)
    assert check(example_forest, "audit")["issues"] == []
    report = operations.doctor(example_forest)["istm"]
    assert report == {"files": 2, "events": 6, "chained": 0, "unchained": 6,
                      "unchained_files": 2, "unreadable": 0}
    human = run_cli("doctor", example_forest)
    assert human.code == 0
    line = "6 events in 2 ISTM files are unchained (written before hash chains)"
    assert human.stdout.count(line) == 1


def test_capture_after_unchained_lines_chains_to_the_last_of_them(example_forest):
    shard = today_shard(example_forest)
    unchain(example_forest)
    operations.index(example_forest)
    capture.capture_events(example_forest, [event(4)])
    lines = shard_lines(example_forest, shard)
    assert json.loads(lines[3])[chain.FIELD] == hashlib.sha256(lines[2]).hexdigest()
    assert check(example_forest, "audit")["issues"] == []
    report = operations.doctor(example_forest)["istm"]
    assert (report["chained"], report["unchained"], report["unchained_files"]) == (1, 6, 2)
    # The first chained line vouches for the unchained line before it.
    set_lines(example_forest, shard, [lines[0], lines[1], lines[2] + b" ", lines[3]])
    assert [m.split(":")[0] for _, m in
            findings(check(example_forest, "audit"), "istm_chain_broken")] == ["line 4"]


def test_a_fully_chained_forest_reports_no_unchained_events(example_forest):
    today_shard(example_forest)
    report = operations.doctor(example_forest)["istm"]
    assert (report["events"], report["chained"], report["unchained"]) == (6, 6, 0)
    assert "unchained" not in run_cli("doctor", example_forest).stdout


def test_a_broken_chain_does_not_hold_a_corrupt_journal_in_place(example):
    """Set-aside needs a forest that passes audit, since a lost journal shows as broken
    links; no lost journal breaks a chain, and no edit mends one, so chains do not count."""
    env = {key: value for key, value in os.environ.items() if key != testhooks.CRASH_ENV}
    remember = [sys.executable, "-m", "memory_forest", "remember", str(example), "--tree",
                "kitchen", "--branch", "pickles", "--leaf", "dill", "--content", "Brine 5%."]
    killed = subprocess.run(remember, env={**env, testhooks.CRASH_ENV: "journaled"},
                            capture_output=True, timeout=60, check=False)
    assert killed.returncode == -9
    manifest = example / ".memory-forest/journal/manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:-40])  # torn: the journal cannot be recovered
    assert run_cli("unlock", example, "--stale").code == 0
    lines = shard_lines(example, SHARD)
    set_lines(example, SHARD, [lines[0].replace(b"1.2 bar", b"2.1 bar"), *lines[1:]])
    assert {code for _, code in issues_of(check(example, "audit"))} == \
        {"istm_chain_broken", "istm_sha256_mismatch"}
    repaired = run_cli("doctor", example, "--repair", "--set-aside-journal", "--json")
    assert repaired.code == 0, repaired.stdout
    assert repaired.json()["repair"]["journal"]["action"] == "set_aside"

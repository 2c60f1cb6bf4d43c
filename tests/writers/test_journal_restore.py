"""``doctor --repair --restore-journal`` at its edges, through the real CLI.

A journal staged before entry files existed is restored from its manifest's
text while that still lists every file, and refused when it is cut before
the list; a damaged entry file is named; a restore killed half-way is
finished by running it again; a journal that recovers is recovered; the
flag needs ``--repair`` and excludes ``--set-aside-journal``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from crashkit import REMEMBER, cli
from writerkit import assert_whole, state

JOURNAL = Path(".memory-forest/journal")




def crash_remember(root: Path, step: str = "written") -> tuple[dict, bytes]:
    """``remember`` killed at ``step``: its manifest (parsed, and as bytes)."""
    assert cli("remember", root, *REMEMBER, crash=step)[0] == -9
    assert cli("unlock", root, "--stale")[0] == 0
    raw = (root / JOURNAL / "manifest.json").read_bytes()
    return json.loads(raw), raw


def as_older_journal(root: Path) -> None:
    """What a journal staged before entry files looks like: the same, without them."""
    for entry in (root / JOURNAL).glob("entry-*.json"):
        entry.unlink()


def test_an_older_journal_is_restored_from_the_manifest_text(example: Path):
    before = state(example)
    manifest, raw = crash_remember(example)
    as_older_journal(example)
    (example / JOURNAL / "manifest.json").write_bytes(raw[:-40])  # "entries" survives
    code, done = cli("doctor", example, "--repair", "--restore-journal")
    assert code == 0, done
    assert done["repair"]["journal"]["action"] == "restored"
    assert sorted(done["repair"]["journal"]["paths"]) == \
        sorted(entry["path"] for entry in manifest["entries"])
    assert done["repair"]["journal"]["removed"]  # the new leaf, moved into the journal
    assert state(example) == before
    assert cli("remember", example, *REMEMBER)[0] == 0
    assert_whole(example)


def test_an_older_journal_cut_inside_its_file_list_is_refused(example: Path):
    _, raw = crash_remember(example)
    as_older_journal(example)
    cut = raw[:raw.index(b'"entries":')]  # the draft's list of files may be short too
    (example / JOURNAL / "manifest.json").write_bytes(cut)
    crashed = state(example)
    code, refused = cli("doctor", example, "--repair", "--restore-journal")
    assert (code, refused["error"]["code"]) == (1, "journal_restore_refused")
    assert refused["error"]["details"]["damaged"] == [
        {"name": "manifest.json", "path": None,
         "reason": "cut before the list of files it changes"}]
    assert state(example) == crashed


@pytest.mark.parametrize("damage", [b"", b'{"format":1,"slot":0}'])
def test_a_damaged_entry_file_is_named(example: Path, damage: bytes):
    manifest, raw = crash_remember(example)
    (example / JOURNAL / "manifest.json").write_bytes(raw[:10])
    (example / JOURNAL / "entry-1.json").write_bytes(damage)
    crashed = state(example)
    code, refused = cli("doctor", example, "--repair", "--restore-journal")
    assert (code, refused["error"]["code"]) == (1, "journal_restore_refused")
    assert refused["error"]["details"]["damaged"] == [
        {"name": "entry-1.json", "path": None, "reason": "unreadable"}]
    assert state(example) == crashed
    assert len(manifest["entries"]) > 1


def test_a_restore_killed_half_way_is_finished_by_the_next(example: Path):
    before = state(example)
    manifest, raw = crash_remember(example)
    (example / JOURNAL / "manifest.json").write_bytes(raw[:len(raw) // 3])
    code, _ = cli("doctor", example, "--repair", "--restore-journal", crash="restoring:2")
    assert code == -9
    assert state(example) != before  # two files back, the others not yet
    code, done = cli("doctor", example, "--repair", "--restore-journal")  # clears the lock too
    assert code == 0, done
    assert done["repair"]["unlocked"] is not None
    assert state(example) == before
    aside = example / done["repair"]["journal"]["set_aside"]
    # At "written" every file was replaced: each was moved aside once, by one run or the other.
    assert len(list(aside.glob("displaced-*"))) == len(manifest["entries"])
    assert_whole(example)


def test_a_journal_that_recovers_is_recovered_not_restored(example: Path):
    before = state(example)
    crash_remember(example, "written")  # a whole manifest: roll forward
    code, done = cli("doctor", example, "--repair", "--restore-journal")
    assert code == 0 and done["repair"]["journal"]["action"] == "rolled_forward"
    assert state(example) != before
    assert not list((example / ".memory-forest").glob("journal.set-aside-*"))
    code, done = cli("doctor", example, "--repair", "--restore-journal")  # no journal: no-op
    assert code == 0 and done["repair"]["journal"] == {"action": "none"}


def test_the_flag_needs_repair_and_is_one_way_out(example: Path):
    code, refused = cli("doctor", example, "--restore-journal")
    assert (code, refused["error"]["code"]) == (2, "restore_requires_repair")
    code, refused = cli("doctor", example, "--repair", "--restore-journal",
                        "--set-aside-journal")
    assert (code, refused["error"]["code"]) == (2, "restore_or_set_aside")


def test_an_entry_file_of_another_transaction_is_named(example: Path):
    manifest, raw = crash_remember(example)
    (example / JOURNAL / "manifest.json").write_bytes(raw[:10])
    entry = example / JOURNAL / "entry-1.json"
    record = json.loads(entry.read_bytes())
    entry.write_text(json.dumps({**record, "transaction_id": "tx-someone-else"}))
    crashed = state(example)
    code, refused = cli("doctor", example, "--repair", "--restore-journal")
    assert (code, refused["error"]["code"]) == (1, "journal_restore_refused")
    assert refused["error"]["details"]["damaged"] == [
        {"name": "entry-1.json", "path": manifest["entries"][1]["path"],
         "reason": "names another transaction"}]
    assert state(example) == crashed

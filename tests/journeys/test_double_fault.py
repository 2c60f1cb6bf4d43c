"""A double fault: a writer killed mid-write, then its journal manifest torn.

The journey a user lives: a write dies half-way (some files replaced, some
not, or every file in place and the receipt written), and the journal's
manifest, the one file that says which way to go, is cut short. Every
writer refuses with ``journal_corrupt`` and names one command; that command
(``doctor --repair --restore-journal``) puts every file back as it was before
the write, byte for byte, moves the journal and everything it took out of
the forest into ``journal.set-aside-<stamp>/``, and the forest audits clean;
the user's next ``remember`` works. A before-file that is damaged or gone is
named and refused, with nothing changed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from crashkit import structured_plan
from forestkit import canonical_state

from memory_forest import testhooks

JOURNAL = Path(".memory-forest/journal")
RESTORE = "memory-forest doctor ROOT --repair --restore-journal"
NEXT_FACT = ["remember", "--tree", "garden", "--branch", "beds", "--leaf", "tomatoes",
             "--title", "Tomatoes", "--content", "Stake them in June."]


def cli(*args, crash: str | None = None, human: bool = False) -> tuple[int, dict, str]:
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    env.pop(testhooks.CRASH_ENV, None)
    if crash:
        env[testhooks.CRASH_ENV] = crash
    tail = [] if human else ["--json"]
    proc = subprocess.run([sys.executable, "-m", "memory_forest", *map(str, args), *tail],
                          capture_output=True, text=True, env=env, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    body = json.loads(proc.stdout) if proc.stdout.strip() and not human else {}
    return proc.returncode, body, proc.stderr


def writer(root: Path, tmp_path: Path, kind: str) -> list:
    """One write of each shape: a new leaf (five files, new directories), events into
    the ISTM, and a structured plan that replaces a file and creates others."""
    if kind == "remember":
        return ["remember", root, "--tree", "kitchen", "--branch", "pickles", "--leaf",
                "dill", "--title", "Dill pickles", "--content", "Brine at 5 percent."]
    if kind == "capture":
        source = tmp_path / "events.jsonl"
        source.write_text("".join(json.dumps(
            {"event_id": f"fault-{n}", "observed_at": "2026-11-30T09:00:00Z",
             "source": "test-agent", "kind": "note", "payload": {"text": f"note {n}"}}) + "\n"
            for n in range(3)))
        return ["capture", root, "--file", source]
    plan = structured_plan(root, "double-fault")
    source = tmp_path / "plan.json"
    source.write_text(json.dumps(plan))
    return ["apply-structured", root, source]


def double_fault(root: Path, args: list, step: str) -> dict:
    """Kill the writer at ``step``, then cut its manifest in half; the manifest it had."""
    code, _, _ = cli(*args, crash=step)
    assert code == -9
    manifest = root / JOURNAL / "manifest.json"
    whole = manifest.read_bytes()
    manifest.write_bytes(whole[:len(whole) // 2])
    assert cli("unlock", root, "--stale")[0] == 0
    return json.loads(whole)


def files_in(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.parametrize("step", ["writing", "receipted"])
@pytest.mark.parametrize("kind", ["remember", "capture", "apply-structured"])
def test_one_command_puts_every_file_back(example: Path, tmp_path: Path, kind: str, step: str):
    root = example
    before = canonical_state(root)
    manifest = double_fault(root, writer(root, tmp_path, kind), step)
    crashed = canonical_state(root)
    touched = {entry["path"] for entry in manifest["entries"]}
    changed = {path for path in touched if crashed.get(path) != before.get(path)}
    assert changed, "the crash left nothing half-done: the test proves nothing"
    held = files_in(root / JOURNAL)
    receipt = root / ".memory-forest/receipts" / f"{manifest['transaction_id']}.json"
    assert receipt.exists() == (step == "receipted")

    # Every writer refuses, naming the one command.
    code, refused, _ = cli(*NEXT_FACT[:1], root, *NEXT_FACT[1:])
    assert (code, refused["error"]["code"]) == (1, "journal_corrupt")
    assert RESTORE in refused["error"]["message"]
    assert refused["error"]["details"]["next"] == RESTORE
    code, repaired, _ = cli("doctor", root, "--repair")
    assert (code, repaired["error"]["code"], repaired["error"]["details"]["next"]) == \
        (1, "journal_corrupt", RESTORE)
    assert canonical_state(root) == crashed  # naming it changed nothing

    code, done, _ = cli("doctor", root, "--repair", "--restore-journal")
    assert code == 0, done
    journal = done["repair"]["journal"]
    assert journal["action"] == "restored"
    assert journal["transaction_id"] == manifest["transaction_id"]
    assert set(journal["paths"]) == touched
    assert canonical_state(root) == before  # bytes, modes, mtimes; created directories gone

    # Nothing lost: what the restore took out of the forest, and the journal's own files
    # but the before-files it put back, are in the set-aside directory.
    assert re.fullmatch(r"\.memory-forest/journal\.set-aside-\d{8}T\d{6}Z(-\d+)?",
                        journal["set_aside"])
    aside = files_in(root / journal["set_aside"])
    put_back = {name for name in held if name.startswith("before-")
                and held[name] in {before[path][0] for path in changed if path in before}}
    assert {name: data for name, data in held.items() if name not in put_back} == \
        {name: aside[name] for name in held if name not in put_back}
    assert {crashed[path][0] for path in changed if path in crashed} <= set(aside.values())
    assert not receipt.exists()  # the write did not happen: no receipt says it did
    assert ("receipt-0" in aside) == (step == "receipted")

    code, audited, _ = cli("audit", root)
    assert code == 0 and audited["ok"], audited
    code, report, _ = cli("doctor", root)
    assert report["journal"] == {"state": "clear", "set_aside": [journal["set_aside"]]}
    code, written, _ = cli(*NEXT_FACT[:1], root, *NEXT_FACT[1:])
    assert code == 0 and written["created"] is True
    if kind == "remember":  # the same write, asked again, is a new write now
        code, again, _ = cli(*writer(root, tmp_path, kind))
        assert code == 0 and again["already_applied"] is False


@pytest.mark.parametrize("damage", ["changed", "removed"])
def test_a_damaged_before_file_is_named_and_nothing_changes(example: Path, tmp_path: Path,
                                                           damage: str):
    root = example
    manifest = double_fault(root, writer(root, tmp_path, "apply-structured"), "written")
    slot = next(entry["slot"] for entry in manifest["entries"] if entry["before"])
    image = root / JOURNAL / f"before-{slot}"
    if damage == "changed":  # every file is replaced at "written": this inode is the journal's
        image.write_bytes(image.read_bytes() + b"bit rot\n")
    else:
        image.unlink()
    crashed, held = canonical_state(root), files_in(root / JOURNAL)

    code, refused, _ = cli("doctor", root, "--repair", "--restore-journal")
    assert (code, refused["error"]["code"]) == (1, "journal_restore_refused")
    damaged = refused["error"]["details"]["damaged"]
    path = manifest["entries"][slot]["path"]
    reason = "does not match its sha256" if damage == "changed" else "missing"
    assert damaged == [{"name": f"before-{slot}", "path": path, "reason": reason}]
    assert "--set-aside-journal" in refused["error"]["message"]
    assert canonical_state(root) == crashed and files_in(root / JOURNAL) == held
    assert not list((root / ".memory-forest").glob("journal.set-aside-*"))

    # Told without --json, a person reads which file, and doctor --repair now names the
    # manual way out, the one that can still work.
    code, _, said = cli("doctor", root, "--repair", "--restore-journal", human=True)
    assert code == 1 and f"cannot restore: before-{slot} ({reason})" in said
    code, repaired, _ = cli("doctor", root, "--repair")
    assert repaired["error"]["details"]["next"] == \
        "memory-forest doctor ROOT --repair --set-aside-journal"
    assert cli(*NEXT_FACT[:1], root, *NEXT_FACT[1:])[1]["error"]["code"] == "journal_corrupt"

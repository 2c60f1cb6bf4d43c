"""A journal recovery cannot trust: what it still tells, restoring from it, setting it aside.

A manifest is rewritten when its state changes, and a torn rewrite (or a disk
error, or a hand edit) takes with it the one field recovery needs to choose a
direction. Each entry of a transaction therefore also has ``entry-N.json``,
written once while the journal is staged and never rewritten: the path its
``before-N`` and ``after-N`` are of, the sha256 of both images (``before``
null for a file the write created, ``after`` null for one it removes), the
directories the write created above it, and how many entries the transaction
has. Undoing needs nothing else, so ``restore`` can put the before-state back
whatever the manifest became.

A journal staged before entry files existed is read from the manifest's text
instead: the receipt draft it holds lists each path with both sha256s, and
sits before the entries, so a manifest cut anywhere after ``"entries"`` still
names every file.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..digest import sha256_hex
from ..errors import ForestError
from ..forest import Forest
from ..jsonio import StrictJSONError, dumps, loads_strict
from ..safety import DIR_MODE, fsync_dir, read_regular
from ..statefiles import (
    JOURNAL,
    JOURNAL_SET_ASIDE_PREFIX,
    JOURNAL_STAGING_PREFIX,
    MANIFEST,
    STATE_DIR,
    journal_dir,
    receipt_rel,
    state_rel,
)
from ..testhooks import crash_point
from .receipts import TRANSACTION_ID

ENTRY_FORMAT = 1
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
_ENTRY_NAME = re.compile(r"entry-(0|[1-9][0-9]{0,8})\.json")
_IMAGE_NAME = re.compile(r"(before|after)-(0|[1-9][0-9]{0,8})")
_TXID = re.compile(TRANSACTION_ID)
_MAX_ENTRIES = 1 << 20  # a count read back is checked before it bounds a loop
RESTORE_HINT = "memory-forest doctor ROOT --repair --restore-journal"
SET_ASIDE_HINT = "memory-forest doctor ROOT --repair --set-aside-journal"


def inside(rel: Any) -> bool:
    """A relative path recovery may rename onto: never outside the root."""
    return isinstance(rel, str) and all(part not in ("", ".", "..") for part in rel.split("/"))


def entry_name(slot: int) -> str:
    return f"entry-{slot}.json"


def entry_record(transaction_id: str, operation: str, slot: int, count: int, path: str,
                 before: dict[str, Any] | None, after: dict[str, Any] | None,
                 new_dirs: list[str]) -> bytes:
    return dumps({"format": ENTRY_FORMAT, "transaction_id": transaction_id,
                  "operation": operation, "slot": slot, "entries": count, "path": path,
                  "before": before, "after": after,
                  "dirs": [rel for rel in new_dirs if path.startswith(rel + "/")]}).encode()


# --- what a manifest still names ------------------------------------------------------------

# A manifest's entries as they appear in the text ``dumps`` writes, found even when the
# JSON around them is cut short or damaged.
_NAMED_PATH = re.compile(r'"path":"((?:[^"\\]|\\.)*)"')
# The receipt draft's "touched" list names each path with the sha256 of both its images.
_NAMED_IMAGES = re.compile(r'"after_sha256":(?:"([0-9a-f]{64})"|null),"before_sha256":'
                           r'(?:"([0-9a-f]{64})"|null),"path":"((?:[^"\\]|\\.)*)"')
# Keys are sorted, so the manifest's own operation, state and id come after the draft's:
# the last match of each is the manifest's.
_NAMED_FIELD = re.compile(r'"(transaction_id|operation|state)":"((?:[^"\\]|\\.)*)"')
# The manifest's created directories ("dirs", its first key) and the draft's copy.
_NAMED_DIRS = re.compile(r'"(?:dirs|created_dirs)":(\[(?:"(?:[^"\\]|\\.)*",?)*\])')


def _manifest_text(root: Path) -> str:
    try:
        raw = read_regular(root, state_rel(JOURNAL, MANIFEST), MAX_MANIFEST_BYTES)
    except ForestError:
        raw = b""
    return raw.decode("utf-8", "replace")


def salvage(root: Path) -> dict[str, Any]:
    """What a journal that cannot be loaded still tells: the paths and ids its manifest
    names (read as text, each string checked on its own) and the images staged beside it.

    Nothing here is trusted to drive a recovery; it is shown so the operator can
    check those files before restoring or setting the journal aside.
    """
    text = _manifest_text(root)
    fields = {name: _string(value) for name, value in _NAMED_FIELD.findall(text)}
    paths = set(filter(None, map(_string, _NAMED_PATH.findall(text))))
    images: dict[str, str | None] = {}
    for after, before, path in _NAMED_IMAGES.findall(text):
        for image in filter(None, (after, before)):
            images[image] = _string(path)
    entries, _ = _entry_files(root)
    for entry in entries.values():
        paths.add(entry["path"])
        for image in (entry["before"], entry["after"]):
            if image is not None:
                images[image["sha256"]] = entry["path"]
    return {"transaction_id": fields.get("transaction_id"), "operation": fields.get("operation"),
            "phase": fields.get("state"), "paths": sorted(paths),
            "staged": _staged(root, images)}


def _string(literal: str) -> str | None:
    try:
        value = loads_strict(f'"{literal}"'.encode())
    except StrictJSONError:
        return None
    return value if isinstance(value, str) else None


def _names(root: Path) -> list[str]:
    """The journal's files; none when ``journal/`` is not a directory (never followed)."""
    try:
        if not stat.S_ISDIR(os.lstat(journal_dir(root)).st_mode):
            return []
        return sorted(os.listdir(journal_dir(root)))
    except OSError:
        return []


def _staged(root: Path, images: dict[str, str | None]) -> list[dict[str, Any]]:
    """Each file in the journal; for an image, the path it is of when its sha256 says."""
    staged = []
    for name in _names(root):
        try:
            data = read_regular(root, state_rel(JOURNAL, name), MAX_MANIFEST_BYTES)
        except ForestError:
            staged.append({"name": name, "size": None, "of": None})
            continue
        of = images.get(sha256_hex(data)) if _IMAGE_NAME.fullmatch(name) else None
        staged.append({"name": name, "size": len(data), "of": of})
    return staged


def _entry_files(root: Path) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """The entry files that read as one (by slot), and what is wrong with the others."""
    entries: dict[int, dict[str, Any]] = {}
    damaged = []
    for name in _names(root):
        match = _ENTRY_NAME.fullmatch(name)
        if not match:
            continue
        try:
            record = loads_strict(read_regular(root, state_rel(JOURNAL, name), 1 << 20))
        except (ForestError, StrictJSONError):
            record = None
        if _entry_ok(record, int(match.group(1))):
            entries[record["slot"]] = record
        else:
            damaged.append({"name": name, "path": None, "reason": "unreadable"})
    return entries, damaged


def _entry_ok(record: Any, slot: int) -> bool:
    def image(value: Any) -> bool:
        return isinstance(value, dict) and isinstance(value.get("sha256"), str)

    return (isinstance(record, dict) and record.get("format") == ENTRY_FORMAT
            and record.get("slot") == slot and isinstance(record.get("entries"), int)
            and slot < record["entries"] <= _MAX_ENTRIES
            and isinstance(record.get("transaction_id"), str)
            and isinstance(record.get("operation"), str) and inside(record.get("path"))
            and "after" in record and (record["after"] is None or image(record["after"]))
            and (record.get("before") is None or image(record["before"]))
            and isinstance(record.get("dirs"), list) and all(map(inside, record["dirs"])))


# --- restoring the before-state ---------------------------------------------------------------


@dataclass
class Plan:
    """What ``restore`` will do, every file checked before anything moves."""

    transaction_id: str | None
    operation: str | None
    steps: list[dict[str, Any]] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return [step["path"] for step in self.steps]


def restore_plan(forest: Forest) -> Plan:
    """Each path the journal changed, with what puts it back: ``restored`` from a
    before-file, ``removed`` (a file the write created), ``unchanged`` or ``absent``.

    Fails with ``journal_restore_refused``, nothing moved, when a file cannot be
    identified or a before-image it needs is gone or does not hash to what was
    recorded: those are named (``details.damaged``).
    """
    root, max_bytes = forest.root, forest.limits["max_file_bytes"]
    if not _names(root):
        raise _refused([{"name": JOURNAL, "path": None, "reason": "not a directory"}], {})
    entries, damaged = _entry_files(root)
    if entries or damaged:
        records, plan = _from_entries(entries, damaged)
    else:
        records, plan = _from_manifest_text(root, damaged)
    befores = _before_images(root, max_bytes)
    for slot, path, before, after in records:
        step: dict[str, Any] = {"path": path, "slot": slot, "after": after}
        current = _current(root, path, max_bytes, damaged)
        if before is None:
            step["action"] = "absent" if current is None else "removed"
        elif current == before:
            step["action"] = "unchanged"
        else:
            # An entry file names its own before-file; a journal from before them is
            # matched by sha256, each before-file used once.
            names = [f"before-{slot}"] if slot is not None else sorted(befores)
            source = next((name for name in names if befores.get(name) == before), None)
            if source is None:
                name = f"before-{slot}" if slot is not None else None
                gone = name is None or not os.path.lexists(journal_dir(root) / name)
                damaged.append({"name": name, "path": path,
                                "reason": "missing" if gone else "does not match its sha256"})
            else:
                del befores[source]
                step.update(action="restored", source=source)
        plan.steps.append(step)
    if damaged:
        raise _refused(damaged, {"transaction_id": plan.transaction_id,
                                 "paths": plan.paths})
    return plan


def _from_entries(entries: dict[int, dict[str, Any]], damaged: list[dict[str, Any]]
                  ) -> tuple[list[tuple[int | None, str, str | None, str | None]], Plan]:
    counts = {entry["entries"] for entry in entries.values()}
    total = max(counts | {len(entries) + len(damaged)})
    for slot in range(total):
        if slot not in entries and not any(item["name"] == entry_name(slot)
                                           for item in damaged):
            damaged.append({"name": entry_name(slot), "path": None, "reason": "missing"})
    first = next(iter(entries.values()), {})
    plan = Plan(first.get("transaction_id"), first.get("operation"))
    for slot, entry in sorted(entries.items()):  # one journal holds one transaction
        if entry["transaction_id"] != plan.transaction_id:
            damaged.append({"name": entry_name(slot), "path": entry["path"],
                            "reason": "names another transaction"})
    plan.dirs = sorted({rel for entry in entries.values() for rel in entry["dirs"]},
                       key=lambda rel: (rel.count("/"), rel))
    records = [(slot, entry["path"], (entry["before"] or {}).get("sha256"),
                (entry["after"] or {}).get("sha256")) for slot, entry in sorted(entries.items())]
    return records, plan


def _from_manifest_text(root: Path, damaged: list[dict[str, Any]]
                        ) -> tuple[list[tuple[int | None, str, str | None, str | None]], Plan]:
    """A journal from before entry files: the receipt draft in the manifest's text."""
    text = _manifest_text(root)
    fields = {name: _string(value) for name, value in _NAMED_FIELD.findall(text)}
    plan = Plan(fields.get("transaction_id"), fields.get("operation"))
    if '"entries":' not in text:  # cut inside the draft: files may be missing from it
        damaged.append({"name": MANIFEST, "path": None,
                        "reason": "cut before the list of files it changes"})
        return [], plan
    records = []
    for after, before, literal in _NAMED_IMAGES.findall(text):
        path = _string(literal)
        if not inside(path):
            damaged.append({"name": MANIFEST, "path": None, "reason": "names a path outside"})
            continue
        records.append((None, path, before or None, after or None))
    for listed in _NAMED_DIRS.findall(text):
        try:
            dirs = loads_strict(listed.encode())
        except StrictJSONError:
            continue
        plan.dirs += [rel for rel in dirs if inside(rel) and rel not in plan.dirs]
    plan.dirs.sort(key=lambda rel: (rel.count("/"), rel))
    return records, plan


def _before_images(root: Path, max_bytes: int) -> dict[str, str]:
    """name -> sha256 of each before-file that can be read."""
    found = {}
    for name in _names(root):
        if name.startswith("before-") and _IMAGE_NAME.fullmatch(name):
            try:
                found[name] = sha256_hex(read_regular(root, state_rel(JOURNAL, name), max_bytes))
            except ForestError:
                continue  # a step that needs it reports it
    return found


def _current(root: Path, rel: str, max_bytes: int, damaged: list[dict[str, Any]]
             ) -> str | None:
    try:
        return sha256_hex(read_regular(root, rel, max_bytes))
    except ForestError as exc:
        if exc.code != "not_found":
            damaged.append({"name": None, "path": rel, "reason": exc.code})
        return None


def _refused(damaged: list[dict[str, Any]], details: dict[str, Any]) -> ForestError:
    named = ", ".join(item["name"] or item["path"] for item in damaged[:5])
    return ForestError("journal_restore_refused", "the journal cannot put every file back "
                       f"({named}); nothing was changed. Put back those files by hand "
                       "('memory-forest doctor ROOT' lists what the journal holds), then "
                       f"run '{SET_ASIDE_HINT}'",
                       {**details, "damaged": damaged, "next": SET_ASIDE_HINT})


def restore(root: Path, plan: Plan) -> dict[str, Any]:
    """Carry out ``plan``; every byte it takes out of the forest goes into the journal
    (``displaced-N``, and the transaction's receipt as ``receipt.json``), which is
    set aside next. Idempotent: run again after a crash, it finds the steps done.
    """
    folder = journal_dir(root)
    displaced: dict[str, str] = {}
    for number, step in enumerate(reversed(plan.steps)):
        target = root / step["path"]
        if step["action"] in ("restored", "removed") and os.path.lexists(target):
            name = _free(folder, "displaced")
            os.rename(target, folder / name)
            displaced[name] = step["path"]
        if step["action"] == "restored":
            os.rename(folder / step["source"], target)
        fsync_dir(target.parent)
        crash_point(f"restoring:{number + 1}")
    for rel in reversed(plan.dirs):
        try:
            os.rmdir(root / rel)
            fsync_dir((root / rel).parent)
        except OSError:
            pass  # not empty, or already gone: leave it
    txid = plan.transaction_id
    if txid and _TXID.fullmatch(txid) and os.path.lexists(root / receipt_rel(txid)):
        os.rename(root / receipt_rel(txid), folder / _free(folder, "receipt"))
    fsync_dir(folder)
    done: dict[str, list[str]] = {"restored": [], "removed": [], "unchanged": [], "absent": []}
    for step in plan.steps:
        done[step["action"]].append(step["path"])
    return {**done, "displaced": displaced}


def _free(folder: Path, stem: str) -> str:
    n = 0
    while os.path.lexists(folder / f"{stem}-{n}"):
        n += 1
    return f"{stem}-{n}"


# --- setting a journal aside ----------------------------------------------------------------


def set_aside_names(root: Path) -> list[str]:
    try:
        names = os.listdir(root / STATE_DIR)
    except OSError:
        return []
    return sorted(state_rel(name) for name in names if name.startswith(JOURNAL_SET_ASIDE_PREFIX))


def set_aside(root: Path) -> str:
    """Move ``journal/`` to ``journal.set-aside-<UTC stamp>/`` (0700) and return where.

    Never a delete: the manifest and every image keep their bytes, for the
    operator to read or restore by hand. Staging debris is removed first (it
    never held a canonical byte). Caller holds the lock and has checked the forest.
    """
    state_dir = root / STATE_DIR
    for name in os.listdir(state_dir):
        if name.startswith(JOURNAL_STAGING_PREFIX):
            shutil.rmtree(state_dir / name)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target, n = state_dir / f"{JOURNAL_SET_ASIDE_PREFIX}{stamp}", 1
    while os.path.lexists(target):
        n += 1
        target = state_dir / f"{JOURNAL_SET_ASIDE_PREFIX}{stamp}-{n}"
    os.rename(state_dir / JOURNAL, target)
    if stat.S_ISDIR(os.lstat(target).st_mode):  # a symlink moved aside is never followed
        os.chmod(target, DIR_MODE)
    fsync_dir(state_dir)
    return state_rel(target.name)

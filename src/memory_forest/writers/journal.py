"""The write-ahead journal: every transaction can be finished or undone after a crash.

Layout, under ``.memory-forest/journal/`` (one transaction at a time, under
the lock)::

    manifest.json   transaction id, operation, state, entries, created dirs,
                    and the receipt draft
    entry-N.json    entry N on its own, never rewritten (see ``journal_torn``)
    before-N        the previous file of entry N (a hard link to it, or a copy)
    after-N         the new bytes of entry N, until they are renamed into place
                    (none for a file the write removes: its entry's ``after`` is null)

A transaction is staged in ``journal-staging-<hex>/`` and renamed to
``journal/`` in one step, so a live journal always has its manifest.

A journal recovery cannot trust (a manifest that is not valid JSON or lacks
a field, an image it needs gone) stops with ``journal_corrupt``; the
operator's ``doctor --repair --restore-journal`` puts the before-state back
from the entry files and sets the journal aside (``journal_torn``).

The rule recovery follows:

- state ``prepared`` (any canonical file may or may not have been replaced):
  **roll back**. Each file whose bytes are not the before-image gets it back
  (renaming ``before-N``, the original inode, over it: same bytes, mode and
  mtime), files that did not exist are removed, created directories that are
  empty again are removed.
- state ``rolling_back`` (a handled failure began to undo the transaction):
  **roll back**, as for ``prepared``.
- state ``written`` (every canonical file is in place and fsynced): **roll
  forward**. Any file still missing its after-image gets it (a removed file is
  unlinked again), and the index
  update and the receipt, which are idempotent, are done again.

Both directions are idempotent, so a crash during recovery is recovered by
the next recovery. The journal is removed by unlinking the manifest first: a
``journal/`` without a manifest, and any ``journal-staging-*``, is debris
from a run that never changed a canonical byte.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import index
from ..digest import sha256_hex
from ..errors import ForestError
from ..forest import Forest
from ..jsonio import StrictJSONError, dumps, loads_strict
from ..safety import (
    fsync_dir,
    mkdir_private,
    read_regular,
    write_new_private,
    write_private,
)
from ..statefiles import (
    JOURNAL,
    JOURNAL_STAGING_PREFIX,
    MANIFEST,
    STATE_DIR,
    index_path,
    journal_dir,
    state_rel,
)
from ..testhooks import crash_point
from . import receipts
from .journal_torn import (
    MAX_MANIFEST_BYTES,
    RESTORE_HINT,
    entry_name,
    entry_record,
    inside,
    salvage,
    set_aside_names,
)

FORMAT = 1

# --- test hooks ------------------------------------------------------------------------------
# crash_point(step) SIGKILLs the process or raises at a named step (see testhooks). The
# writers' steps: staged, journaled, writing, written, indexed, receipted, recovering;
# writing:N and recovering:N follow the N-th file (writing is writing:1, recovering is
# recovering:1), replace:manifest.json is the middle of a manifest rewrite, and
# restoring:N follows the N-th file a restore put back (journal_torn).
# ----------------------------------------------------------------------------------------------


@dataclass
class Journal:
    root: Path
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return journal_dir(self.root)

    @property
    def entries(self) -> list[dict[str, Any]]:
        return self.manifest["entries"]

    @property
    def touched(self) -> list[str]:
        return [entry["path"] for entry in self.entries]

    def _save(self) -> None:
        write_private(self.dir / MANIFEST, dumps(self.manifest).encode())


def begin(root: Path, transaction_id: str, operation: str, changes: dict[str, bytes | None],
          befores: dict[str, bytes | None], new_dirs: list[str],
          draft: dict[str, Any]) -> Journal:
    """Stage before- and after-images and publish the journal (state ``prepared``)."""
    state_dir = root / STATE_DIR
    staging = state_dir / f"{JOURNAL_STAGING_PREFIX}{os.urandom(6).hex()}"
    mkdir_private(staging)
    try:
        # The staging directory is new and private, and appears as journal/ only by the
        # rename below: its files need their bytes on disk, not renames of their own.
        entries = []
        for slot, path in enumerate(sorted(changes)):
            before, after = befores.get(path), changes[path]
            if before is not None:
                _keep_before(root / path, staging / f"before-{slot}", before)
            if after is not None:  # None: the write removes the file
                write_new_private(staging / f"after-{slot}", after)
            entry = {"path": path, "slot": slot, "after": None if after is None else _image(after),
                     "before": None if before is None else _image(before)}
            write_new_private(staging / entry_name(slot), entry_record(
                transaction_id, operation, slot, len(changes), path, entry["before"],
                entry["after"], new_dirs))
            entries.append(entry)
        crash_point("staged")
        manifest = {"format": FORMAT, "transaction_id": transaction_id, "operation": operation,
                    "state": "prepared", "entries": entries, "dirs": new_dirs, "draft": draft}
        write_new_private(staging / MANIFEST, dumps(manifest).encode())
        fsync_dir(staging)
        os.rename(staging, state_dir / JOURNAL)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    fsync_dir(state_dir)
    return Journal(root, manifest)


def _image(data: bytes) -> dict[str, Any]:
    return {"sha256": sha256_hex(data), "size": len(data)}


def _keep_before(target: Path, keep: Path, data: bytes) -> None:
    """A hard link keeps the original inode (bytes, mode, mtime); a copy where links fail."""
    try:
        os.link(target, keep, follow_symlinks=False)
        return
    except OSError:
        pass
    st = os.lstat(target)
    write_new_private(keep, data)
    os.utime(keep, ns=(st.st_atime_ns, st.st_mtime_ns))


def apply(journal: Journal) -> None:
    """Put every after-image in place, then mark the journal ``written``."""
    root = journal.root
    for rel in journal.manifest["dirs"]:
        if not os.path.lexists(root / rel):
            mkdir_private(root / rel)
            fsync_dir((root / rel).parent)
    parents: dict[Path, None] = {}
    for number, entry in enumerate(journal.entries):
        target = root / entry["path"]
        if entry["after"] is None:
            _remove(target)
        else:
            os.rename(journal.dir / f"after-{entry['slot']}", target)
        parents[target.parent] = None
        crash_point(f"writing:{number + 1}")  # that many files are in place
        if number == 0:
            crash_point("writing")
    for parent in parents:  # every rename durable before the state says so
        fsync_dir(parent)
    journal.manifest["state"] = "written"
    journal._save()
    crash_point("written")


def finish(journal: Journal) -> None:
    """Remove the journal: the manifest first, so a half-removed journal is plain debris.

    No fsync here: if a power loss brought a finished journal back, its state is
    ``written`` and rolling it forward again is a no-op (the files, the index rows
    and the receipt are already what it describes).
    """
    (journal.dir / MANIFEST).unlink()
    shutil.rmtree(journal.dir)


def rollback(journal: Journal, max_bytes: int) -> None:
    """Give every touched path its before-image back; remove directories we created.

    The state becomes ``rolling_back`` first, so that a recovery after a crash
    in here goes on undoing (the after-images may already be gone).
    """
    root = journal.root
    if journal.manifest["state"] != "rolling_back":
        journal.manifest["state"] = "rolling_back"
        journal._save()
    for number, entry in enumerate(reversed(journal.entries)):
        target = root / entry["path"]
        current = _current_sha(root, entry["path"], max_bytes)
        before = entry["before"]
        if before is None:
            if current is not None:
                target.unlink()
                fsync_dir(target.parent)
        elif current != before["sha256"]:
            keep = journal.dir / f"before-{entry['slot']}"
            if not os.path.lexists(keep):
                raise _corrupt(entry["path"])
            os.rename(keep, target)
            fsync_dir(target.parent)
        crash_point(f"recovering:{number + 1}")
        if number == 0:
            crash_point("recovering")
    for rel in reversed(journal.manifest["dirs"]):
        try:
            os.rmdir(root / rel)
            fsync_dir((root / rel).parent)
        except OSError:
            pass  # not created by us after all, or not empty: leave it


def roll_forward(journal: Journal, max_bytes: int) -> None:
    root = journal.root
    for number, entry in enumerate(journal.entries):
        current = _current_sha(root, entry["path"], max_bytes)
        if entry["after"] is None:
            if current is not None:
                _remove(root / entry["path"])
                fsync_dir((root / entry["path"]).parent)
            continue
        if current == entry["after"]["sha256"]:
            continue
        staged = journal.dir / f"after-{entry['slot']}"
        if not os.path.lexists(staged):
            raise _corrupt(entry["path"])
        os.rename(staged, root / entry["path"])
        fsync_dir((root / entry["path"]).parent)
        crash_point(f"recovering:{number + 1}")
        if number == 0:
            crash_point("recovering")


def _remove(target: Path) -> None:
    """Unlink a file the write takes out; its before-image in the journal keeps the bytes."""
    try:
        target.unlink()
    except FileNotFoundError:
        pass


def _current_sha(root: Path, rel: str, max_bytes: int) -> str | None:
    try:
        return sha256_hex(read_regular(root, rel, max_bytes))
    except ForestError as exc:
        if exc.code == "not_found":
            return None
        raise


def _corrupt(path: str) -> ForestError:
    return ForestError("journal_corrupt", "the write-ahead journal is missing an image it "
                       f"needs; the forest was left as it is; run '{RESTORE_HINT}'",
                       {"path": path, "next": RESTORE_HINT})


# --- recovery ---------------------------------------------------------------------------------


def pending(root: Path) -> bool:
    state_dir = root / STATE_DIR
    try:
        names = os.listdir(state_dir)
    except FileNotFoundError:
        return False
    return any(name == JOURNAL or name.startswith(JOURNAL_STAGING_PREFIX) for name in names)


def describe(root: Path) -> dict[str, Any]:
    """What ``doctor`` reports: no journal, debris, an interrupted or a corrupt transaction.

    A corrupt manifest is described, not raised: what it still tells (see
    ``salvage``) is what the operator checks before ``--restore-journal``.
    """
    found = set_aside_names(root)
    extra = {"set_aside": found} if found else {}
    if not pending(root):
        return {"state": "clear", **extra}
    try:
        journal = load(root)
    except ForestError as exc:
        if exc.code != "journal_corrupt":
            raise
        return {"state": "corrupt", "code": exc.code, "reason": exc.message.split(";")[0],
                **salvage(root), **extra}
    if journal is None:
        return {"state": "debris", **extra}
    return {"state": "interrupted", "transaction_id": journal.manifest["transaction_id"],
            "operation": journal.manifest["operation"],
            "phase": journal.manifest["state"], "paths": journal.touched, **extra}


def load(root: Path) -> Journal | None:
    journal = Journal(root)
    try:
        raw = read_regular(root, state_rel(JOURNAL, MANIFEST), MAX_MANIFEST_BYTES)
    except ForestError as exc:
        if exc.code == "not_found":
            return None
        raise _unreadable(f"the journal manifest cannot be read ({exc.code})") from None
    try:
        journal.manifest = loads_strict(raw)
    except StrictJSONError:
        raise _unreadable("the journal manifest is not valid JSON") from None
    if not isinstance(journal.manifest, dict) or journal.manifest.get("format") != FORMAT:
        raise _unreadable("the journal manifest has an unknown format")
    if not _well_formed(journal.manifest):
        raise _unreadable("the journal manifest lacks a field recovery needs")
    return journal


def _well_formed(manifest: dict[str, Any]) -> bool:
    """Every field recovery reads, with its type: JSON that parses is not yet a manifest."""
    def image(value: Any) -> bool:
        return isinstance(value, dict) and isinstance(value.get("sha256"), str)

    entries = manifest.get("entries")
    return (isinstance(manifest.get("transaction_id"), str)
            and isinstance(manifest.get("operation"), str)
            and manifest.get("state") in ("prepared", "written", "rolling_back")
            and isinstance(manifest.get("dirs"), list)
            and all(inside(rel) for rel in manifest["dirs"])
            and isinstance(manifest.get("draft"), dict)
            and isinstance(entries, list)
            and all(isinstance(entry, dict) and inside(entry.get("path"))
                    and isinstance(entry.get("slot"), int)
                    and "after" in entry  # a missing key is damage, never a removal
                    and (entry["after"] is None or image(entry["after"]))
                    and (entry.get("before") is None or image(entry["before"]))
                    and (entry.get("before") or entry.get("after")) is not None
                    for entry in entries))


def _unreadable(what: str) -> ForestError:
    return ForestError("journal_corrupt", f"{what}; run '{RESTORE_HINT}' to put back the "
                       "files it was changing", {"path": state_rel(JOURNAL, MANIFEST),
                                                 "next": RESTORE_HINT})


def recover(forest: Forest) -> dict[str, Any] | None:
    """Finish or undo an interrupted transaction (caller holds the lock); None if none."""
    root = forest.root
    if not pending(root):
        return None
    state_dir = root / STATE_DIR
    for name in os.listdir(state_dir):
        if name.startswith(JOURNAL_STAGING_PREFIX):
            shutil.rmtree(state_dir / name)
    journal = load(root) if (state_dir / JOURNAL).exists() else None
    if journal is None:
        if (state_dir / JOURNAL).exists():
            shutil.rmtree(state_dir / JOURNAL)
        fsync_dir(state_dir)
        return {"action": "discarded_debris"}
    max_bytes = forest.limits["max_file_bytes"]
    manifest = journal.manifest
    if manifest["state"] == "written":
        roll_forward(journal, max_bytes)
        summary = index.update_paths(forest, journal.touched) \
            if index_path(root).exists() else {"mode": "skipped"}
        if receipts.load(forest, manifest["transaction_id"]) is None:
            receipts.write(forest, receipts.complete(manifest["draft"], summary))
        action = "rolled_forward"
    else:
        rollback(journal, max_bytes)
        if index_path(root).exists():
            index.update_paths(forest, journal.touched)
        action = "rolled_back"
    finish(journal)
    return {"action": action, "transaction_id": manifest["transaction_id"],
            "operation": manifest["operation"], "paths": journal.touched}

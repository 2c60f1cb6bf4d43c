"""The derived SQLite index: full builds, its state, and the one-file writer's update.

The index is derived state: it can be deleted and rebuilt from the canonical
files at any time. A full build writes a new file beside the old one and
renames it into place, so readers see the old index or the new one, never a
half-built one. An incremental build (``incremental.py``) applies every
change in one transaction. Neither ever writes a canonical byte. Opening the
index to read it is ``indexreader``'s, which the per-turn path loads without
this module.

A document that cannot be read as one is quarantined: it has no row in
``docs`` (an earlier row is removed) and one in ``quarantine`` with its stat
and facts, so the index still accounts for every file on disk; its words are
kept in ``left_out_terms``, so that a query can say a file it did not search
holds them. Every standing problem is kept in ``problems``, so an
incremental build reports the whole forest's problems while re-judging only
what changed.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import indexheal, quarantine
from .building import (
    READER_VERSION,
    Judged,
    Progress,
    Refreshed,
    compare,
    forget_file,
    fragment_texts,
    full_text,
    judge,
    listed,
    names_digest,
    references,
    refuse_forest_faults,
    surveyed,
    unread_words,
    write_file,
)
from .checks import timed
from .errors import ForestError
from .incremental import update
from .indexreader import connect
from .parsing import parse
from .quarantine import keeps_out, left_out
from .safety import FILE_MODE, Entry, mkdir_private
from .snapshot import Presence, survey
from .statefiles import index_path, index_temp_path, state_dir
from .store import filerows, schema, statements
from .testhooks import crash_point
from .validate import casefold_collisions

if TYPE_CHECKING:
    from .checks import Recorder
    from .facts import Facts
    from .forest import Forest
    from .issues import Issue
    from .quarantine import Triage
    from .routes import Route
    from .snapshot import Snapshot

INSERT_BATCH = 256  # documents per executemany in a full build


# --- the index as a whole -------------------------------------------------------------------


def usable(forest: Forest) -> bool:
    """Whether a writer (holding the lock) can use the index as it is, after healing its files.

    False for an absent index and for one a full build would replace, so a
    write rebuilds it first and carries on instead of failing on derived state.
    The check is the forest's own reader, kept open: the write reads through it.
    """
    indexheal.heal(forest.root)
    try:
        forest.reader()
    except ForestError as exc:
        if exc.code == "index_missing" or exc.code in _REBUILDABLE:
            return False
        raise
    return True


def repair(forest: Forest) -> dict[str, Any]:
    """``doctor --repair`` (under the lock): the index's files healed, and a full rebuild
    when the index is still unusable; an absent index with nothing beside it is left to
    ``index``."""
    root = forest.root
    damaged = [entry["piece"] for entry in indexheal.damaged(root)]
    if usable(forest) or not (damaged or index_path(root).exists()):
        return {"healed": damaged, "rebuilt": False}
    try:
        build(forest, full=True)
    except ForestError as exc:  # a forest-level fault: the rest of the report says which
        return {"healed": damaged, "rebuilt": False, "error": exc.code}
    return {"healed": damaged, "rebuilt": True}


def state(forest: Forest) -> dict[str, Any]:
    """``absent``, ``current`` or ``stale`` (listing differs), or ``invalid`` with a code."""
    root = forest.root
    if not index_path(root).exists():
        return {"state": "absent"}
    try:
        con = connect(root)
    except ForestError as exc:
        return {"state": "invalid", "code": exc.code}
    with con:
        stats, held = filerows.known_files(con)
        unread = schema.unread(con)
    con.close()
    snap = survey(forest)  # read only now: an absent index needs no config
    diff = compare(stats, snap.documents, snap.entries)
    counts = {"documents": len(stats) - len(held), "quarantined": left_out(held, unread)}
    if diff.new or diff.changed or diff.deleted:
        return {"state": "stale", "changed": len(diff.new) + len(diff.changed),
                "deleted": len(diff.deleted), **counts}
    return {"state": "current", **counts}


# --- building -------------------------------------------------------------------------------


def build(forest: Forest, full: bool = False, progress: Progress | None = None) -> dict[str, Any]:
    """Check the forest, then bring the index up to date (caller holds the lock).

    Only a forest-level fault raises; a document that cannot be read is quarantined
    and reported in ``problems``.
    """
    started = time.perf_counter()
    done = refresh(forest, full, progress)
    return {**done.written, **done.triage.fields(), "warnings": done.triage.counts()["warnings"],
            "seconds": round(time.perf_counter() - started, 4)}


# An index of another schema version, or one SQLite cannot read, is derived state that
# a full build replaces; 'index' then always works, and says why it started over.
_REBUILDABLE = {"index_schema_mismatch": "schema_mismatch", "index_corrupt": "index_corrupt",
                "index_unavailable": "index_unavailable"}


def refresh(forest: Forest, full: bool = False, progress: Progress | None = None,
            recorder: Recorder | None = None) -> Refreshed:
    """Build incrementally when the index allows it, else in full.

    ``maintain`` hands in a ``recorder`` to time the steps (``scan``: the
    walk and the reads; ``validate``; ``audit``; ``index``: the write). An
    incremental build that had to start over says why in ``rebuilt``.
    """
    root = forest.root
    healed = indexheal.heal(root)
    reason = None if full else _why_not_incremental(root)
    if not full and reason is None:
        done = update(forest, progress, recorder)
    else:
        done = rebuild(forest, progress, recorder)
    if reason and reason != "absent":
        done.written["rebuilt"] = reason
    if healed:
        done.written["healed"] = healed
    if recorder is not None:
        recorder.steps["index"].update(done.written)  # the write step says what it wrote
    return done


def _why_not_incremental(root: Path) -> str | None:
    if not index_path(root).exists():
        return "absent"
    try:
        con = connect(root)
    except ForestError as exc:
        if exc.code not in _REBUILDABLE:
            raise
        return _REBUILDABLE[exc.code]
    try:
        return None if schema.reader_version(con) == READER_VERSION else "reader_changed"
    except sqlite3.DatabaseError:
        return "index_corrupt"
    finally:
        con.close()


def rebuild(forest: Forest, progress: Progress | None = None,
            recorder: Recorder | None = None) -> Refreshed:
    """Read every document into a new index file, judge the forest, publish the file.

    Documents are inserted as they are parsed and their text is dropped at
    once, so memory holds the facts of the forest, never its text; the few
    a judgement quarantines are taken out again before the file is published.
    """
    root = forest.root
    snap = timed(recorder, "scan", lambda: surveyed(forest, recorder), listed)
    refuse_forest_faults(snap)  # a missing layer is known before anything is read
    if not state_dir(root).exists():
        mkdir_private(state_dir(root))
    tmp = index_temp_path(root)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        try:
            schema.create(con)
            with con:
                read = timed(recorder, "read", lambda: _read_all(con, snap, progress), _counted)
                present = Presence(lambda path: path in read.routes or path in snap.unread)
                judged = judge(snap, lambda: casefold_collisions([*snap.dirs, *read.routes]),
                               read.routes, read.facts, present, read.issues, recorder)
                triage = quarantine.triage(judged.every(), snap.entries, snap.unread)
                held = timed(recorder, "index", lambda: _finish(con, snap, read, triage, judged),
                             _held)
            schema.end_bulk_load(con)
        finally:
            con.close()
        _fsync(tmp)
        indexheal.discard_old(root)
        os.replace(tmp, index_path(root))
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    expected = set(read.facts) - held
    written = {"mode": "full", "added": len(expected), "changed": 0, "deleted": 0,
               "unchanged": 0, "documents": len(expected)}
    return Refreshed(triage, written, lambda: expected, snap.config)


class _Read:
    """What a full build's read found: routes, facts, read problems and document rows."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.routes: dict[str, Route] = {}
        self.facts: dict[str, Facts] = {}
        self.rowids: dict[str, int] = {}
        self.issues: list[Issue] = []


def _read_all(con: sqlite3.Connection, snap: Snapshot, progress: Progress | None) -> _Read:
    entries = snap.documents
    read = _Read(len(entries))
    records = parse(snap.root, entries, snap.config.limits, keep_text=True)
    batch: list[statements.Row] = []
    try:
        for number, parsed in enumerate(records, start=1):
            read.issues.extend(parsed.issues)
            if parsed.route is not None:
                read.routes[parsed.path] = parsed.route
            if parsed.facts is not None and any(map(keeps_out, parsed.facts.issues)):
                # Left out whatever the rest of the forest says: its words go straight to
                # 'left_out_terms', and 'terms' never carries (and has to forget) its text.
                read.facts[parsed.path] = parsed.facts
                statements.keep_words(con, parsed.path, full_text(parsed))
            elif parsed.facts is not None:
                read.facts[parsed.path] = parsed.facts
                read.rowids[parsed.path] = rowid = len(read.rowids) + 1
                batch.append((rowid, parsed.route, parsed.facts,
                              snap.entries[parsed.path].ino, full_text(parsed),
                              fragment_texts(parsed) if parsed.fragments else []))
            if len(batch) >= INSERT_BATCH:
                statements.insert_many(con, batch)
                batch.clear()
            if progress and number % 500 == 0:
                progress(number, len(entries))
        statements.insert_many(con, batch)
    finally:
        records.close()  # a pool is shut down and joined before the build goes on
    return read


def _finish(con: sqlite3.Connection, snap: Snapshot, read: _Read, triage: Triage,
            judged: Judged) -> set[str]:
    """Take the quarantined documents out, record references, problems and the build."""
    held = set(triage.quarantined)
    for path in sorted(held):
        if path in read.rowids:
            statements.keep_indexed_words(con, path, read.rowids[path])
            statements.delete(con, read.rowids[path])
        elif path not in read.facts:
            statements.keep_words(con, path, unread_words(path, read.routes.get(path)))
        entry = snap.entries[path]
        facts = read.facts.get(path)
        statements.hold(con, path, entry.size, entry.mtime_ns, entry.ino, path in read.routes,
                   facts.id if facts else None)
    for path, facts in read.facts.items():
        targets, event_ids, sources = references(read.routes[path], facts)
        if targets or event_ids or sources:
            statements.set_references(con, path, targets, event_ids, sources)
    statements.replace_problems(con, set(), judged.scoped(), names=True)
    statements.set_built(con, time.time_ns(), READER_VERSION, snap.unread, names_digest(snap))
    crash_point("indexing")
    return held


def _counted(read: _Read) -> dict[str, int]:
    return {"files": read.count, "read": read.count}


def _held(held: set[str]) -> dict[str, int]:
    return {"quarantined": len(held)}


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def update_paths(forest: Forest, paths: list[str] | set[str]) -> dict[str, Any]:
    """Re-describe exactly ``paths`` from the disk, in one transaction (writers, under the lock).

    Writers check the forest around the files they touch (docs/writing.md),
    so a build's walk would only cost time. A path that is absent loses its
    rows; a row whose bytes already match is left as it is, so re-describing
    unchanged files (as a rollback does) leaves the index unchanged. The
    paths are marked pending: the next build re-judges them and their
    neighbours, so the problem list catches up with what the writer did.
    The limits are the writer's ``Forest``'s, so one write reads its config once.
    """
    started = time.perf_counter()
    root, config = forest.root, forest.config
    counts = {"added": 0, "changed": 0, "deleted": 0, "unchanged": 0}
    indexheal.heal(root)  # a FIFO beside the index would hang this open
    con = sqlite3.connect(index_path(root))
    try:
        with con:
            for rel in sorted(set(paths)):
                try:
                    st = os.lstat(root / rel)
                except FileNotFoundError:
                    counts["deleted"] += forget_file(con, rel)
                    continue
                entry = Entry(rel, st.st_size, st.st_mtime_ns, st.st_ino)
                parsed = next(parse(root, [entry], config.limits, keep_text=True))
                if parsed.facts is None:
                    raise ForestError(parsed.issues[0].code, parsed.issues[0].message,
                                      {"path": rel})
                outcome = write_file(con, parsed, entry, held=False)
                counts["unchanged" if outcome == "held" else outcome] += 1
            statements.add_pending(con, sorted(set(paths)))
    finally:
        con.close()
    return {"mode": "paths", **counts, "seconds": round(time.perf_counter() - started, 4)}

"""The derived SQLite index: schema, full and incremental builds, read access.

The index is derived state: it can be deleted and rebuilt from the canonical
files at any time. A full build writes a new file beside the old one and
renames it into place, so readers see the old index or the new one, never a
half-built one. An incremental build applies every change in one
transaction. Neither ever writes a canonical byte.

A document with an error-level problem is quarantined: it has no row in
``docs`` (an earlier row is removed) and one in ``quarantine`` with its size,
mtime and problems, so the index still accounts for every file on disk and
``state`` can tell a quarantined file from a changed one. The table came
without a schema change, so upgrading never forces a rebuild: an index built
before it reads as having nothing quarantined, and the next build adds it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import store
from .errors import ForestError
from .safety import FILE_MODE, Entry, mkdir_private
from .statefiles import STATE_DIR, index_path, index_temp_path, state_dir
from .store import INDEX_SCHEMA_VERSION
from .testhooks import crash_point

if TYPE_CHECKING:
    from .checks import Checked, Recorder
    from .config import Opened
    from .documents import Facts
    from .quarantine import Triage
    from .routes import Route

# How files are read into facts. Facts cached by an index built under other reading rules
# (a frontmatter the old rules accepted may be refused now) are not reused: the next
# incremental build starts over. Bump it when documents.py reads a file differently.
READER_VERSION = "2"
# A file modified within this window of the last build may have changed
# without its mtime moving (coarse timestamps); such files are re-hashed.
RACY_WINDOW_NS = 2_000_000_000


# --- reading --------------------------------------------------------------------------------


def connect(root: Path) -> sqlite3.Connection:
    """Open the index read-only, failing with a code when it is absent or foreign."""
    path = index_path(root)
    _refuse_symlinks(root, path)
    if not path.exists():
        raise ForestError("index_missing",
                          "the forest has no index; run 'memory-forest index ROOT'")
    try:
        con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        _check_schema(con)
    except sqlite3.DatabaseError as exc:
        raise ForestError("index_corrupt", "the index cannot be read; run "
                          "'memory-forest index ROOT' to rebuild it",
                          {"error": type(exc).__name__}) from None
    return con


def _check_schema(con: sqlite3.Connection) -> None:
    found = store.schema_version(con)
    if found != str(INDEX_SCHEMA_VERSION):
        raise ForestError(
            "index_schema_mismatch",
            f"the index has schema {found!s}, this tool needs {INDEX_SCHEMA_VERSION}; "
            "run 'memory-forest index ROOT' to rebuild it",
            {"found": found, "expected": INDEX_SCHEMA_VERSION},
        )


def _refuse_symlinks(root: Path, path: Path) -> None:
    for candidate in (root / STATE_DIR, path):
        if candidate.is_symlink():
            raise ForestError("symlink", "the index path is a symlink; refusing to follow it",
                              {"path": os.path.relpath(candidate, root)})


def state(forest: Opened | Path) -> dict[str, Any]:
    """``absent``, ``current`` or ``stale`` (listing differs), or ``invalid`` with a code."""
    from .config import root_and_config
    from .safety import open_root, walk

    root = forest.root if hasattr(type(forest), "config") else open_root(forest)
    if not index_path(root).exists():
        return {"state": "absent"}
    try:
        con = connect(root)
    except ForestError as exc:
        return {"state": "invalid", "code": exc.code}
    with con:
        indexed = store.sizes_and_mtimes(con)
        held = {path: (size, mtime) for path, size, mtime, _ in store.quarantined(con)}
    con.close()
    _, config = root_and_config(forest)  # read only now: an absent index needs no config
    listing = walk(root, config.limits)
    on_disk = {e.path: (e.size, e.mtime_ns) for e in listing.files
               if not e.path.startswith(STATE_DIR + "/") and "/" in e.path}
    known = {**held, **indexed}
    changed = sum(1 for p, v in on_disk.items() if known.get(p) != v)
    deleted = sum(1 for p in known if p not in on_disk)
    counts = {"documents": len(indexed), "quarantined": len(held)}
    if changed or deleted:
        return {"state": "stale", "changed": changed, "deleted": deleted, **counts}
    return {"state": "current", **counts}


# --- building -------------------------------------------------------------------------------


Progress = Callable[[int, int], None]


class Previous:
    """What the current index already knows: parse results by path, and when it was built.

    A plain class, not a dataclass: this module is on the per-turn path, and
    importing ``dataclasses`` costs more than the lookup itself.
    """

    def __init__(self, facts: dict[str, tuple[Facts, int, Route]] | None = None,
                 built_at_ns: int = 0, rebuilt: str | None = None) -> None:
        self.facts = facts or {}  # path -> (facts, rowid, route)
        self.built_at_ns = built_at_ns
        self.rebuilt = rebuilt  # why an incremental build must start over, if it must

    def reuse(self, entry: Entry) -> tuple[Facts, Route] | None:
        """Cached facts and route of a file whose size and mtime are unchanged and trustworthy."""
        known = self.facts.get(entry.path)
        if known is None:
            return None
        facts, _, route = known
        if facts.size != entry.size or facts.mtime_ns != entry.mtime_ns:
            return None
        if entry.mtime_ns >= self.built_at_ns - RACY_WINDOW_NS:
            return None  # too close to the last build to trust the mtime: re-read and hash
        return facts, route


# An index of another schema version, or one SQLite cannot read, is derived state that
# a full build replaces; 'index' then always works, and says why it started over.
_REBUILDABLE = {"index_schema_mismatch": "schema_mismatch", "index_corrupt": "index_corrupt"}


def load_previous(root: Path, full: bool = False) -> Previous:
    """The current index's knowledge, or nothing for a full build or a missing index."""
    if full or not index_path(root).exists():
        return Previous()
    try:
        con = connect(root)
    except ForestError as exc:
        if exc.code not in _REBUILDABLE:
            raise
        return Previous(rebuilt=_REBUILDABLE[exc.code])
    try:
        if store.reader_version(con) != READER_VERSION:
            return Previous(rebuilt="reader_changed")
        return Previous(store.stored_facts(con), store.built_at_ns(con))
    except sqlite3.DatabaseError:
        return Previous(rebuilt="index_corrupt")
    finally:
        con.close()


def build(root: Path, full: bool = False, progress: Progress | None = None) -> dict[str, Any]:
    """Check the forest, then bring the index up to date (caller holds the lock).

    Only a forest-level fault raises; a document with an error is quarantined
    and reported in ``problems``.
    """
    started = time.perf_counter()
    _, triage, written = refresh(root, full, progress)
    return {**written, **triage.fields(), "warnings": triage.counts()["warnings"],
            "seconds": round(time.perf_counter() - started, 4)}


def refresh(root: Path, full: bool = False, progress: Progress | None = None,
            recorder: Recorder | None = None) -> tuple[Checked, Triage, dict[str, Any]]:
    """The steps of a build: reuse what the index knows, check the forest, triage, apply.

    ``build`` reports what they did; ``maintain`` hands in a ``recorder`` to
    time them (``scan``, ``validate``, ``audit``, ``index``) and goes on to
    verify the index against the check. Returns the check, its triage and the
    counts of the write, with ``rebuilt`` when an incremental build had to
    start over.
    """
    from .checks import check, timed

    previous = load_previous(root, full)
    checked = check(root, reuse=previous.reuse if previous.facts else None, keep_text=True,
                    recorder=recorder)
    triage = checked.triage()  # a forest-level fault raises here, before any write
    written = timed(recorder, "index",
                    lambda: apply(root, checked.snap, previous, triage, progress), dict)
    rebuilt = {"rebuilt": previous.rebuilt} if previous.rebuilt else {}
    return checked, triage, {**written, **rebuilt}


def apply(root: Path, snap, previous: Previous, triage: Triage, progress: Progress | None = None
          ) -> dict:
    """Write a checked snapshot into the index: incrementally when there is one, else fully.

    ``triage`` names the paths left out; they get
    quarantine rows instead of documents.
    """
    now_ns = time.time_ns()
    docs = {path: facts for path, facts in snap.facts.items() if path not in triage.quarantined}
    held = _quarantine_rows(snap, triage)
    if previous.facts:
        counts = _apply_incremental(index_path(root), snap, docs, held, previous.facts, now_ns,
                                    progress)
        return {"mode": "incremental", **counts, "documents": len(docs)}
    counts = _rebuild(root, index_path(root), snap, docs, held, now_ns, progress)
    return {"mode": "full", **counts, "documents": len(docs)}


def _quarantine_rows(snap, triage: Triage) -> list[tuple[str | bytes, int, int, str]]:
    """One row per quarantined file the walk listed (symlinks and special files have none).

    A file name that is not UTF-8 (the walk holds its bytes as surrogate
    escapes, which SQLite text cannot store) is kept as its raw bytes and its
    problems as ASCII-escaped JSON; ``quarantined`` turns the bytes back.
    """
    import json

    from .jsonio import dumps, is_utf8

    problems = triage.by_path()
    rows: list[tuple[str | bytes, int, int, str]] = []
    for path in sorted(triage.quarantined):
        if path not in snap.entries:
            continue
        issues = [issue.to_dict() for issue in problems[path]]
        entry = snap.entries[path]
        if is_utf8(path):
            rows.append((path, entry.size, entry.mtime_ns, dumps(issues)))
        else:
            rows.append((os.fsencode(path), entry.size, entry.mtime_ns,
                         json.dumps(issues, sort_keys=True, separators=(",", ":"))))
    return rows


def _rebuild(root: Path, path: Path, snap, docs: dict, held: list, now_ns: int,
             progress: Progress | None) -> dict:
    if not state_dir(root).exists():
        mkdir_private(state_dir(root))
    tmp = index_temp_path(root)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        try:
            store.create(con)
            with con:
                paths = sorted(docs)
                for number, doc_path in enumerate(paths, start=1):
                    _insert(con, snap, doc_path)
                    if progress and number % 500 == 0:
                        progress(number, len(paths))
                store.write_quarantine(con, held)
                store.set_built(con, now_ns, READER_VERSION)
                crash_point("indexing")
            store.end_bulk_load(con)
        finally:
            con.close()
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return {"added": len(docs), "changed": 0, "deleted": 0, "unchanged": 0}


def _apply_incremental(path: Path, snap, docs: dict, held: list, previous, now_ns: int,
                       progress) -> dict:
    added = changed = deleted = unchanged = 0
    con = sqlite3.connect(path)
    try:
        with con:
            # Gone from disk or quarantined since: either way the row goes.
            for doc_path in sorted(set(previous) - set(docs)):
                store.delete(con, previous[doc_path][1])
                deleted += 1
            for doc_path, facts in sorted(docs.items()):
                old = previous.get(doc_path)
                if old is not None and old[0] is facts:
                    unchanged += 1
                    continue
                if old is not None and old[0].sha256 == facts.sha256:
                    # Same bytes, new mtime: refresh metadata, keep the full-text row.
                    store.refresh(con, old[1], facts)
                    unchanged += 1
                    continue
                if old is not None:
                    store.delete(con, old[1])
                    changed += 1
                else:
                    added += 1
                _insert(con, snap, doc_path)
            store.write_quarantine(con, held)
            store.set_built(con, now_ns, READER_VERSION)
            crash_point("indexing")  # a signal here rolls the whole update back
    finally:
        con.close()
    return {"added": added, "changed": changed, "deleted": deleted, "unchanged": unchanged}


def _insert(con: sqlite3.Connection, snap, doc_path: str) -> None:
    from .text import index_text

    facts = snap.facts[doc_path]
    route = snap.routes[doc_path]
    store.insert(con, route, facts, (index_text(facts.title), index_text(_path_words(route)),
                                     index_text(snap.texts.get(doc_path, ""))))


def _path_words(route) -> str:
    """The names in a path worth matching: tree, branch, leaf (not "04 stm" or ".md",
    which every document shares and which would only swell the index)."""
    parts = (route.tree, route.branch, route.leaf, route.name)
    return " ".join(part for part in parts if part) or route.path.rsplit("/", 1)[-1][:-3]


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def update_paths(forest: Opened | Path, paths: list[str] | set[str]) -> dict[str, Any]:
    """Re-describe exactly ``paths`` from the disk, in one transaction (writers, under the lock).

    Writers check the forest around the files they touch (docs/writing.md),
    so re-reading every file, as ``build`` does, would only cost time: about
    a second per 10,000 documents. A path that is absent loses its row; a
    row whose size, mtime and hash already match is left as it is, so
    re-describing unchanged files (as a rollback does) leaves the index
    unchanged. ``built_at_ns`` is not moved: files written since the last
    full check stay inside the racy window, and the next ``build`` re-reads them.
    A path the writer checked is no longer quarantined: its quarantine row goes.
    The limits are the writer's ``Forest``'s, so one write reads its config once.
    """
    from .config import root_and_config
    from .documents import read_facts
    from .routes import parse_route
    from .safety import read_regular
    from .snapshot import Snapshot

    started = time.perf_counter()
    root, config = root_and_config(forest)
    snap = Snapshot(root, config)
    absent: list[str] = []
    for rel in sorted(set(paths)):
        try:
            st = os.lstat(root / rel)
        except FileNotFoundError:
            absent.append(rel)
            continue
        route = parse_route(rel)
        raw = read_regular(root, rel, config.limits["max_file_bytes"])
        facts, text = read_facts(route, raw, st.st_mtime_ns,
                                 config.limits["max_links_per_document"])
        snap.routes[rel], snap.facts[rel], snap.texts[rel] = route, facts, text
    counts = {"added": 0, "changed": 0, "deleted": 0, "unchanged": 0}
    con = sqlite3.connect(index_path(root))
    try:
        with con:
            store.ensure_quarantine(con)
            for rel in [*absent, *snap.facts]:
                store.release(con, rel)
                row = store.file_row(con, rel)
                facts = snap.facts.get(rel)
                if facts is None:
                    if row is not None:
                        store.delete(con, row.rowid)
                        counts["deleted"] += 1
                    continue
                if row is not None and (row.sha256, row.size, row.mtime_ns) == (
                        facts.sha256, facts.size, facts.mtime_ns):
                    counts["unchanged"] += 1
                    continue
                if row is not None:
                    store.delete(con, row.rowid)
                counts["changed" if row is not None else "added"] += 1
                _insert(con, snap, rel)
    finally:
        con.close()
    return {"mode": "paths", **counts, "seconds": round(time.perf_counter() - started, 4)}

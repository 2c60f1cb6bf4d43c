"""The derived SQLite index: read access, full builds, and the one-file writer's update.

The index is derived state: it can be deleted and rebuilt from the canonical
files at any time. A full build writes a new file beside the old one and
renames it into place, so readers see the old index or the new one, never a
half-built one. An incremental build (``incremental.py``) applies every
change in one transaction. Neither ever writes a canonical byte.

A document with an error-level problem is quarantined: it has no row in
``docs`` (an earlier row is removed) and one in ``quarantine`` with its stat
and facts, so the index still accounts for every file on disk. Every
standing problem is kept in ``problems``, so an incremental build reports
the whole forest's problems while re-judging only what changed.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from . import store
from .errors import ForestError
from .safety import FILE_MODE, mkdir_private
from .statefiles import STATE_DIR, index_path, index_temp_path, state_dir
from .store import INDEX_SCHEMA_VERSION
from .testhooks import crash_point

if TYPE_CHECKING:
    from .checks import Recorder
    from .config import Config, Opened
    from .documents import Facts
    from .issues import Issue
    from .parsing import Parsed
    from .quarantine import Triage
    from .routes import Route
    from .safety import Entry
    from .snapshot import Presence, Snapshot

# How files are read into facts. An index built under other reading rules (a frontmatter
# the old rules accepted may be refused now) is rebuilt in full by the next build. Bump it
# when documents.py reads a file differently.
READER_VERSION = "3"
# A file modified within this window of the last build may have changed without its
# mtime moving (coarse timestamps); builds and writers read such files again.
RACY_WINDOW_NS = 2_000_000_000

Progress = Callable[[int, int], None]
INSERT_BATCH = 256  # documents per executemany in a full build


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
    from .snapshot import documents, survey

    root = forest.root if hasattr(type(forest), "config") else _root(forest)
    if not index_path(root).exists():
        return {"state": "absent"}
    try:
        con = connect(root)
    except ForestError as exc:
        return {"state": "invalid", "code": exc.code}
    with con:
        stats, held = store.known_files(con)
    con.close()
    snap = survey(forest)  # read only now: an absent index needs no config
    diff = compare(stats, documents(snap), snap.entries)
    counts = {"documents": len(stats) - len(held), "quarantined": len(held)}
    if diff.new or diff.changed or diff.deleted:
        return {"state": "stale", "changed": len(diff.new) + len(diff.changed),
                "deleted": len(diff.deleted), **counts}
    return {"state": "current", **counts}


def _root(path: Path) -> Path:
    from .safety import open_root

    return open_root(path)


class Difference(NamedTuple):
    """How the disk differs from what the index knows, by stat alone."""

    new: set[str]  # paths the index does not know
    changed: set[str]  # known paths whose size, mtime or inode moved
    deleted: set[str]  # known paths gone from disk


def compare(stats: list[tuple[str, int, int, int]], documents: list[Entry],
            entries: dict[str, Entry]) -> Difference:
    """How ``documents`` (as the walk lists them, by path) differ from ``stats`` (the same
    tuples as the index holds them, by path).

    Both are sorted by path, so a forest with nothing changed is one list
    comparison in C; otherwise set differences, still no Python loop per file.
    """
    if stats == documents:
        return Difference(set(), set(), set())
    on_disk, known = set(documents), set(stats)
    fresh = {entry[0] for entry in on_disk - known}
    stale = {row[0] for row in known - on_disk}
    deleted = {path for path in stale if path not in entries}
    return Difference(fresh - stale, fresh & stale, deleted)


# --- building -------------------------------------------------------------------------------


class Refreshed:
    """What a build did: its triage of the problems, its counts, and the paths that should
    now have rows (what ``maintain`` verifies the index against, worked out only then)."""

    def __init__(self, triage: Triage, written: dict[str, Any],
                 expected: Callable[[], set[str]], config: Config) -> None:
        self.triage = triage
        self.written = written
        self.expected = expected
        self.config = config


def build(root: Path, full: bool = False, progress: Progress | None = None) -> dict[str, Any]:
    """Check the forest, then bring the index up to date (caller holds the lock).

    Only a forest-level fault raises; a document with an error is quarantined
    and reported in ``problems``.
    """
    started = time.perf_counter()
    done = refresh(root, full, progress)
    return {**done.written, **done.triage.fields(), "warnings": done.triage.counts()["warnings"],
            "seconds": round(time.perf_counter() - started, 4)}


# An index of another schema version, or one SQLite cannot read, is derived state that
# a full build replaces; 'index' then always works, and says why it started over.
_REBUILDABLE = {"index_schema_mismatch": "schema_mismatch", "index_corrupt": "index_corrupt"}


def refresh(root: Path, full: bool = False, progress: Progress | None = None,
            recorder: Recorder | None = None) -> Refreshed:
    """Build incrementally when the index allows it, else in full.

    ``maintain`` hands in a ``recorder`` to time the steps (``scan``: the
    walk and the reads; ``validate``; ``audit``; ``index``: the write). An
    incremental build that had to start over says why in ``rebuilt``.
    """
    reason = None if full else _why_not_incremental(root)
    if not full and reason is None:
        from .incremental import update

        done = update(root, progress, recorder)
    else:
        done = rebuild(root, progress, recorder)
    if reason and reason != "absent":
        done.written["rebuilt"] = reason
    if recorder is not None:
        recorder.steps["index"].update(done.written)  # the write step says what it wrote
    return done


def surveyed(root: Path, recorder: Recorder | None) -> Snapshot:
    """The walk, with the documents per layer it found counted at once, so a run that stops
    at a later step still reports them."""
    from .snapshot import survey

    snap = survey(root)
    if recorder is not None:
        recorder.counts = snap.layer_counts()
    return snap


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
        return None if store.reader_version(con) == READER_VERSION else "reader_changed"
    except sqlite3.DatabaseError:
        return "index_corrupt"
    finally:
        con.close()


def rebuild(root: Path, progress: Progress | None = None,
            recorder: Recorder | None = None) -> Refreshed:
    """Read every document into a new index file, judge the forest, publish the file.

    Documents are inserted as they are parsed and their text is dropped at
    once, so memory holds the facts of the forest, never its text; the few
    a judgement quarantines are taken out again before the file is published.
    """
    from . import quarantine
    from .checks import timed
    from .snapshot import Presence
    from .validate import casefold_collisions

    snap = timed(recorder, "scan", lambda: surveyed(root, recorder), _listed)
    _refuse_forest_faults(snap)  # a missing layer is known before anything is read
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
                read = timed(recorder, "read", lambda: _read_all(con, snap, progress), _counted)
                present = Presence(lambda path: path in read.routes or path in snap.unread)
                judged = judge(snap, lambda: casefold_collisions([*snap.dirs, *read.routes]),
                               read.routes, read.facts, present, read.issues, recorder)
                triage = quarantine.triage(judged.every(), snap.dirs)
                held = timed(recorder, "index", lambda: _finish(con, snap, read, triage, judged),
                             _held)
            store.end_bulk_load(con)
        finally:
            con.close()
        _fsync(tmp)
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
    from .parsing import parse
    from .snapshot import documents

    entries = documents(snap)
    read = _Read(len(entries))
    records = parse(snap.root, entries, snap.config.limits, keep_text=True)
    batch: list[store.Row] = []
    try:
        for number, parsed in enumerate(records, start=1):
            read.issues.extend(parsed.issues)
            if parsed.route is not None:
                read.routes[parsed.path] = parsed.route
            if parsed.facts is not None:
                read.facts[parsed.path] = parsed.facts
                read.rowids[parsed.path] = rowid = len(read.rowids) + 1
                batch.append((rowid, parsed.route, parsed.facts,
                              snap.entries[parsed.path].ino, full_text(parsed)))
            if len(batch) >= INSERT_BATCH:
                store.insert_many(con, batch)
                batch.clear()
            if progress and number % 500 == 0:
                progress(number, len(entries))
        store.insert_many(con, batch)
    finally:
        records.close()  # a pool is shut down and joined before the build goes on
    return read


def _finish(con: sqlite3.Connection, snap: Snapshot, read: _Read, triage: Triage,
            judged: Judged) -> set[str]:
    """Take the quarantined documents out, record references, problems and the build."""
    held = {path for path in triage.quarantined if path in snap.entries and "/" in path}
    for path in sorted(held):
        if path in read.rowids:
            store.delete(con, read.rowids[path])
        entry = snap.entries[path]
        facts = read.facts.get(path)
        store.hold(con, path, entry.size, entry.mtime_ns, entry.ino, path in read.routes,
                   facts.id if facts else None)
    for path, facts in read.facts.items():
        targets, event_ids = references(read.routes[path], facts)
        if targets or event_ids:
            store.set_references(con, path, targets, event_ids)
    store.replace_problems(con, set(), judged.scoped(), names=True)
    store.set_built(con, time.time_ns(), READER_VERSION, snap.unread, names_digest(snap))
    crash_point("indexing")
    return held


def _listed(snap: Snapshot) -> dict[str, int]:
    return {"files": len(snap.entries)}


def _counted(read: _Read) -> dict[str, int]:
    return {"files": read.count, "read": read.count}


def _held(held: set[str]) -> dict[str, int]:
    return {"quarantined": len(held)}


class Judged(NamedTuple):
    """A build's problems by where they come from, which is how the index keeps them."""

    forest: list[Issue]  # the walk's, the config's, the layers': re-derived on every build
    names: list[Issue]  # names that differ only by case: re-derived when a name changed
    files: list[Issue]  # of the files judged: route, read, parse, parent, duplicates, links

    def every(self) -> list[Issue]:
        return self.forest + self.names + self.files

    def scoped(self) -> list[tuple[str, Issue]]:
        return [*(("forest", issue) for issue in self.forest),
                *(("names", issue) for issue in self.names),
                *(("file", issue) for issue in self.files)]


def judge(snap: Snapshot, names: Callable[[], list[Issue]], routes: dict[str, Route],
          facts: dict[str, Facts], present: Presence, read_issues: list[Issue],
          recorder: Recorder | None = None) -> Judged:
    """Judge the forest as its listing shows it and these files as they were read.

    ``routes`` and ``facts`` are the files judged, ``present`` says which
    files exist beyond them; ``names`` gives the case collisions (computed,
    or as the index holds them when no name changed).
    """
    from .audit import link_issues
    from .checks import timed
    from .validate import document_issues, missing_layers

    def validate() -> Judged:
        return Judged(sorted(set(snap.issues + missing_layers(snap.dirs))), names(),
                      read_issues + document_issues(facts, routes, present))

    judged = timed(recorder, "validate", validate, lambda found: _graded(found.every()))
    files = judged.files + timed(recorder, "audit",
                                 lambda: link_issues(facts, routes, present), _graded)
    return judged._replace(files=sorted(set(files)))


def _graded(found: list[Issue]) -> dict[str, int]:
    from .checks import graded

    return graded(found)


def names_digest(snap: Snapshot) -> str:
    """A digest of the directory names: with the files that appeared or went, what tells an
    incremental build whether any name, and so any case collision, changed."""
    from .digest import sha256_hex

    return sha256_hex("\n".join(snap.dirs).encode("utf-8", "surrogateescape"))


def _refuse_forest_faults(snap: Snapshot) -> None:
    """A missing layer or an unusable root stops a build before it reads a file."""
    from .quarantine import triage
    from .validate import missing_layers

    triage(snap.issues + missing_layers(snap.dirs), snap.dirs)


def references(route: Route, facts: Facts) -> tuple[list[str], list[str]]:
    """What a file links to beyond its parent, and the event ids it holds: what another
    file's change is looked up by."""
    parent = route.parent_path
    own = parent[:-3] if parent and parent.endswith(".md") else parent
    return sorted({link.target for link in facts.links if link.target != own}), facts.event_ids


def insert(con: sqlite3.Connection, parsed: Parsed, entry: Entry) -> int:
    return store.insert(con, parsed.route, parsed.facts, entry.ino, full_text(parsed))


def full_text(parsed: Parsed) -> tuple[str, str, str]:
    """The title, path words and body a document is searched by."""
    from .text import index_text

    return (index_text(parsed.facts.title), index_text(_path_words(parsed.route)),
            index_text(parsed.text))


def _path_words(route: Route) -> str:
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


def write_file(con: sqlite3.Connection, parsed: Parsed, entry: Entry, held: bool) -> str:
    """Bring one file's rows in line with its parse: a document row, or a quarantine row.

    Returns what happened to its document row: ``added``, ``changed``,
    ``unchanged`` (same bytes; metadata refreshed), ``deleted`` (it is now
    quarantined) or ``held`` (quarantined before and still).
    """
    path, facts = parsed.path, parsed.facts
    row = store.file_row(con, path)
    if parsed.route is not None and facts is not None:
        targets, event_ids = references(parsed.route, facts)
        store.set_references(con, path, targets, event_ids)
    else:
        store.forget_references(con, path)
    if held:
        if row is not None:
            store.delete(con, row.rowid)
        store.hold(con, path, entry.size, entry.mtime_ns, entry.ino, parsed.route is not None,
                   facts.id if facts else None)
        return "deleted" if row is not None else "held"
    store.release(con, path)
    if row is not None and row.sha256 == facts.sha256:
        store.refresh(con, row.rowid, facts, entry.ino)
        return "unchanged"
    if row is not None:
        store.delete(con, row.rowid)
    insert(con, parsed, entry)
    return "changed" if row is not None else "added"


def forget_file(con: sqlite3.Connection, path: str) -> bool:
    """A file gone from disk loses every row; True when it had a document row."""
    row = store.file_row(con, path)
    if row is not None:
        store.delete(con, row.rowid)
    store.release(con, path)
    store.forget_references(con, path)
    return row is not None


def update_paths(forest: Opened | Path, paths: list[str] | set[str]) -> dict[str, Any]:
    """Re-describe exactly ``paths`` from the disk, in one transaction (writers, under the lock).

    Writers check the forest around the files they touch (docs/writing.md),
    so a build's walk would only cost time. A path that is absent loses its
    rows; a row whose bytes already match is left as it is, so re-describing
    unchanged files (as a rollback does) leaves the index unchanged. The
    paths are marked pending: the next build re-judges them and their
    neighbours, so the problem list catches up with what the writer did.
    The limits are the writer's ``Forest``'s, so one write reads its config once.
    """
    from .config import root_and_config
    from .parsing import parse
    from .safety import Entry

    started = time.perf_counter()
    root, config = root_and_config(forest)
    counts = {"added": 0, "changed": 0, "deleted": 0, "unchanged": 0}
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
            store.add_pending(con, sorted(set(paths)))
    finally:
        con.close()
    return {"mode": "paths", **counts, "seconds": round(time.perf_counter() - started, 4)}

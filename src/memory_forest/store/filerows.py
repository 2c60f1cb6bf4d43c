"""What the index knows of each file: the writers' view and an incremental build's start.

A writer trusts a file whose size and mtime match its row without reading
it; a build compares these stats with the walk and looks up, by link, id
and event, which files a change touches. No per-turn read is here.
"""

from __future__ import annotations

import json
import sqlite3
from typing import NamedTuple

from .schema import chunked, path_key, path_text


class FileRow(NamedTuple):
    """What the index knows of one file's bytes: enough to trust it without reading it."""

    sha256: str
    size: int
    mtime_ns: int


def layer_files(con: sqlite3.Connection, layer_number: int) -> dict[str, FileRow]:
    """Every indexed file of one layer, by path."""
    rows = con.execute("SELECT path, sha256, size, mtime_ns FROM docs WHERE layer_number = ?",
                       (layer_number,))
    return {path: FileRow(sha256, size, mtime_ns) for path, sha256, size, mtime_ns in rows}


class StoredFile(NamedTuple):
    """An indexed file's row id and what the index knows of its bytes."""

    rowid: int
    sha256: str
    size: int
    mtime_ns: int


def file_row(con: sqlite3.Connection, path: str) -> StoredFile | None:
    row = con.execute("SELECT rowid, sha256, size, mtime_ns FROM docs WHERE path = ?",
                      (path_key(path),)).fetchone()
    return None if row is None else StoredFile._make(row)


def layer_counts(con: sqlite3.Connection) -> dict[str, int]:
    """How many documents the index holds in each layer, by layer directory."""
    return dict(con.execute("SELECT layer, count(*) FROM docs GROUP BY layer"))


def digests(con: sqlite3.Connection) -> dict[str, str]:
    """sha256 of every indexed file, by path."""
    return dict(con.execute("SELECT path, sha256 FROM docs"))


def totals(con: sqlite3.Connection) -> tuple[int, int]:
    """How many files the index holds and their bytes together."""
    files, size = con.execute("SELECT count(*), coalesce(sum(size), 0) FROM docs").fetchone()
    return files, size


def holders(con: sqlite3.Connection, layer_number: int, json_path: str,
            values: set[str]) -> list[tuple[str, str]]:
    """(path, value) for each file of a layer whose facts list one of these values at ``json_path``.

    One pass of SQLite's JSON functions over the layer's rows; the values go
    to a TEMP table, so any number of them costs one statement.
    """
    con.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (value TEXT PRIMARY KEY)")
    con.execute("DELETE FROM wanted")
    con.executemany("INSERT OR IGNORE INTO wanted VALUES (?)", [(v,) for v in values])
    return con.execute(
        f"SELECT d.path, j.value FROM docs d, json_each(d.facts, '{json_path}') j "
        "WHERE d.layer_number = ? AND j.value IN (SELECT value FROM wanted)",
        (layer_number,)).fetchall()


def known_files(con: sqlite3.Connection) -> tuple[list[tuple[str, int, int, int]],
                                                  dict[str, bool]]:
    """What the last build accounted for, without a parse: ``(path, size, mtime_ns, ino)`` of
    every indexed and quarantined file, sorted by path, and whether each quarantined path
    is a route.

    Read on every ``index`` from a covering index, in the order the walk lists
    files, so that a build with nothing changed is one list comparison.
    """
    stats = con.execute("SELECT path, size, mtime_ns, ino FROM docs INDEXED BY docs_stat "
                        "ORDER BY path").fetchall()
    held: dict[str, bool] = {}
    for path, size, mtime, ino, routed in con.execute(
            "SELECT path, size, mtime_ns, ino, routed FROM quarantine"):
        stats.append((path_text(path), size, mtime, ino))
        held[path_text(path)] = bool(routed)
    if held:
        stats.sort()
    return stats, held


def pending(con: sqlite3.Connection) -> set[str]:
    return {path for (path,) in con.execute("SELECT path FROM pending")}


def linking_to(con: sqlite3.Connection, targets: set[str]) -> set[str]:
    """The files holding a (non-parent) link to one of these link targets."""
    return _lookup(con, "SELECT source FROM links WHERE target IN ({0})", targets)


def holding_ids(con: sqlite3.Connection, ids: set[str]) -> set[str]:
    """Indexed and quarantined files whose frontmatter id is one of these."""
    return _lookup(con, "SELECT path FROM docs WHERE doc_id IN ({0}) UNION ALL "
                   "SELECT path FROM quarantine WHERE doc_id IN ({0})", ids, repeat=2)


def holding_events(con: sqlite3.Connection, event_ids: set[str]) -> set[str]:
    """ISTM files holding one of these event ids."""
    return _lookup(con, "SELECT path FROM events WHERE event_id IN ({0})", event_ids)


def ids_of(con: sqlite3.Connection, paths: set[str]) -> set[str]:
    """The frontmatter ids these files held at the last build."""
    return _lookup(con, "SELECT doc_id FROM docs WHERE path IN ({0}) AND doc_id IS NOT NULL "
                   "UNION ALL SELECT doc_id FROM quarantine WHERE path IN ({0}) "
                   "AND doc_id IS NOT NULL", paths, repeat=2)


def events_of(con: sqlite3.Connection, paths: set[str]) -> set[str]:
    return _lookup(con, "SELECT event_id FROM events WHERE path IN ({0})", paths)


def _lookup(con: sqlite3.Connection, sql: str, values: set[str], repeat: int = 1) -> set[str]:
    found: set[str] = set()
    for chunk in chunked(sorted(values)):
        marks = ",".join("?" * len(chunk))
        args = [path_key(v) for v in chunk]
        found.update(path_text(value) for (value,) in con.execute(sql.format(marks),
                                                               args * repeat))
    return found


def problems(con: sqlite3.Connection, scope: str | None = None) -> list[list[str]]:
    """The problems the index holds (of one scope, 'forest' or 'file', or all), as
    [path, code, message, level] lists."""
    rows = con.execute("SELECT issue FROM problems" + (" WHERE scope = ?" if scope else ""),
                       (scope,) if scope else ())
    return [json.loads(issue) for (issue,) in rows]


# Left-out files ranked per lookup: ranking every match costs a BM25 score per file (12 ms
# for 2,000 binary files that all match, against 0.5 ms for this many), on every turn.

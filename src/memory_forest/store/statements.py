"""The statements a build writes with: document rows, quarantine, references, problems.

Only the builds (``index``, ``incremental``, ``building``) call these; a
full build inserts in batches into a fresh file (``schema.create``), an
incremental one row by row inside one transaction.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from ..stamps import utc_stamp
from .schema import chunked, path_key

if TYPE_CHECKING:
    from ..facts import Facts, Fragment
    from ..routes import Route

_INSERT_DOC = ("INSERT INTO docs (rowid, path, layer, layer_number, tree, branch, leaf,"
               " parent_path, doc_id, title, status, sha256, size, mtime_ns, ino, facts,"
               " updated, superseded_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
_INSERT_TERMS = "INSERT INTO terms (rowid, title, path, body) VALUES (?, ?, ?, ?)"
_INSERT_FRAGMENT = "INSERT INTO fragments VALUES (?, ?, ?, ?, ?)"
_INSERT_FRAGMENT_TERMS = "INSERT INTO fragment_terms (rowid, body) VALUES (?, ?)"

# One document for ``insert_many``: its rowid, route, facts, inode, full-text columns, and
# its fragments with the text each is searched by.
Row = tuple[int, "Route", "Facts", int, tuple[str, str, str],
            "list[tuple[Fragment, str]]"]


def insert(con: sqlite3.Connection, route: Route, facts: Facts, ino: int,
           texts: tuple[str, str, str], fragments: list[tuple[Fragment, str]]) -> int:
    """One document's row, its full-text row and its fragments; ``texts`` are title, path
    words and body, each fragment comes with its searchable text."""
    cursor = con.execute(_INSERT_DOC, _doc_values(None, route, facts, ino))
    con.execute(_INSERT_TERMS, (cursor.lastrowid, *texts))
    if fragments:
        _insert_fragments(con, [(cursor.lastrowid, fragments)])
    return cursor.lastrowid


def insert_many(con: sqlite3.Connection, rows: list[Row]) -> None:
    """Documents with the rowids a full build gave them, a statement per table per batch."""
    con.executemany(_INSERT_DOC, [_doc_values(rowid, route, facts, ino)
                                  for rowid, route, facts, ino, _, _ in rows])
    con.executemany(_INSERT_TERMS, [(rowid, *texts) for rowid, _, _, _, texts, _ in rows])
    owned = [(rowid, fragments) for rowid, _, _, _, _, fragments in rows if fragments]
    if owned:
        _insert_fragments(con, owned)


def _insert_fragments(con: sqlite3.Connection,
                      owned: list[tuple[int, list[tuple[Fragment, str]]]]) -> None:
    rowid = con.execute("SELECT coalesce(max(rowid), 0) FROM fragments").fetchone()[0]
    rows, texts = [], []
    for doc, fragments in owned:
        for fragment, text in fragments:
            rowid += 1
            rows.append((rowid, doc, fragment.kind, fragment.anchor, fragment.observed_at))
            texts.append((rowid, text))
    con.executemany(_INSERT_FRAGMENT, rows)
    con.executemany(_INSERT_FRAGMENT_TERMS, texts)


def _doc_values(rowid: int | None, route: Route, facts: Facts, ino: int) -> tuple:
    return (rowid, route.path, route.layer.dirname, route.layer.number, route.tree,
            route.branch, route.leaf, route.parent_path, facts.id, facts.title, facts.status,
            facts.sha256, facts.size, facts.mtime_ns, ino, facts.dumps(),
            utc_stamp(facts.updated) if facts.updated else None, facts.superseded_by)


def refresh(con: sqlite3.Connection, rowid: int, facts: Facts, ino: int) -> None:
    """Same bytes, new mtime or inode: new metadata, the full-text row kept."""
    con.execute("UPDATE docs SET mtime_ns = ?, ino = ?, facts = ? WHERE rowid = ?",
                (facts.mtime_ns, ino, facts.dumps(), rowid))


def delete(con: sqlite3.Connection, rowid: int) -> None:
    """A document's row with its full-text row and its fragments."""
    con.execute("DELETE FROM fragment_terms WHERE rowid IN "
                "(SELECT rowid FROM fragments WHERE doc = ?)", (rowid,))
    con.execute("DELETE FROM fragments WHERE doc = ?", (rowid,))
    con.execute("DELETE FROM terms WHERE rowid = ?", (rowid,))
    con.execute("DELETE FROM docs WHERE rowid = ?", (rowid,))


def hold(con: sqlite3.Connection, path: str, size: int, mtime_ns: int, ino: int, routed: bool,
         doc_id: str | None) -> None:
    """Record a quarantined file."""
    con.execute("INSERT OR REPLACE INTO quarantine VALUES (?, ?, ?, ?, ?, ?)",
                (path_key(path), size, mtime_ns, ino, int(routed), doc_id))


def release(con: sqlite3.Connection, path: str) -> None:
    """Forget a file's quarantine entry and its left-out words."""
    con.execute("DELETE FROM quarantine WHERE path = ?", (path_key(path),))
    _forget_words(con, path)


def keep_words(con: sqlite3.Connection, path: str, texts: tuple[str, str, str]) -> None:
    """What a quarantined file is searched by (title, path words, body), replacing any
    earlier words of it."""
    con.execute("INSERT INTO left_out_terms (rowid, title, names, body) VALUES (?, ?, ?, ?)",
                (_left_out_row(con, path), *texts))


def keep_indexed_words(con: sqlite3.Connection, path: str, rowid: int) -> None:
    """``keep_words`` with the words a document row was indexed by (a full build has
    dropped the text by the time it knows which files it leaves out)."""
    con.execute("INSERT INTO left_out_terms (rowid, title, names, body) "
                "SELECT ?, title, path, body FROM terms WHERE rowid = ?",
                (_left_out_row(con, path), rowid))


def _left_out_row(con: sqlite3.Connection, path: str) -> int:
    _forget_words(con, path)
    return con.execute("INSERT INTO left_out (path) VALUES (?)", (path_key(path),)).lastrowid


def _forget_words(con: sqlite3.Connection, path: str) -> None:
    row = con.execute("SELECT rowid FROM left_out WHERE path = ?", (path_key(path),)).fetchone()
    if row is not None:
        con.execute("DELETE FROM left_out_terms WHERE rowid = ?", row)
        con.execute("DELETE FROM left_out WHERE rowid = ?", row)


def set_references(con: sqlite3.Connection, path: str, targets: list[str],
                   event_ids: list[str], sources: list[str] = ()) -> None:
    """Replace what a file links to (beyond its parent), the event ids it holds and the
    pointers it cites (``path#anchor`` or a bare path)."""
    forget_references(con, path)
    key = path_key(path)
    con.executemany("INSERT INTO links VALUES (?, ?)", [(t, key) for t in targets])
    con.executemany("INSERT INTO events VALUES (?, ?)", [(e, key) for e in event_ids])
    cited = [pointer.partition("#") for pointer in sources]
    con.executemany("INSERT INTO cites VALUES (?, ?, ?)",
                    [(key, target, anchor or None) for target, _, anchor in cited])


def forget_references(con: sqlite3.Connection, path: str) -> None:
    con.execute("DELETE FROM links WHERE source = ?", (path_key(path),))
    con.execute("DELETE FROM events WHERE path = ?", (path_key(path),))
    con.execute("DELETE FROM cites WHERE source = ?", (path_key(path),))


def replace_problems(con: sqlite3.Connection, paths: set[str], issues: list,
                     names: bool) -> None:
    """Drop the forest problems, the case collisions if ``names``, and the file problems of
    ``paths``; then store ``issues``, ``(scope, Issue)`` pairs of those scopes."""
    con.execute("DELETE FROM problems WHERE scope = 'forest'")
    if names:
        con.execute("DELETE FROM problems WHERE scope = 'names'")
    for chunk in chunked(sorted(paths)):
        con.execute(f"DELETE FROM problems WHERE scope = 'file' AND path IN "
                    f"({','.join('?' * len(chunk))})", [path_key(path) for path in chunk])
    con.executemany("INSERT INTO problems VALUES (?, ?, ?)",
                    [(path_key(issue.path), scope, json.dumps(list(issue)))
                     for scope, issue in issues if names or scope != "names"])


def add_pending(con: sqlite3.Connection, paths: list[str]) -> None:
    con.executemany("INSERT OR IGNORE INTO pending VALUES (?)", [(path,) for path in paths])


def set_built(con: sqlite3.Connection, now_ns: int, reader: str, unread_paths: set[str],
              names_digest: str) -> None:
    """When the index was built, under which reading rules, and which paths it could not read.

    The build that records this has re-checked every writer's pending path.
    """
    con.execute("INSERT OR REPLACE INTO meta VALUES ('built_at_ns', ?)", (str(now_ns),))
    con.execute("INSERT OR REPLACE INTO meta VALUES ('reader_version', ?)", (reader,))
    con.execute("INSERT OR REPLACE INTO meta VALUES ('unread', ?)",
                (json.dumps(sorted(unread_paths)),))
    con.execute("INSERT OR REPLACE INTO meta VALUES ('names_digest', ?)", (names_digest,))
    con.execute("DELETE FROM pending")

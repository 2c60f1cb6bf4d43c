"""The index's layout and what the index says about itself.

The schema and its version, the pragmas of a new file, the ``meta`` rows a
build leaves (when, under which reading rules), the soundness probes, and
how a path is spelled as an SQLite key. Every other part of the store
builds on these, and the reader opens an index only after
``schema_version`` agrees with ``INDEX_SCHEMA_VERSION``.

Kept light on purpose: the per-turn path imports it, so it imports only json,
os, sqlite3 and the tokenizer's spelling.
"""

from __future__ import annotations

import json
import os
import sqlite3

from ..text import TOKENIZER

# The layout of the index file. Bump the version when it changes: an index of another
# version is rebuilt, never read.
INDEX_SCHEMA_VERSION = 7
_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (
    rowid INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    layer TEXT NOT NULL,
    layer_number INTEGER NOT NULL,
    tree TEXT, branch TEXT, leaf TEXT,
    parent_path TEXT,
    doc_id TEXT,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    facts TEXT NOT NULL,
    updated TEXT,  -- frontmatter 'updated' as RFC 3339 UTC; NULL: the file's mtime stands in
    superseded_by TEXT  -- the successor's id a superseded record names
);
CREATE INDEX docs_layer ON docs(layer_number);
-- What every build compares with the walk, read without touching the wide rows.
CREATE INDEX docs_stat ON docs(path, size, mtime_ns, ino);
CREATE INDEX docs_id ON docs(doc_id) WHERE doc_id IS NOT NULL;
CREATE VIRTUAL TABLE terms USING fts5(title, path, body, tokenize = "{tokenizer}");
-- Files the last build left out: their stat, whether their path is a route, and their id
-- when they could be read (a path that is not UTF-8 is kept as its bytes).
CREATE TABLE quarantine (
    path PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    routed INTEGER NOT NULL,
    doc_id TEXT
) WITHOUT ROWID;
-- The words of the files left out (quarantined), searched only to say that a query's words
-- occur in a file the index does not hold: never shown, never ranked with the documents.
CREATE TABLE left_out (rowid INTEGER PRIMARY KEY, path NOT NULL UNIQUE);
CREATE VIRTUAL TABLE left_out_terms USING fts5(title, names, body, tokenize = "{tokenizer}");
-- Every standing problem, as [path, code, message, level] JSON: 'forest' problems come from
-- the walk and are re-derived on every build, 'names' (case collisions) when a name changed,
-- 'file' problems file by file.
CREATE TABLE problems (path NOT NULL, scope TEXT NOT NULL, issue TEXT NOT NULL);
CREATE INDEX problems_path ON problems(path);
-- Links other than the one to the parent (children are found by path), so that a file
-- appearing or going re-checks exactly the files that link to it.
CREATE TABLE links (target TEXT NOT NULL, source TEXT NOT NULL);
CREATE INDEX links_target ON links(target);
CREATE INDEX links_source ON links(source);
CREATE TABLE events (event_id TEXT NOT NULL, path TEXT NOT NULL);
CREATE INDEX events_id ON events(event_id);
CREATE INDEX events_path ON events(path);
-- The raw captures inside source files (ISTM events, Daily entries), each searchable on its
-- own; kept and dropped with their file's document row.
CREATE TABLE fragments (
    rowid INTEGER PRIMARY KEY,
    doc INTEGER NOT NULL,  -- docs.rowid of the file
    kind TEXT NOT NULL,  -- 'event' or 'entry'
    anchor TEXT NOT NULL,  -- event id, or the entry's heading
    observed_at TEXT  -- RFC 3339 UTC
);
CREATE INDEX fragments_doc ON fragments(doc);
CREATE INDEX fragments_observed ON fragments(observed_at);
CREATE VIRTUAL TABLE fragment_terms USING fts5(body, tokenize = "{tokenizer}");
-- What each file cites as its provenance (pointers path#anchor, or a bare path): whether a
-- fragment was promoted is a lookup here, made at query time.
CREATE TABLE cites (source TEXT NOT NULL, target TEXT NOT NULL, anchor TEXT);
CREATE INDEX cites_target ON cites(target, anchor);
CREATE INDEX cites_source ON cites(source);
-- Paths a writer re-described since the last build: the next build re-checks around them.
CREATE TABLE pending (path TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO meta VALUES ('schema_version', '{version}');
"""


def create(con: sqlite3.Connection) -> None:
    """Lay out a new, empty index in a private temp file, tuned for one bulk load."""
    # A private temp file: the rename that publishes it is the commit, so no journal is needed.
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    # 64 MiB of page cache keeps FTS5's segment merges mostly in memory: at 100,000
    # documents 256 MiB built no faster (25.2 s against 26.2 s) and peaked at 515 MiB, not 314.
    con.execute("PRAGMA cache_size = -65536")
    con.executescript(_SCHEMA.format(tokenizer=TOKENIZER, version=INDEX_SCHEMA_VERSION))


def end_bulk_load(con: sqlite3.Connection) -> None:
    """Back to a journaled file, as incremental builds need it."""
    con.execute("PRAGMA journal_mode = DELETE")


def sqlite_features() -> dict[str, bool]:
    """Which full-text features this Python's SQLite has, probed in a scratch database."""
    features = {}
    con = sqlite3.connect(":memory:")
    for name, tokenizer in (("fts5", "unicode61"), ("fts5_trigram", "trigram")):
        try:
            con.execute(f"CREATE VIRTUAL TABLE t_{name} USING fts5(x, tokenize='{tokenizer}')")
            features[name] = True
        except sqlite3.OperationalError:
            features[name] = False
    con.close()
    return features


def schema_version(con: sqlite3.Connection) -> str | None:
    """The schema the index was built with; None for a file that is not our index."""
    try:
        return _meta(con, "schema_version")
    except sqlite3.OperationalError:
        return None


def reader_version(con: sqlite3.Connection) -> str | None:
    return _meta(con, "reader_version")


def built_at_ns(con: sqlite3.Connection) -> int:
    built = _meta(con, "built_at_ns")
    return int(built) if built else 0


def unread(con: sqlite3.Connection) -> set[str]:
    """Symlinks and special files at canonical paths when the index was built."""
    return set(json.loads(_meta(con, "unread") or "[]"))


def names_digest(con: sqlite3.Connection) -> str | None:
    return _meta(con, "names_digest")


def _meta(con: sqlite3.Connection, key: str) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def passes_quick_check(con: sqlite3.Connection) -> bool:
    """Whether the file reads as a sound database: opening its schema plays a hot journal
    back, and SQLite's quick check then finds what a journal cut short left half-restored."""
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return con.execute("PRAGMA quick_check(1)").fetchone() == ("ok",)
    except sqlite3.DatabaseError:
        return False


def database_file(con: sqlite3.Connection) -> str:
    """The file behind the connection's main database."""
    return con.execute("PRAGMA database_list").fetchone()[2]


def path_key(path: str) -> str | bytes:
    """A path as SQLite can store it: a name that is not UTF-8 (held by the walk as surrogate
    escapes, which SQLite text cannot take) is kept as its raw bytes."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path)
    return path


def path_text(value: str | bytes) -> str:
    return os.fsdecode(value) if isinstance(value, bytes) else value


def chunked(items: list[str], size: int = 400) -> list[list[str]]:
    """Slices below SQLite's bound on parameters, even when a statement names them twice."""
    return [items[start:start + size] for start in range(0, len(items), size)]

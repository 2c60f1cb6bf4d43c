"""The index store: every SQL statement run against the index, with named rows.

The schema, the statements a build writes with, and every read of a built
index (retrieval, the writers' view of the forest, ``state``, ``maintain``'s
check) live here, so the column order is written once and callers read rows
by name. ``index.py`` decides what a build changes and when; this module
only says how that is spelled in SQL.

Kept light on purpose: retrieval imports it on every agent turn, so it
imports only os, sqlite3 and typing.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .documents import Facts, Fragment
    from .routes import Route

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

# BM25 column weights over the ``terms`` table (title, path words, body): a title word
# says more about a document than a body word. Tuned with the ranking (docs/benchmarks.md).
_BM25 = "bm25(terms, 2.0, 1.0, 1.0)"


class Node(NamedTuple):
    """One document's index row, as retrieval reads it."""

    rowid: int
    path: str
    layer: str
    layer_number: int
    title: str
    doc_id: str | None
    status: str | None
    sha256: str
    size: int
    mtime_ns: int
    parent_path: str | None
    updated: str | None  # frontmatter 'updated', RFC 3339 UTC
    superseded_by: str | None


_SELECT_NODE = ", ".join(f"d.{column}" for column in Node._fields)


# --- retrieval ------------------------------------------------------------------------------


def ranked(con: sqlite3.Connection, match: str, window: int) -> list[tuple[Node, float]]:
    """The best ``window`` documents for a MATCH expression, with their raw BM25 (lower is better).

    FTS5 ranks fastest on its own (``ORDER BY`` score ``LIMIT`` without a
    join), so the ranking runs in a subquery and only its rows are joined.
    """
    rows = con.execute(
        f"SELECT {_SELECT_NODE}, ranked.score FROM (SELECT rowid, {_BM25} AS score "
        "FROM terms WHERE terms MATCH ? ORDER BY score LIMIT ?) AS ranked "
        "JOIN docs d ON d.rowid = ranked.rowid",
        (match, window),
    ).fetchall()
    return [(Node._make(row[:-1]), row[-1]) for row in rows]


def scores(con: sqlite3.Connection, expression: str) -> list[tuple[int, float]]:
    """(rowid, raw BM25) of every document matching an expression: no ranking, no join."""
    return con.execute(f"SELECT rowid, {_BM25} FROM terms WHERE terms MATCH ?",
                       (expression,)).fetchall()


def nodes(con: sqlite3.Connection, paths: list[str]) -> list[Node]:
    """The rows of these paths; a path with no row is left out."""
    if not paths:
        return []
    marks = ",".join("?" * len(paths))
    rows = con.execute(f"SELECT {_SELECT_NODE} FROM docs d WHERE d.path IN ({marks})", paths)
    return [Node._make(row) for row in rows]


def children(con: sqlite3.Connection, parent_path: str, prefix: str) -> list[Node]:
    """The indexed documents whose parent is ``parent_path``; their paths start with ``prefix``
    (``routes.children_prefix``), which keeps the read to one range of the path index."""
    rows = con.execute(f"SELECT {_SELECT_NODE} FROM docs d WHERE d.path >= ? AND d.path < ? "
                       "AND d.parent_path = ? ORDER BY d.path",
                       (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1), parent_path))
    return [Node._make(row) for row in rows]


def holding(con: sqlite3.Connection, term: str, rowids: list[int]) -> set[int]:
    """Which of these documents hold a term (a MATCH over just them, not over the index)."""
    found: set[int] = set()
    for start in range(0, len(rowids), 400):  # below SQLite's bound on parameters
        chunk = rowids[start:start + 400]
        marks = ",".join("?" * len(chunk))
        found.update(rowid for (rowid,) in con.execute(
            f"SELECT rowid FROM terms WHERE terms MATCH ? AND rowid IN ({marks})",
            [f'"{term}"', *chunk]))
    return found


def doc_by_path(con: sqlite3.Connection, path: str) -> Node | None:
    row = con.execute(f"SELECT {_SELECT_NODE} FROM docs d WHERE d.path = ?", (path,)).fetchone()
    return None if row is None else Node._make(row)


def doc_by_id(con: sqlite3.Connection, doc_id: str) -> Node | None:
    """The document with this id; the first by path if a broken forest holds it twice."""
    row = con.execute(f"SELECT {_SELECT_NODE} FROM docs d WHERE d.doc_id = ? "
                      "ORDER BY d.path LIMIT 1", (doc_id,)).fetchone()
    return None if row is None else Node._make(row)


class Fragment(NamedTuple):
    """One unpromoted capture: an ISTM event or a Daily entry, as the index knows it."""

    kind: str  # "event" or "entry"
    path: str
    anchor: str  # the event id or the entry's heading
    observed_at: str | None  # RFC 3339 UTC
    sha256: str  # of the file, when it was indexed
    layer: str


_SELECT_FRAGMENT = "f.kind, d.path, f.anchor, f.observed_at, d.sha256, d.layer"
# A fragment is filed once a document of a layer that promotes it cites it: an event by a
# Daily record or an STM leaf, a Daily entry by an STM, MTM or LTM document.
_UNFILED = (
    "NOT EXISTS (SELECT 1 FROM cites c JOIN docs s ON s.path = c.source "
    "WHERE c.target = d.path AND c.anchor = f.anchor AND ("
    "(f.kind = 'event' AND s.layer_number IN (4, 5)) OR "
    "(f.kind = 'entry' AND s.layer_number IN (2, 3, 4))))")


def _observed_between(since: str | None, until: str | None) -> tuple[str, list[str]]:
    clauses, args = [], []
    if since is not None:
        clauses.append(" AND f.observed_at >= ?")
        args.append(since)
    if until is not None:
        clauses.append(" AND f.observed_at <= ?")
        args.append(until)
    return "".join(clauses), args


def unfiled(con: sqlite3.Connection, limit: int | None = None, *, since: str | None = None,
            until: str | None = None) -> list[Fragment]:
    """Every capture no document has promoted, oldest first (those without a time last).

    ``since`` and ``until`` (RFC 3339 UTC, as ``documents.utc_stamp`` spells
    it) bound the observed time; a fragment without one is then left out.
    """
    between, args = _observed_between(since, until)
    sql = (f"SELECT {_SELECT_FRAGMENT} FROM fragments f JOIN docs d ON d.rowid = f.doc "
           f"WHERE {_UNFILED}{between} "
           "ORDER BY f.observed_at IS NULL, f.observed_at, d.path, f.rowid")
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [Fragment._make(row) for row in con.execute(sql, args)]


def unfiled_matching(con: sqlite3.Connection, match: str, limit: int, *,
                     since: str | None = None, until: str | None = None
                     ) -> list[tuple[Fragment, float]]:
    """The best ``limit`` unpromoted captures for a MATCH expression, with their BM25 (higher
    is better, as ``ranking.hits`` gives it).

    As in ``ranked``, FTS5 ranks fastest alone: the best matches are fetched
    first, then joined and judged unfiled; when too few of them are, the
    window grows until enough are or the matches run out. So a word held by
    tens of thousands of captures costs one ranking, not a join per match.
    """
    between, args = _observed_between(since, until)
    window = max(limit * 4, 20)
    while True:
        rows = con.execute(
            f"SELECT {_SELECT_FRAGMENT}, m.score FROM (SELECT rowid, bm25(fragment_terms) AS "
            "score FROM fragment_terms WHERE fragment_terms MATCH ? ORDER BY score LIMIT ?) "
            "AS m JOIN fragments f ON f.rowid = m.rowid JOIN docs d ON d.rowid = f.doc "
            f"WHERE {_UNFILED}{between} ORDER BY m.score, d.path, f.rowid",
            [match, window, *args]).fetchall()
        if len(rows) >= limit or not _more_matches(con, match, window):
            break
        window *= 4
    return [(Fragment._make(row[:-1]), round(-row[-1], 6)) for row in rows[:limit]]


def _more_matches(con: sqlite3.Connection, match: str, window: int) -> bool:
    sql = "SELECT count(*) FROM (SELECT 1 FROM fragment_terms WHERE fragment_terms MATCH ? " \
          "LIMIT ?)"
    return con.execute(sql, (match, window + 1)).fetchone()[0] > window


def citing(con: sqlite3.Connection, pointers: list[str]) -> dict[str, list[str]]:
    """The indexed documents citing each pointer (``path#anchor`` or a bare path), by path;
    a pointer no document cites maps to an empty list."""
    found: dict[str, list[str]] = {pointer: [] for pointer in pointers}
    for pointer in found:
        target, _, anchor = pointer.partition("#")
        rows = con.execute(
            "SELECT DISTINCT c.source FROM cites c JOIN docs s ON s.path = c.source "
            "WHERE c.target = ? AND c.anchor IS ? ORDER BY c.source",
            (target, anchor or None))
        found[pointer] = [source for (source,) in rows]
    return found


def passes_quick_check(con: sqlite3.Connection) -> bool:
    """Whether the file reads as a sound database: opening its schema plays a hot journal
    back, and SQLite's quick check then finds what a journal cut short left half-restored."""
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return con.execute("PRAGMA quick_check(1)").fetchone() == ("ok",)
    except sqlite3.DatabaseError:
        return False


def document_count(con: sqlite3.Connection) -> int:
    return con.execute("SELECT count(*) FROM docs").fetchone()[0]


def database_file(con: sqlite3.Connection) -> str:
    """The file behind the connection's main database."""
    return con.execute("PRAGMA database_list").fetchone()[2]


def token_counts(con: sqlite3.Connection, words: list[str]) -> list[tuple[int, int]]:
    """(position in ``words``, documents holding its rarest token) for each word with a token.

    The words are tokenized by SQLite itself (a TEMP FTS5 table with the
    index's tokenizer), so folding and stemming match the index exactly; the
    counts come from ``fts5vocab`` over the index. Only the connection's TEMP
    schema is written: the index stays read-only.
    """
    _create_vocabulary_tables(con)
    try:
        con.executemany("INSERT INTO temp.query_words (rowid, word) VALUES (?, ?)",
                        enumerate(words))
        return con.execute("SELECT q.doc, min(coalesce(v.doc, 0)) FROM temp.query_tokens q "
                           "LEFT JOIN temp.index_vocab v ON v.term = q.term GROUP BY q.doc"
                           ).fetchall()
    finally:
        con.execute("DELETE FROM temp.query_words")


def _create_vocabulary_tables(con: sqlite3.Connection) -> None:
    """The TEMP tables ``token_counts`` uses, once per connection."""
    from .text import TOKENIZER

    if con.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'query_words'").fetchone():
        return
    # Set before any TEMP table exists (changing it drops them): a few pages, no temp file.
    con.execute("PRAGMA temp_store = MEMORY")
    con.execute("CREATE VIRTUAL TABLE temp.index_vocab USING fts5vocab(main, terms, row)")
    con.execute(f'CREATE VIRTUAL TABLE temp.query_words USING fts5(word, '
                f'tokenize = "{TOKENIZER}")')
    con.execute("CREATE VIRTUAL TABLE temp.query_tokens "
                "USING fts5vocab(temp, query_words, instance)")


# --- the writers' view and the index check --------------------------------------------------


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
                      (_key(path),)).fetchone()
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


def paths_with_ids(con: sqlite3.Connection, ids: set[str]) -> dict[str, list[str]]:
    """The paths holding each of these ids (an id held by no file is left out)."""
    found: dict[str, list[str]] = {}
    items = sorted(ids)
    for start in range(0, len(items), 500):  # below SQLite's bound on parameters
        chunk = items[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for doc_id, path in con.execute(
                f"SELECT doc_id, path FROM docs WHERE doc_id IN ({marks})", chunk):
            found.setdefault(doc_id, []).append(path)
    return found


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


# --- what the index says about itself, and what an incremental build starts from ----------


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
    import json

    return set(json.loads(_meta(con, "unread") or "[]"))


def names_digest(con: sqlite3.Connection) -> str | None:
    return _meta(con, "names_digest")


def _meta(con: sqlite3.Connection, key: str) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


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
        stats.append((_text(path), size, mtime, ino))
        held[_text(path)] = bool(routed)
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
    for chunk in _chunks(sorted(values)):
        marks = ",".join("?" * len(chunk))
        args = [_key(v) for v in chunk]
        found.update(_text(value) for (value,) in con.execute(sql.format(marks),
                                                               args * repeat))
    return found


def _chunks(items: list[str], size: int = 400) -> list[list[str]]:
    """Slices below SQLite's bound on parameters, even when a statement names them twice."""
    return [items[start:start + size] for start in range(0, len(items), size)]


def problems(con: sqlite3.Connection, scope: str | None = None) -> list[list[str]]:
    """The problems the index holds (of one scope, 'forest' or 'file', or all), as
    [path, code, message, level] lists."""
    import json

    rows = con.execute("SELECT issue FROM problems" + (" WHERE scope = ?" if scope else ""),
                       (scope,) if scope else ())
    return [json.loads(issue) for (issue,) in rows]


# Left-out files ranked per lookup: ranking every match costs a BM25 score per file (12 ms
# for 2,000 binary files that all match, against 0.5 ms for this many), on every turn.
LEFT_OUT_WINDOW = 100


def left_out_matching(con: sqlite3.Connection, match: str, limit: int) -> list[tuple[str, str]]:
    """``limit`` quarantined files holding words of a MATCH expression, the best of the first
    ``LEFT_OUT_WINDOW`` matches, each with the code of the first error that keeps it out
    (from the problems the build stored). Naming a few is the point, not ranking them all."""
    import json

    paths = [_text(path) for (path,) in con.execute(
        "SELECT l.path FROM (SELECT rowid, bm25(left_out_terms) AS score FROM left_out_terms "
        "WHERE left_out_terms MATCH ? LIMIT ?) AS m JOIN left_out l ON l.rowid = m.rowid "
        "ORDER BY m.score, l.path LIMIT ?", (match, LEFT_OUT_WINDOW, limit))]
    found = []
    for path in paths:
        issues = [json.loads(issue) for (issue,) in con.execute(
            "SELECT issue FROM problems WHERE path = ?", (_key(path),))]
        found.append((path, _holding_code(issues)))
    return found


def _holding_code(issues: list[list[str]]) -> str:
    from .issues import Issue
    from .quarantine import keeps_out

    codes = sorted(issue[1] for issue in issues if keeps_out(Issue(*issue)))
    return codes[0] if codes else "left_out"


# --- writing (only index.py's builds call these) --------------------------------------------


def create(con: sqlite3.Connection) -> None:
    """Lay out a new, empty index in a private temp file, tuned for one bulk load."""
    from .text import TOKENIZER

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
    from .stamps import utc_stamp

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
                (_key(path), size, mtime_ns, ino, int(routed), doc_id))


def release(con: sqlite3.Connection, path: str) -> None:
    """Forget a file's quarantine entry and its left-out words."""
    con.execute("DELETE FROM quarantine WHERE path = ?", (_key(path),))
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
    return con.execute("INSERT INTO left_out (path) VALUES (?)", (_key(path),)).lastrowid


def _forget_words(con: sqlite3.Connection, path: str) -> None:
    row = con.execute("SELECT rowid FROM left_out WHERE path = ?", (_key(path),)).fetchone()
    if row is not None:
        con.execute("DELETE FROM left_out_terms WHERE rowid = ?", row)
        con.execute("DELETE FROM left_out WHERE rowid = ?", row)


def set_references(con: sqlite3.Connection, path: str, targets: list[str],
                   event_ids: list[str], sources: list[str] = ()) -> None:
    """Replace what a file links to (beyond its parent), the event ids it holds and the
    pointers it cites (``path#anchor`` or a bare path)."""
    forget_references(con, path)
    key = _key(path)
    con.executemany("INSERT INTO links VALUES (?, ?)", [(t, key) for t in targets])
    con.executemany("INSERT INTO events VALUES (?, ?)", [(e, key) for e in event_ids])
    cited = [pointer.partition("#") for pointer in sources]
    con.executemany("INSERT INTO cites VALUES (?, ?, ?)",
                    [(key, target, anchor or None) for target, _, anchor in cited])


def forget_references(con: sqlite3.Connection, path: str) -> None:
    con.execute("DELETE FROM links WHERE source = ?", (_key(path),))
    con.execute("DELETE FROM events WHERE path = ?", (_key(path),))
    con.execute("DELETE FROM cites WHERE source = ?", (_key(path),))


def replace_problems(con: sqlite3.Connection, paths: set[str], issues: list,
                     names: bool) -> None:
    """Drop the forest problems, the case collisions if ``names``, and the file problems of
    ``paths``; then store ``issues``, ``(scope, Issue)`` pairs of those scopes."""
    import json

    con.execute("DELETE FROM problems WHERE scope = 'forest'")
    if names:
        con.execute("DELETE FROM problems WHERE scope = 'names'")
    for chunk in _chunks(sorted(paths)):
        con.execute(f"DELETE FROM problems WHERE scope = 'file' AND path IN "
                    f"({','.join('?' * len(chunk))})", [_key(path) for path in chunk])
    con.executemany("INSERT INTO problems VALUES (?, ?, ?)",
                    [(_key(issue.path), scope, json.dumps(list(issue)))
                     for scope, issue in issues if names or scope != "names"])


def add_pending(con: sqlite3.Connection, paths: list[str]) -> None:
    con.executemany("INSERT OR IGNORE INTO pending VALUES (?)", [(path,) for path in paths])


def set_built(con: sqlite3.Connection, now_ns: int, reader: str, unread_paths: set[str],
              names_digest: str) -> None:
    """When the index was built, under which reading rules, and which paths it could not read.

    The build that records this has re-checked every writer's pending path.
    """
    import json

    con.execute("INSERT OR REPLACE INTO meta VALUES ('built_at_ns', ?)", (str(now_ns),))
    con.execute("INSERT OR REPLACE INTO meta VALUES ('reader_version', ?)", (reader,))
    con.execute("INSERT OR REPLACE INTO meta VALUES ('unread', ?)",
                (json.dumps(sorted(unread_paths)),))
    con.execute("INSERT OR REPLACE INTO meta VALUES ('names_digest', ?)", (names_digest,))
    con.execute("DELETE FROM pending")


def _key(path: str) -> str | bytes:
    """A path as SQLite can store it: a name that is not UTF-8 (held by the walk as surrogate
    escapes, which SQLite text cannot take) is kept as its raw bytes."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path)
    return path


def _text(value: str | bytes) -> str:
    return os.fsdecode(value) if isinstance(value, bytes) else value


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


# --- vectors (semantic.py's derived state, in a file of their own) -------------------------
#
# Chunk vectors live in ``.memory-forest/vectors.sqlite3``, beside the index and not in it:
# a full build replaces the index file by a rename, and the vectors, which cost minutes to
# make, must outlive that. They are keyed by the bytes' sha256 (not the path), so a rename
# or a rebuild keeps them and only new bytes are embedded; the index says which hashes are
# current. Nothing here imports numpy: vectors cross this layer as bytes.

VECTORS_SCHEMA_VERSION = 1
_VECTORS_COLUMNS = {"meta": ["key", "value"], "chunks": ["sha256", "chunk", "vector"]}
_VECTORS_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    sha256 TEXT NOT NULL,
    chunk INTEGER NOT NULL,  -- 0, 1, ...: a document's chunks are written together
    vector BLOB NOT NULL,  -- float16, little-endian
    PRIMARY KEY (sha256, chunk)
) WITHOUT ROWID;
"""


def open_vectors(path: str, create: bool = False) -> sqlite3.Connection:
    """The vectors file for writing; ``create`` lays it out when it is new."""
    con = sqlite3.connect(path, timeout=30)
    if create:
        con.executescript(_VECTORS_SCHEMA)
        with con:
            con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                        (str(VECTORS_SCHEMA_VERSION),))
    return con


def vectors_problem(con: sqlite3.Connection) -> str | None:
    """What makes a vectors file unusable as a whole (None when nothing does): pages that
    fail SQLite's quick check, another schema version, or tables not laid out as
    ``_VECTORS_SCHEMA``. Rows of the wrong shape are ``drop_misshapen_vectors``'s."""
    checked = con.execute("PRAGMA quick_check").fetchall()
    if checked != [("ok",)]:
        return "pages fail the quick check"
    for table, columns in _VECTORS_COLUMNS.items():
        found = [row[1] for row in con.execute(f"PRAGMA table_info({table})")]
        if found != columns:
            return f"table {table} is not laid out as written"
    if vectors_meta(con, "schema_version") != str(VECTORS_SCHEMA_VERSION):
        return "another schema version"
    return None


def misshapen_vectors(con: sqlite3.Connection, width: int, schema: str = "main") -> list[str]:
    """The documents whose chunk vectors are not ``width``-byte blobs numbered from 0
    without a gap."""
    return [sha for (sha,) in con.execute(
        f"SELECT sha256 FROM {schema}.chunks GROUP BY sha256 HAVING min(chunk) != 0 "
        "OR max(chunk) + 1 != count(*) "
        "OR sum(typeof(vector) != 'blob' OR length(vector) != ?) > 0", (width,))]


def drop_misshapen_vectors(con: sqlite3.Connection, width: int) -> int:
    """Forget every document ``misshapen_vectors`` names (the next embedding run embeds it
    again); how many there were."""
    with con:
        bad = misshapen_vectors(con, width)
        for chunk in _chunks(bad):
            con.execute(f"DELETE FROM chunks WHERE sha256 IN ({','.join('?' * len(chunk))})",
                        chunk)
    return len(bad)


def attach_vectors(con: sqlite3.Connection, path: str) -> bool:
    """Attach the vectors file read-only to an index connection, once; False when it is not
    ours (another schema) or cannot be read, so retrieval stays lexical."""
    from pathlib import Path

    attached = {name for _, name, _ in con.execute("PRAGMA database_list")}
    if "vec" not in attached:
        try:
            con.execute("ATTACH DATABASE ? AS vec", (f"{Path(path).as_uri()}?mode=ro",))
        except sqlite3.DatabaseError:
            return False
    try:
        return vectors_meta(con, "schema_version", "vec") == str(VECTORS_SCHEMA_VERSION)
    except sqlite3.DatabaseError:
        return False


def vectors_meta(con: sqlite3.Connection, key: str, schema: str = "main") -> str | None:
    row = con.execute(f"SELECT value FROM {schema}.meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_vectors_meta(con: sqlite3.Connection, key: str, value: str) -> None:
    con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def embedded_hashes(con: sqlite3.Connection) -> set[str]:
    """The hashes whose vectors are complete (chunk 0 is written with all the others)."""
    return {sha for (sha,) in con.execute("SELECT sha256 FROM chunks WHERE chunk = 0")}


def put_vectors(con: sqlite3.Connection, sha256: str, vectors: list[bytes]) -> None:
    """All of one document's chunk vectors, replacing any it had."""
    con.execute("DELETE FROM chunks WHERE sha256 = ?", (sha256,))
    con.executemany("INSERT INTO chunks VALUES (?, ?, ?)",
                    [(sha256, number, vector) for number, vector in enumerate(vectors)])


def drop_vectors(con: sqlite3.Connection, keep: set[str]) -> int:
    """Forget the vectors of every hash not in ``keep`` (bytes no document holds any more)."""
    gone = sorted(embedded_hashes(con) - keep)
    for chunk in _chunks(gone):
        con.execute(f"DELETE FROM chunks WHERE sha256 IN ({','.join('?' * len(chunk))})", chunk)
    return len(gone)


def embeddable(con: sqlite3.Connection, layers: tuple[int, ...]) -> list[tuple[str, str]]:
    """(path, sha256) of every indexed document of these layers, by path."""
    marks = ",".join("?" * len(layers))
    return con.execute(f"SELECT path, sha256 FROM docs WHERE layer_number IN ({marks}) "
                       "ORDER BY path", layers).fetchall()


def coverage(con: sqlite3.Connection, layers: tuple[int, ...]) -> tuple[int, int]:
    """(documents embedded, documents that can be), over an index with vectors attached."""
    marks = ",".join("?" * len(layers))
    return con.execute(
        "SELECT count(v.sha256), count(*) FROM docs d LEFT JOIN vec.chunks v "
        f"ON v.sha256 = d.sha256 AND v.chunk = 0 WHERE d.layer_number IN ({marks})",
        layers).fetchone()


def all_vectors(con: sqlite3.Connection, width: int, schema: str = "main"
                ) -> tuple[list[str], list[int], bytes]:
    """Every chunk vector, in one read: the hashes (by hash), each one's number of chunks,
    and the vectors end to end in the same order. ``ValueError`` when a vector is not a
    ``width``-byte blob: a reader then ranks without them, the writer drops that document's
    (``drop_misshapen_vectors``)."""
    hashes: list[str] = []
    counts: list[int] = []
    blobs: list[bytes] = []
    for sha, vector in con.execute(f"SELECT sha256, vector FROM {schema}.chunks "
                                   "ORDER BY sha256, chunk"):
        if type(vector) is not bytes or len(vector) != width:
            raise ValueError("a chunk vector has the wrong type or length")
        if hashes and hashes[-1] == sha:
            counts[-1] += 1
        else:
            hashes.append(sha)
            counts.append(1)
        blobs.append(vector)
    return hashes, counts, b"".join(blobs)


def nodes_with_hashes(con: sqlite3.Connection, hashes: list[str],
                      layers: tuple[int, ...]) -> list[Node]:
    """The indexed documents of these layers whose bytes have one of these hashes."""
    found: list[Node] = []
    marks = ",".join("?" * len(layers))
    for chunk in _chunks(hashes):
        found += [Node._make(row) for row in con.execute(
            f"SELECT {_SELECT_NODE} FROM docs d WHERE d.sha256 IN ({','.join('?' * len(chunk))})"
            f" AND d.layer_number IN ({marks})", [*chunk, *layers])]
    return found

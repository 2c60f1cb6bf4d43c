"""Retrieval's reads of a built index: documents, captures, citations, word counts.

What a turn asks the index (the ranking's BM25 scores, a trail's rows, the
captures no document has promoted, the files left out that hold a query's
words), with rows named by ``DocRow`` and ``FragmentRow`` so callers never
depend on the column order.

Kept light on purpose: retrieval imports it on every agent turn, so it
imports only json, sqlite3, typing, the tokenizer's spelling and the store's
schema.
"""

from __future__ import annotations

import json
import sqlite3
from typing import NamedTuple

from ..issues import Issue
from ..text import TOKENIZER
from .schema import chunked, path_key, path_text

# BM25 column weights over the ``terms`` table (title, path words, body): a title word
# says more about a document than a body word. Tuned with the ranking (docs/benchmarks.md).
_BM25 = "bm25(terms, 2.0, 1.0, 1.0)"


class DocRow(NamedTuple):
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


_SELECT_DOC = ", ".join(f"d.{column}" for column in DocRow._fields)


def ranked(con: sqlite3.Connection, match: str, window: int) -> list[tuple[DocRow, float]]:
    """The best ``window`` documents for a MATCH expression, with their raw BM25 (lower is better).

    FTS5 ranks fastest on its own (``ORDER BY`` score ``LIMIT`` without a
    join), so the ranking runs in a subquery and only its rows are joined.
    """
    rows = con.execute(
        f"SELECT {_SELECT_DOC}, ranked.score FROM (SELECT rowid, {_BM25} AS score "
        "FROM terms WHERE terms MATCH ? ORDER BY score LIMIT ?) AS ranked "
        "JOIN docs d ON d.rowid = ranked.rowid",
        (match, window),
    ).fetchall()
    return [(DocRow._make(row[:-1]), row[-1]) for row in rows]


def scores(con: sqlite3.Connection, expression: str) -> list[tuple[int, float]]:
    """(rowid, raw BM25) of every document matching an expression: no ranking, no join."""
    return con.execute(f"SELECT rowid, {_BM25} FROM terms WHERE terms MATCH ?",
                       (expression,)).fetchall()


def nodes(con: sqlite3.Connection, paths: list[str]) -> list[DocRow]:
    """The rows of these paths; a path with no row is left out."""
    if not paths:
        return []
    marks = ",".join("?" * len(paths))
    rows = con.execute(f"SELECT {_SELECT_DOC} FROM docs d WHERE d.path IN ({marks})", paths)
    return [DocRow._make(row) for row in rows]


def children(con: sqlite3.Connection, parent_path: str, prefix: str) -> list[DocRow]:
    """The indexed documents whose parent is ``parent_path``; their paths start with ``prefix``
    (``routes.children_prefix``), which keeps the read to one range of the path index."""
    rows = con.execute(f"SELECT {_SELECT_DOC} FROM docs d WHERE d.path >= ? AND d.path < ? "
                       "AND d.parent_path = ? ORDER BY d.path",
                       (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1), parent_path))
    return [DocRow._make(row) for row in rows]


def holding(con: sqlite3.Connection, term: str, rowids: list[int],
            columns: tuple[str, ...] = ()) -> set[int]:
    """Which of these documents hold a term (a MATCH over just them, not over the index);
    with ``columns``, only in those columns of ``terms`` (``title``, ``path``, ``body``)."""
    match = f'{{{" ".join(columns)}}} : "{term}"' if columns else f'"{term}"'
    found: set[int] = set()
    for start in range(0, len(rowids), 400):  # below SQLite's bound on parameters
        chunk = rowids[start:start + 400]
        marks = ",".join("?" * len(chunk))
        found.update(rowid for (rowid,) in con.execute(
            f"SELECT rowid FROM terms WHERE terms MATCH ? AND rowid IN ({marks})",
            [match, *chunk]))
    return found


def doc_by_path(con: sqlite3.Connection, path: str) -> DocRow | None:
    row = con.execute(f"SELECT {_SELECT_DOC} FROM docs d WHERE d.path = ?", (path,)).fetchone()
    return None if row is None else DocRow._make(row)


def doc_by_id(con: sqlite3.Connection, doc_id: str) -> DocRow | None:
    """The document with this id; the first by path if a broken forest holds it twice."""
    row = con.execute(f"SELECT {_SELECT_DOC} FROM docs d WHERE d.doc_id = ? "
                      "ORDER BY d.path LIMIT 1", (doc_id,)).fetchone()
    return None if row is None else DocRow._make(row)


class FragmentRow(NamedTuple):
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
            until: str | None = None) -> list[FragmentRow]:
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
    return [FragmentRow._make(row) for row in con.execute(sql, args)]


def unfiled_matching(con: sqlite3.Connection, match: str, limit: int, *,
                     since: str | None = None, until: str | None = None
                     ) -> list[tuple[FragmentRow, float]]:
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
    return [(FragmentRow._make(row[:-1]), round(-row[-1], 6)) for row in rows[:limit]]


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


def decided(con: sqlite3.Connection) -> set[str]:
    """Every pointer a review decision in the index names (``path#anchor`` or a bare path):
    decisions are ISTM events, and the index records their sources as what they cite."""
    rows = con.execute("SELECT DISTINCT c.target, c.anchor FROM cites c "
                       "JOIN docs s ON s.path = c.source WHERE s.layer_number = 6")
    return {f"{target}#{anchor}" if anchor else target for target, anchor in rows}


def document_count(con: sqlite3.Connection) -> int:
    return con.execute("SELECT count(*) FROM docs").fetchone()[0]


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
    if con.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'query_words'").fetchone():
        return
    # Set before any TEMP table exists (changing it drops them): a few pages, no temp file.
    con.execute("PRAGMA temp_store = MEMORY")
    con.execute("CREATE VIRTUAL TABLE temp.index_vocab USING fts5vocab(main, terms, row)")
    con.execute(f'CREATE VIRTUAL TABLE temp.query_words USING fts5(word, '
                f'tokenize = "{TOKENIZER}")')
    con.execute("CREATE VIRTUAL TABLE temp.query_tokens "
                "USING fts5vocab(temp, query_words, instance)")


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


LEFT_OUT_WINDOW = 100


def left_out_matching(con: sqlite3.Connection, match: str, limit: int) -> list[tuple[str, str]]:
    """``limit`` quarantined files holding words of a MATCH expression, the best of the first
    ``LEFT_OUT_WINDOW`` matches, each with the code of the first error that keeps it out
    (from the problems the build stored). Naming a few is the point, not ranking them all."""
    paths = [path_text(path) for (path,) in con.execute(
        "SELECT l.path FROM (SELECT rowid, bm25(left_out_terms) AS score FROM left_out_terms "
        "WHERE left_out_terms MATCH ? LIMIT ?) AS m JOIN left_out l ON l.rowid = m.rowid "
        "ORDER BY m.score, l.path LIMIT ?", (match, LEFT_OUT_WINDOW, limit))]
    found = []
    for path in paths:
        issues = [json.loads(issue) for (issue,) in con.execute(
            "SELECT issue FROM problems WHERE path = ?", (path_key(path),))]
        found.append((path, _holding_code(issues)))
    return found


def _holding_code(issues: list[list[str]]) -> str:
    from ..quarantine import keeps_out

    codes = sorted(issue[1] for issue in issues if keeps_out(Issue(*issue)))
    return codes[0] if codes else "left_out"


def nodes_with_hashes(con: sqlite3.Connection, hashes: list[str],
                      layers: tuple[int, ...]) -> list[DocRow]:
    """The indexed documents of these layers whose bytes have one of these hashes."""
    found: list[DocRow] = []
    marks = ",".join("?" * len(layers))
    for chunk in chunked(hashes):
        found += [DocRow._make(row) for row in con.execute(
            f"SELECT {_SELECT_DOC} FROM docs d WHERE d.sha256 IN ({','.join('?' * len(chunk))})"
            f" AND d.layer_number IN ({marks})", [*chunk, *layers])]
    return found

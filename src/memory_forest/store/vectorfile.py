"""The chunk vectors of semantic ranking, in a file of their own.

They live in ``.memory-forest/vectors.sqlite3``, beside the index and not in
it: a full build replaces the index file by a rename, and the vectors, which
cost minutes to make, must outlive that. They are keyed by the bytes'
sha256 (not the path), so a rename or a rebuild keeps them and only new
bytes are embedded; the index says which hashes are current. Nothing here
imports numpy: vectors cross this layer as bytes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .schema import chunked

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
        for chunk in chunked(bad):
            con.execute(f"DELETE FROM chunks WHERE sha256 IN ({','.join('?' * len(chunk))})",
                        chunk)
    return len(bad)


def attach_vectors(con: sqlite3.Connection, path: str) -> bool:
    """Attach the vectors file read-only to an index connection, once; False when it is not
    ours (another schema) or cannot be read, so retrieval stays lexical."""
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
    for chunk in chunked(gone):
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

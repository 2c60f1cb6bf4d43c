"""Route-first retrieval: ``route``, ``search`` and ``retrieve`` over the index.

Everything here returns metadata only, except ``search`` with an explicit
``include_body``. Anything that vouches for current content re-hashes the
canonical file first and fails closed with ``index_stale`` when it changed.

Kept light on purpose: this module runs in a fresh process on every agent
turn, so it imports only sqlite3, hashlib and the text analyzer.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ForestError, usage_error
from .layers import layer_for
from .text import analyze

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
STRUCTURED = (1, 2, 3, 4)
PROBE_WEIGHT = 0.5  # a caller's extra probe is weaker evidence than the user's own words
ANCESTOR_WEIGHT = 0.2  # evidence on a trail's owners supports, but never outweighs, its leaf
INACTIVE = ("superseded", "archived")

_NODE_COLUMNS = "rowid, path, layer, layer_number, title, doc_id, status, sha256, size, " \
    "mtime_ns, parent_path"


# --- queries --------------------------------------------------------------------------------


def match_expression(query: str) -> str:
    """Turn literal text into an FTS5 expression: quoted terms joined by OR.

    Terms are letters and digits only (``text.analyze``), and each is quoted,
    so nothing in a query can act as FTS syntax.
    """
    terms = list(dict.fromkeys(analyze(query)))
    return " OR ".join(f'"{term}"' for term in terms)


def _checked_query(query: str) -> str:
    if not query or not query.strip():
        raise usage_error("query_empty", "the query is empty")
    expression = match_expression(query)
    if not expression:
        raise ForestError("query_not_searchable",
                          "the query has no searchable words (only stopwords or punctuation)")
    return expression


def _checked_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise usage_error("limit_out_of_range", f"limit must be between 1 and {MAX_LIMIT}")
    return limit


def _layers(names: list[str] | None) -> tuple[int, ...]:
    if not names:
        return STRUCTURED
    numbers = []
    for name in names:
        layer = layer_for(name)
        if layer is None:
            raise usage_error("unknown_layer", f"unknown layer '{name[:40]}'")
        numbers.append(layer.number)
    return tuple(sorted(set(numbers)))


def _open(root_arg: str | Path) -> tuple[Path, sqlite3.Connection]:
    from .index import connect
    from .safety import open_root

    root = open_root(root_arg)
    return root, connect(root)


def _node(row: sqlite3.Row | tuple) -> dict[str, Any]:
    (_, path, layer, _, title, doc_id, status, sha256, size, mtime_ns, _) = row
    return {"path": path, "layer": layer, "title": title, "id": doc_id, "status": status,
            "sha256": sha256, "size": size, "mtime_ns": mtime_ns}


def _hits(con: sqlite3.Connection, expression: str, layers: tuple[int, ...], limit: int,
          columns: str = "") -> list[tuple[tuple, float]]:
    """Best ``limit`` documents for an expression, scored by BM25 (higher is better).

    Superseded and archived documents come after every active one, whatever their
    score: that ordering has to happen before ``LIMIT``, or a stronger old record
    would push the current one out of the answer.
    """
    match = f"{{{columns}}} : ({expression})" if columns else expression
    marks = ",".join("?" * len(layers))
    inactive = ",".join("?" * len(INACTIVE))
    sql = (f"SELECT {', '.join('d.' + c.strip() for c in _NODE_COLUMNS.split(','))}, "
           "bm25(terms, 2.0, 1.0, 1.0) AS rank FROM terms JOIN docs d ON d.rowid = terms.rowid "
           f"WHERE terms MATCH ? AND d.layer_number IN ({marks}) "
           f"ORDER BY d.status IN ({inactive}), rank, d.path LIMIT ?")
    rows = con.execute(sql, (match, *layers, *INACTIVE, limit)).fetchall()
    return [(row[:-1], round(-row[-1], 6)) for row in rows]


# --- route and search -----------------------------------------------------------------------


def route(root: str | Path, query: str, limit: int = DEFAULT_LIMIT,
          layers: list[str] | None = None) -> dict[str, Any]:
    """Candidates whose path or title matches: where in the forest to look."""
    from .operations import result

    expression, limit, wanted = _checked_query(query), _checked_limit(limit), _layers(layers)
    _, con = _open(root)
    with con:
        hits = _hits(con, expression, wanted, limit, columns="title path")
    results = [{**_node(row), "score": score} for row, score in hits]
    return result("route", count=len(results), results=results)


def search(root: str | Path, query: str, limit: int = DEFAULT_LIMIT,
           layers: list[str] | None = None, include_body: bool = False) -> dict[str, Any]:
    """Documents whose body matches. Bodies only with ``include_body``, after a fresh hash."""
    from .operations import result

    expression, limit, wanted = _checked_query(query), _checked_limit(limit), _layers(layers)
    root_path, con = _open(root)
    with con:
        hits = _hits(con, expression, wanted, limit)
    results = [{**_node(row), "score": score} for row, score in hits]
    if include_body:
        for item in results:
            item["body"] = fresh_text(root_path, item["path"], item["sha256"])
    return result("search", count=len(results), results=results, body_included=include_body)


def fresh_text(root: Path, path: str, indexed_sha256: str) -> str:
    """The current text of a file, only if it still has the indexed hash."""
    data = _current_bytes(root, path)
    from .documents import sha256_hex

    if sha256_hex(data) != indexed_sha256:
        raise _stale(path)
    return data.decode("utf-8", errors="replace")


def _current_bytes(root: Path, path: str) -> bytes:
    from .config import load_config
    from .safety import read_regular

    try:
        return read_regular(root, path, load_config(root).limits["max_file_bytes"])
    except ForestError as exc:
        if exc.code == "not_found":
            raise _stale(path) from None
        raise


def _stale(path: str) -> ForestError:
    return ForestError("index_stale", "a file changed since it was indexed; run "
                       "'memory-forest index ROOT' and ask again", {"path": path})


def verify(root: Path, nodes: list[dict[str, Any]]) -> None:
    """Re-hash every file; any difference from the index fails closed."""
    import hashlib

    checked: set[str] = set()
    for node in nodes:
        if node["path"] in checked:
            continue
        data = _current_bytes(root, node["path"])
        if len(data) != node["size"] or hashlib.sha256(data).hexdigest() != node["sha256"]:
            raise _stale(node["path"])
        checked.add(node["path"])


# --- retrieve -------------------------------------------------------------------------------


@dataclass
class _Trail:
    nodes: list[dict[str, Any]]
    scores: dict[int, float] = field(default_factory=dict)  # query number -> evidence

    @property
    def owner(self) -> dict[str, Any]:
        return self.nodes[-1]


def retrieve(root: str | Path, query: str, limit: int = DEFAULT_LIMIT,
             plan: Any = None) -> dict[str, Any]:
    """Root-first trails XLTM -> LTM -> MTM -> STM for a query, verified against the files.

    ``plan`` is a parsed ``QueryPlan`` (or None). Trails with evidence from the
    original query always rank ahead of trails found only by plan probes.
    """
    from .operations import result

    queries = [_checked_query(query)]
    for probe in plan.probes if plan is not None else []:
        queries.append(match_expression(probe.query))
    limit = _checked_limit(limit)
    root_path, con = _open(root)
    with con:
        trails = _trails(con, queries, depth=max(limit * 5, 50))
    ranked = sorted(trails, key=_rank_key)[:limit]
    verify(root_path, [node for trail in ranked for node in trail.nodes])
    rendered = [_render_trail(trail) for trail in ranked]
    return result("retrieve", count=len(rendered), trails=rendered, body_included=False,
                  probes=len(queries) - 1)


def _trails(con: sqlite3.Connection, queries: list[str], depth: int) -> list[_Trail]:
    evidence: dict[str, dict[int, float]] = {}
    rows: dict[str, tuple] = {}
    for number, expression in enumerate(queries):
        if not expression:
            continue  # a probe with no searchable words adds nothing
        for row, score in _hits(con, expression, STRUCTURED, depth):
            rows[row[1]] = row
            evidence.setdefault(row[1], {})[number] = score
    chains = {path: _chain(con, rows[path]) for path in evidence}
    # A hit that owns another hit is evidence for that deeper trail, not a trail of its own:
    # retrieval narrows toward leaves and never fans out over the forest.
    owners = {node["path"] for chain in chains.values() for node in chain[:-1]}
    trails = []
    for path, chain in chains.items():
        if path in owners:
            continue
        trail = _Trail(chain)
        for node in chain:
            for number, score in evidence.get(node["path"], {}).items():
                weight = 1.0 if node["path"] == path else ANCESTOR_WEIGHT
                trail.scores[number] = trail.scores.get(number, 0.0) + weight * score
        trails.append(trail)
    return trails


def _chain(con: sqlite3.Connection, row: tuple) -> list[dict[str, Any]]:
    """The root-first ownership chain ending at ``row``, from the parent paths in the index."""
    chain = [row]
    while chain[0][-1] is not None and len(chain) < 4:
        parent = con.execute(f"SELECT {_NODE_COLUMNS} FROM docs WHERE path = ?",
                             (chain[0][-1],)).fetchone()
        if parent is None:
            break
        chain.insert(0, parent)
    return [_node(r) for r in chain]


def _score(trail: _Trail) -> float:
    return round(sum(score * (1.0 if number == 0 else PROBE_WEIGHT)
                     for number, score in trail.scores.items()), 6)


def _rank_key(trail: _Trail) -> tuple:
    return (0 not in trail.scores, trail.owner["status"] in INACTIVE, -_score(trail),
            -len(trail.nodes), trail.owner["path"])


def _render_trail(trail: _Trail) -> dict[str, Any]:
    nodes = trail.nodes
    return {
        "nodes": nodes,
        "complete": len(nodes) == 4 and nodes[0]["layer"] == "01 xltm",
        "score": _score(trail),
        "status": trail.owner["status"],
        "original_query_matched": 0 in trail.scores,
        "matched_query_plan_probe_count": sum(1 for n in trail.scores if n > 0),
        "canonical_parent_child": [
            {"parent": parent["path"], "child": child["path"]}
            for parent, child in zip(nodes, nodes[1:], strict=False)
        ],
    }

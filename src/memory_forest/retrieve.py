"""Route-first retrieval: ``route``, ``search``, ``retrieve`` and ``open_document``.

Everything here returns metadata only, except ``search`` with an explicit
``include_body`` and ``open_document``, the explicit read of one body.
Anything that vouches for current content re-hashes the canonical file first
and fails closed with ``index_stale`` when it changed.

Kept light on purpose: this module runs in a fresh process on every agent
turn, so it imports only sqlite3, hashlib and the text analyzer.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from .errors import ForestError, usage_error
from .layers import layer_for
from .text import query_terms

DEFAULT_LIMIT = 10
# A pasted page can hold thousands of distinct words; the first ones carry the
# question, and the bound keeps every lookup's cost bounded too.
MAX_QUERY_TERMS = 48
MAX_LIMIT = 100
STRUCTURED = (1, 2, 3, 4)
INACTIVE = ("superseded", "archived")

# Ranking weights, tuned on the LoCoMo development conversations (docs/benchmarks.md).
PHRASE_WEIGHT = 0.3  # two query words side by side in the text: evidence of word order
NEAR_WEIGHT = 0.3  # two query words within NEAR_WINDOW terms: the same sentence or turn
NEAR_WINDOW = 8
MAX_PAIRS = 28  # all pairs of the first 8 terms; bounds the cost of long questions
ANCESTOR_WEIGHT = 0.2  # evidence on a trail's owners supports, but never outweighs, its leaf
TREE_WEIGHT = 1.0  # favor trails in the trees that hold most of the evidence
PROBE_WEIGHT = 0.5  # a caller's extra probe is weaker evidence than the user's own words
COMMON_SHARE = 0.02  # a term in more than this share of documents is "common" ...
COMMON_MIN_DOCS = 500  # ... and in more than this many: small forests score every term

# The retrieve command's options: name -> (type, default). The typer command and the
# lean per-turn parser (``lean.parse``) are both built from this one table.
CLI_OPTIONS: dict[str, tuple[type, Any]] = {
    "limit": (int, DEFAULT_LIMIT),
    "query-plan": (str, None),
}

_NODE_COLUMNS = ("rowid", "path", "layer", "layer_number", "title", "doc_id", "status",
                 "sha256", "size", "mtime_ns", "parent_path")
_SELECT_NODE = ", ".join(f"d.{column}" for column in _NODE_COLUMNS)
_PATH, _LAYER, _STATUS = (_NODE_COLUMNS.index(c) for c in ("path", "layer_number", "status"))


# --- queries --------------------------------------------------------------------------------


def _any_of(terms: list[str]) -> str:
    return " OR ".join(f'"{term}"' for term in terms)


def _phrases(terms: list[str], common: frozenset[str] = frozenset()) -> str:
    pairs = [(a, b) for a, b in zip(terms, terms[1:], strict=False)
             if a not in common or b not in common]
    return " OR ".join(f'"{a} {b}"' for a, b in pairs)


def _near_pairs(terms: list[str], common: frozenset[str] = frozenset()) -> str:
    """Pairs of query words for proximity evidence; a pair of two common words (see
    ``_split_common``) would cost most of a lookup in a large forest and is left out."""
    pairs = [(a, b) for i, a in enumerate(terms) for b in terms[i + 1:]
             if a not in common or b not in common][:MAX_PAIRS]
    return " OR ".join(f'NEAR("{a}" "{b}", {NEAR_WINDOW})' for a, b in pairs)


def _checked_query(query: str) -> list[str]:
    if not query or not query.strip():
        raise usage_error("query_empty", "the query is empty")
    terms = query_terms(query)[:MAX_QUERY_TERMS]
    if not terms:
        raise ForestError("query_not_searchable",
                          "the query has no searchable words (only stopwords or punctuation)")
    return terms


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


def _node(row: tuple) -> dict[str, Any]:
    (_, path, layer, _, title, doc_id, status, sha256, size, mtime_ns, _) = row
    return {"path": path, "layer": layer, "title": title, "id": doc_id, "status": status,
            "sha256": sha256, "size": size, "mtime_ns": mtime_ns}


def _hits(con: sqlite3.Connection, expression: str, layers: tuple[int, ...], limit: int,
          columns: str = "") -> list[tuple[tuple, float]]:
    """Best ``limit`` documents for an expression, scored by BM25 (higher is better).

    FTS5 ranks fastest on its own (``ORDER BY rank LIMIT`` without a join), so
    the best matches are fetched first and filtered by layer afterwards; when
    the filter leaves too few, the window grows until it holds enough or the
    matches run out, so the answer is exactly the best of the wanted layers.
    Superseded and archived documents come after every active one, whatever
    their score, so a stronger old record never pushes the current one out.
    """
    match = f"{{{columns}}} : ({expression})" if columns else expression
    window = max(limit * 2, 20)
    while True:
        rows = con.execute(
            f"SELECT {_SELECT_NODE}, ranked.score FROM (SELECT rowid, "
            "bm25(terms, 2.0, 1.0, 1.0) AS score FROM terms WHERE terms MATCH ? "
            "ORDER BY score LIMIT ?) AS ranked JOIN docs d ON d.rowid = ranked.rowid",
            (match, window),
        ).fetchall()
        wanted = [row for row in rows if row[_LAYER] in layers]
        active = sum(1 for row in wanted if row[_STATUS] not in INACTIVE)
        if len(rows) < window or active >= limit:
            break
        window *= 4
    wanted.sort(key=lambda row: (row[_STATUS] in INACTIVE, row[-1], row[_PATH]))
    return [(row[:-1], round(-row[-1], 6)) for row in wanted[:limit]]


# --- route and search -----------------------------------------------------------------------


def route(root: str | Path, query: str, limit: int = DEFAULT_LIMIT,
          layers: list[str] | None = None) -> dict[str, Any]:
    """Candidates whose path or title matches: where in the forest to look."""
    from .operations import result

    terms, limit, wanted = _checked_query(query), _checked_limit(limit), _layers(layers)
    _, con = _open(root)
    with con:
        hits = _hits(con, _any_of(terms), wanted, limit, columns="title path")
    results = [{**_node(row), "score": score} for row, score in hits]
    return result("route", count=len(results), results=results)


def search(root: str | Path, query: str, limit: int = DEFAULT_LIMIT,
           layers: list[str] | None = None, include_body: bool = False) -> dict[str, Any]:
    """Documents whose body matches. Bodies only with ``include_body``, after a fresh hash."""
    from .operations import result

    terms, limit, wanted = _checked_query(query), _checked_limit(limit), _layers(layers)
    root_path, con = _open(root)
    with con:
        hits = _hits(con, _any_of(terms), wanted, limit)
    results = [{**_node(row), "score": score} for row, score in hits]
    if include_body:
        for item in results:
            item["body"] = fresh_text(root_path, item["path"], item["sha256"])
    return result("search", count=len(results), results=results, body_included=include_body)


def fresh_text(root: Path, path: str, indexed_sha256: str) -> str:
    """The current text of a file, only if it still has the indexed hash."""
    data = _current_bytes(root, path, _max_file_bytes(root))
    if _sha256(data) != indexed_sha256:
        raise _stale(path)
    return data.decode("utf-8", errors="replace")


def verify(root: Path, nodes: list[dict[str, Any]]) -> None:
    """Re-hash every file; any difference from the index fails closed."""
    max_bytes = _max_file_bytes(root)
    for path, node in {node["path"]: node for node in nodes}.items():
        data = _current_bytes(root, path, max_bytes)
        if len(data) != node["size"] or _sha256(data) != node["sha256"]:
            raise _stale(path)


def _max_file_bytes(root: Path) -> int:
    from .config import load_config

    return load_config(root).limits["max_file_bytes"]


def _current_bytes(root: Path, path: str, max_bytes: int) -> bytes:
    from .safety import read_regular

    try:
        return read_regular(root, path, max_bytes)
    except ForestError as exc:
        if exc.code == "not_found":
            raise _stale(path) from None
        raise


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _stale(path: str) -> ForestError:
    return ForestError("index_stale", "a file changed since it was indexed; run "
                       "'memory-forest index ROOT' and ask again", {"path": path})


# --- open -----------------------------------------------------------------------------------

SOURCE_LAYERS = (5, 6)  # Daily and ISTM: raw sources, opened only when asked for by name


def open_document(root: str | Path, path: str, allow_source_layers: bool = False
                  ) -> dict[str, Any]:
    """The current body of one indexed document, by root-relative path, after a fresh hash.

    The path must be canonical (``routes.parse_route``), so nothing outside
    the layers can be named. Daily and ISTM files need ``allow_source_layers``.
    A file that is not in the index, or whose bytes changed since indexing,
    fails with ``index_stale``; a path with no file fails with ``not_found``.
    """
    from .operations import result
    from .routes import parse_route

    layer = parse_route(path).layer
    if layer.number in SOURCE_LAYERS and not allow_source_layers:
        raise usage_error("source_layer_not_allowed",
                          f"'{layer.dirname}' is a raw source layer; ask for it explicitly "
                          "(allow_source_layers)", path=path)
    root_path, con = _open(root)
    with con:
        row = con.execute(f"SELECT {_SELECT_NODE} FROM docs d WHERE d.path = ?",
                          (path,)).fetchone()
    if row is None:
        from .safety import read_regular

        read_regular(root_path, path, _max_file_bytes(root_path))  # not_found when absent
        raise _stale(path)  # on disk but not in the index: the index is behind
    node = _node(row)
    body = fresh_text(root_path, path, node["sha256"])
    return result("open", **node, body=body, body_included=True)


# --- retrieve -------------------------------------------------------------------------------


class _Trail:
    __slots__ = ("paths", "evidence", "score", "nodes")

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths  # root-first ownership chain
        self.evidence: dict[int, float] = {}  # query number -> score
        self.score = 0.0
        self.nodes: list[dict[str, Any]] = []  # filled for returned trails

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
    queries += [query_terms(probe.query)[:MAX_QUERY_TERMS]
                for probe in (plan.probes if plan is not None else [])]
    limit = _checked_limit(limit)
    root_path, con = _open(root)
    with con:
        trails, statuses = _trails(con, queries, depth=max(limit * 5, 50))
        ranked = sorted(trails, key=lambda t: _rank_key(t, statuses))[:limit]
        _fill_nodes(con, ranked)
    verify(root_path, [node for trail in ranked for node in trail.nodes])
    return result("retrieve", count=len(ranked), trails=[_render(t) for t in ranked],
                  body_included=False, probes=len(queries) - 1)


def _split_common(con: sqlite3.Connection, terms: list[str],
                  min_docs: int = COMMON_MIN_DOCS) -> tuple[list[str], set[str]]:
    """Split terms into rare ones and common ones (in more than COMMON_SHARE of documents).

    Scoring a term costs time in proportion to the documents that hold it, so
    in a large forest a common word would dominate every lookup. Counting is
    bounded by the cut-off itself, so the split stays cheap.
    """
    total = con.execute("SELECT count(*) FROM docs").fetchone()[0]
    cutoff = max(min_docs, int(total * COMMON_SHARE))
    if total <= cutoff or len(terms) < 2:
        return terms, set()
    sql = "SELECT count(*) FROM (SELECT 1 FROM terms WHERE terms MATCH ? LIMIT ?)"
    common = {t for t in terms if con.execute(sql, (f'"{t}"', cutoff + 1)).fetchone()[0] > cutoff}
    return [t for t in terms if t not in common], common


def _base_scores(con: sqlite3.Connection, terms: list[str], depth: int,
                 min_docs: int = COMMON_MIN_DOCS) -> tuple[dict[str, list], frozenset[str]]:
    """BM25 over all terms, computed so that common terms never drive the cost.

    Candidates come from the rare terms alone; each candidate that also holds
    common terms gets its score from ``(common) AND (rare)``, whose BM25 sums
    every term it holds, so the result equals plain BM25 over all terms for
    those documents.
    """
    rare, common = _split_common(con, terms, min_docs)
    return _scored(con, terms, rare, common, depth), frozenset(common)


def _scored(con: sqlite3.Connection, terms: list[str], rare: list[str], common: set[str],
            depth: int) -> dict[str, list]:
    if common and not rare:
        # Only common words: documents holding all of them come first, and only
        # if there are too few of those is every document with any of them scored.
        hits = _hits(con, " AND ".join(f'"{t}"' for t in terms), STRUCTURED, depth)
        if len(hits) < depth:
            hits = _hits(con, _any_of(terms), STRUCTURED, depth)
        return {row[_PATH]: [row, score] for row, score in hits}
    if not common:
        hits = _hits(con, _any_of(terms), STRUCTURED, depth)
        return {row[_PATH]: [row, score] for row, score in hits}
    found = {row[_PATH]: [row, score] for row, score in _hits(con, _any_of(rare), STRUCTURED,
                                                               depth)}
    by_rowid = {entry[0][0]: entry for entry in found.values()}
    for rowid, score in _scores(con, f"({_any_of(sorted(common))}) AND ({_any_of(rare)})"):
        if rowid in by_rowid:
            by_rowid[rowid][1] = score
    return found


def _scores(con: sqlite3.Connection, expression: str) -> list[tuple[int, float]]:
    """(rowid, BM25) of every document matching an expression: no ranking, no join.

    For expressions that only refine known candidates, whose matches are few.
    """
    rows = con.execute("SELECT rowid, bm25(terms, 2.0, 1.0, 1.0) FROM terms WHERE terms MATCH ?",
                       (expression,))
    return [(rowid, round(-score, 6)) for rowid, score in rows]


def retrieve_command(root: str | Path, query: str, limit: int = DEFAULT_LIMIT,
                     query_plan: str | None = None) -> dict[str, Any]:
    """``retrieve`` as the command line has it: a QueryPlan given as a file or ``-``."""
    plan = None
    if query_plan is not None:
        from . import queryplan

        plan = queryplan.load(query_plan)
    return retrieve(root, query, limit=limit, plan=plan)


def lean_args(args: list[str]) -> dict[str, Any] | None:
    """Arguments for ``retrieve_command`` when ``args`` is a plain retrieve command line."""
    from .lean import parse

    return parse(args, "retrieve", ("root", "query"), CLI_OPTIONS)


def _evidence(con: sqlite3.Connection, terms: list[str], depth: int) -> dict[str, list]:
    """Candidates for one query: BM25 over any term, plus phrase and proximity bonuses."""
    found, common = _base_scores(con, terms, depth)
    if len(terms) > 1:
        by_rowid = {entry[0][0]: entry for entry in found.values()}
        for expression, weight in ((_phrases(terms, common), PHRASE_WEIGHT),
                                   (_near_pairs(terms, common), NEAR_WEIGHT)):
            if not expression:
                continue
            for rowid, score in _scores(con, expression):
                if rowid in by_rowid:
                    by_rowid[rowid][1] += weight * score
    return found


def _trails(con: sqlite3.Connection, queries: list[list[str]],
            depth: int) -> tuple[list[_Trail], dict[str, str]]:
    """Trails for every candidate, scored; and the status of each candidate."""
    evidence: dict[str, dict[int, float]] = {}
    statuses: dict[str, str] = {}
    for number, terms in enumerate(queries):
        if not terms:
            continue  # a probe with no searchable words adds nothing
        for path, (row, score) in _evidence(con, terms, depth).items():
            statuses[path] = row[_STATUS]
            evidence.setdefault(path, {})[number] = score
    chains = {path: _chain(path) for path in evidence}
    # A hit that owns another hit is evidence for that deeper trail, not a trail of its own:
    # retrieval narrows toward leaves and never fans out over the forest.
    owners = {owner for chain in chains.values() for owner in chain[:-1]}
    trails = []
    for path, chain in chains.items():
        if path in owners:
            continue
        trail = _Trail(chain)
        for node in chain:
            weight = 1.0 if node == path else ANCESTOR_WEIGHT
            for number, score in evidence.get(node, {}).items():
                trail.evidence[number] = trail.evidence.get(number, 0.0) + weight * score
        trail.score = sum(score * (1.0 if number == 0 else PROBE_WEIGHT)
                          for number, score in trail.evidence.items())
        trails.append(trail)
    _favor_dense_trees(trails)
    return trails, statuses


def _favor_dense_trees(trails: list[_Trail]) -> None:
    """Scale each trail by its tree's share of all evidence.

    A question usually concerns one domain; trails in the tree where most of
    the evidence sits are likelier answers than stray matches elsewhere.
    """
    mass: dict[str, float] = {}
    for trail in trails:
        mass[_tree_of(trail)] = mass.get(_tree_of(trail), 0.0) + trail.score
    total = sum(mass.values()) or 1.0
    for trail in trails:
        trail.score = round(trail.score * (1 + TREE_WEIGHT * mass[_tree_of(trail)] / total), 6)


def _tree_of(trail: _Trail) -> str:
    return trail.paths[1] if len(trail.paths) > 1 else trail.paths[0]


def _chain(path: str) -> list[str]:
    """The root-first ownership chain ending at ``path`` (derived from the route alone)."""
    from .routes import parent_of

    chain = [path]
    while (parent := parent_of(chain[0])) is not None:
        chain.insert(0, parent)
    return chain


def _fill_nodes(con: sqlite3.Connection, trails: list[_Trail]) -> None:
    """Load node metadata for the returned trails; owners missing from the index are dropped."""
    wanted = sorted({path for trail in trails for path in trail.paths})
    marks = ",".join("?" * len(wanted))
    rows = con.execute(f"SELECT {_SELECT_NODE} FROM docs d WHERE d.path IN ({marks})",
                       wanted).fetchall() if wanted else []
    nodes = {row[_PATH]: _node(row) for row in rows}
    for trail in trails:
        trail.nodes = [nodes[path] for path in trail.paths if path in nodes]


def _rank_key(trail: _Trail, statuses: dict[str, str]) -> tuple:
    return (0 not in trail.evidence, statuses[trail.paths[-1]] in INACTIVE, -trail.score,
            -len(trail.paths), trail.paths[-1])


def _render(trail: _Trail) -> dict[str, Any]:
    nodes = trail.nodes
    return {
        "nodes": nodes,
        "complete": len(nodes) == 4 and nodes[0]["layer"] == "01 xltm",
        "score": trail.score,
        "status": trail.owner["status"],
        "original_query_matched": 0 in trail.evidence,
        "matched_query_plan_probe_count": sum(1 for number in trail.evidence if number > 0),
        "canonical_parent_child": [
            {"parent": parent["path"], "child": child["path"]}
            for parent, child in zip(nodes, nodes[1:], strict=False)
        ],
    }

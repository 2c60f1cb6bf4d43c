"""Route-first retrieval: ``route``, ``search``, ``retrieve`` and ``open_document``.

Everything here returns metadata only, except ``search`` with an explicit
``include_body`` and ``open_document``, the explicit read of one body.
Every result is re-hashed against its file before it is returned and says
what it found (``verified``, ``changed_since_index``, ``current_sha256``):
a hand edit since the last ``index`` is a flag on the result, not a failure,
and bodies are always the file's current bytes. With ``strict`` a changed
file fails closed with ``index_stale`` instead.

Kept light on purpose: this module runs in a fresh process on every agent
turn, so it imports only sqlite3, hashlib (through ``digest``) and the text analyzer.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from . import store
from .digest import sha256_hex
from .errors import ForestError, usage_error
from .layers import layer_for
from .store import Node
from .text import query_terms

DEFAULT_LIMIT = 10
# A pasted page can hold thousands of distinct words; the rarest ones in the index
# carry the question, and the bound keeps every lookup's cost bounded too.
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
    """Every distinct searchable word of the query; which ones are searched is
    ``chosen_terms``'s choice, made against the index."""
    if not query or not query.strip():
        raise usage_error("query_empty", "the query is empty")
    terms = query_terms(query)
    if not terms:
        raise ForestError("query_not_searchable",
                          "the query has no searchable words (only stopwords or punctuation)")
    return terms


def chosen_terms(con: sqlite3.Connection, terms: list[str],
                 bound: int = MAX_QUERY_TERMS) -> list[str]:
    """The terms worth searching, in query order: those the index holds, the rarest first.

    A term no document holds cannot match and is dropped; of the rest, at
    most ``bound`` are kept, fewest documents first (on a tie the later term,
    since a long turn usually ends with its question). Choosing by rarity
    rather than position is what lets a question after a long preamble or a
    pasted log be found.
    """
    frequency = document_frequencies(con, terms)
    present = [term for term in terms if frequency.get(term)]
    if len(present) > bound:
        order = sorted(range(len(present)), key=lambda i: (frequency[present[i]], -i))
        keep = set(order[:bound])
        present = [term for i, term in enumerate(present) if i in keep]
    return present


# Document frequencies already counted in this process, for one state of one index file:
# the gate asks route and then retrieve about the same words. A count only steers which
# words are searched, so one that went stale with a concurrent write would cost nothing
# but a less apt choice; the key changes with the file anyway.
_counted: dict[str, int] = {}
_counted_for: list[tuple[int, ...]] = [()]
_MAX_COUNTED = 200_000


def document_frequencies(con: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
    """How many documents hold each term, as the index's own tokenizer sees it.

    The words are tokenized by SQLite itself (a TEMP FTS5 table with the
    index's tokenizer), so folding and stemming match the index exactly; the
    counts come from ``fts5vocab`` over the index, one lookup per term. Only
    the connection's TEMP schema is written: the index stays read-only.
    A word that yields several tokens counts as its rarest token; a term
    held by no document counts 0.
    """
    _forget_other_index(con)
    counts: dict[str, int] = {}
    wanted = []
    for term in dict.fromkeys(terms):  # one read per term: another thread may clear meanwhile
        known = _counted.get(term)
        if known is None:
            wanted.append(term)
        else:
            counts[term] = known
    if wanted:
        fresh = _count(con, wanted)
        _counted.update(fresh)
        counts.update(fresh)
    return {term: counts[term] for term in terms}


def _forget_other_index(con: sqlite3.Connection) -> None:
    import os

    st = os.stat(store.database_file(con))
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key != _counted_for[0] or len(_counted) > _MAX_COUNTED:
        _counted.clear()
        _counted_for[0] = key


def _count(con: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
    counts = dict.fromkeys(terms, 0)
    counts.update((terms[number], count) for number, count in store.token_counts(con, terms))
    return counts


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


def _node(row: Node) -> dict[str, Any]:
    return {"path": row.path, "layer": row.layer, "title": row.title, "id": row.doc_id,
            "status": row.status, "sha256": row.sha256, "size": row.size,
            "mtime_ns": row.mtime_ns}


def _hits(con: sqlite3.Connection, expression: str, layers: tuple[int, ...], limit: int,
          columns: str = "") -> list[tuple[Node, float]]:
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
        rows = store.ranked(con, match, window)
        wanted = [(row, bm25) for row, bm25 in rows if row.layer_number in layers]
        active = sum(1 for row, _ in wanted if row.status not in INACTIVE)
        if len(rows) < window or active >= limit:
            break
        window *= 4
    wanted.sort(key=lambda hit: (hit[0].status in INACTIVE, hit[1], hit[0].path))
    return [(row, round(-bm25, 6)) for row, bm25 in wanted[:limit]]


# --- route and search -----------------------------------------------------------------------


def route(root: str | Path, query: str, limit: int = DEFAULT_LIMIT,
          layer: list[str] | None = None, strict: bool = False) -> dict[str, Any]:
    """Candidates whose path or title matches: where in the forest to look."""
    from .envelope import result

    terms, limit, wanted = _checked_query(query), _checked_limit(limit), _layers(layer)
    root_path, con = _open(root)
    with con:
        terms = chosen_terms(con, terms)
        hits = _hits(con, _any_of(terms), wanted, limit, columns="title path") if terms else []
    results = [{**_node(row), "score": score} for row, score in hits]
    check(root_path, results, strict)
    return result("route", count=len(results), results=results)


def search(root: str | Path, query: str, limit: int = DEFAULT_LIMIT,
           layer: list[str] | None = None, include_body: bool = False,
           strict: bool = False) -> dict[str, Any]:
    """Documents whose body matches. Bodies only with ``include_body``: the current bytes."""
    from .envelope import result

    terms, limit, wanted = _checked_query(query), _checked_limit(limit), _layers(layer)
    root_path, con = _open(root)
    with con:
        terms = chosen_terms(con, terms)
        hits = _hits(con, _any_of(terms), wanted, limit) if terms else []
    results = [{**_node(row), "score": score} for row, score in hits]
    bodies = check(root_path, results, strict)
    if include_body:
        for item in results:
            data = bodies.get(item["path"])
            item["body"] = None if data is None else data.decode("utf-8", errors="replace")
    return result("search", count=len(results), results=results, body_included=include_body)


# --- checking results against the files ----------------------------------------------------


def check(root: Path, nodes: list[dict[str, Any]], strict: bool = False) -> dict[str, bytes]:
    """Re-hash each node's file now and flag the node with what was found.

    Every node gains ``verified`` (the bytes equal the indexed ones),
    ``changed_since_index``, ``current_sha256`` (null when the file cannot be
    read), ``missing`` (the file is gone) and ``read_error`` (the code when it
    could not be read safely: a symlink swapped in, permissions, a file grown
    past max_file_bytes). A changed file is still a good candidate: what the
    index knew of it is probably still mostly true, and the caller can open
    it. With ``strict`` any difference fails closed with ``index_stale`` and a
    read error with its own code, as a caller that vouches for content needs.
    Returns the bytes read, by path, so a body is never read twice.
    """
    max_bytes = _max_file_bytes(root)
    seen: dict[str, tuple[dict[str, Any], bytes | None]] = {}
    for node in nodes:
        path = node["path"]
        if path not in seen:
            seen[path] = _state_of(root, path, node["sha256"], max_bytes, strict)
        node.update(seen[path][0])
    return {path: data for path, (_, data) in seen.items() if data is not None}


def _state_of(root: Path, path: str, indexed_sha256: str | None, max_bytes: int,
              strict: bool) -> tuple[dict[str, Any], bytes | None]:
    from .safety import read_regular

    try:
        data = read_regular(root, path, max_bytes)
    except ForestError as exc:
        if strict and exc.code == "not_found":
            raise _stale(path) from None
        if strict:
            raise
        missing = exc.code == "not_found"
        return {"verified": False, "changed_since_index": missing, "current_sha256": None,
                "missing": missing, "read_error": None if missing else exc.code}, None
    current = sha256_hex(data)
    changed = current != indexed_sha256
    if changed and strict:
        raise _stale(path)
    return {"verified": not changed, "changed_since_index": changed, "current_sha256": current,
            "missing": False, "read_error": None}, data


def unverified(nodes: list[dict[str, Any]]) -> list[str]:
    """Paths of checked nodes whose file did not match the index, each once, in order."""
    return list(dict.fromkeys(node["path"] for node in nodes if not node["verified"]))


def _max_file_bytes(root: Path) -> int:
    from .config import load_config

    return load_config(root).limits["max_file_bytes"]



def _stale(path: str) -> ForestError:
    return ForestError("index_stale", "a file changed since it was indexed; run "
                       "'memory-forest index ROOT' and ask again", {"path": path})


# --- open -----------------------------------------------------------------------------------

SOURCE_LAYERS = (5, 6)  # Daily and ISTM: raw sources, opened only when asked for by name
_EXTENSIONS = (".md", ".jsonl")  # what a wikilink-style name without extension may mean


def open_document(root: str | Path, path: str, allow_source_layers: bool = False
                  ) -> dict[str, Any]:
    """The current bytes of one document, named by path, path without extension, or id.

    A name is tried as a canonical path (``routes.parse_route``), then with
    its extension added (the form a wikilink uses), then as a document id;
    nothing outside the layers can be named. Daily and ISTM files need
    ``allow_source_layers``. The body is always what the file holds now: the
    result says whether that matches the index (``verified``,
    ``changed_since_index``), and a canonical file the index does not hold
    (new since the last ``index``, or left out of it for a problem) is
    returned with ``indexed: false``. A name with no file fails with
    ``not_found``.
    """
    from .envelope import result

    root_path, con = _open(root)
    with con:
        path, row = _resolve(con, root_path, path)
    layer = layer_for(path.split("/", 1)[0])
    if layer.number in SOURCE_LAYERS and not allow_source_layers:
        raise usage_error("source_layer_not_allowed",
                          f"'{layer.dirname}' is a raw source layer; ask for it explicitly "
                          "(allow_source_layers)", path=path)
    if row is None:
        return result("open", **_unindexed(root_path, path), body_included=True, indexed=False)
    node = _node(row)
    data = check(root_path, [node]).get(path)
    if data is None:  # gone or unreadable since indexing: nothing current to return
        from .safety import read_regular

        read_regular(root_path, path, _max_file_bytes(root_path))  # raises its own code
    return result("open", **node, body=data.decode("utf-8", errors="replace"),
                  body_included=True, indexed=True)


def _resolve(con: sqlite3.Connection, root: Path, name: str) -> tuple[str, Node | None]:
    """The canonical path a name stands for, and its index row (None when not indexed).

    The extension is added only to a name that has none (``x.MD`` stays the
    mistake it is), and a name is taken as an id only when it has no ``/``.
    """
    import os

    from .routes import parse_route

    candidates = [name]
    if not name.lower().endswith(_EXTENSIONS):
        candidates += [name + ext for ext in _EXTENSIONS]
    parsed, first_error = [], None
    for candidate in candidates:
        try:
            parse_route(candidate)
        except ForestError as exc:
            first_error = first_error or exc
            continue
        parsed.append(candidate)
        row = store.doc_by_path(con, candidate)
        if row is not None or os.path.lexists(root / candidate):
            return candidate, row
    if name and "/" not in name:
        row = store.doc_by_id(con, name)
        if row is not None:
            return row.path, row
    if parsed:
        return parsed[0], None  # a well-formed name with no file: not_found when read
    if name and "/" not in name and not name.lower().endswith(_EXTENSIONS):
        raise ForestError("not_found", "no document has this path or id", {"path": name[:500]})
    raise first_error


def _unindexed(root: Path, path: str) -> dict[str, Any]:
    """Metadata and current body of a canonical file the index does not hold."""
    import os

    from .safety import read_regular

    data = read_regular(root, path, _max_file_bytes(root))  # not_found when absent
    text = data.decode("utf-8", errors="replace")
    meta = _frontmatter(text)
    title = meta.get("title")
    status = meta.get("status")
    doc_id = meta.get("id")
    current = sha256_hex(data)
    return {"path": path, "layer": path.split("/", 1)[0],
            "title": title if isinstance(title, str) else path.rsplit("/", 1)[-1],
            "id": doc_id if isinstance(doc_id, str) else None,
            "status": status if isinstance(status, str) else "active",
            "sha256": current, "size": len(data),
            "mtime_ns": os.lstat(root / path).st_mtime_ns,
            "verified": False, "changed_since_index": False, "current_sha256": current,
            "missing": False, "read_error": None, "body": text}


def _frontmatter(text: str) -> dict[str, Any]:
    """Best-effort frontmatter of a file that may be unindexed for a bad one."""
    if not text.startswith(("---", "\ufeff---")):
        return {}
    from .documents import split_frontmatter

    try:
        return split_frontmatter(text)[0]
    except ValueError:
        return {}


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
             query_plan: Any = None, strict: bool = False) -> dict[str, Any]:
    """Root-first trails XLTM -> LTM -> MTM -> STM for a query, checked against the files.

    ``query_plan`` is a parsed ``QueryPlan`` (or None). Trails with evidence
    from the original query always rank ahead of trails found only by its probes.
    Every node is re-hashed and flagged (``check``); ``strict`` fails closed
    on a changed file instead.
    """
    from .envelope import result

    queries = [_checked_query(query)]
    probes = query_plan.probes if query_plan is not None else []
    queries += [query_terms(probe.query) for probe in probes]
    limit = _checked_limit(limit)
    root_path, con = _open(root)
    with con:
        queries = [chosen_terms(con, terms) for terms in queries]
        trails, statuses = _trails(con, queries, depth=max(limit * 5, 50))
        ranked = sorted(trails, key=lambda t: _rank_key(t, statuses))[:limit]
        _fill_nodes(con, ranked)
    check(root_path, [node for trail in ranked for node in trail.nodes], strict)
    return result("retrieve", count=len(ranked), trails=[_render(t) for t in ranked],
                  body_included=False, probes=len(queries) - 1)


def _split_common(con: sqlite3.Connection, terms: list[str],
                  min_docs: int = COMMON_MIN_DOCS) -> tuple[list[str], set[str]]:
    """Split terms into rare ones and common ones (in more than COMMON_SHARE of documents).

    Scoring a term costs time in proportion to the documents that hold it, so
    in a large forest a common word would dominate every lookup. Counting is
    bounded by the cut-off itself, so the split stays cheap.
    """
    total = store.document_count(con)
    cutoff = max(min_docs, int(total * COMMON_SHARE))
    if total <= cutoff or len(terms) < 2:
        return terms, set()
    common = {t for t in terms if store.matches_beyond(con, t, cutoff)}
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
        return {row.path: [row, score] for row, score in hits}
    if not common:
        hits = _hits(con, _any_of(terms), STRUCTURED, depth)
        return {row.path: [row, score] for row, score in hits}
    found = {row.path: [row, score] for row, score in _hits(con, _any_of(rare), STRUCTURED,
                                                               depth)}
    by_rowid = {entry[0].rowid: entry for entry in found.values()}
    for rowid, score in _scores(con, f"({_any_of(sorted(common))}) AND ({_any_of(rare)})"):
        if rowid in by_rowid:
            by_rowid[rowid][1] = score
    return found


def _scores(con: sqlite3.Connection, expression: str) -> list[tuple[int, float]]:
    """(rowid, BM25) of every document matching an expression: no ranking, no join.

    For expressions that only refine known candidates, whose matches are few.
    """
    return [(rowid, round(-bm25, 6)) for rowid, bm25 in store.scores(con, expression)]


def _evidence(con: sqlite3.Connection, terms: list[str], depth: int) -> dict[str, list]:
    """Candidates for one query: BM25 over any term, plus phrase and proximity bonuses."""
    found, common = _base_scores(con, terms, depth)
    if len(terms) > 1:
        by_rowid = {entry[0].rowid: entry for entry in found.values()}
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
            statuses[path] = row.status
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
    nodes = {row.path: _node(row) for row in store.nodes(con, wanted)}
    for trail in trails:
        trail.nodes = [nodes[path] for path in trail.paths if path in nodes]


def _rank_key(trail: _Trail, statuses: dict[str, str]) -> tuple:
    return (0 not in trail.evidence, statuses[trail.paths[-1]] in INACTIVE, -trail.score,
            -len(trail.paths), trail.paths[-1])


def _render(trail: _Trail) -> dict[str, Any]:
    nodes = trail.nodes
    missing = [path for path in trail.paths if path not in {node["path"] for node in nodes}]
    complete = not missing and len(nodes) == 4
    return {
        "nodes": nodes,
        "complete": complete,
        "missing": missing,
        "reason": None if complete else "owner_not_indexed" if missing else "no_leaf",
        "score": trail.score,
        "status": trail.owner["status"],
        "original_query_matched": 0 in trail.evidence,
        "matched_query_plan_probe_count": sum(1 for number in trail.evidence if number > 0),
        # Only real ownership edges: a trail with a missing owner does not claim that
        # the owner's parent owns its child.
        "canonical_parent_child": [
            {"parent": parent, "child": child}
            for parent, child in zip(trail.paths, trail.paths[1:], strict=False)
            if parent not in missing and child not in missing
        ],
    }

"""Route-first retrieval: ``route``, ``search`` and ``retrieve``, and checking their results.

Everything here returns metadata only, except ``search`` with an explicit
``include_body`` (``opening.open_document`` is the explicit read of one body).
Every result is re-hashed against its file before it is returned and says
what it found (``verified``, ``changed_since_index``, ``current_sha256``):
a hand edit since the last ``index`` is a flag on the result, not a failure,
and bodies are always the file's current bytes. With ``strict`` a changed
file fails closed with ``index_stale`` instead.

Kept light on purpose: this module runs in a fresh process on every agent
turn, so it imports only sqlite3, hashlib (through ``digest``), datetime (through
``stamps``, already loaded by then) and the text analyzer.
The scoring primitives live in ``ranking``; each call runs on one ``Forest``
(one root check, one config, one index connection).
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from .digest import sha256_hex
from .envelope import result
from .errors import ForestError, usage_error
from .forest import Forest, ForestLike, opened
from .layers import layer_for
from .ranking import (
    INACTIVE,
    STRUCTURED,
    any_of,
    chosen_terms,
    evidence,
    hits,
)
from .routes import parent_of
from .safety import read_regular
from .stamps import from_ns, seconds, utc_stamp
from .statefiles import vectors_path
from .store import lookups
from .store.lookups import DocRow
from .text import query_terms

if TYPE_CHECKING:
    from .results import RetrieveResult, RouteResult, SearchResult

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
# Unfiled captures follow the trails as raw evidence: a few, so that a pile of unprocessed
# events never crowds out the reviewed memory an agent should read first.
UNFILED_LIMIT = 5
# Files left out of the index whose words a query holds: named so that an empty answer
# is never mistaken for memory holding nothing. A few say that; more would be noise.
LEFT_OUT_LIMIT = 5
# Of a long query, the words the left-out files are searched for: its last ones, where a
# question after a preamble sits. Enough for any question; bounded for a pasted log.
LEFT_OUT_TERMS = 32
DAY_S = 86_400

# Trail weights, tuned on the LoCoMo development conversations (docs/benchmarks.md).
ANCESTOR_WEIGHT = 0.2  # evidence on a trail's owners supports, but never outweighs, its leaf
TREE_WEIGHT = 1.0  # favor trails in the trees that hold most of the evidence
PROBE_WEIGHT = 0.5  # a caller's extra probe is weaker evidence than the user's own words

# --- queries --------------------------------------------------------------------------------


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


# What --since/--until take: an RFC 3339 date, or a date and time with an optional zone
# (Python's ISO parser alone would also take week dates and basic formats).
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                      r"(?:[Zz]|[+-]\d{2}:\d{2})?)?\Z")


def _checked_time(value: str | None, name: str, end_of_day: bool = False) -> str | None:
    """A ``since``/``until`` bound as the index spells times (RFC 3339 UTC, to the second).

    A bare date is its first second as ``since`` and its last second as
    ``until``, so ``--since D --until D`` is the whole day D.
    """
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else ""
    stamp = utc_stamp(text) if _RFC3339.match(text) else None
    if stamp is None:
        raise usage_error("time_invalid", f"{name} must be an RFC 3339 date or timestamp, "
                          "e.g. 2026-11-28 or 2026-11-28T09:00:00Z", param=name)
    if end_of_day and len(text) == 10:
        stamp = stamp[:11] + "23:59:59Z"
    return stamp


def _window(since: str | None, until: str | None) -> tuple[str | None, str | None]:
    low, high = _checked_time(since, "since"), _checked_time(until, "until", end_of_day=True)
    if low is not None and high is not None and low > high:
        raise usage_error("time_range_empty", "since is later than until", since=low,
                          until=high)
    return low, high


def _stamp(row: DocRow) -> str:
    """When a document was last updated: its frontmatter's ``updated``, else its mtime."""
    return row.updated or from_ns(row.mtime_ns)


def _age_days(stamp: str, now: float) -> float:
    return round((now - seconds(stamp)) / DAY_S, 1)


def node_of(row: DocRow) -> dict[str, Any]:
    return {"path": row.path, "layer": row.layer, "title": row.title, "id": row.doc_id,
            "status": row.status, "sha256": row.sha256, "size": row.size,
            "mtime_ns": row.mtime_ns}


# --- route and search -----------------------------------------------------------------------


def route(forest: ForestLike, query: str, limit: int = DEFAULT_LIMIT,
          layer: list[str] | None = None, strict: bool = False) -> RouteResult:
    """Candidates whose path or title matches: where in the forest to look."""
    terms, limit, wanted = _checked_query(query), _checked_limit(limit), _layers(layer)
    with opened(forest) as forest:
        con = forest.reader()
        with con:
            terms = chosen_terms(con, terms)
            found = hits(con, any_of(terms), wanted, limit, columns="title path") if terms else []
        results = [{**node_of(row), "score": score} for row, score in found]
        verify_nodes(forest, results, strict)
    return result("route", count=len(results), results=results)


def search(forest: ForestLike, query: str, limit: int = DEFAULT_LIMIT,
           layer: list[str] | None = None, include_body: bool = False,
           strict: bool = False) -> SearchResult:
    """Documents whose body matches. Bodies only with ``include_body``: the current bytes."""
    terms, limit, wanted = _checked_query(query), _checked_limit(limit), _layers(layer)
    with opened(forest) as forest:
        con = forest.reader()
        with con:
            terms = chosen_terms(con, terms)
            found = hits(con, any_of(terms), wanted, limit) if terms else []
        results = [{**node_of(row), "score": score} for row, score in found]
        bodies = verify_nodes(forest, results, strict)
    if include_body:
        for item in results:
            data = bodies.get(item["path"])
            item["body"] = None if data is None else data.decode("utf-8", errors="replace")
    return result("search", count=len(results), results=results, body_included=include_body)


# --- checking results against the files ----------------------------------------------------


def verify_nodes(forest: Forest, nodes: list[dict[str, Any]], strict: bool = False
                 ) -> dict[str, bytes]:
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
    seen: dict[str, tuple[dict[str, Any], bytes | None]] = {}
    for node in nodes:
        path = node["path"]
        if path not in seen:
            seen[path] = _state_of(forest, path, node["sha256"], strict)
        node.update(seen[path][0])
    return {path: data for path, (_, data) in seen.items() if data is not None}


def _state_of(forest: Forest, path: str, indexed_sha256: str | None,
              strict: bool) -> tuple[dict[str, Any], bytes | None]:
    try:
        data = read_regular(forest.root, path, forest.limits["max_file_bytes"])
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


def _stale(path: str) -> ForestError:
    return ForestError("index_stale", "a file changed since it was indexed; run "
                       "'memory-forest index ROOT' and ask again", {"path": path})


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


def retrieve(forest: ForestLike, query: str, limit: int = DEFAULT_LIMIT,
             query_plan: Any = None, strict: bool = False, no_unfiled: bool = False,
             since: str | None = None, until: str | None = None,
             lexical: bool = False) -> RetrieveResult:
    """Root-first trails XLTM -> LTM -> MTM -> STM for a query, checked against the files,
    then the unfiled captures that match it.

    ``query_plan`` is a parsed ``QueryPlan`` (or None). Trails with evidence
    from the original query always rank ahead of trails found only by its probes.
    Every node is re-hashed and flagged (``verify_nodes``); ``strict`` fails closed
    on a changed file instead. ``unfiled`` lists, after the trails and never
    inside one, the best ``UNFILED_LIMIT`` ISTM events and Daily entries no
    record has promoted yet (``no_unfiled`` leaves them out): raw evidence,
    re-hashed the same way. ``since``/``until`` bound the updated time of the
    document a trail ends at, and the observed time of an unfiled capture.
    ``left_out`` names (path and code) the files the index could not read
    that hold the query's words.

    When ``index --semantic`` turned semantic ranking on for the forest and
    the extra is installed, each query's candidates are the union of the
    lexical and the dense ones, scored by their fusion (``semantic.fuse``);
    ``lexical`` keeps this call to the lexical core. ``ranking`` says which
    ran, and ``ranking_reason`` why it is lexical (``lexical_requested``,
    ``semantic_off``, ``no_vectors``, ``semantic_unavailable``, ...): a
    missing extra never fails a retrieval. ``ranking_partial`` says a fused
    ranking covered only some documents: the others, not embedded yet, ranked
    by their lexical score alone.
    """
    own = _checked_query(query)
    queries = [own]
    probes = query_plan.probes if query_plan is not None else []
    queries += [query_terms(probe.query) for probe in probes]
    texts = [query, *(probe.query for probe in probes)]
    limit = _checked_limit(limit)
    window = _window(since, until)
    with opened(forest) as forest:
        con = forest.reader()
        dense, reason = _dense(forest, lexical)  # attaches the vectors: before any write
        with con:
            searched = [(chosen_terms(con, terms), text) if terms else ([], None)
                        for terms, text in zip(queries, texts, strict=True)]
            queries = [terms for terms, _ in searched]
            depth = max(limit * 5, 50)
            fusion = None if dense is None else (dense, [text for _, text in searched], limit)
            trails, statuses = _trails(con, queries, depth=depth, window=window, fusion=fusion)
            ranked = sorted(trails, key=lambda t: _rank_key(t, statuses))[:limit]
            _fill_nodes(con, ranked)
            unfiled = [] if no_unfiled else _unfiled(con, queries[0], window)
            left_out = _left_out(con, own)
            partial = dense is not None and dense.partial(con)
        verify_nodes(forest, [*(node for trail in ranked for node in trail.nodes), *unfiled],
                     strict)
    return result("retrieve", count=len(ranked), trails=[_render(t) for t in ranked],
                  unfiled=unfiled, left_out=left_out, body_included=False, probes=len(queries) - 1,
                  ranking="lexical" if dense is None else "fused", ranking_reason=reason,
                  ranking_partial=partial)


def _dense(forest: Forest, lexical: bool) -> tuple[Any, str | None]:
    """The forest's dense searcher, or None and why not; ``semantic`` (and numpy with it)
    is imported only when the vectors file exists."""
    if lexical:
        return None, "lexical_requested"
    if not os.path.lexists(vectors_path(forest.root)):
        return None, "semantic_off"
    from .semantic import searcher

    return searcher(forest)


def _unfiled(con: sqlite3.Connection, terms: list[str],
             window: tuple[str | None, str | None]) -> list[dict[str, Any]]:
    """The best unpromoted captures for the query's own words, chosen as for the trails."""
    if not terms:
        return []
    since, until = window
    found = lookups.unfiled_matching(con, any_of(terms), UNFILED_LIMIT, since=since, until=until)
    return [{"kind": fragment.kind, "layer": fragment.layer, "path": fragment.path,
             "event_id": fragment.anchor if fragment.kind == "event" else None,
             "anchor": fragment.anchor if fragment.kind == "entry" else None,
             "observed_at": fragment.observed_at, "score": score, "sha256": fragment.sha256}
            for fragment, score in found]


def _left_out(con: sqlite3.Connection, terms: list[str]) -> list[dict[str, str]]:
    """The files the index left out (unreadable as documents) that hold the query's own
    words: path and code only, never a word of what they hold. The words are the query's
    as written, not the ones chosen against the index: a word only a left-out file holds
    is the very one to look for."""
    match = any_of(terms[-LEFT_OUT_TERMS:])
    return [{"path": path, "code": code}
            for path, code in lookups.left_out_matching(con, match, LEFT_OUT_LIMIT)]


def _trails(con: sqlite3.Connection, queries: list[list[str]], depth: int,
            window: tuple[str | None, str | None] = (None, None),
            fusion: tuple[Any, list[str | None], int] | None = None
            ) -> tuple[list[_Trail], dict[str, str]]:
    """Trails for every candidate, scored; and the status of each candidate.

    Only a candidate updated within ``window`` can end a trail; one outside it
    may still own a trail's end and count as that trail's evidence.
    ``fusion`` is the dense searcher, each query's text (None: nothing to
    search) and the call's limit (each side gives at least that many); a dense
    candidate is evidence of its query like a lexical one, so it can end a
    trail without sharing a word with the question.
    """
    found: dict[str, dict[int, float]] = {}
    statuses: dict[str, str] = {}
    stamps: dict[str, str] = {}
    for number, terms in enumerate(queries):
        if fusion is not None and fusion[1][number] is not None:
            searcher, texts, k = fusion
            lexical = evidence(con, terms, depth) if terms else {}
            candidates = searcher.fused(con, texts[number], lexical, k)
        elif not terms:
            continue  # a probe with no searchable words adds nothing
        else:
            candidates = evidence(con, terms, depth)
        for path, (row, score) in candidates.items():
            statuses[path] = row.status
            stamps[path] = _stamp(row)
            found.setdefault(path, {})[number] = score
    since, until = window
    known: dict[str, list[str]] = {}  # trails share their owners: each chain is derived once
    chains = {path: _chain(path, known) for path in found
              if (since is None or stamps[path] >= since)
              and (until is None or stamps[path] <= until)}
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
            for number, score in found.get(node, {}).items():
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


def _chain(path: str, known: dict[str, list[str]]) -> list[str]:
    """The root-first ownership chain ending at ``path`` (derived from the route alone)."""
    chain = known.get(path)
    if chain is None:
        parent = parent_of(path)
        chain = [path] if parent is None else [*_chain(parent, known), path]
        known[path] = chain
    return chain


def _fill_nodes(con: sqlite3.Connection, trails: list[_Trail]) -> None:
    """Load node metadata for the returned trails; owners missing from the index are dropped.

    Each node says how fresh it is (``updated``, ``age_days``) and, when it
    names a successor, which (``superseded_by``, and ``superseded_by_path``
    when the index holds that id).
    """
    wanted = sorted({path for trail in trails for path in trail.paths})
    rows = lookups.nodes(con, wanted)
    successors = {row.superseded_by for row in rows if row.superseded_by}
    holders = lookups.paths_with_ids(con, successors) if successors else {}
    now = time.time()
    nodes = {}
    for row in rows:
        stamp = _stamp(row)
        nodes[row.path] = {**node_of(row), "updated": stamp, "age_days": _age_days(stamp, now),
                           "superseded_by": row.superseded_by,
                           "superseded_by_path": min(holders.get(row.superseded_by, [None]))}
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

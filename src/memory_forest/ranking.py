"""FTS5 evidence: which query words to search, and which documents match them, scored.

The scoring primitives under ``route``, ``search`` and ``retrieve``: match
expressions (any word, adjacent pairs, near pairs), the choice of words by
rarity, ranked hits filtered by layer, and BM25 over rare and common words
computed so that common words never drive the cost. Everything reads the
index through ``store.lookups``; nothing here knows about trails or files.

On the per-turn path: only sqlite3 and the store's ``lookups`` and ``schema`` at import time.
"""

from __future__ import annotations

import os
import sqlite3

from .store import lookups, schema
from .store.lookups import DocRow

# A pasted page can hold thousands of distinct words; the rarest ones in the index
# carry the question, and the bound keeps every lookup's cost bounded too.
MAX_QUERY_TERMS = 48
STRUCTURED = (1, 2, 3, 4)
INACTIVE = ("superseded", "archived")

# Ranking weights, tuned on the LoCoMo development conversations (docs/benchmarks.md).
PHRASE_WEIGHT = 0.3  # two query words side by side in the text: evidence of word order
NEAR_WEIGHT = 0.3  # two query words within NEAR_WINDOW terms: the same sentence or turn
NEAR_WINDOW = 8
MAX_PAIRS = 28  # all pairs of the first 8 terms; bounds the cost of long questions
COMMON_SHARE = 0.02  # a term in more than this share of documents is "common" ...
COMMON_MIN_DOCS = 500  # ... and in more than this many: small forests score every term
CANDIDATE_POSTINGS = 2000  # the documents the candidate-finding terms may hold together


# --- match expressions ---------------------------------------------------------------------


def any_of(terms: list[str]) -> str:
    return " OR ".join(f'"{term}"' for term in terms)


def _phrases(terms: list[str], common: frozenset[str] = frozenset()) -> str:
    pairs = [(a, b) for a, b in zip(terms, terms[1:], strict=False)
             if a not in common or b not in common]
    return " OR ".join(f'"{a} {b}"' for a, b in pairs)


def _near_pairs(terms: list[str], common: frozenset[str] = frozenset()) -> str:
    """Pairs of query words for proximity evidence; a pair of two common words (see
    ``split_common``) would cost most of a lookup in a large forest and is left out."""
    pairs = [(a, b) for i, a in enumerate(terms) for b in terms[i + 1:]
             if a not in common or b not in common][:MAX_PAIRS]
    return " OR ".join(f'NEAR("{a}" "{b}", {NEAR_WINDOW})' for a, b in pairs)


# --- choosing words ------------------------------------------------------------------------


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


def _forget_other_index(con: sqlite3.Connection) -> tuple[int, ...]:
    st = os.stat(schema.database_file(con))
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if key != _counted_for[0] or len(_counted) > _MAX_COUNTED:
        _counted.clear()
        _counted_for[0] = key
    return key


# The number of documents, for the same state of the index file as the counts above:
# counting 100,000 rows costs about a millisecond, on every query otherwise.
_totals: dict[tuple[int, ...], int] = {}


def document_total(con: sqlite3.Connection) -> int:
    key = _forget_other_index(con)
    total = _totals.get(key)
    if total is None:
        total = lookups.document_count(con)
        _totals.clear()
        _totals[key] = total
    return total


def _count(con: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
    counts = dict.fromkeys(terms, 0)
    counts.update((terms[number], count) for number, count in lookups.token_counts(con, terms))
    return counts


# --- scoring -------------------------------------------------------------------------------


def hits(con: sqlite3.Connection, expression: str, layers: tuple[int, ...], limit: int,
          columns: str = "") -> list[tuple[DocRow, float]]:
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
        rows = lookups.ranked(con, match, window)
        wanted = [(row, bm25) for row, bm25 in rows if row.layer_number in layers]
        active = sum(1 for row, _ in wanted if row.status not in INACTIVE)
        if len(rows) < window or active >= limit:
            break
        window *= 4
    wanted.sort(key=lambda hit: (hit[0].status in INACTIVE, hit[1], hit[0].path))
    return [(row, round(-bm25, 6)) for row, bm25 in wanted[:limit]]


def split_common(con: sqlite3.Connection, terms: list[str], min_docs: int = COMMON_MIN_DOCS,
                 budget: int | None = None) -> tuple[list[str], set[str]]:
    """Split terms into rare ones, which find candidates, and common ones, which only score them.

    Ranking costs time in proportion to the documents the ranked terms hold,
    so the rarest terms find the candidates while the documents they hold
    together stay within ``budget`` (the rarest one always does); a term in
    more than COMMON_SHARE of the documents is always common. The split depends only on the index's
    document frequencies (ties go to query order): the same question on the
    same index is split the same way, whatever its wording around the words.
    """
    total = document_total(con)
    cutoff = max(min_docs, int(total * COMMON_SHARE))
    if total <= cutoff or len(terms) < 2:
        return terms, set()
    budget = CANDIDATE_POSTINGS if budget is None else budget
    frequency = document_frequencies(con, terms)
    rare: set[str] = set()
    held = 0
    for term in _rarest_first(terms, frequency):
        if frequency[term] > cutoff or (rare and held + frequency[term] > budget):
            break
        rare.add(term)
        held += frequency[term]
    return [t for t in terms if t in rare], {t for t in terms if t not in rare}


def _rarest_first(terms: list[str], frequency: dict[str, int]) -> list[str]:
    return sorted(terms, key=lambda t: (frequency[t], terms.index(t)))


def base_scores(con: sqlite3.Connection, terms: list[str], depth: int,
                min_docs: int = COMMON_MIN_DOCS) -> tuple[dict[str, list], frozenset[str]]:
    """The best ``depth`` candidates by BM25 over all terms, at a bounded cost.

    Candidates are the documents holding a rare term (``split_common``). A
    candidate without a common term scores the same over the rare terms
    alone, so the best of those are the best of ``any(rare)``; one with a
    common term is scored in full by ``(common) AND (rare)``, whose BM25
    sums every term it holds. The better of the two scores is the plain
    BM25 over all terms, so the answer is exactly the best ``depth``
    candidates; a document holding only common terms is never one.

    When every term is common, the candidates are the documents holding the
    rarest few together (``_conjunction``), and fewer of them while that
    finds too few. Returns the scores and the terms that count as common.
    """
    rare, common = split_common(con, terms, min_docs)
    if rare:
        return _scored(con, any_of(rare), sorted(common), depth), frozenset(common)
    frequency = document_frequencies(con, terms)
    ordered = _rarest_first(terms, frequency)
    found: dict[str, list] = {}
    for size in range(_conjunction(frequency, ordered, document_total(con)), 0, -1):
        more = _scored(con, " AND ".join(f'"{t}"' for t in ordered[:size]),
                       sorted(ordered[size:]), depth)
        found = _best([*found.values(), *more.values()], depth)
        if len(found) >= depth:
            break
    return found, frozenset(terms)


def _conjunction(frequency: dict[str, int], ordered: list[str], total: int) -> int:
    """How many of the rarest terms together are expected to hold at most CANDIDATE_POSTINGS
    documents.

    The expectation treats the terms as independent: a deterministic
    estimate from document frequencies alone, never from the query text.
    """
    expected = float(total)
    for size, term in enumerate(ordered, start=1):
        expected *= frequency[term] / total
        if expected <= CANDIDATE_POSTINGS:
            return size
    return len(ordered)


def _scored(con: sqlite3.Connection, candidates: str, common: list[str],
            depth: int) -> dict[str, list]:
    """The best ``depth`` documents matching ``candidates``, by BM25 over them and ``common``."""
    found = hits(con, candidates, STRUCTURED, depth)
    if common:
        found += hits(con, f"({any_of(common)}) AND ({candidates})", STRUCTURED, depth)
    return _best(([row, score] for row, score in found), depth)


def _best(entries, depth: int) -> dict[str, list]:
    """Each path's best [row, score], the best ``depth`` of them (active first)."""
    best: dict[str, list] = {}
    for entry in entries:
        path = entry[0].path
        if path not in best or entry[1] > best[path][1]:
            best[path] = entry
    ordered = sorted(best.values(),
                     key=lambda entry: (entry[0].status in INACTIVE, -entry[1], entry[0].path))
    return {entry[0].path: entry for entry in ordered[:depth]}


def _scores(con: sqlite3.Connection, expression: str) -> list[tuple[int, float]]:
    """(rowid, BM25) of every document matching an expression: no ranking, no join.

    For expressions that only refine known candidates, whose matches are few.
    """
    return [(rowid, round(-bm25, 6)) for rowid, bm25 in lookups.scores(con, expression)]


def evidence(con: sqlite3.Connection, terms: list[str], depth: int) -> dict[str, list]:
    """Candidates for one query: BM25 over any term, plus phrase and proximity bonuses."""
    found, common = base_scores(con, terms, depth)
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

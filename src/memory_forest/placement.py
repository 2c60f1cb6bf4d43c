"""Where a fact belongs: ``place`` ranks the forest's branches and leaves against it.

``remember`` without a tree, branch and leaf asks ``place`` where to file the
fact, and consolidation asks it for each proposed record. The answer comes
from the index alone (the same FTS5 evidence ``retrieve`` ranks with, read
through ``forest.reader()``, and the vectors when semantic ranking is on): no
body is opened, nothing is written.

The rule, deterministic for one fact and one index (docs/writing.md, "Where
remember files a fact"):

1. The fact's terms are its distinct searchable words (``text.query_terms``);
   the topical ones are counted, at most ``MAX_QUERY_TERMS``: numbers,
   calendar words (``WHEN_WORDS``) and titles (``instances.HONORIFICS``) say
   when, which or who, never what, so they neither count for a branch nor
   against it.
2. Every active STM leaf and MTM branch the terms find (BM25 with the phrase
   and proximity bonuses of ``ranking.evidence``) votes for its branch; a
   branch scores its own evidence plus that of its best leaf. Branches in
   the inbox tree, inactive branches and branches missing from the index
   are never candidates, and a conflict copy ``sync`` filed (a version
   awaiting review) neither votes nor is voted for: nothing is filed under
   or appended to one, so a copy never becomes an owner.
3. The ``WEIGHED`` best-scoring branches are weighed: the counted terms their
   subtree (the branch and its active leaves) holds, those the branch's own
   title holds counted twice; the strongest is the best, score breaking ties.
4. The best branch is a confident placement when its strength is at least
   ``MIN_MATCHED`` and ``MIN_COVERAGE`` of the counted terms, and, when the
   runner-up is as strong, its score is at least ``MIN_MARGIN`` times the
   runner-up's.
5. With semantic ranking on, a fact rule 4 leaves unplaced goes to the
   branch of its nearest active branch or leaf by meaning when that is
   ``DENSE_GAP`` closer than the nearest null passage (rule ``dense``).
6. Placed: a new leaf under that branch, or with ``append`` the branch's
   best-scoring leaf, unless that leaf names another instance
   (``instances.differs``): then the best leaf that names the fact's own
   instance, else a new leaf. Otherwise: a new leaf in the inbox,
   ``04 stm/inbox/inbox/``.

A new leaf is named by a slug of the fact's first words (of the title when
the caller gives one), made unique among the branch's leaves on disk and in
the index, and titled by the fact's first words unless a title is given.
The text should be the fact as it will be stored (already redacted): the
leaf's name and title are derived from it.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Literal

from .forest import Forest
from .instances import HONORIFICS, differs, names_same
from .ranking import INACTIVE, MAX_QUERY_TERMS, chosen_terms, evidence
from .routes import CONFLICT_COPY, children_prefix, mtm_path, stm_path
from .semantic import searcher
from .store import lookups
from .text import query_terms, slug

INBOX_TREE = "inbox"
INBOX_BRANCH = "inbox"

# The confidence rule, calibrated on the tuned part of tests/data/placement/ (the figures,
# with its held-out part: docs/benchmarks.md, "Placement").
MIN_MATCHED = 2  # one shared word is a coincidence; two (or the branch's title) a topic
MIN_COVERAGE = 0.25  # the branch must hold this share of the fact's topical terms
MIN_MARGIN = 1.5  # and outscore the next branch by this factor, or the choice is a guess
# With semantic ranking on, a fact the words leave unplaced goes to the branch of its
# nearest branch or leaf when that is this much closer than the nearest null passage:
# calibrated on the tuned part of the labelled set (docs/benchmarks.md, "Placement").
DENSE_GAP = 0.02
PLACED = ("confident", "dense")
WEIGHED = 3  # branches whose held terms are counted: the runner-up and one behind it
CANDIDATE_DEPTH = 50  # documents ranked per fact: enough to find every serious branch

LEAF_FALLBACK = "note"  # a leaf's name when the fact has no word to name it by
# Words that date a fact; they neither count for a branch nor against it.
WHEN_WORDS = frozenset("""
day days week weeks weekend weekends month months year years today tonight yesterday tomorrow
morning mornings afternoon evening evenings night nights noon midnight am pm last next ago
monday mondays tuesday tuesdays wednesday wednesdays thursday thursdays friday fridays
saturday saturdays sunday sundays january february march april may june july august
september october november december daily weekly monthly yearly annual again time times
""".split())

TITLE_WORDS = 8
TITLE_CHARS = 80
_TITLE_TRIM = ".,;:!?-\u2013\u2014 "

Action = Literal["new_leaf", "append", "inbox"]


@dataclass(frozen=True)
class Placement:
    """Where a fact goes, and why: the receipt's ``placement``."""

    tree: str
    branch: str
    leaf: str
    title: str
    path: str  # the STM leaf, '04 stm/<tree>/<branch>/<leaf>.md'
    action: Action
    score: float  # the chosen branch's score; the best candidate's for the inbox
    reason: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"tree": self.tree, "branch": self.branch, "leaf": self.leaf,
                "title": self.title, "path": self.path, "action": self.action,
                "score": self.score, "reason": dict(self.reason)}


def place(forest: Forest, text: str, *, append: bool = False,
          title: str | None = None) -> Placement:
    """Where ``text`` belongs in this forest (read-only; ``index_missing`` without an index)."""
    terms = query_terms(text)
    counted = min(sum(1 for term in terms if topical(term)), MAX_QUERY_TERMS)
    thresholds = {"min_matched": MIN_MATCHED, "min_coverage": MIN_COVERAGE,
                  "min_margin": MIN_MARGIN}
    con = forest.reader()
    chosen = chosen_terms(con, terms) if terms else []
    ranked = _weighed(con, chosen, _branches(con, evidence(con, chosen, CANDIDATE_DEPTH))) \
        if chosen else []
    best = ranked[0] if ranked else None
    runner = ranked[1] if len(ranked) > 1 else None
    matched, titled = (best.matched, best.titled) if best else ([], [])
    reason: dict[str, Any] = {
        "rule": _verdict(len(terms), counted, best, runner),
        "branch": best.path if best else None,
        "branch_score": best.score if best else 0.0,
        "runner_up": runner.path if runner else None,
        "runner_up_score": runner.score if runner else None,
        "terms": counted, "matched_terms": matched, "branch_terms": titled,
        "coverage": round((len(matched) + len(titled)) / counted, 4) if counted else 0.0,
        "thresholds": thresholds,
    }
    if reason["rule"] not in ("confident", "no_searchable_words"):
        near = _nearest(forest, con, text)
        if near is not None:  # the words fell short, but the meaning is close: dense placement
            best, reason["dense"] = near
            reason.update(rule="dense", branch=best.path, branch_score=best.score)
    named = title or _first_words(text)
    if best is None or reason["rule"] not in PLACED:
        leaf = _unique_leaf(forest, con, INBOX_TREE, INBOX_BRANCH, named)
        return Placement(INBOX_TREE, INBOX_BRANCH, leaf, named,
                         stm_path(INBOX_TREE, INBOX_BRANCH, leaf), "inbox",
                         best.score if best else 0.0, reason)
    if append:
        same = _same_instance(text, best, reason)
        if same is not None:
            return Placement(best.tree, best.branch, same.rsplit("/", 1)[1][:-3], named, same,
                             "append", best.score, reason)
    leaf = _unique_leaf(forest, con, best.tree, best.branch, named)
    return Placement(best.tree, best.branch, leaf, named, stm_path(best.tree, best.branch, leaf),
                     "new_leaf", best.score, reason)


def _same_instance(text: str, best: _Branch, reason: dict[str, Any]) -> str | None:
    """The leaf to append to: the branch's best-scoring leaf unless it names another instance
    than the fact (``instances.differs``); then the best leaf that names the fact's own
    instance (``instances.names_same``); else None, noted in ``reason``. A leaf that merely
    names none is not a fallback: it would take a fact about another batch by chance."""
    if best.leaf is None:
        reason["leaf"] = None  # asked to append, but no leaf of the branch matched
        return None
    path, score, leaf_title = best.leaf
    differing = differs(text, leaf_title)
    if differing:
        reason["other_instance"] = {"leaf": path, "differs": differing}
        path, score = next(((other, value) for other, value, title in _by_score(best.leaves)
                            if names_same(text, title)), (None, 0.0))
    reason["leaf"] = path
    if path is not None:
        reason["leaf_score"] = round(score, 4)
    return path


def _by_score(leaves: list[tuple[str, float, str]]) -> list[tuple[str, float, str]]:
    return sorted(leaves, key=lambda leaf: (-leaf[1], leaf[0]))


# --- ranking ---------------------------------------------------------------------------------


@dataclass
class _Branch:
    tree: str
    branch: str
    path: str
    rowid: int = 0
    own: float = 0.0  # the branch document's own evidence
    leaves: list[tuple[str, float, str]] = field(default_factory=list)  # path, score, title
    score: float = 0.0
    matched: list[str] = field(default_factory=list)  # the fact's terms its subtree holds
    titled: list[str] = field(default_factory=list)  # ... and of those, its name holds

    @property
    def strength(self) -> int:
        """The fact's terms the subtree holds, a term its name holds counted twice."""
        return len(self.matched) + len(self.titled)

    @property
    def leaf(self) -> tuple[str, float, str] | None:
        """Its best active leaf with evidence."""
        return next(iter(_by_score(self.leaves)), None)


def _branches(con: sqlite3.Connection, scored: dict[str, list]) -> list[_Branch]:
    """Candidate branches, best first: active, indexed, outside the inbox, with evidence
    (``{path: [row, score]}``: ``ranking.evidence``, or one document's cosine)."""
    found: dict[str, _Branch] = {}
    for path, (row, score) in scored.items():
        parts = path.split("/")
        if row.status in INACTIVE or parts[0] not in ("03 mtm", "04 stm") \
                or parts[1] == INBOX_TREE or CONFLICT_COPY.search(path):
            continue
        tree, branch = parts[1], parts[2].removesuffix(".md")
        owner = found.setdefault(mtm_path(tree, branch), _Branch(tree, branch,
                                                                 mtm_path(tree, branch)))
        if parts[0] == "03 mtm":
            owner.own = score
        else:
            owner.leaves.append((path, score, row.title))
    rows = {row.path: row for row in lookups.nodes(con, sorted(found))}
    ranked = []
    for path, candidate in found.items():
        row = rows.get(path)
        if row is None or row.status in INACTIVE:
            continue  # a leaf whose branch is not indexed, or is retired, is no destination
        candidate.rowid = row.rowid
        candidate.score = round(candidate.own + (candidate.leaf[1] if candidate.leaf else 0.0), 4)
        ranked.append(candidate)
    ranked.sort(key=lambda b: (-b.score, b.path))
    return ranked


def _nearest(forest: Forest, con: sqlite3.Connection,
             text: str) -> tuple[_Branch, dict[str, Any]] | None:
    """With semantic ranking on, the branch of the branch or leaf nearest to the fact by
    meaning, when it is closer than the nearest null passage by ``DENSE_GAP`` (the model
    vouches for it, ``semantic_null``); None otherwise, or with semantic ranking off."""
    dense, _ = searcher(forest)
    if dense is None:
        return None
    rows, floor = dense.nearest(con, text, CANDIDATE_DEPTH)
    for row, cosine in rows:
        candidates = _branches(con, {row.path: [row, cosine]})
        if candidates:
            if cosine - floor < DENSE_GAP:
                return None
            return candidates[0], {"document": row.path, "cosine": round(cosine, 4),
                                   "floor": round(floor, 4), "min_gap": DENSE_GAP}
    return None


def _weighed(con: sqlite3.Connection, terms: list[str], ranked: list[_Branch]) -> list[_Branch]:
    """The best ``WEIGHED`` branches by score, each with the terms it holds, reordered by
    strength first: a branch that holds more of the fact outranks one that scores higher
    on fewer of its words."""
    top = ranked[:WEIGHED]
    for branch in top:
        branch.matched, branch.titled = _matched(con, terms, branch)
    return sorted(top, key=lambda b: (-b.strength, -b.score, b.path))


def _matched(con: sqlite3.Connection, terms: list[str],
             branch: _Branch) -> tuple[list[str], list[str]]:
    """The terms the branch's subtree holds (the branch document and its active leaves), and
    those of them its own name holds (its title, or its tree's or its own name in its path)."""
    leaves = lookups.children(con, branch.path, children_prefix(branch.path) or "")
    rowids = [branch.rowid, *(row.rowid for row in leaves if row.status not in INACTIVE)]
    matched = [term for term in terms if topical(term) and lookups.holding(con, term, rowids)]
    titled = [term for term in matched
              if lookups.holding(con, term, [branch.rowid], ("title",))]
    return matched, titled


def topical(term: str) -> bool:
    """Whether a term can say what a fact is about: numbers and calendar words say which
    one or when (``instances``), and a household's every branch has dates."""
    return not term.isdigit() and term.casefold() not in WHEN_WORDS | HONORIFICS


def _verdict(searchable: int, counted: int, best: _Branch | None,
             runner: _Branch | None) -> str:
    if not searchable:
        return "no_searchable_words"
    if best is None:
        return "no_candidate"
    if best.strength < MIN_MATCHED:
        return "too_few_terms"
    if best.strength / counted < MIN_COVERAGE:
        return "low_coverage"
    if runner is not None and runner.strength >= best.strength \
            and best.score < MIN_MARGIN * runner.score:
        return "ambiguous"
    return "confident"


# --- names -----------------------------------------------------------------------------------


def _first_words(text: str) -> str:
    """A title from the fact's first line: up to TITLE_WORDS words, TITLE_CHARS characters."""
    line = next((line for line in text.splitlines() if line.strip()), "")
    words: list[str] = []
    for word in line.lstrip("#> -*\t").split():
        if len(words) == TITLE_WORDS or (words and len(" ".join([*words, word])) > TITLE_CHARS):
            break
        words.append(word[:TITLE_CHARS])
    return " ".join(words).strip(_TITLE_TRIM) or "Note"


def _unique_leaf(forest: Forest, con: sqlite3.Connection, tree: str, branch: str,
                 named: str) -> str:
    """``slug(named)`` (``note`` when it has no word), or with ``-2``, ``-3``... when the
    branch already has a leaf of that name (case folded, on disk or in the index)."""
    branch_path = mtm_path(tree, branch)
    taken = {row.path.rsplit("/", 1)[1][:-3].casefold()
             for row in lookups.children(con, branch_path, children_prefix(branch_path) or "")}
    try:
        with os.scandir(forest.root / "04 stm" / tree / branch) as listing:
            taken.update(entry.name.removesuffix(".md").casefold() for entry in listing)
    except OSError:
        pass  # no folder yet (or unreadable): the index's names are all there is to avoid
    base = slug(named, LEAF_FALLBACK)
    name, number = base, 1
    while name.casefold() in taken:
        number += 1
        name = f"{base}-{number}"
    return name

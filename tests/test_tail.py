"""Retrieval's cost is bounded by document frequencies, and its scores stay plain BM25.

The rarest terms find candidates while the documents they hold stay within a
budget; the others only score those candidates; a query of common words only
starts from documents holding its rarest words together. Small forests never
split, so the cut-offs are lowered through the functions' own parameters (and
the budget, a module setting) to exercise this on a small real index.
"""

from __future__ import annotations

import random

import pytest
from forestkit import skeleton, write_doc

from memory_forest import indexreader, operations, ranking

# word -> every how many leaves holds it: garden and mulch are common, the rest rarer.
EVERY = {"garden": 1, "mulch": 3, "trellis": 8, "compost": 9, "pea": 10}
LEAVES = 60


@pytest.fixture(scope="module")
def forest(tmp_path_factory):
    rng = random.Random(15)
    leaves = {}
    for number in range(LEAVES):
        words = [w for w, every in EVERY.items() if number % every == 0 for _ in
                 range(rng.randint(1, 3))]
        words += rng.choices(["soil", "water", "light", "seed"], k=20)
        rng.shuffle(words)
        leaves[f"leaf-{number:02d}"] = " ".join(words)
    root = skeleton(tmp_path_factory.mktemp("tail"), {"yard": {"beds": leaves}})
    operations.index(root)
    return root


def holding(con, term: str) -> set[str]:
    return {row.path for row, _ in ranking.hits(con, f'"{term}"', ranking.STRUCTURED, 1000)}


def plain_bm25(con, terms: list[str]) -> dict[str, float]:
    return {row.path: score for row, score in
            ranking.hits(con, ranking.any_of(terms), ranking.STRUCTURED, 1000)}


def test_the_rarest_terms_find_candidates_within_the_budget(forest):
    con = indexreader.connect(forest)
    terms = ["garden", "trellis", "compost", "pea"]
    frequency = ranking.document_frequencies(con, terms)
    assert frequency == {"garden": 60, "trellis": 8, "compost": 7, "pea": 6}
    assert ranking.split_common(con, terms, min_docs=10, budget=13) == (
        ["compost", "pea"], {"garden", "trellis"})
    assert ranking.split_common(con, terms, min_docs=10, budget=12) == (
        ["pea"], {"garden", "trellis", "compost"})
    # The rarest term finds candidates even past the budget, unless it is itself common.
    assert ranking.split_common(con, terms, min_docs=10, budget=1)[0] == ["pea"]
    assert ranking.split_common(con, ["garden", "mulch"], min_docs=10, budget=10**6) == (
        [], {"garden", "mulch"})
    # A forest no larger than the cut-off scores every term.
    assert ranking.split_common(con, terms, budget=1) == (terms, set())


def test_candidates_are_exactly_the_best_by_plain_bm25(forest, monkeypatch):
    con = indexreader.connect(forest)
    monkeypatch.setattr(ranking, "CANDIDATE_POSTINGS", 12)
    terms = ["garden", "trellis", "compost", "pea", "mulch"]
    found, common = ranking.base_scores(con, terms, 4, min_docs=10)
    assert common == {"garden", "trellis", "compost", "mulch"}
    exact = plain_bm25(con, terms)
    best = sorted((p for p in holding(con, "pea")), key=lambda p: (-exact[p], p))[:4]
    assert list(found) == best
    for path, (_row, score) in found.items():
        assert score == pytest.approx(exact[path])


def test_only_common_words_start_from_the_rarest_together(forest, monkeypatch):
    con = indexreader.connect(forest)
    monkeypatch.setattr(ranking, "CANDIDATE_POSTINGS", 15)
    terms = ["garden", "mulch"]
    exact = plain_bm25(con, terms)
    both = holding(con, "garden") & holding(con, "mulch")
    found, common = ranking.base_scores(con, terms, 5, min_docs=10)
    assert common == {"garden", "mulch"}, "no pair of common words is searched for proximity"
    assert len(found) == 5 and set(found) <= both
    assert list(found) == sorted(both, key=lambda p: (-exact[p], p))[:5]
    # Too few documents hold them together: the rarer one alone finds the rest.
    found, _ = ranking.base_scores(con, terms, len(both) + 5, min_docs=10)
    assert set(found) == holding(con, "mulch")
    for path, (_row, score) in found.items():
        assert score == pytest.approx(exact[path])


def test_the_conjunction_is_sized_by_expected_documents(monkeypatch):
    monkeypatch.setattr(ranking, "CANDIDATE_POSTINGS", 100)
    frequency = {"a": 500, "b": 400, "c": 300}
    # 1000 x 0.3 = 300, x 0.4 = 120, x 0.5 = 60: three rarest terms are expected to fit.
    assert ranking._conjunction(frequency, ["c", "b", "a"], 1000) == 3
    monkeypatch.setattr(ranking, "CANDIDATE_POSTINGS", 120)
    assert ranking._conjunction(frequency, ["c", "b", "a"], 1000) == 2
    monkeypatch.setattr(ranking, "CANDIDATE_POSTINGS", 10)
    assert ranking._conjunction(frequency, ["c", "b", "a"], 1000) == 3


def test_the_document_count_follows_the_index(tmp_path):
    root = skeleton(tmp_path, {"yard": {"beds": {"leaf-00": "garden soil"}}})
    operations.index(root)
    con = indexreader.connect(root)
    assert ranking.document_total(con) == 4
    con.close()
    write_doc(root, "04 stm/yard/beds/leaf-01.md", "Leaf-01", "garden", "stm-yard-beds-leaf-01")
    operations.index(root)
    con = indexreader.connect(root)
    assert ranking.document_total(con) == 5
    con.close()

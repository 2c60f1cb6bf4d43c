"""Common terms are scored only on candidates of the rarer ones, with unchanged scores.

Forests trigger this above 500 documents; here the cut-off is lowered
through the function's own parameter so a small real index exercises it.
"""

from __future__ import annotations

import random

import pytest
from forestkit import skeleton

from memory_forest import indexreader, operations, ranking


@pytest.fixture(scope="module")
def forest(tmp_path_factory):
    rng = random.Random(11)
    leaves = {}
    for number in range(40):
        words = ["garden"] * rng.randint(1, 3)  # common: in every leaf
        if number % 5 == 0:
            words += ["trellis"] * rng.randint(1, 2)  # rare
        if number % 7 == 0:
            words += ["compost"]  # rare
        words += rng.choices(["soil", "water", "light", "seed"], k=20)
        rng.shuffle(words)
        leaves[f"leaf-{number:02d}"] = " ".join(words)
    root = skeleton(tmp_path_factory.mktemp("common"), {"yard": {"beds": leaves}})
    operations.index(root)
    return root


def test_scores_equal_plain_bm25_for_every_candidate(forest):
    con = indexreader.connect(forest)
    terms = ["garden", "trellis", "compost"]
    rare, common = ranking.split_common(con, terms, min_docs=10)
    assert common == {"garden"} and rare == ["trellis", "compost"]
    split, common_found = ranking.base_scores(con, terms, 50, min_docs=10)
    assert common_found == {"garden"}
    exact = {row[1]: score for row, score in
             ranking.hits(con, ranking.any_of(terms), ranking.STRUCTURED, 100)}
    assert split, "the rare terms found candidates"
    for path, (_row, score) in split.items():
        assert score == pytest.approx(exact[path])
    # Every document holding a rare term is a candidate; ranking among them is unchanged.
    best = sorted(split, key=lambda p: -split[p][1])
    assert best == sorted(best, key=lambda p: -exact[p])


def test_only_common_words_look_at_documents_holding_all_of_them(forest):
    con = indexreader.connect(forest)
    found, _common = ranking.base_scores(con, ["garden", "soil"], 5, min_docs=10)
    assert len(found) == 5
    assert all("/leaf-" in path for path in found)

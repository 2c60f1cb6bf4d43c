"""Text analysis: what indexing stores and what a query looks up must meet.

Spaced scripts are folded and stemmed by SQLite's tokenizer, unspaced
scripts and Arabic are rewritten in Python; so the tests check the promise
end to end, through a real in-memory FTS5 table with the project tokenizer.
"""

from __future__ import annotations

import re
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_forest.text import STOPWORDS, TOKENIZER, index_text, query_terms

SAFE_TERM = re.compile(r"[^\W_]+|[\w\u0300-\u036f\u0600-\u06ff]+")


def matches(document: str, query: str) -> bool:
    con = sqlite3.connect(":memory:")
    con.execute(f'CREATE VIRTUAL TABLE t USING fts5(body, tokenize="{TOKENIZER}")')
    con.execute("INSERT INTO t VALUES (?)", (index_text(document),))
    terms = query_terms(query)
    assert terms, f"no searchable terms in {query!r}"
    expression = " OR ".join(f'"{term}"' for term in terms)
    return con.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expression,)).fetchone()[0] == 1


# --- Latin scripts --------------------------------------------------------------------------


@pytest.mark.parametrize("document, query", [
    ("Réglage du goutte-à-goutte", "reglage"),
    ("reglage", "RÉGLAGE"),
    ("naïve café", "naive cafe"),
    ("ＲＥＧＬＡＧＥ", "reglage"),  # fullwidth letters fold under NFKC
    ("ﬁlter", "filter"),  # the fi ligature
    ("the batch was fermented", "fermentation"),
    ("running", "runs"),
    ("pressures", "pressure"),
])
def test_spaced_scripts_fold_case_diacritics_and_stems(document, query):
    assert matches(document, query)


def test_unrelated_words_do_not_match():
    assert not matches("drip irrigation", "kimchi")


def test_stopwords_are_dropped_from_queries_but_information_stays():
    assert query_terms("What is the pressure?") == ["pressure"]
    assert query_terms("the of and with") == []
    assert "the" in STOPWORDS and "pressure" not in STOPWORDS


def test_query_operators_and_punctuation_are_plain_words():
    terms = query_terms('"drip" AND (pressure OR valve) NOT NEAR(x, 3) * ^title: {path} -x +z')
    assert terms == ["drip", "pressure", "valve", "NEAR", "x", "3", "title", "path", "z"]
    assert query_terms("?!... --- *** ()") == []


# --- unspaced scripts and Arabic ------------------------------------------------------------


def test_korean_is_cut_into_overlapping_bigrams():
    assert query_terms("배추김치") == ["배추", "추김", "김치"]
    assert matches("배추김치 7번", "김치")


def test_japanese_and_chinese_match_inside_longer_runs():
    assert matches("トマトの下葉に茶色い斑点が出た", "斑点")
    assert matches("芝麻要小火慢炒", "芝麻")
    assert not matches("芝麻要小火慢炒", "斑点")


def test_single_unspaced_character_is_one_term():
    assert query_terms("번") == ["번"]


def test_arabic_article_proclitics_and_vowel_marks_are_normalized():
    assert query_terms("الزعتر") == query_terms("زعتر") == ["زعتر"]
    assert query_terms("زَعْتَر") == ["زعتر"]
    assert matches("خلطة الزعتر مع السماق", "زعتر")
    assert matches("خلطة الزعتر", "وَالزَّعْتَر")


def test_mixed_scripts_in_one_word_are_split_consistently():
    assert matches("batch7번", "번")
    assert index_text("plain ascii stays as it is") == "plain ascii stays as it is"


# --- properties -----------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_query_terms_are_always_safe_inside_fts_quotes(text):
    for term in query_terms(text):
        assert term and '"' not in term and not term.isspace()


# Scripts both Python's and SQLite's Unicode tables (6.1 for unicode61) know the same way.
# U+03A2 is unassigned: Python calls it no letter, unicode61 counts it in with its block.
_SCRIPTS = st.one_of(*(st.characters(min_codepoint=a, max_codepoint=b) for a, b in (
    (0x20, 0x7E), (0xC0, 0x17F), (0x391, 0x3A1), (0x3A3, 0x3C9), (0x410, 0x44F), (0x621, 0x64A),
    (0x3041, 0x3096), (0x30A1, 0x30FA), (0x4E00, 0x4FFF), (0xAC00, 0xAD00))))


@settings(max_examples=100, deadline=None)
@given(st.text(_SCRIPTS, max_size=200))
def test_analysis_is_deterministic_and_every_term_finds_its_own_text(text):
    assert query_terms(text) == query_terms(text)
    assert index_text(text) == index_text(text)
    terms = query_terms(text)
    if terms:
        assert matches(text, text)

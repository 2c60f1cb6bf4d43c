"""Text analysis: what indexing stores and what a query looks up must meet.

Spaced scripts are folded and stemmed by SQLite's tokenizer, unspaced
scripts and Arabic are rewritten in Python; so the tests check the promise
end to end, through a real in-memory FTS5 table with the project tokenizer.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_forest.text import STOPWORDS, TOKENIZER, index_text, query_terms, slug

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


def test_a_slug_is_the_first_words_nfc_lower_case_joined_by_hyphens():
    assert slug("Kimchi batch 8: less salt!", "note") == "kimchi-batch-8-less-salt"
    decomposed = "Cafe\u0301 cre\u0300me brule\u0301e"
    assert slug(decomposed, "note") == unicodedata.normalize("NFC", "café-crème-brulée")
    assert slug("배추김치 7번 숙성", "note") == "배추김치-7번-숙성"
    assert slug("one two three four five six seven eight", "note") == "one-two-three-four-five-six"
    assert slug("x" * 500, "note") == "x" * 60
    assert slug("alpha " + "b" * 70, "note") == "alpha"  # a word that would overflow ends it


def test_the_fallback_is_the_callers_and_stands_in_when_no_word_is_left():
    assert slug("— ? —", "note") == "note"
    assert slug("", "entry") == "entry"
    assert slug("김치", "entry", ascii_only=True) == "entry"


def test_an_ascii_slug_folds_accents_and_drops_what_has_no_ascii_form():
    assert slug("ÉTÉ: le sécateur", "entry", ascii_only=True) == "ete-le-secateur"
    assert slug("Boiler service booked for 9 December", "entry", ascii_only=True) \
        == "boiler-service-booked-for-9-december"
    assert slug("Café 김치 day", "entry", ascii_only=True) == "cafe-day"
    assert slug("Taille d\u2019été", "entry", ascii_only=True) == "taille-d-ete"
    assert slug("ÉTÉ: le sécateur", "note") == "été-le-sécateur"  # the same words, kept


@given(st.text(max_size=300), st.sampled_from(["note", "entry"]), st.booleans())
@settings(max_examples=300, deadline=None)
def test_every_slug_is_a_safe_name(text, fallback, ascii_only):
    name = slug(text, fallback, ascii_only=ascii_only)
    assert 0 < len(name) <= 60 and name == unicodedata.normalize("NFC", name)
    assert not name.startswith((".", "-")) and "/" not in name and "\\" not in name
    # Letters, digits and the marks lower case can add (a dotted capital I keeps its dot).
    assert all(part and all(ch.isalnum() or unicodedata.category(ch) == "Mn" for ch in part)
               for part in name.split("-"))
    if ascii_only:
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", name)

"""The text analyzer: one definition of a term for both indexing and querying."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_forest.retrieve import match_expression
from memory_forest.text import STOPWORDS, analyze

TERM = re.compile(r"[^\W_]+")


# --- Latin scripts --------------------------------------------------------------------------


def test_diacritics_fold_to_the_bare_letters():
    assert analyze("réglage") == analyze("reglage") == analyze("RÉGLAGE") == ["reglag"]
    assert analyze("naïve café") == analyze("naive cafe")
    assert analyze("Ångström") == analyze("angstrom")


def test_case_and_compatibility_forms_fold():
    assert analyze("Straße") == analyze("STRASSE") == ["strass"]
    assert analyze("ＲＥＧＬＡＧＥ") == ["reglag"]  # fullwidth letters (NFKC)
    assert analyze("ﬁlter") == analyze("filter")  # the fi ligature


def test_english_words_are_stemmed():
    assert analyze("running runs") == ["run", "run"]
    assert analyze("fermentation") == analyze("fermented") == ["ferment"]
    assert analyze("pressures") == analyze("pressure")


def test_stopwords_are_dropped_but_information_stays():
    assert analyze("the of and with") == []
    assert analyze("What is the pressure?") == analyze("pressure")
    assert "the" in STOPWORDS and "pressure" not in STOPWORDS


def test_short_words_and_numbers_are_kept_unstemmed():
    assert analyze("PH 7 2026 bed C") == ["ph", "7", "2026", "bed", "c"]


def test_punctuation_and_query_operators_are_not_terms():
    terms = analyze('"drip" AND (pressure OR valve) NOT NEAR(x, 3) * ^title: {path} -x +z')
    assert terms == ["drip", "pressur", "valv", "near", "x", "3", "titl", "path", "x", "z"]
    assert analyze("?!... --- *** ()") == []


# --- unspaced scripts -----------------------------------------------------------------------


def test_korean_is_cut_into_overlapping_bigrams():
    assert analyze("배추김치") == ["배추", "추김", "김치"]
    assert set(analyze("김치")) <= set(analyze("배추김치 7번"))


def test_japanese_and_chinese_bigrams_find_words_inside_sentences():
    assert analyze("斑点") == ["斑点"]
    assert "斑点" in analyze("トマトの下葉に茶色い斑点が出た")
    assert set(analyze("トマト")) <= set(analyze("トマトの下葉"))
    assert "芝麻" in analyze("芝麻要小火慢炒")


def test_single_unspaced_character_is_its_own_term():
    assert analyze("茶") == ["茶"]


def test_mixed_runs_split_between_scripts():
    assert analyze("abc斑点def") == ["abc", "斑点", "def"]


# --- Arabic ---------------------------------------------------------------------------------


def test_arabic_article_and_proclitics_are_stripped():
    assert analyze("الزعتر") == analyze("زعتر") == ["زعتر"]
    assert analyze("والزعتر") == analyze("بالزعتر") == ["زعتر"]


def test_arabic_vowel_marks_and_tatweel_are_removed():
    assert analyze("زَعْتَر") == ["زعتر"]
    assert analyze("الزَّعْتَر") == ["زعتر"]
    assert analyze("زعـــتر") == ["زعتر"]


def test_arabic_letter_variants_are_unified():
    assert analyze("أحمد") == analyze("احمد") == analyze("إحمد")
    assert analyze("مدرسة") == analyze("مدرسه")


def test_arabic_prefix_is_kept_when_too_little_would_remain():
    assert analyze("الي") == ["الي"]


# --- properties -----------------------------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)


@settings(max_examples=100, deadline=None)
@given(TEXT)
def test_analysis_is_deterministic_and_yields_plain_terms(text):
    terms = analyze(text)
    assert terms == analyze(text)
    for term in terms:
        assert TERM.fullmatch(term), term


@settings(max_examples=100, deadline=None)
@given(TEXT)
def test_canonically_equivalent_text_gives_the_same_terms(text):
    assert analyze(unicodedata.normalize("NFD", text)) == \
        analyze(unicodedata.normalize("NFC", text))


@settings(max_examples=100, deadline=None)
@given(TEXT)
def test_match_expression_quotes_every_term(text):
    expression = match_expression(text)
    if not expression:
        assert analyze(text) == []
        return
    for part in expression.split(" OR "):
        assert part.startswith('"') and part.endswith('"')
        assert '"' not in part[1:-1]

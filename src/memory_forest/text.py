"""Text analysis shared by indexing and querying.

SQLite's FTS5 tokenizer ``porter unicode61 remove_diacritics 2`` does the
heavy lifting in C for spaced scripts: it splits on non-letters, casefolds,
folds diacritics (``réglage`` matches ``reglage``) and applies the Porter
stemmer. This module prepares what that tokenizer cannot handle:

- Scripts written without spaces (Han, kana, Hangul, Thai) become
  overlapping character bigrams, so ``김치`` finds ``배추김치`` and ``斑点``
  finds ``茶色い斑点``.
- Arabic loses vowel marks and tatweel, letter variants are unified and the
  article with its common proclitics is stripped (``الزعتر`` -> ``زعتر``).

``index_text`` rewrites stored text; ``query_terms`` cuts a query into the
literal words to look up (stopwords dropped). Both use the same rewriting,
so a query term always meets the same token that indexing produced.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_UNSPACED = (
    "\u0e00-\u0e7f"  # thai
    "\u1100-\u11ff"  # hangul jamo
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3130-\u318f"  # hangul compatibility jamo
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0002fa1f"  # CJK extensions B and later
)
_ARABIC = "\u0600-\u06ff\u0750-\u077f"
# These classes take milliseconds each to compile, and the gate pays start-up on
# every agent turn: they are compiled on first use (``_re``), and ASCII text,
# which never needs them, takes the ``_ASCII_WORD`` path instead.
_SPECIAL_RUN = f"[{_UNSPACED}]+|[{_ARABIC}]+"
_UNSPACED_CHAR = f"[{_UNSPACED}]"
_WORD = f"[{_UNSPACED}]+|[{_ARABIC}]+|[^\\W_{_UNSPACED}{_ARABIC}]+"
_ASCII_WORD = re.compile("[A-Za-z0-9]+")  # exactly what _WORD finds in ASCII text
_ARABIC_MARKS = "[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]"
_ARABIC_PREFIXES = ("وال", "بال", "كال", "فال", "لل", "ال")
_ARABIC_LETTERS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ى": "ي", "ة": "ه"})

# Letters and digits are token characters, everything else separates, exactly as
# Python's ``\w`` (minus "_") sees words; so both sides cut text at the same places.
TOKENIZER = "porter unicode61 remove_diacritics 2 categories 'L* N*'"

STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before
being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it
its itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
s t d ll m o re ve y also ever did didn doesn don hadn hasn haven isn wasn weren won wouldn
shan shouldn mustn needn mightn couldn aren ain get got like one us let may might must shall
another many much often else anything something someone kind type thing things way ways
""".split())


def index_text(text: str) -> str:
    """Text as stored for full-text search (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text)
    if text.isascii():
        return text
    return _re(_SPECIAL_RUN).sub(lambda m: f" {' '.join(_special_terms(m.group()))} ", text)


def query_terms(query: str) -> list[str]:
    """The distinct searchable words of literal text, in order, without stopwords.

    Every term is letters and digits only, so quoting it is enough to keep
    any query text from acting as FTS syntax.
    """
    terms: dict[str, str] = {}  # folded -> as written; SQLite folds and stems the rest
    text = unicodedata.normalize("NFKC", query)
    plain = text.isascii()
    for word in _ASCII_WORD.findall(text) if plain else _re(_WORD).findall(text):
        if not plain and _re(_SPECIAL_RUN).fullmatch(word):
            terms.update((term, term) for term in _special_terms(word) if term)
        elif word.lower() not in STOPWORDS:
            terms.setdefault(word.lower(), word)
    return list(terms.values())


def has_unspaced_script(text: str) -> bool:
    return not text.isascii() and _re(_UNSPACED_CHAR).search(text) is not None


@functools.cache
def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _special_terms(run: str) -> list[str]:
    if _re(_UNSPACED_CHAR).match(run):
        if len(run) == 1:
            return [run]
        return [run[i : i + 2] for i in range(len(run) - 1)]
    return [_arabic(run)]


def _arabic(word: str) -> str:
    word = _re(_ARABIC_MARKS).sub("", word).translate(_ARABIC_LETTERS)
    for prefix in _ARABIC_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= 2:
            return word[len(prefix):]
    return word

"""Text analysis shared by indexing and querying: one function, ``analyze``.

Both sides of full-text search must cut text into the same terms, so this is
the only place that decides what a term is:

- Latin and other spaced scripts: NFKC, casefold, diacritics folded
  (``réglage`` -> ``reglage``), English stopwords dropped, Snowball-stemmed.
- Scripts written without spaces (Han, kana, Hangul, Thai): overlapping
  character bigrams, so ``김치`` finds ``배추김치`` and ``斑点`` finds ``茶色い斑点``.
- Arabic: vowel marks and tatweel removed, letter variants unified, the
  article and its common proclitics stripped (``الزعتر`` -> ``زعتر``).

The output is plain space-separated terms; SQLite only splits on spaces.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+")
_ARABIC_MARKS = re.compile("[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
_ARABIC_PREFIXES = ("وال", "بال", "كال", "فال", "لل", "ال")
_ARABIC_LETTERS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ى": "ي", "ة": "ه"})

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
""".split())


def analyze(text: str) -> list[str]:
    """Cut ``text`` into index/query terms (see the module docstring)."""
    terms: list[str] = []
    # Arabic vowel marks are combining characters, which the word pattern does not match:
    # left in place they would cut "زَعْتَر" into single letters, so they go first.
    text = _ARABIC_MARKS.sub("", unicodedata.normalize("NFKC", text))
    for word in _WORD.findall(text.casefold()):
        terms.extend(_word_terms(word))
    return terms


def has_unspaced_script(text: str) -> bool:
    return any(_is_unspaced(ch) for ch in text)


@lru_cache(maxsize=200_000)
def _word_terms(word: str) -> tuple[str, ...]:
    if word.isascii():
        return _latin(word)
    terms: list[str] = []
    for run, unspaced in _runs(word):
        if unspaced:
            terms.extend(_bigrams(run))
        elif _is_arabic(run[0]):
            terms.append(_arabic(run))
        else:
            terms.extend(_latin(_fold(run)))
    return tuple(t for t in terms if t)


def _latin(word: str) -> tuple[str, ...]:
    if word in STOPWORDS:
        return ()
    if word.isdigit() or len(word) < 3:
        return (word,)
    return (_stem(word),)


def _fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFD", word)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed
                                                if not unicodedata.combining(c)))


def _runs(word: str) -> list[tuple[str, bool]]:
    """Split a word into runs of unspaced-script and other characters."""
    runs: list[tuple[str, bool]] = []
    start = 0
    for index in range(1, len(word) + 1):
        if index == len(word) or _is_unspaced(word[index]) != _is_unspaced(word[start]):
            runs.append((word[start:index], _is_unspaced(word[start])))
            start = index
    return runs


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _arabic(word: str) -> str:
    word = _ARABIC_MARKS.sub("", word).translate(_ARABIC_LETTERS)
    for prefix in _ARABIC_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= 2:
            return word[len(prefix):]
    return word


def _is_unspaced(ch: str) -> bool:
    code = ord(ch)
    return (
        0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= code <= 0x4DBF  # extension A
        or 0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
        or 0x1100 <= code <= 0x11FF  # hangul jamo
        or 0x3130 <= code <= 0x318F  # hangul compatibility jamo
        or 0x0E00 <= code <= 0x0E7F  # thai
        or 0xF900 <= code <= 0xFAFF  # CJK compatibility ideographs
        or 0x20000 <= code <= 0x2FA1F  # CJK extensions B and later
    )


def _is_arabic(ch: str) -> bool:
    return 0x0600 <= ord(ch) <= 0x06FF or 0x0750 <= ord(ch) <= 0x077F


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer  # PyStemmer: the Snowball algorithms in C, ~2 ms to import

    return Stemmer.Stemmer("english")


def _stem(word: str) -> str:
    return _stemmer().stemWord(word)

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

import re
import unicodedata
from functools import lru_cache

# (first, last) code points. One definition serves the per-character checks on the
# query path and the regex on the index path (compiled only when indexing needs it:
# large character classes cost milliseconds to compile, on every per-turn process).
_UNSPACED_RANGES = (
    (0x0E00, 0x0E7F),  # thai
    (0x1100, 0x11FF),  # hangul jamo
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3130, 0x318F),  # hangul compatibility jamo
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x2FA1F),  # CJK extensions B and later
)
_ARABIC_RANGES = ((0x0600, 0x06FF), (0x0750, 0x077F))
_ARABIC_MARKS = {code: None for first, last in (
    (0x0610, 0x061A), (0x064B, 0x065F), (0x0670, 0x0670), (0x06D6, 0x06ED), (0x0640, 0x0640),
) for code in range(first, last + 1)}
_WORD = re.compile(r"[^\W_]+")
_ARABIC_PREFIXES = ("وال", "بال", "كال", "فال", "لل", "ال")
_ARABIC_LETTERS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ى": "ي", "ة": "ه"})

SLUG_WORDS = 6
SLUG_CHARS = 60

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
    return _special_run().sub(lambda m: f" {' '.join(_special_terms(m.group()))} ",
                              text.translate(_ARABIC_MARKS))


def query_terms(query: str) -> list[str]:
    """The distinct searchable words of literal text, in order, without stopwords.

    Every term is letters and digits only, so quoting it is enough to keep
    any query text from acting as FTS syntax.
    """
    terms: dict[str, str] = {}  # folded -> as written; SQLite folds and stems the rest
    text = unicodedata.normalize("NFKC", query).translate(_ARABIC_MARKS)
    for word in _WORD.findall(text):
        for run, kind in _runs(word):
            if kind is not None:
                terms.update((term, term) for term in _special_terms(run))
            elif run.lower() not in STOPWORDS:
                terms.setdefault(run.lower(), run)
    return list(terms.values())


def slug(text: str, fallback: str, *, ascii_only: bool = False) -> str:
    """A name made of text's first words, so a file or an entry reads like what it holds.

    Lower case, NFC, letters and digits joined by hyphens, at most ``SLUG_WORDS``
    words and ``SLUG_CHARS`` characters; ``fallback`` when no word is left.
    ``ascii_only`` folds accents away and drops what has no ASCII form, for
    names whose grammar is ASCII (a Daily entry id is an anchor); a route
    segment may be any NFC text, so a leaf name keeps its script.
    """
    words = _WORD.findall(unicodedata.normalize("NFC", text))
    if ascii_only:  # word by word, so an apostrophe with no ASCII form still separates
        words = [part for word in words for part in _WORD.findall(
            unicodedata.normalize("NFKD", word).encode("ascii", "ignore").decode())]
    name = ""
    for word in (word.lower() for word in words[:SLUG_WORDS]):
        longer = f"{name}-{word}" if name else word
        if len(longer) > SLUG_CHARS:
            name = name or word[:SLUG_CHARS]
            break
        name = longer
    return unicodedata.normalize("NFC", name) or fallback


def _kind(ch: str) -> str | None:
    code = ord(ch)
    if code < 0x0600:
        return None
    if any(first <= code <= last for first, last in _UNSPACED_RANGES):
        return "unspaced"
    if any(first <= code <= last for first, last in _ARABIC_RANGES):
        return "arabic"
    return None


def _runs(word: str) -> list[tuple[str, str | None]]:
    """Split a word into runs of one kind: unspaced script, Arabic, or other."""
    if word.isascii():
        return [(word, None)]
    runs: list[tuple[str, str | None]] = []
    start = 0
    for index in range(1, len(word) + 1):
        if index == len(word) or _kind(word[index]) != _kind(word[start]):
            runs.append((word[start:index], _kind(word[start])))
            start = index
    return runs


@lru_cache(maxsize=1)
def _special_run() -> re.Pattern[str]:
    def char_class(ranges: tuple[tuple[int, int], ...]) -> str:
        return "".join(f"{chr(first)}-{chr(last)}" for first, last in ranges)

    return re.compile(f"[{char_class(_UNSPACED_RANGES)}]+|[{char_class(_ARABIC_RANGES)}]+")


def _special_terms(run: str) -> list[str]:
    if _kind(run[0]) == "unspaced":
        if len(run) == 1:
            return [run]
        return [run[i : i + 2] for i in range(len(run) - 1)]
    return [_arabic(run)]


def _arabic(word: str) -> str:
    word = word.translate(_ARABIC_LETTERS)
    for prefix in _ARABIC_PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= 2:
            return word[len(prefix):]
    return word

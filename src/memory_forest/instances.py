"""Identity before similarity: whether a fact names another instance than a record.

"Kimchi batch 8 tasted sour" shares nearly every word with the leaf "Kimchi
batch 7", and BM25 ranks that leaf first; appending would file batch 8's
tasting note in batch 7's record. Words say what a fact is about; numbers,
years and names say which one. ``place`` asks ``differs`` before it appends a
fact to a leaf (for ``remember --append`` and ``consolidate`` alike): when the
best leaf is another instance, the fact goes to a leaf that ``names_same``
instance as it does, or to a new leaf beside them.

A record's markers come from its title (the name a reader knows it by): its
years (four digits, 1900-2099), its other numbers, and its names (words
written with a capital that do not start a sentence). The fact differs from the
record when, for one of those three kinds, both hold markers and the fact
lacks one of the record's: "batch 8, day 12" lacks batch 7's 7; "2026" lacks
2025; "Grandpa Emil" lacks Rosa. A fact that holds no marker of a kind says
nothing about it ("the boiler pressure dropped" may be appended to "Boiler
service 2025"), and a fact that holds the record's markers and more is the
same instance with details ("batch 7 tasted sour on day 12").
"""

from __future__ import annotations

import re

from .text import STOPWORDS

_NUMBER = re.compile(r"(?<!\w)\d+(?!\w)")  # digits alone: "B12" and "3b" are names of a kind
_YEAR = re.compile(r"(?:19|20)\d\d")
# A word with a capital first letter, its apostrophe-s left off ("Tom's" names Tom).
_CAPITALISED = re.compile(r"\b([^\W\d_a-z][^\W\d_]*)(?:['\u2019]s)?\b")
# A title before a name says someone is named; the name that follows says who.
HONORIFICS = frozenset("mr mrs ms miss dr prof".split())
# A short capitalised word before a dot (Dr., Mrs., St.) is a title, not a sentence's end.
_TITLE_DOT = re.compile(r"(?:^|\s)[^\W\d_a-z][^\W\d_]{0,2}\.$")


def markers(text: str) -> dict[str, frozenset[str]]:
    """The years, other numbers and names ``text`` holds, each kind a set."""
    numbers = [match.group().lstrip("0") or "0" for match in _NUMBER.finditer(text)]
    names = set()
    for match in _CAPITALISED.finditer(text):
        word = match.group(1)
        if word.lower() in STOPWORDS | HONORIFICS or _starts_sentence(text[:match.start()]):
            continue  # a capital that starts a sentence says nothing about a name
        names.add(word.casefold())
    return {"years": frozenset(n for n in numbers if _YEAR.fullmatch(n)),
            "numbers": frozenset(n for n in numbers if not _YEAR.fullmatch(n)),
            "names": frozenset(names)}


def _starts_sentence(before: str) -> bool:
    """Whether a word after ``before`` starts a sentence: the text's start, a line's, or
    after . ! ? (but not after a title's dot)."""
    stripped = before.rstrip()
    if not stripped or "\n" in before[len(stripped):]:
        return True
    return stripped[-1] in ".!?" and not _TITLE_DOT.search(stripped)


def differs(fact: str, record_title: str) -> dict[str, list[str]]:
    """The kinds in which ``fact`` names another instance than the record titled
    ``record_title``, each with the record's markers the fact lacks (empty: the same)."""
    theirs, ours = markers(record_title), markers(fact)
    return {kind: sorted(theirs[kind] - ours[kind]) for kind in theirs
            if theirs[kind] and ours[kind] and not theirs[kind] <= ours[kind]}


def names_same(fact: str, record_title: str) -> bool:
    """Whether the record's title names an instance (a year, number or name) and the fact
    names that same one: "Kimchi batch 8 tasted sour" and "Kimchi batch 8 started"."""
    theirs, ours = markers(record_title), markers(fact)
    shared = any(theirs[kind] and theirs[kind] <= ours[kind] for kind in theirs)
    return shared and not differs(fact, record_title)

"""The one credential detector: what writers redact, and what sync and the release audit refuse.

Every path that keeps a secret from being stored or published asks this
module: the writers' redaction (``writers.redact``, which replaces each span
found here with a marker), ``sync`` (which refuses to push a file with a
finding), consolidation, and ``scripts/audit_public_release.py``. Because all
of them call ``spans``, a string the writers would change is exactly a string
``findings`` reports, and the reverse.

The rules (``credentials.table``, run by ``credentials.match``) are
detect-secrets' plugins, extended by our own where they miss; ``match``
imports detect-secrets, which costs about 100 ms. Most text holds none of the literals or shapes a
rule needs, so a cheap pre-check (``credentials.table``, standard library
only) decides first, and the rules are imported only for text that might hold
a credential. ``retrieve`` and the gate never come here at all.

Matching runs on a folded copy of the text (NFKC, with invisible format
characters dropped), so ``ｐａｓｓｗｏｒｄ=`` or a zero-width space inside
``password`` is still caught; each span is mapped back onto the text as given.
A finding names the rule, never the matched text, so reporting it cannot leak it.
"""

from __future__ import annotations

import re
import unicodedata

from .table import ASSIGNMENT_RULES, BESIDE, RULE_NAMES, may_hold

__all__ = ["ASSIGNMENT_RULES", "PAIRED", "RULE_NAMES", "Span", "findings", "fold",
           "line_findings", "may_hold", "secret_beside", "secret_field", "spans"]


Span = tuple[int, int, str]  # start, end (in the text as given), rule
PAIRED = frozenset(BESIDE)  # rules that find the id half of a pair (``secret_beside``)

# Every character ``str.splitlines`` ends a line at becomes "\n" in the matched copy (one
# for one, so positions do not move): the rules then see the lines sync and the audit see.
_LINE_BREAKS = str.maketrans(dict.fromkeys("\r\v\f\x1c\x1d\x1e\x85\u2028\u2029", "\n"))

# Invisible characters dropped before matching (soft hyphen, zero-width and bidi controls).
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                        "\u2066-\u206f\ufeff]")


_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")


def spans(text: str) -> list[Span]:
    """Every credential in ``text``: sorted, non-overlapping ``(start, end, rule)``.

    A span covers the secret only: the label in front of it (``password=``,
    ``Bearer ``, the user name in a URL) stays outside, so a marker put in its
    place still says what was there.
    """
    folded, starts, ends = fold(text)
    if not may_hold(folded):
        return []
    from .match import folded_spans

    return [(_at(starts, start), _at(ends, end), rule)
            for start, end, rule in folded_spans(folded)]


def findings(text: str) -> list[tuple[int, str]]:
    """``(line number, rule)`` for each rule a line of ``text`` breaks, once per line.

    A span is reported on the line it starts on, so ``findings`` is empty exactly
    when ``spans`` is, whatever the spans cross.
    """
    found = spans(text)
    if not found:
        return []
    lines, offset, number, result = text.splitlines(keepends=True), 0, 0, []
    for start, _, rule in found:
        while number < len(lines) and offset + len(lines[number]) <= start:
            offset += len(lines[number])
            number += 1
        if (number + 1, rule) not in result:
            result.append((number + 1, rule))
    return result


def line_findings(line: str) -> list[str]:
    """The rules ``line`` breaks, each once, in the order they are found."""
    return list(dict.fromkeys(rule for _, _, rule in spans(line)))


def secret_field(name: str) -> bool:
    """Whether a field (a JSON key) is named for a secret: ``password``, ``db_token``,
    ``apiKey``: its value is then a secret whatever it looks like."""
    folded = fold(name)[0]
    if not may_hold(folded):
        return False
    from .match import SECRET_FIELD

    return SECRET_FIELD.fullmatch(folded) is not None


def secret_beside(id_rule: str, value: str) -> str | None:
    """The rule of ``value`` when it is, whole, the secret half of a pair whose id half
    (``id_rule``, one of ``PAIRED``) was found beside it, as in one JSON object."""
    rule, shape = BESIDE[id_rule]
    return rule if shape.fullmatch(value) else None


def fold(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """The text as matched, with maps from its positions back to ``text``.

    ``starts[i]`` is where the character that gave folded position ``i`` starts in
    ``text``; ``ends[i]`` is where the character that gave position ``i - 1`` ends.
    A span that cuts a folded character in two thus covers the whole original one.
    ``None`` maps mean the identity (ASCII and already-normal text: the common case).
    """
    if text.isascii() or (unicodedata.is_normalized("NFKC", text)
                          and not _INVISIBLE.search(text)):
        return text.translate(_LINE_BREAKS), None, None
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = [0]
    last = 0
    for run in _NOT_ASCII.finditer(text):  # ASCII runs map to themselves, in bulk
        begin, stop = run.span()
        parts.append(text[last:begin])
        starts.extend(range(last, begin))
        ends.extend(range(last + 1, begin + 1))
        for index in range(begin, stop):
            char = text[index]
            piece = "" if _INVISIBLE.match(char) else unicodedata.normalize("NFKC", char)
            parts.append(piece)
            starts += [index] * len(piece)
            ends += [index + 1] * len(piece)
        last = stop
    parts.append(text[last:])
    starts.extend(range(last, len(text) + 1))
    ends.extend(range(last + 1, len(text) + 1))
    return "".join(parts).translate(_LINE_BREAKS), starts, ends


def _at(positions: list[int] | None, index: int) -> int:
    return index if positions is None else positions[index]

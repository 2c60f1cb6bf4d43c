"""Credential redaction: the one pass every writer runs over caller text before it is stored.

Every string a caller gives that reaches a file (event payloads, keys included,
at any depth; titles; tags; Daily summaries; plan bodies; superseding records)
goes through ``redact_text`` or ``redact_value``, which replace each
credential-shaped span with ``[REDACTED:<rule>]`` and count it per rule. A
writer redacts each piece of caller text once, before it is used, so the
counts in its receipt are one per secret the caller gave and the tool stored.

Names are different: an event id, a route segment or a transaction id becomes
a file name, an anchor or a link target, where a marker would break the
reference. A name that holds a credential is refused (``secret_in_name``),
never stored and never counted.

Matching runs on a folded copy of the text (NFKC, with invisible format
characters dropped), so ``ｐａｓｓｗｏｒｄ=`` or a zero-width space inside
``password`` is still caught; the span found is then replaced in the text as
given, which is otherwise stored verbatim. A cheap literal pre-check keeps
ordinary text (most of it) at the cost of one regex search.

Pure standard library: the per-turn path imports nothing heavy through it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

MARKER_PREFIX = "[REDACTED:"

# Key words that name a secret in ``key=value`` text, and as JSON field names (there
# without ``pwd``, which in captured shell events is the working directory).
_FIELD_KEYWORDS = (r"password|passwd|passphrase|token|secret|api_key|apikey|access_key|"
                   r"secret_key|client_secret|private_key")
_KEYWORDS = f"{_FIELD_KEYWORDS}|pwd"
# Words that follow "password is" in prose about passwords rather than in a password.
_PROSE = (r"a|an|the|not|no|now|also|still|only|never|always|being|been|too|very|"
          r"required|needed|optional|mandatory|set|reset|changed|expired|incorrect|wrong|"
          r"invalid|valid|correct|stored|saved|hashed|encrypted|sent|shown|hidden|empty|"
          r"missing|weak|strong|long|short|case|unique|same|different|used|unknown|"
          r"forgotten|lost|managed|generated|rotated|in|on|at|for|to|of|and|or|your|my|our|"
          r"their|his|her|its|this|that|what|where|how|kept|given|available")

# Rule name -> pattern. A group named ``keep_<rule>`` is kept in front of the marker (the
# "Bearer " or "password=" that says what the secret was); the rest becomes the marker.
RULES: dict[str, str] = {
    "private_key": r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?"
                   r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    "jwt": r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}",
    # A bearer token has a digit, a symbol or an inner dot: "Bearer authentication" is prose.
    "bearer": r"(?P<keep_bearer>\b[Bb]earer\s+)"
              r"(?=[A-Za-z0-9._~+/=-]*(?:[0-9_~+/=-]|\.[A-Za-z0-9]))[A-Za-z0-9._~+/=-]{8,}",
    "url_credentials": r"(?P<keep_url_credentials>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:)"
                       r"[^\s/?#@]+(?=@)",
    "api_key": r"\bsk-[A-Za-z0-9_-]{20,}",
    "stripe_key": r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",
    "google_api_key": r"\bAIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
    "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    "slack_token": r"\bxox[abposre]-[A-Za-z0-9-]{10,}",
    "aws_access_key": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "assignment": rf"(?P<keep_assignment>(?i:\b[A-Za-z0-9_.-]*(?:{_KEYWORDS})[\"']?\s*[=:]\s*))"
                  r"(?!\[REDACTED:)(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`,;&]+)",
    "password_phrase": r"(?P<keep_password_phrase>(?i:\b(?:password|passwd|passphrase|passcode)"
                       r"\s+(?:is|was)\s+))"
                       rf"(?!(?i:(?:{_PROSE})\b))(?!\[REDACTED:)"
                       r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'`,;&]*[^\s\"'`,;&.!?:)])",
}
# Rule -> literals (lower case) of which any match of the rule holds one. Text is tested
# for them first, with plain substring searches, and only the rules whose literals it
# holds are run: ordinary text costs a few microseconds.
_KEYWORD_LITERALS = ("password", "passwd", "pwd", "passphrase", "token", "secret", "api_key",
                     "apikey", "access_key", "private_key")
LITERALS: dict[str, tuple[str, ...]] = {
    "private_key": ("private key",),
    "jwt": ("eyj",),
    "bearer": ("bearer",),
    "url_credentials": ("://",),
    "api_key": ("sk-",),
    "stripe_key": ("sk_", "rk_"),
    "google_api_key": ("aiza",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack_token": ("xox",),
    "aws_access_key": ("akia", "asia"),
    "assignment": _KEYWORD_LITERALS,
    "password_phrase": ("password", "passwd", "passphrase", "passcode"),
}
_ALL_LITERALS = tuple(dict.fromkeys(literal for group in LITERALS.values() for literal in group))
_ANY_LITERAL = re.compile("|".join(map(re.escape, _ALL_LITERALS)))
SHORT = 100  # below this length one regex search beats a substring search per literal

# A bare AWS secret access key: 40 characters of base64 with both cases, standing alone.
# Too like other data to redact anywhere, so only next to an access key id.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])"
                         r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_MARKER = "[REDACTED:aws_access_key]"
AWS_NEAR = 200  # characters either side of an access key id

# A JSON field whose name says its value is a secret: ``password``, ``db_token``, ``apiKey``.
_SECRET_FIELD = re.compile(rf"(?i:[A-Za-z0-9_.-]*(?:{_FIELD_KEYWORDS}))")

# Invisible characters dropped before matching (soft hyphen, zero-width and bidi controls).
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                        "\u2066-\u206f\ufeff]")

Counts = dict[str, int]


def marker(rule: str) -> str:
    return f"{MARKER_PREFIX}{rule}]"


# --- text -------------------------------------------------------------------------------------


def redact_text(text: str, counts: Counts) -> str:
    """``text`` with every credential-shaped span replaced by its marker, counted per rule."""
    folded, starts, ends = _fold(text)
    lowered = folded.lower()
    if not _has_literal(lowered):
        return text
    rules = tuple(rule for rule, literals in LITERALS.items()
                  if any(literal in lowered for literal in literals))
    pieces, last = [], 0
    for match in _pattern(rules).finditer(folded):
        rule = match.lastgroup or "secret"
        keep = match.end(f"keep_{rule}") if f"keep_{rule}" in RULES[rule] else -1
        secret_start = match.start() if keep < 0 else keep
        begin, last_end = _at(starts, secret_start), _at(ends, match.end())
        found = marker(rule)
        quote = text[begin:begin + 1]
        if quote in ("'", '"') and last_end - begin >= 2 and text[last_end - 1] == quote:
            found = f"{quote}{found}{quote}"  # a quoted value keeps its quotes
        pieces += [text[last:begin], found]
        last = last_end
        _count(counts, rule)
    if not pieces:
        return text
    pieces.append(text[last:])
    return _aws_secrets("".join(pieces), counts)


def _has_literal(lowered: str) -> bool:
    if len(lowered) < SHORT:
        return _ANY_LITERAL.search(lowered) is not None
    return any(literal in lowered for literal in _ALL_LITERALS)


@functools.lru_cache(maxsize=128)
def _pattern(rules: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation of ``rules`` (in table order): the leftmost match of any wins."""
    return re.compile("|".join(f"(?P<{name}>{RULES[name]})" for name in rules))


def _fold(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """The text as matched, with maps from its positions back to ``text``.

    ``starts[i]`` is where the character that gave folded position ``i`` starts in
    ``text``; ``ends[i]`` is where the character that gave position ``i - 1`` ends.
    A span that cuts a folded character in two thus covers the whole original one.
    ``None`` maps mean the identity (ASCII and already-normal text: the common case).
    """
    if text.isascii() or (unicodedata.is_normalized("NFKC", text)
                          and not _INVISIBLE.search(text)):
        return text, None, None
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = [0]
    for index, char in enumerate(text):
        piece = "" if _INVISIBLE.match(char) else unicodedata.normalize("NFKC", char)
        parts.append(piece)
        starts += [index] * len(piece)
        ends += [index + 1] * len(piece)
    starts.append(len(text))
    return "".join(parts), starts, ends


def _at(positions: list[int] | None, index: int) -> int:
    return index if positions is None else positions[index]


def _aws_secrets(text: str, counts: Counts) -> str:
    """Redact bare 40-character secret keys within ``AWS_NEAR`` characters of a redacted
    access key id (the marker the main pass left)."""
    if _AWS_MARKER not in text:
        return text
    ids = [found.span() for found in re.finditer(re.escape(_AWS_MARKER), text)]
    spans = [m.span() for m in _AWS_SECRET.finditer(text)
             if any(m.start() - AWS_NEAR <= end and start <= m.end() + AWS_NEAR
                    for start, end in ids)]
    for start, end in reversed(spans):
        text = text[:start] + marker("aws_secret_key") + text[end:]
        _count(counts, "aws_secret_key")
    return text


def _count(counts: Counts, rule: str) -> None:
    counts[rule] = counts.get(rule, 0) + 1


def find_secret(text: str) -> str | None:
    """The name of a rule that finds a credential in ``text``, or ``None``."""
    scratch: Counts = {}
    if redact_text(text, scratch) == text:
        return None
    return min(scratch)


# --- JSON values ------------------------------------------------------------------------------


def redact_value(value: Any, counts: Counts) -> Any:
    """A copy of a JSON value with every string redacted: values and keys, at any depth.

    A string under a key that names a secret (``password``, ``api_key``,
    ``db_token``...) is replaced whole (rule ``secret_field``). A bare AWS
    secret key is caught beside an access key id in the same string or in a
    sibling value. The walk is iterative, so no depth the parser accepts can
    exhaust the stack.
    """
    if not isinstance(value, (dict, list)):
        return redact_text(value, counts) if isinstance(value, str) else value
    if not _may_hold_secrets(value):
        return value.copy()  # nothing below changes, so nothing below needs copying
    top: dict[str, Any] | list[Any] = {} if isinstance(value, dict) else []
    pending: list[Pending] = [(value, top, None)]
    while pending:
        source, target, key = pending.pop()
        local: Counts = {}
        if isinstance(source, dict):
            _redact_object(source, target, local, pending)
        else:  # a list's items are under its key: ``"api_keys": ["...", "..."]``
            target.extend(_leaf(item, key, local, pending) for item in source)
        if local.get("aws_access_key"):
            _aws_siblings(target, local)
        for rule, number in local.items():
            counts[rule] = counts.get(rule, 0) + number
    return top


def _may_hold_secrets(value: dict[str, Any] | list[Any]) -> bool:
    """Whether any key or string in ``value`` has a rule's literal: one search over the
    value's JSON text instead of one per string (most events have no literal at all)."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False, check_circular=False)
    except (TypeError, ValueError, RecursionError):
        return True  # not plain JSON: walk it
    return _has_literal(_fold(text)[0].lower())


Pending = tuple[Any, Any, Any]  # (the value, its empty copy to fill, the key it is under)


def _redact_object(source: dict[str, Any], target: dict[str, Any], counts: Counts,
                   pending: list[Pending]) -> None:
    for key, item in source.items():
        name = redact_text(key, counts) if isinstance(key, str) else key
        number = 1
        while name in target:  # two keys redacted to the same marker both stay
            number += 1
            name = f"{redact_text(key, {})} {number}"
        target[name] = _leaf(item, key, counts, pending)


def _aws_siblings(target: dict[str, Any] | list[Any], counts: Counts) -> None:
    """In an object or list that held an access key id, a value that is exactly a bare
    secret key is the secret beside it."""
    places = target.items() if isinstance(target, dict) else enumerate(target)
    for place, item in list(places):
        if isinstance(item, str) and _AWS_SECRET.fullmatch(item):
            target[place] = marker("aws_secret_key")
            _count(counts, "aws_secret_key")


def _is_secret_field(key: str) -> bool:
    folded = _fold(key)[0]
    return _has_literal(folded.lower()) and _SECRET_FIELD.fullmatch(folded) is not None


def _leaf(item: Any, key: Any, counts: Counts, pending: list[Pending]) -> Any:
    """The redacted copy of one item; a container is created empty and filled later."""
    if isinstance(item, str):
        if isinstance(key, str) and item and not item.startswith(MARKER_PREFIX) \
                and _is_secret_field(key):
            _count(counts, "secret_field")
            return marker("secret_field")
        return redact_text(item, counts)
    if isinstance(item, (dict, list)):
        copy: dict[str, Any] | list[Any] = {} if isinstance(item, dict) else []
        pending.append((item, copy, key))
        return copy
    return item


# --- names ------------------------------------------------------------------------------------


def refuse_secret_name(name: str, field: str, **details: Any) -> None:
    """Refuse a name (event id, route segment, transaction id) that holds a credential.

    A name is stored as given, in file names, anchors and links, so it cannot be
    redacted: the caller is asked for another.
    """
    rule = find_secret(name)
    if rule is not None:
        from ..errors import ForestError

        raise ForestError("secret_in_name", f"the {field} looks like a credential ({rule}); "
                          "names are stored as given, so choose another",
                          {"field": field, "rule": rule, **details}, exit_code=2)

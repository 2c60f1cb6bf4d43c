"""Running the rules: detect-secrets' plugin regexes and ours, spans, and what makes a match real.

Imported only for text that ``table.may_hold`` says might hold a credential:
detect-secrets' plugins import ``requests``, about 100 ms.
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib
import re

from detect_secrets.filters.heuristic import (
    is_indirect_reference,
    is_prefixed_with_dollar_sign,
    is_templated_secret,
)
from detect_secrets.plugins.keyword import DENYLIST as KEYWORDS

from .table import BESIDE, NEAR, OWN_KEYWORDS, RULES, Rule, candidates

Found = tuple[int, int, str]

_KEYWORDS = "|".join((*KEYWORDS, *OWN_KEYWORDS))
# A JSON field named for a secret; without "pwd", which in captured shell events is the
# working directory.
SECRET_FIELD = re.compile(
    rf"(?i:[A-Za-z0-9_.-]*(?:{'|'.join(k for k in (*KEYWORDS, *OWN_KEYWORDS) if k != 'pwd')}))")

# What a token may continue with past the end of a plugin's regex (an inner dot only
# when a token character follows, so a sentence's full stop is not taken).
_TAIL = re.compile(r"(?:[A-Za-z0-9_+/=-]|\.(?=[A-Za-z0-9_-]))*")
_TRIM = " \t\"'=:`"
_SECRET_GROUP = re.compile(r"s\d*")  # our patterns name the secret s, s1, s2...
VALUE_CAP = 256  # what table._VALUE reads of a value; a longer bare one is taken whole
_BARE = re.compile(r"[^\s\"'`,;&]*")
CONTEXT = 200  # characters of a line read either side of a value to judge it
WINDOW, OVERLAP = 4096, 1024  # how much of a long text one plugin search sees
_LABEL = re.compile(r"(?:[A-Za-z]+=)?")
_TRAILING = ").:;,]}"
_CLOSERS = {")": "(", "]": "[", "}": "{"}
# Values that say "a placeholder" rather than "a secret".
_PLACEHOLDERS = ("example", "placeholder", "redacted", "xxxx", "****", "your_", "your-",
                 "yourpassword", "yourtoken", "changeme", "change-me", "change_me", "dummy",
                 "fake", "<", ">", "{{", "${", "%s", "%(", "...", "\u2026")
_NOT_VALUES = frozenset({"null", "none", "nil", "true", "false", "undefined", "empty", "n/a",
                         "required", "optional", "string", "str", "int", "bool", "password",
                         "passwd", "pass", "secret", "token", "key", "api_key"})
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_ATTRIBUTE = re.compile(r"(?:self|cls|this|config|settings|env|os|args|options)(?:\.\w+)+")
# After a value, what says it is a piece of an expression in code, not the whole value.
_EXPRESSION = re.compile(r"\s*(?:[-+*/%|]|\.\w+\()\s*\S")
# Words that follow "password is" or "password:" in prose about passwords, not in one.
PROSE = frozenset((
    "a an the not no now also still only never always being been too very required needed "
    "optional mandatory set reset changed expired incorrect wrong invalid valid correct stored "
    "saved hashed encrypted sent shown hidden empty missing weak strong long short case unique "
    "same different used unknown forgotten lost managed generated rotated in on at for to of "
    "and or your my our their his her its this that what where how kept given available "
    "none see use is are was it").split())



@functools.cache
def _compiled(rule: Rule) -> tuple[tuple[re.Pattern[str], int | None], ...]:
    """``(pattern, group)`` for each of the rule's regexes: detect-secrets' then ours.

    ``group`` is the plugin group holding the secret, ``0`` for the whole match
    extended to the end of its token, ``None`` for our patterns' named groups.
    """
    found: list[tuple[re.Pattern[str], int | None]] = []
    for spec in rule.plugins:
        name, _, group = spec.partition("@")
        module, _, cls = name.partition(".")
        cls, _, index = cls.partition("[")
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)
        patterns = list(plugin.denylist)
        if index:
            patterns = [patterns[int(index.rstrip("]"))]]
        found += [(pattern, int(group or 0)) for pattern in patterns]
    found += [(re.compile(own.replace("{keywords}", _KEYWORDS)), None) for own in rule.own]
    return tuple(found)


def folded_spans(text: str) -> list[Found]:
    """The merged spans of every rule over ``text`` (already folded)."""
    raw: list[tuple[int, int, int, str]] = []
    worth = candidates(text)
    for order, rule in enumerate(RULES):
        if rule not in worth:
            continue
        for pattern, group in _compiled(rule):
            position = 0
            while position < len(text):
                # detect-secrets' regexes were written for short lines; some (OpenAI's,
                # JWT's) backtrack over the whole rest of a line at each start, so a long
                # line is searched a window at a time (a match may cross a window's end)
                stop = len(text) if group is None else min(len(text), position + WINDOW)
                match = pattern.search(text, position, stop)
                if match is None:
                    if stop == len(text):
                        break
                    position = stop - OVERLAP
                    continue
                span = _secret(text, match, group, rule.check == "token")
                if span and _real(rule.check, text, match, *span):
                    if span[1] - span[0] >= VALUE_CAP:  # a long bare value: all of it
                        span = (span[0], _BARE.match(text, span[1]).end())
                    raw.append((span[0], order, span[1], rule.name))
                    position = max(match.end(), match.start() + 1, span[1])
                else:  # a rejected match may hide a real one that starts inside it
                    position = match.start() + 1
    spans = _merge(raw)
    beside = [found for rule, (_, pattern) in BESIDE.items()
              if any(name == rule for _, _, name in spans)
              for found in _beside(text, spans, rule, pattern)]
    return _merge([(s, 0, e, r) for s, e, r in spans] + beside) if beside else spans


def _secret(text: str, match: re.Match[str], group: int | None,
            token: bool) -> tuple[int, int] | None:
    """The span of the secret in a match; a token's runs on to the end of the token, so
    what follows it is never a new word once the token is replaced."""
    if group is None:
        named = [name for name, value in match.groupdict().items()
                 if value is not None and _SECRET_GROUP.fullmatch(name)]
        if not named:
            return None
        start, end = match.span(named[0])
        if token and _inside_a_word(text, start):
            return None
        while end > start and text[end - 1] in _CLOSERS \
                and _CLOSERS[text[end - 1]] not in text[start:end]:
            end -= 1  # a bare value closing a JSON object: the brace is not the value
        if token:
            end = _TAIL.match(text, end).end()
        return (start, end) if end > start else None
    if group:  # a plugin's group can run on past the token (npm's ``.+``): cut it there
        value = match.group(group)
        return (match.start(group), match.start(group) + len(value.split()[0])) \
            if value and value.strip() else None
    start, end = match.span()
    start += len(_LABEL.match(text, start, end).group())  # ``AccountKey=``: says what follows
    while start < end and text[start] in _TRIM:
        start += 1
    if _inside_a_word(text, start):
        return None
    end = _TAIL.match(text, end).end()
    while end > start and text[end - 1] in _TRIM:
        end -= 1
    return (start, end) if end > start else None


def _real(check: str, text: str, match: re.Match[str], start: int, end: int) -> bool:
    """Whether the span is a secret rather than a placeholder, a name in code or prose;
    ``check`` is the rule's (``table.Rule``)."""
    secret = text[start:end]
    if check == "basic":
        return _basic_credentials(secret)
    if _placeholder(secret):
        return False
    if check == "token":
        return len(set(secret)) > 4
    if (is_templated_secret(secret) or is_prefixed_with_dollar_sign(secret)
            or not any(c.isalnum() for c in secret)
            or secret.rstrip(_TRAILING).lower() in _NOT_VALUES):
        return False
    if check == "url":
        return True
    if secret.startswith(("/", "~/", "./", "../")):
        return False
    before, after = _around(text, start, end)
    if start and text[start - 1] in ("\"", "'") and text[end:end + 1] == text[start - 1]:
        return not _EXPRESSION.match(after[1:])  # ``"sk-" + rest``: a fragment in code
    if _CONSTANT.fullmatch(secret) or _ATTRIBUTE.fullmatch(secret):
        return False  # ``DB_PASSWORD``, ``self.token``: the name of what holds it
    if _prose(secret, check) or _code_expression(match, secret, after) or (
            ("(" in secret or "[" in secret or after[:1] in ("(", "["))
            and is_indirect_reference(before + secret + after)):
        return False  # a prose word, an expression or a call (``get_secret()``)
    return not (check == "value" and "sep" in match.groupdict() and match.group("sep") == ":"
                and not _named_like_a_field(text, match)
                and (_word(secret) or secret.isdigit()))


def _word(secret: str) -> bool:
    """Shaped like a word of prose (``whoever``, ``Nobody``), not like ``jEGmGTDJj``; after
    a name in the middle of a sentence, a word or a number is prose (``token: 32 bits``)."""
    return secret.isalpha() and (secret.islower() or secret.istitle())


def _prose(secret: str, check: str) -> bool:
    """A word of prose after a secret's name: ``the password was specified``."""
    word = secret.rstrip(_TRAILING)
    return word.lower() in PROSE or (check in ("phrase", "value") and _word(word) and (
        word.lower().endswith("ed") or word != secret))  # "-ed", or a sentence's last word


def _code_expression(match: re.Match[str], secret: str, after: str) -> bool:
    """Code, not a value: a call or a bracketed expression (``getpass.getpass(...``,
    ``[CFWS]``), or, with spaces around ``=``, a variable name (``self.passwd = mgr``,
    ``node_token = node.value``, ``secret = tmp_path / "x"``); ``DB_PASSWORD=<value>`` is
    an env line."""
    if "(" in secret or secret[:1] in "([{":
        return True
    spaced = "sep" in match.groupdict() and match.group("sep") == "=" \
        and " = " in match.group(0)
    return spaced and all(part.isidentifier() for part in secret.split(".")) and (
        not any(c.isdigit() for c in secret) or _EXPRESSION.match(after) is not None)


def _named_like_a_field(text: str, match: re.Match[str]) -> bool:
    """``password: hunter`` is a field when the key starts its line (YAML, headers) or is
    an identifier or quoted; ``no secret: whoever`` is a sentence."""
    key = match.group("key")
    before, _ = _around(text, match.start(), match.start())
    return (not before.strip(" \t-#*") or not key.isalpha()
            or text[match.start() - 1:match.start()] in ("\"", "'"))


def _around(text: str, start: int, end: int) -> tuple[str, str]:
    """The rest of the line before ``start`` and after ``end``, up to ``CONTEXT``
    characters each way (a line longer than that is read no further: linear time)."""
    low = max(0, start - CONTEXT)
    line_start = text.rfind("\n", low, start)
    before = text[line_start + 1 if line_start >= 0 else low:start]
    if line_start < 0 and low:
        before = "\0" + before  # not the line's start: the line began further back
    high = min(len(text), end + CONTEXT)
    line_end = text.find("\n", end, high)
    return before, text[end:line_end if line_end >= 0 else high]


def _inside_a_word(text: str, start: int) -> bool:
    """A token that starts mid-word (``task-...``, or inside base64) is part of something
    else; one that starts with a digit may follow a word (``bot123456789:...``)."""
    return bool(start) and text[start - 1].isalnum() and not text[start].isdigit()


def _placeholder(secret: str) -> bool:
    """A marker, one repeated character, or a word that says "fill this in"."""
    lowered = secret.lower()
    return (lowered.startswith("[redacted:") or len(set(secret)) == 1
            or any(word in lowered for word in _PLACEHOLDERS))


def _basic_credentials(secret: str) -> bool:
    """base64 that decodes to printable ``user:password``."""
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
        plain = decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = plain.partition(":")
    return bool(colon and user and password and plain.isprintable())


def _beside(text: str, spans: list[Found], rule: str,
            pattern: re.Pattern[str]) -> list[tuple[int, int, int, str]]:
    """The secret half of a pair, within ``NEAR`` characters of the id half found."""
    ids = [(s, e) for s, e, name in spans if name == rule]
    return [(m.start(), 1, m.end(), BESIDE[rule][0]) for m in pattern.finditer(text)
            if any(m.start() - NEAR <= e and s <= m.end() + NEAR for s, e in ids)]


def _merge(raw: list[tuple[int, int, int, str]]) -> list[Found]:
    """Overlapping spans become one, named by the earliest (then the first rule's)."""
    merged: list[list] = []
    for start, _, end, rule in sorted(raw):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, rule])
    return [(start, end, rule) for start, end, rule in merged]

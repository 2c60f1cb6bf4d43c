"""Credential redaction: the one pass every writer runs over caller text before it is stored.

Every string a caller gives that reaches a file (event payloads, keys included,
at any depth; titles; tags; Daily summaries; plan bodies; superseding records)
goes through ``redact_text`` or ``redact_value``, which replace each span the
credential detector (``memory_forest.credentials``) finds with
``[REDACTED:<rule>]`` and count it per rule. The detector is the same one sync
and the release audit ask, so whatever this module would change they refuse,
and the reverse. A writer redacts each piece of caller text once, before it is
used, so the counts in its receipt are one per secret the caller gave and the
tool stored.

Names are different: an event id, a route segment or a transaction id becomes
a file name, an anchor or a link target, where a marker would break the
reference. A name that holds a credential is refused (``secret_in_name``),
never stored and never counted.
"""

from __future__ import annotations

import json
from typing import Any

from ..credentials import PAIRED, fold, may_hold, secret_beside, secret_field, spans
from ..errors import ForestError

MARKER_PREFIX = "[REDACTED:"
MAX_PASSES = 4  # redaction passes over one text (a marker may complete a credential)

Counts = dict[str, int]


def marker(rule: str) -> str:
    return f"{MARKER_PREFIX}{rule}]"


# --- text -------------------------------------------------------------------------------------


def redact_text(text: str, counts: Counts) -> str:
    """``text`` with every credential the detector finds replaced by its marker, counted
    per rule.

    A marker can complete a credential it cut short: ``Basic <base64>=`` followed by
    a redacted key reads as a whole Basic header once the key is gone. So the text is
    read again until the detector finds nothing in it: what a writer stores, sync
    would publish. Each pass only shortens the text, so a few passes are enough; the
    bound keeps a hostile text from costing more.
    """
    for _ in range(MAX_PASSES):
        found = spans(text)
        if not found:
            return text
        pieces, last = [], 0
        for start, end, rule in found:
            pieces += [text[last:start], marker(rule)]
            last = end
            _count(counts, rule)
        pieces.append(text[last:])
        text = "".join(pieces)
    return text


def _count(counts: Counts, rule: str) -> None:
    counts[rule] = counts.get(rule, 0) + 1


def find_secret(text: str) -> str | None:
    """The name of a rule that finds a credential in ``text``, or ``None``."""
    found = spans(text)
    return min(rule for _, _, rule in found) if found else None


# --- JSON values ------------------------------------------------------------------------------


def redact_value(value: Any, counts: Counts) -> Any:
    """A copy of a JSON value with every string redacted: values and keys, at any depth.

    A string or number under a key that names a secret (``password``,
    ``api_key``, ``db_token``...) is replaced whole (rule ``secret_field``).
    The secret half of a pair (a bare AWS secret key, a Twilio auth token) is
    caught beside its id half in the same string or in a sibling value. The
    walk is iterative, so no depth the parser accepts can exhaust the stack.
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
        for rule in [rule for rule in local if rule in PAIRED]:
            _siblings(target, rule, local)
        for rule, number in local.items():
            counts[rule] = counts.get(rule, 0) + number
    return top


def _may_hold_secrets(value: dict[str, Any] | list[Any]) -> bool:
    """Whether any key or string in ``value`` might hold a credential: one check over
    its keys and strings, one per line, instead of one per string (most events hold
    nothing at all). Each string is a line of its own, as ``redact_text`` reads it, so a
    rule anchored to a line's start sees it there."""
    texts: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            texts.extend(key for key in item if isinstance(key, str))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            texts.append(item)
    return may_hold(fold("\n".join(texts))[0])


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


def _siblings(target: dict[str, Any] | list[Any], id_rule: str, counts: Counts) -> None:
    """In an object or list that held the id half of a pair (an AWS access key id), a
    value that is exactly the secret half's shape is the secret beside it."""
    places = target.items() if isinstance(target, dict) else enumerate(target)
    for place, item in list(places):
        rule = secret_beside(id_rule, item) if isinstance(item, str) else None
        if rule is not None:
            target[place] = marker(rule)
            _count(counts, rule)


def _leaf(item: Any, key: Any, counts: Counts, pending: list[Pending]) -> Any:
    """The redacted copy of one item; a container is created empty and filled later.

    Under a key named for a secret, a non-empty string and a number are secrets
    (a numeric PIN too); null, a boolean and "" say only whether there is one.
    """
    if isinstance(key, str) and _secret_scalar(item) and secret_field(key):
        _count(counts, "secret_field")
        return marker("secret_field")
    if isinstance(item, str):
        redacted = redact_text(item, counts)
        if redacted == item and isinstance(key, str) and (rule := _keyed_rule(key, item)):
            _count(counts, rule)
            return marker(rule)
        return redacted
    if isinstance(item, (dict, list)):
        copy: dict[str, Any] | list[Any] = {} if isinstance(item, dict) else []
        pending.append((item, copy, key))
        return copy
    return item


def _secret_scalar(item: Any) -> bool:
    if isinstance(item, str):
        return bool(item) and not item.startswith(MARKER_PREFIX)
    return isinstance(item, (int, float)) and not isinstance(item, bool)


def _keyed_rule(key: str, value: str) -> str | None:
    """The rule that finds ``value`` a secret only beside its key, as the detector reads
    the pair in a file (docker's ``"auth": "<base64 user:password>"``); the whole value
    is then the secret."""
    pair = json.dumps({key: value}, ensure_ascii=False)
    start = pair.rindex(": ") + 2
    return next((rule for begin, _, rule in spans(pair) if begin >= start), None)


# --- names ------------------------------------------------------------------------------------


def refuse_secret_name(name: str, field: str, **details: Any) -> None:
    """Refuse a name (event id, route segment, transaction id) that holds a credential.

    A name is stored as given, in file names, anchors and links, so it cannot be
    redacted: the caller is asked for another.
    """
    rule = find_secret(name)
    if rule is not None:
        raise ForestError("secret_in_name", f"the {field} looks like a credential ({rule}); "
                          "names are stored as given, so choose another",
                          {"field": field, "rule": rule, **details}, exit_code=2)

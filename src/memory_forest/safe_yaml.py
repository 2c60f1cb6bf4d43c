"""The one YAML loader for frontmatter: only values JSON can hold, in bounded time.

Frontmatter is written by hand, by editors and by other tools, so it is read
forgivingly and loaded strictly: the event stream is checked before anything
is constructed, and what memory frontmatter never needs (anchors and aliases,
tags beyond JSON's types, deep nesting, non-string keys, non-finite numbers)
is refused with a short reason that names the file's line and never quotes
the document.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import yaml

MAX_REASON_CHARS = 80  # a YAML problem phrase is short; a longer one quotes the document


class FrontmatterError(ValueError):
    """Frontmatter that cannot be used; ``code`` says whether it is malformed or refused.

    ``frontmatter_invalid``: YAML does not parse, or is not a mapping.
    ``frontmatter_unsafe``: well-formed YAML that uses what memory frontmatter
    never needs and what breaks consumers (anchors and aliases, which can
    expand without bound or refer to themselves; tags beyond JSON's types;
    deep nesting; keys that are not strings; numbers that are not finite).
    """

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code


def load_yaml(text: str, lines_before: int = 0) -> Any:
    """The one YAML loader for frontmatter: only values JSON can hold, or FrontmatterError.

    The event stream is checked first, before anything is constructed: the
    first anchor or alias stops the load, so an alias bomb or a self-reference
    costs a few events, never their expansion. What passes is plain data
    (strings, finite numbers, booleans, null, lists, string-keyed mappings),
    plus the dates and times YAML reads from unquoted timestamps (``created:
    2026-11-30T09:00:00Z``), which consumers turn into ISO text.
    ``lines_before`` is the number of file lines above ``text``, so reasons
    name the file's line.
    """
    loader = _yaml_loader()
    try:
        _check_events(yaml.parse(text, Loader=loader), lines_before)
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except FrontmatterError:
        raise
    except Exception as exc:  # PyYAML raises many classes; all mean "malformed"
        raise FrontmatterError("frontmatter_invalid", _yaml_reason(exc, lines_before)) from None


MAX_FRONTMATTER_DEPTH = 20  # lists and mappings inside each other; real frontmatter uses 2-3
_CORE = "tag:yaml.org,2002:"
_JSON_TAGS = frozenset(_CORE + name for name in ("str", "int", "float", "bool", "null", "seq",
                                                  "map"))
_NON_FINITE = re.compile(r"[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)")


def _check_events(events: Any, lines_before: int) -> None:
    """Refuse anchors, aliases, non-JSON tags, deep nesting, non-string keys and non-finite
    numbers, at the event that shows them."""
    resolver = _yaml_resolver()
    # One entry per open collection: for a mapping, whether its next node is a key; for a
    # sequence, None.
    expect_key: list[bool | None] = []

    def refuse(event: Any, why: str) -> None:
        line = lines_before + event.start_mark.line + 1
        raise FrontmatterError("frontmatter_unsafe", f"line {line}: {why}")

    for event in events:
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            refuse(event, "an anchor or alias: frontmatter may not use & or *")
        if isinstance(event, yaml.CollectionEndEvent):
            expect_key.pop()
            _next_node(expect_key)
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        tag = event.tag
        if tag is not None and tag != "!" and tag not in _JSON_TAGS:
            shown = "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag
            refuse(event, f"tag {shown[:40]}: frontmatter may only use JSON types")
        is_key = bool(expect_key) and expect_key[-1] is True
        if isinstance(event, yaml.CollectionStartEvent):
            if is_key:
                refuse(event, "a key that is not a string")
            if len(expect_key) >= MAX_FRONTMATTER_DEPTH:
                refuse(event, f"nested deeper than {MAX_FRONTMATTER_DEPTH} levels")
            expect_key.append(True if isinstance(event, yaml.MappingStartEvent) else None)
            continue
        if tag in (None, "!"):  # resolved as PyYAML's composer does
            tag = resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
        if is_key and tag != _CORE + "str":
            refuse(event, "a key that is not a string")
        if tag == _CORE + "float" and _NON_FINITE.fullmatch(event.value.strip()):
            refuse(event, "a number that is not finite")
        _next_node(expect_key)


def _next_node(expect_key: list[bool | None]) -> None:
    """A node ended: in a mapping, a key is followed by its value and a value by a key."""
    if expect_key and expect_key[-1] is not None:
        expect_key[-1] = not expect_key[-1]


def _yaml_reason(exc: Exception, lines_before: int) -> str:
    """``line N: problem`` for a YAML error, N counted in the whole file (1-based).

    YAML's problem mark counts lines from the start of the frontmatter text,
    which begins on the opening fence's line. The problem is YAML's own short
    phrase (what it expected or found), cut short; the YAML's context snippet
    is left out, because it quotes memory text.
    """
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or type(exc).__name__
    problem = " ".join(str(problem).split())
    if len(problem) > MAX_REASON_CHARS:
        problem = problem[: MAX_REASON_CHARS - 1] + "…"
    if mark is None:
        return problem
    return f"line {lines_before + mark.line + 1}: {problem}"


@lru_cache(maxsize=1)
def _yaml_loader():
    """PyYAML's safe loader, on libyaml's C parser when PyYAML has it."""
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=1)
def _yaml_resolver():
    """What type a plain scalar becomes (``3`` an int, ``.inf`` a float), without loading."""
    return yaml.resolver.Resolver()

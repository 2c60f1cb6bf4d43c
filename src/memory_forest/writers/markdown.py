"""Markdown the writers produce: inert caller text, frontmatter, links and documents.

Caller text (an agent's content, a plan's body, a summary) is data. ``inert``
escapes it so that it renders as the same text but can never become a
heading, a wikilink, raw HTML, a code fence that swallows what follows, or
frontmatter. The structural lines of a document (``# Title``, ``Up:``, child
lists, Daily ``## entry`` headings) are written only by this module, from
checked names.

Frontmatter is edited surgically: only the keys the tool owns are
re-rendered, every other top-level key keeps its exact bytes and place.
"""

from __future__ import annotations

import re
from typing import Any

from ..documents import split_frontmatter
from ..errors import ForestError
from ..routes import check_segment, link_target

# Keys the tool writes, in the order it writes them. Any other key is the
# operator's and is preserved byte for byte.
KNOWN_KEYS = ("id", "title", "created", "updated", "status", "supersedes", "superseded_by",
              "sources", "tags")
CHILD_HEADINGS = {"xltm": "Trees", "ltm": "Branches", "mtm": "Leaves"}
MAX_TITLE = 200

_ESCAPED = frozenset("\\[]<>#`~&%")
_SETEXT_OR_RULE = re.compile(r"^([ \t]*)([=-])")  # applied only to lines of one repeated char
_BACKSLASH_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
# Wikilink targets may not hold these (Obsidian refuses #^[]|; the rest would let
# the Markdown parser split the link: code spans, escapes, raw HTML).
_UNLINKABLE = frozenset("[]|#^`<>\\")
_ALIAS_DROP = re.compile(r"[\[\]|\\`<>\x00-\x1f\x7f-\x9f\u2028\u2029]")
_FM_BOUNDARY = re.compile(r"^-{3,}\s*$", re.MULTILINE)  # python-frontmatter's fences


# --- caller text ----------------------------------------------------------------------------


def clean_text(text: str, what: str = "content", code: str = "content") -> str:
    """Normalize line ends; refuse control characters and empty text."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _CONTROL.search(text):
        raise ForestError(f"{code}_control_character",
                          f"the {what} contains a control character")
    if not text.strip():
        raise ForestError(f"{code}_empty", f"the {what} is empty")
    return text


def inert(text: str) -> str:
    """Escape Markdown so ``text`` renders as itself and adds no structure.

    Every ``\\ [ ] < > # ` ~ & %`` is backslash-escaped (no wikilink, link,
    HTML, heading, code span or fence, entity or Obsidian comment can start),
    and a line made only of ``=`` or ``-`` gets its first character escaped
    (it can no longer turn the line above into a heading, nor be a
    frontmatter fence). The result renders exactly as ``text`` does as plain
    prose; ``unescape`` reverses it.
    """
    out = []
    for line in text.split("\n"):
        escaped = "".join(f"\\{ch}" if ch in _ESCAPED else ch for ch in line)
        stripped = line.strip()
        if stripped and (set(stripped) == {"="} or set(stripped) == {"-"}):
            escaped = _SETEXT_OR_RULE.sub(r"\1\\\2", escaped, count=1)
        out.append(escaped)
    return "\n".join(out)


def unescape(markdown: str) -> str:
    """Undo backslash escapes (CommonMark: a backslash before ASCII punctuation)."""
    return _BACKSLASH_ESCAPE.sub(r"\1", markdown)


def check_title(title: str, code: str = "title") -> str:
    title = title.strip()
    if not title:
        raise ForestError(f"{code}_empty", "the title is empty")
    if "\n" in title or "\r" in title or _CONTROL.search(title):
        raise ForestError(f"{code}_invalid", "a title is one line without control characters")
    if len(title) > MAX_TITLE:
        raise ForestError(f"{code}_too_long", f"a title is at most {MAX_TITLE} characters")
    return title


def check_linkable(segment: str, what: str) -> None:
    """A tree, branch or leaf name the writers can put in a wikilink target."""
    check_segment(segment, what)
    bad = sorted(set(segment) & _UNLINKABLE)
    if bad:
        raise ForestError("route_unlinkable_segment",
                          f"a {what} name the writers create may not contain {' '.join(bad)}",
                          {"segment": segment[:80]})


def wikilink(path: str, alias: str) -> str:
    alias = _ALIAS_DROP.sub("", alias).strip()
    target = link_target(path)
    return f"[[{target}|{alias}]]" if alias else f"[[{target}]]"


# --- frontmatter ----------------------------------------------------------------------------


def _yaml_string(value: str) -> str:
    """A YAML double-quoted scalar that PyYAML reads back as exactly ``value``."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif code < 0x20 or 0x7F <= code <= 0x9F or ch in "\u2028\u2029\ufeff\ufffe\uffff" \
                or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _yaml_value(value: Any) -> str:
    if isinstance(value, str):
        return " " + _yaml_string(value)
    if isinstance(value, list):
        if not value:
            return " []"
        return "".join(f"\n  - {_yaml_string(str(item))}" for item in value)
    raise TypeError(f"unsupported frontmatter value {type(value).__name__}")


def render_key(key: str, value: Any) -> str:
    return f"{key}:{_yaml_value(value)}\n"


def frontmatter(meta: dict[str, Any]) -> str:
    """A complete frontmatter block for a new document, known keys in their order."""
    keys = [k for k in KNOWN_KEYS if meta.get(k) is not None]
    keys += sorted(k for k in meta if k not in KNOWN_KEYS and meta[k] is not None)
    return "---\n" + "".join(render_key(k, meta[k]) for k in keys) + "---\n"


def _span(text: str) -> tuple[int, int, int] | None:
    """(start, end, body_start) of the frontmatter text, exactly as the reader splits it."""
    start = 1 if text.startswith("\ufeff") else 0
    first = _FM_BOUNDARY.match(text, start)
    if first is None:
        return None
    second = _FM_BOUNDARY.search(text, first.end())
    if second is None:
        return None
    body = second.end() + (1 if text.startswith("\n", second.end()) else 0)
    return first.end(), second.start(), body


def _blocks(fm: str) -> list[str]:
    """Split frontmatter text into top-level entries (a key line and its continuation)."""
    blocks: list[str] = []
    for line in fm.splitlines(keepends=True):
        opens = line[:1] not in (" ", "\t", "-", "#", "\n", "\r", "") and \
            not line.startswith("...")
        if opens or not blocks:
            blocks.append(line)
        else:
            blocks[-1] += line
    return blocks


def _block_key(block: str) -> str | None:
    import yaml

    try:
        data = yaml.load(block, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except Exception:  # PyYAML raises many classes; each means "not one plain entry"
        return None
    if isinstance(data, dict) and len(data) == 1:
        key = next(iter(data))
        return key if isinstance(key, str) else None
    return None if data is not None else ""


def edit_frontmatter(text: str, updates: dict[str, Any]) -> str:
    """Set (or, with None, remove) tool-owned keys; keep every other byte as it was.

    A document without frontmatter gets a new block in front of it. When the
    existing frontmatter cannot be split into plain top-level entries (flow
    mappings across lines, anchors shared between keys), the edit is refused
    with ``frontmatter_not_editable`` rather than risk changing the
    operator's keys. The result is parsed back and compared before it is used.
    """
    assert set(updates) <= set(KNOWN_KEYS)
    try:
        old_meta, old_body, _ = split_frontmatter(text)
    except ValueError:
        raise ForestError("frontmatter_not_editable",
                          "the document's frontmatter is not well-formed YAML") from None
    span = _span(text)
    if span is None:
        new = frontmatter(updates) + text.removeprefix("\ufeff")
    else:
        start, end, _ = span
        blocks = _blocks(text[start:end].removeprefix("\n"))
        lead = text[:start] + ("\n" if text[start:end].startswith("\n") else "")
        kept: list[str] = []
        placed: set[str] = set()
        for block in blocks:
            key = _block_key(block)
            if key is None:
                raise ForestError("frontmatter_not_editable",
                                  "the frontmatter has entries the tool cannot edit safely")
            if key in updates:
                if updates[key] is not None:
                    kept.append(render_key(key, updates[key]))
                placed.add(key)
            else:
                kept.append(block)
        if kept and not kept[-1].endswith("\n"):
            kept[-1] += "\n"
        for key in KNOWN_KEYS:
            if key in updates and key not in placed and updates[key] is not None:
                kept.append(render_key(key, updates[key]))
        new = lead + "".join(kept) + text[end:]
    _verify_edit(new, old_meta, old_body, updates)
    return new


def _verify_edit(new: str, old_meta: dict, old_body: str, updates: dict[str, Any]) -> None:
    try:
        meta, body, _ = split_frontmatter(new)
    except ValueError:
        meta, body = None, None
    expected = {k: v for k, v in old_meta.items() if k not in updates}
    expected.update({k: v for k, v in updates.items() if v is not None})
    if meta != expected or body != old_body:
        raise ForestError("frontmatter_not_editable",
                          "editing the frontmatter would change more than the tool's keys")


def metadata(text: str) -> dict[str, Any]:
    try:
        return split_frontmatter(text)[0]
    except ValueError:
        return {}


def body_of(text: str) -> str:
    span = _span(text)
    return text[span[2]:] if span else text.removeprefix("\ufeff")


# --- documents ------------------------------------------------------------------------------


def document(meta: dict[str, Any], title: str, up: tuple[str, str] | None, body: str,
             children: tuple[str, list[tuple[str, str]]] | None = None) -> str:
    """A new document: frontmatter, ``# Title``, the ``Up:`` link, inert body, child list.

    ``up`` and each child are (path, alias); ``body`` must already be inert.
    """
    return frontmatter(meta) + body_text(title, up, body, children)


def body_text(title: str, up: tuple[str, str] | None, body: str,
              children: tuple[str, list[tuple[str, str]]] | None = None) -> str:
    """The Markdown after the frontmatter, as ``document`` writes it."""
    parts = [f"# {inert(title)}"]
    if up is not None:
        parts.append(f"Up: {wikilink(*up)}")
    if body.strip():
        parts.append(body.strip("\n"))
    if children is not None and children[1]:
        items = "\n".join(f"- {wikilink(path, alias)}" for path, alias in children[1])
        parts.append(f"## {children[0]}\n\n{items}")
    return "\n\n".join(parts) + "\n"


def replace_body(text: str, body: str) -> str:
    """``text`` with everything after its frontmatter replaced by ``body``."""
    span = _span(text)
    return (text[:span[2]] if span else "") + body


def add_child_link(text: str, heading: str, path: str, alias: str) -> str:
    """Add ``- [[child|alias]]`` where the document lists its children.

    That is the ``## heading`` list if there is one, else the last list item
    that already links to a sibling (a hand-written ``- down - [[...]]`` list),
    else a new ``## heading`` section at the end. Only a line is inserted;
    every existing byte stays where it was.
    """
    line = f"- {wikilink(path, alias)}"
    span = _span(text)
    body_start = span[2] if span else 0
    lines = text[body_start:].split("\n")
    section = next((i for i, item in enumerate(lines) if item.rstrip() == f"## {heading}"), None)
    if section is not None:
        end = section + 1
        while end < len(lines) and not re.match(r"#{1,2} ", lines[end]):
            end += 1
        last = max((i for i in range(section + 1, end) if lines[i].strip()), default=None)
        if last is None:
            lines[section + 1:section + 1] = ["", line]
        else:
            lines.insert(last + 1, line)
        return text[:body_start] + "\n".join(lines)
    siblings = "[[" + link_target(path).rsplit("/", 1)[0] + "/"
    listed = [i for i, item in enumerate(lines)
              if item.lstrip()[:1] in ("-", "*", "+") and siblings in item]
    if listed:
        lines.insert(listed[-1] + 1, line)
        return text[:body_start] + "\n".join(lines)
    return f"{text.rstrip(chr(10))}\n\n## {heading}\n\n{line}\n"

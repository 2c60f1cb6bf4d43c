"""Markdown the writers produce: caller text, frontmatter, links and documents.

Caller text (an agent's content, a plan's body, a summary) is stored as the
caller wrote it: files stay plain and greppable, and ``open`` hands back
what was given. ``neutralize`` changes only what would change the
document's structure as ``documents.read_facts`` and Obsidian read it, each
in the smallest visible way (see docs/writing.md, "Caller text is stored
verbatim"): a line that would be a heading, or a code fence or HTML block
that would run past the end of the text, is indented by four spaces; a
``[[`` outside code is written ``\\[\\[``; an unpaired Obsidian ``%%`` is
written ``\\%\\%``. The structural lines of a document (``# Title``,
``Up:``, child lists, Daily ``## entry`` headings) are written only by this
module, from checked names.

Frontmatter is edited surgically: only the keys the tool owns are
re-rendered, every other top-level key keeps its exact bytes and place.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

from ..documents import frontmatter_problem, scan_markdown, split_frontmatter
from ..errors import ForestError
from ..routes import check_segment, link_target
from ..safe_yaml import FrontmatterError, load_yaml
from .redact import refuse_secret_name

# Keys the tool writes, in the order it writes them. Any other key is the
# operator's and is preserved byte for byte.
KNOWN_KEYS = ("id", "title", "created", "updated", "status", "supersedes", "superseded_by",
              "sources", "tags")
CHILD_HEADINGS = {"xltm": "Trees", "ltm": "Branches", "mtm": "Leaves"}
MAX_TITLE = 200
INDENT = "    "  # four spaces stop a heading, fence or HTML opener (1-3 do not)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
# Wikilink targets may not hold these (Obsidian refuses #^[]|; the rest would let
# the Markdown parser split the link: code spans, escapes, raw HTML).
_UNLINKABLE = frozenset("[]|#^`<>\\")
_ALIAS_DROP = re.compile(r"[\[\]|\\`<>\x00-\x1f\x7f-\x9f\u2028\u2029]")
_FM_BOUNDARY = re.compile(r"^-{3,}\s*$", re.MULTILINE)  # python-frontmatter's fences
# What the writer puts after caller text: a blank line, then a line of its own.
_PROBE = "# end of caller text"
_MAX_ROUNDS = 8
_BACKTICKS = re.compile(r"`+")
_WIKILINK_OPEN = re.compile(r"\[\[")


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


def neutralize(text: str) -> str:
    """Caller text as it is stored: byte for byte, except what would add structure.

    Two steps, each checked by parsing the text as ``documents`` does:

    1. Lines: a line that the parser reads as a heading (ATX, or a setext
       underline, in any container) is indented by four spaces, and so is the
       first line of a code fence or HTML block that would run past the end of
       the text and swallow the writer's next line. Indenting can move a line
       into another container (a list item), so the check runs again until
       nothing is left; in the pathological case where it does not settle, every
       line is indented and the text is one code block.
    2. Inline: outside code, ``[[`` is written ``\\[\\[`` (no wikilink for the
       index or Obsidian) and an unpaired Obsidian comment opener ``%%`` is
       written ``\\%\\%`` (it would hide everything after it). If the index
       still finds a wikilink, every ``[[`` is escaped.

    Line ends become LF (the parser counts a lone CR as one) and leading and
    trailing blank lines are dropped; nothing else changes.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n").split("\n")
    for _ in range(_MAX_ROUNDS):
        marked = _structural_lines(lines)
        if not marked:
            break
        for number in marked:
            lines[number] = INDENT + lines[number]
    else:
        lines = [INDENT + line if line.strip() else line for line in lines]
    out = _neutralize_inline(lines, _code_lines(lines))
    if scan_markdown(out)[1]:
        out = _WIKILINK_OPEN.sub(r"\\[\\[", out)
    return out


def neutralize_title(title: str) -> str:
    """A title as its ``# `` heading line writes it: the inline step of ``neutralize``."""
    out = _neutralize_inline([title], set())
    if scan_markdown(f"# {out}")[1]:
        out = _WIKILINK_OPEN.sub(r"\\[\\[", out)
    return out


def _parse(text: str) -> list[Any]:
    """The block tokens of ``text``: headings, code, lists, with their line spans.

    The writers only ever ask where blocks are, so inline parsing (the larger part of
    markdown-it's work) is skipped: a heading's text is already on its inline token.
    """
    return _block_parser().parse(text)


@lru_cache(maxsize=1)
def _block_parser():
    # The block rules are the index's (documents._markdown changes inline rules only),
    # so the writers and the index agree on where every heading and code block is.
    return MarkdownIt("commonmark").disable("inline")


def _structural_lines(lines: list[str]) -> set[int]:
    """Lines to indent: headings, and the opener of a block that runs past the text."""
    count = len(lines)
    tokens = _parse("\n".join(lines) + "\n\n" + _PROBE)
    marked: set[int] = set()
    probe_read = False
    for token in tokens:
        if token.type != "heading_open" or token.map is None:
            continue
        start, end = token.map
        if start > count:
            probe_read = probe_read or token.level == 0
        elif token.markup[:1] in ("=", "-"):
            marked.add(end - 1)  # a setext underline
        else:
            marked.add(start)
    if not probe_read:  # a fence or an HTML block (comment, <pre>, ...) is still open
        openers = {token.map[0] for token in tokens if token.level == 0 and token.map
                   and token.map[0] < count < token.map[1]}
        marked |= openers or set(range(count))
    return marked


def _code_lines(lines: list[str]) -> set[int]:
    """Lines inside fenced or indented code: their text is never Markdown."""
    inside: set[int] = set()
    for token in _parse("\n".join(lines)):
        if token.type in ("fence", "code_block") and token.map:
            inside.update(range(*token.map))
    return inside


def _neutralize_inline(lines: list[str], code: set[int]) -> str:
    """Escape ``[[`` and an unpaired ``%%`` in the prose of ``lines``, not in ``code``.

    Prose is cut into paragraphs (runs of non-blank lines), the reach of a code span.
    """
    chunks: list[tuple[bool, str]] = []  # (is prose, text), in order, joined by newlines
    for number, line in enumerate(lines):
        prose = number not in code and bool(line.strip())
        if chunks and prose and chunks[-1][0]:
            chunks[-1] = (True, chunks[-1][1] + "\n" + line)
        else:
            chunks.append((prose, line))
    spans = [_code_spans(chunk) if prose else [] for prose, chunk in chunks]
    comments = [(index, at) for index, (prose, chunk) in enumerate(chunks) if prose
                for at in _openers(chunk, "%%", spans[index])]
    if len(comments) % 2:  # Obsidian pairs them in order: the last one opens for good
        index, at = comments[-1]
        chunk = chunks[index][1]
        chunks[index] = (True, chunk[:at] + "\\%\\%" + chunk[at + 2:])
        spans[index] = [(a + 2 if a > at else a, b + 2 if b > at else b)
                        for a, b in spans[index]]
    return "\n".join(_escape_links(chunk, spans[index]) if prose else chunk
                     for index, (prose, chunk) in enumerate(chunks))


def _escape_links(chunk: str, spans: list[tuple[int, int]]) -> str:
    parts, last = [], 0
    for at in _openers(chunk, "[[", spans):
        parts.append(chunk[last:at] + "\\[\\[")
        last = at + 2
    return "".join(parts) + chunk[last:]


def _openers(chunk: str, pair: str, spans: list[tuple[int, int]]) -> list[int]:
    """Where ``pair`` starts outside code spans, its first character not escaped.

    After an escaped character the search goes on from the next one: in ``\\[[[x]]``
    the escaped ``[`` opens nothing but the two after it do.
    """
    found, at = [], chunk.find(pair)
    while at != -1:
        if _escaped(chunk, at) or _in_spans(at, spans):
            at = chunk.find(pair, at + 1)
        else:
            found.append(at)
            at = chunk.find(pair, at + 2)
    return found


def _code_spans(chunk: str) -> list[tuple[int, int]]:
    """(start, end) of each backtick code span, by CommonMark's pairing rule.

    A backtick string opens a span that the next string of the same length
    closes. A backslash before an opening string escapes its first backtick; in
    a span backslashes are literal, so a closing string may follow one.
    """
    runs = [match.span() for match in _BACKTICKS.finditer(chunk)]
    spans, index = [], 0
    while index < len(runs):
        start, end = runs[index]
        start += _escaped(chunk, start)
        if start == end:
            index += 1
            continue
        closer = next((j for j in range(index + 1, len(runs))
                       if runs[j][1] - runs[j][0] == end - start), None)
        if closer is None:
            index += 1
            continue
        spans.append((start, runs[closer][1]))
        index = closer + 1
    return spans


def _escaped(chunk: str, position: int) -> bool:
    """Whether the character at ``position`` follows an odd run of backslashes (an escape)."""
    start = position
    while start > 0 and chunk[start - 1] == "\\":
        start -= 1
    return (position - start) % 2 == 1


def _in_spans(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


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
    """A tree, branch or leaf name the writers can put in a wikilink target (and one that
    holds no credential: a name becomes a file name and a link, never redacted)."""
    check_segment(segment, what)
    bad = sorted(set(segment) & _UNLINKABLE)
    if bad:
        raise ForestError("route_unlinkable_segment",
                          f"a {what} name the writers create may not contain {' '.join(bad)}",
                          {"segment": segment[:80]})
    refuse_secret_name(segment, what)


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
    try:
        data = load_yaml(block)
    except ValueError:  # not one plain entry on its own
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
    except FrontmatterError as exc:
        raise ForestError("frontmatter_not_editable", frontmatter_problem(exc),
                          {"reason": exc.code}) from None
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
    """A new document: frontmatter, ``# Title``, the ``Up:`` link, body, child list.

    ``up`` and each child are (path, alias); ``body`` must already be neutralized.
    """
    return frontmatter(meta) + body_text(title, up, body, children)


def body_text(title: str, up: tuple[str, str] | None, body: str,
              children: tuple[str, list[tuple[str, str]]] | None = None) -> str:
    """The Markdown after the frontmatter, as ``document`` writes it."""
    parts = [f"# {neutralize_title(title)}"]
    if up is not None:
        parts.append(f"Up: {wikilink(*up)}")
    if body.strip():
        parts.append(body.strip("\n"))
    if children is not None and children[1]:
        items = "\n".join(f"- {wikilink(path, alias)}" for path, alias in children[1])
        parts.append(f"## {children[0]}\n\n{items}")
    return "\n\n".join(parts) + "\n"


def headings(body: str) -> list[tuple[int, int, str]]:
    """(line, level, text) of each heading of ``body``, as the index's parser reads them.

    Finding sections this way, not by matching ``#`` at the start of a line, keeps a
    ``# comment`` inside a caller's code block from ending a section.
    """
    tokens = _parse(body)
    return [(token.map[0], int(token.tag[1:]), tokens[number + 1].content.strip())
            for number, token in enumerate(tokens)
            if token.type == "heading_open" and token.map is not None]


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
    found = headings(text[body_start:])
    section = next((n for n, level, title in found if level == 2 and title == heading), None)
    if section is not None:
        end = next((n for n, level, _ in found if n > section and level <= 2), len(lines))
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

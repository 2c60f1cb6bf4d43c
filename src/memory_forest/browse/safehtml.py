"""Markdown -> safe HTML for the browse site.

Memory text is data and may be hostile, so the renderer is closed by
construction:

- raw HTML is off (``html=False``) and, as a second wall, any HTML token that
  still appeared would be printed escaped;
- a Markdown link keeps its ``href`` only for ``http``, ``https``, ``mailto``
  and in-page ``#fragment`` targets; anything else (``javascript:``,
  ``data:``, ``vbscript:``, ``file:``, relative paths that could walk out of
  the site) stays literal text;
- images are not rendered (no request ever leaves the page);
- wikilinks become relative links to the target's page, found with the same
  token walk the forest core uses, so a wikilink in code or behind an escaped
  bracket stays text exactly as ``audit`` sees it;
- what Obsidian users write renders as they expect, within the same walls: a
  callout (``> [!note] Title``) is a titled box, an embed (``![[file]]``) is a
  link to the file's page (never its content inlined, never a request), a
  ``#tag`` is a tag.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..documents import _WIKILINK, _parse_links

# A resolver maps (target, heading) to an href relative to the current page, or None.
Resolver = Callable[[str, str | None], str | None]

_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")
_ALLOWED_SCHEMES = frozenset({"http", "https", "mailto"})
_STRIP = re.compile(r"[\x00-\x20\x7f-\x9f]+")
_SPACES = re.compile(r"\s+")
# Obsidian's callout line: "[!type]", an optional fold marker, an optional title.
_CALLOUT = re.compile(r"\[!([A-Za-z][\w-]{0,31})\][+-]?[ \t]*(.*)\Z", re.DOTALL)
# An Obsidian tag: '#' after a space (or at the start), at least one letter in it, so that
# "#1" or "C#" stay text.
_TAG = r"(?<![^\s(])#([\w/-]*[^\W\d][\w/-]*)"
_INLINE = re.compile(f"{_WIKILINK.pattern}|{_TAG}")


def safe_href(url: str) -> bool:
    """True when ``url`` may appear as an ``href`` in a page built from memory text."""
    compact = _STRIP.sub("", url).lower()
    if compact.startswith("#"):
        return True
    if compact.startswith("//"):
        return False
    scheme = _SCHEME.match(compact)
    return bool(scheme) and scheme.group(1) in _ALLOWED_SCHEMES


def section_id(heading: str) -> str:
    """The element id of a heading; wikilinks ``[[x#heading]]`` and sources use the same."""
    return "s-" + (_SPACES.sub("-", heading.strip()) or "section")


def event_id(value: str) -> str:
    """The element id of an ISTM event row."""
    return "e-" + _SPACES.sub("-", value.strip())


@lru_cache(maxsize=1)
def _renderer() -> Any:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    # Escapes and entities stay separate tokens, as in documents.scan_markdown: "\[\[x]]"
    # is text, never a wikilink.
    md.disable(["text_join", "image"])
    md.validateLink = safe_href  # type: ignore[method-assign]
    md.core.ruler.push("memory_forest_callouts", _callout_rule)
    md.core.ruler.push("memory_forest_wikilinks", _wikilink_rule)
    md.core.ruler.push("memory_forest_heading_ids", _heading_id_rule)
    rules = md.renderer.rules
    rules["text_special"] = _render_escaped
    rules["html_block"] = _render_escaped_block
    rules["html_inline"] = _render_escaped
    rules["link_open"] = _render_link_open
    return md


def render_markdown(body: str, resolve: Resolver) -> str:
    """Render one Markdown body; ``resolve`` turns wikilink targets into hrefs."""
    return _renderer().render(body, {"resolve": resolve})


# --- core rules ------------------------------------------------------------------------------


def _wikilink_rule(state: Any) -> None:
    resolve: Resolver | None = state.env.get("resolve") if isinstance(state.env, dict) else None
    if resolve is None:
        return
    for block in state.tokens:
        if block.type == "inline" and block.children:
            block.children = _expand(block.children, resolve, state)


def _expand(children: list[Any], resolve: Resolver, state: Any) -> list[Any]:
    """Merge adjacent text tokens (as the core's scan does) and split out wikilinks."""
    out: list[Any] = []
    pending: list[Any] = []
    link_depth = 0

    def flush() -> None:
        if not pending:
            return
        text = "".join(token.content for token in pending)
        if link_depth or ("[[" not in text and "#" not in text):
            out.extend(pending)
        else:
            out.extend(_split(text, resolve, state))
        pending.clear()

    for token in children:
        if token.type == "text":
            pending.append(token)
            continue
        flush()
        if token.type == "link_open":
            link_depth += 1
        elif token.type == "link_close":
            link_depth = max(0, link_depth - 1)
        out.append(token)
    flush()
    return out


def _split(text: str, resolve: Resolver, state: Any) -> list[Any]:
    tokens: list[Any] = []
    position = 0

    def text_token(content: str) -> None:
        if content:
            token = Token("text", "", 0)
            token.content = content
            tokens.append(token)

    for match in _INLINE.finditer(text):
        text_token(text[position:match.start()])
        position = match.end()
        if match.group(3) is not None:
            opening = Token("tag_open", "span", 1)
            opening.attrs = {"class": "tag"}
            tokens.append(opening)
            text_token(match.group(0))
            tokens.append(Token("tag_close", "span", -1))
            continue
        embed = match.group(1) == "!"
        link = _parse_links(match.group(0), 0)[0]
        label = link.alias or (f"{link.target}#{link.heading}" if link.heading else link.target)
        href = resolve(link.target, link.heading) if link.target else None
        if href is None:
            opening = Token("wikilink_broken_open", "span", 1)
            opening.attrs = {"class": "wikilink broken", "title": f"unresolved: {link.target}"}
            closing = Token("wikilink_broken_close", "span", -1)
        else:
            opening = Token("link_open", "a", 1)
            opening.attrs = {"href": href, "class": "wikilink embed" if embed else "wikilink"}
            if embed:  # a link to the file's page: nothing of another file is inlined
                opening.attrs["title"] = f"embedded: {link.target}"
            opening.meta = {"wikilink": True}
            closing = Token("link_close", "a", -1)
        tokens.append(opening)
        text_token(label)
        tokens.append(closing)
    text_token(text[position:])
    return tokens


def _callout_rule(state: Any) -> None:
    """A block quote whose first line is ``[!type] Title`` becomes a callout: a box with the
    type as its class and the title in its first row. Its body is rendered as any quote's."""
    tokens = state.tokens
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token.type != "blockquote_open" or index + 1 >= len(tokens) or \
                tokens[index].type != "paragraph_open":
            continue
        inline = tokens[index + 1]
        first, rest = _first_line(inline.children or [])
        lead = "".join(child.content for child in first[:_leading_text(first)])
        match = _CALLOUT.match(lead)
        if match is None:
            continue
        kind, after = match.group(1).lower(), first[_leading_text(first):]
        title = match.group(2) if after else match.group(2).rstrip() or kind.capitalize()
        heading = Token("inline", "", 0)
        heading.children = _title_tokens(title, after)
        heading.content = title
        opening = Token("callout_title_open", "div", 1)
        opening.attrs = {"class": "callout-title"}
        row = [opening, heading, Token("callout_title_close", "div", -1)]
        token.tag = "div"
        token.attrs = {"class": f"callout callout-{kind}"}
        _close_of(tokens, index - 1).tag = "div"
        if rest:
            inline.children = rest
            tokens[index:index] = row
        else:  # the callout has a title only: its paragraph goes
            tokens[index:index + 3] = row
        index += len(row)


def _first_line(children: list[Any]) -> tuple[list[Any], list[Any]]:
    """An inline token's children up to its first line break, and those after it."""
    for at, child in enumerate(children):
        if child.type in ("softbreak", "hardbreak"):
            return children[:at], children[at + 1:]
    return children, []


def _leading_text(children: list[Any]) -> int:
    """How many of ``children`` are plain text before the first other token."""
    return next((at for at, child in enumerate(children) if child.type != "text"),
                len(children))


def _title_tokens(title: str, after: list[Any]) -> list[Any]:
    text = Token("text", "", 0)
    text.content = title
    return [text, *after] if title else after


def _close_of(tokens: list[Any], opening: int) -> Any:
    """The token that closes the block opened at ``opening``."""
    depth = 0
    for token in tokens[opening:]:
        depth += token.nesting
        if depth == 0:
            return token
    raise ValueError("unbalanced block")  # markdown-it always closes what it opens


def _heading_id_rule(state: Any) -> None:
    seen: dict[str, int] = {}
    tokens = state.tokens
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or index + 1 >= len(tokens):
            continue
        base = section_id(tokens[index + 1].content)
        count = seen.get(base, 0)
        seen[base] = count + 1
        token.attrSet("id", base if count == 0 else f"{base}-{count + 1}")


# --- render rules ----------------------------------------------------------------------------


def _render_escaped(tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    return escape(tokens[idx].content, quote=False)


def _render_escaped_block(tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    return f"<pre>{escape(tokens[idx].content, quote=False)}</pre>\n"


def _render_link_open(tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    href = str(token.attrGet("href") or "")
    if not (token.meta or {}).get("wikilink"):
        if not safe_href(href):  # validateLink already refused these; never trust one layer
            token.attrs.pop("href", None)
        elif not href.startswith("#"):
            token.attrSet("rel", "noopener noreferrer nofollow")
            token.attrSet("class", "external")
    attrs = "".join(f' {name}="{escape(str(value))}"' for name, value in token.attrs.items())
    return f"<a{attrs}>"

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
  bracket stays text exactly as ``audit`` sees it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from html import escape
from typing import Any

from ..documents import _WIKILINK, _parse_links

# A resolver maps (target, heading) to an href relative to the current page, or None.
Resolver = Callable[[str, str | None], str | None]

_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")
_ALLOWED_SCHEMES = frozenset({"http", "https", "mailto"})
_STRIP = re.compile(r"[\x00-\x20\x7f-\x9f]+")
_SPACES = re.compile(r"\s+")


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
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    # Escapes and entities stay separate tokens, as in documents.scan_markdown: "\[\[x]]"
    # is text, never a wikilink.
    md.disable(["text_join", "image"])
    md.validateLink = safe_href  # type: ignore[method-assign]
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
        if link_depth or "[[" not in text:
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
    from markdown_it.token import Token

    tokens: list[Any] = []
    position = 0

    def text_token(content: str) -> None:
        if content:
            token = Token("text", "", 0)
            token.content = content
            tokens.append(token)

    for match in _WIKILINK.finditer(text):
        text_token(text[position:match.start()])
        position = match.end()
        link = _parse_links(match.group(0), 0)[0]
        label = link.alias or (f"{link.target}#{link.heading}" if link.heading else link.target)
        href = resolve(link.target, link.heading) if link.target else None
        if href is None:
            opening = Token("wikilink_broken_open", "span", 1)
            opening.attrs = {"class": "wikilink broken", "title": f"unresolved: {link.target}"}
            closing = Token("wikilink_broken_close", "span", -1)
        else:
            opening = Token("link_open", "a", 1)
            opening.attrs = {"href": href, "class": "wikilink"}
            opening.meta = {"wikilink": True}
            closing = Token("link_close", "a", -1)
        tokens.append(opening)
        text_token(label)
        tokens.append(closing)
    text_token(text[position:])
    return tokens


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

"""Read one canonical file into ``Facts``: what validate, audit and the index need.

Facts are plain data (JSON round-trippable) so the index can keep them and
skip re-parsing files whose size and mtime have not changed. The body text is
returned beside the facts, never inside them: facts may be cached, bodies
must always come fresh from disk.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from typing import Any

from frontmatter.default_handlers import YAMLHandler
from markdown_it import MarkdownIt

from .digest import sha256_hex
from .facts import POINTER, Facts, Fragment, Link, pointers, stem
from .issues import Issue
from .istmfacts import read_istm
from .routes import Route
from .safe_yaml import FrontmatterError, load_yaml
from .stamps import utc_stamp

STATUSES = ("active", "superseded", "archived")
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")


def read_facts(route: Route, raw: bytes, mtime_ns: int, max_links: int) -> tuple[Facts, str]:
    """Parse ``raw`` (the bytes of ``route.path``) into facts and searchable text."""
    facts, text, _ = read_document(route, raw, mtime_ns, max_links)
    return facts, text


def title_of(route: Route, raw: bytes, max_links: int) -> str:
    """The title ``read_facts`` gives a Markdown file, without parsing its body when the
    frontmatter names one (every document the writers make does): a writer asks for a
    parent's title once per child it links, and the parent grows with each."""
    try:
        meta = split_frontmatter(raw.decode("utf-8"))[0]
    except (UnicodeDecodeError, FrontmatterError):
        meta = {}
    title = meta.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    return read_facts(route, raw, 0, max_links)[0].title


def read_document(route: Route, raw: bytes, mtime_ns: int,
                  max_links: int) -> tuple[Facts, str, list[Fragment]]:
    """``read_facts`` with the fragments of a source file (ISTM events, Daily entries),
    found in the same parse: a build reads each file once."""
    facts = Facts(route.path, len(raw), mtime_ns, sha256_hex(raw))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        facts.issues.append(Issue(route.path, "not_utf8", "file is not valid UTF-8"))
        facts.title = stem(route.path)
        # Such a file is left out of the index, but a query whose words it holds must say
        # so: its readable words are what it is searched by, never what is shown.
        return facts, raw.decode("utf-8", "replace").replace("\x00", " "), []
    fragments: list[Fragment] = []
    if route.layer.key == "istm":
        return facts, read_istm(facts, text, fragments), fragments
    searchable = _read_markdown(facts, text, max_links, fragments)
    return facts, searchable, fragments


# --- Markdown -------------------------------------------------------------------------------


def split_frontmatter(text: str) -> tuple[dict[str, Any], str, int]:
    """Return (metadata, body, number of lines before the body).

    python-frontmatter's YAML handler finds the fences, and ``load_yaml`` loads
    the YAML. Its ``parse`` would strip the body: that would turn an indented
    code block right after the frontmatter into prose (and its wikilinks into
    links) and shift every reported line number. So the body is cut from the
    original text here.

    Raises FrontmatterError (a ValueError) with a short reason when the
    frontmatter is malformed or refused.
    """
    text = text.removeprefix("\ufeff")
    handler = _yaml_handler()
    if not handler.detect(text):
        return {}, text, 0
    try:
        fm, rest = handler.split(text)
    except ValueError:  # no closing fence: an opening thematic break, not frontmatter
        return {}, text, 0
    metadata = load_yaml(fm, text.count("\n", 0, text.find(fm)))
    if metadata is None:  # empty frontmatter (or only comments)
        metadata = {}
    if not isinstance(metadata, dict):
        raise FrontmatterError("frontmatter_invalid", "frontmatter is not a mapping")
    body = rest.removeprefix("\n")  # the line end of the closing fence
    return metadata, body, text.count("\n", 0, len(text) - len(body))


def frontmatter_problem(exc: FrontmatterError) -> str:
    """The issue message for frontmatter that cannot be used."""
    if exc.code == "frontmatter_unsafe":
        return f"frontmatter is refused ({exc})"
    return f"frontmatter is not well-formed YAML ({exc})"


def _read_markdown(facts: Facts, text: str, max_links: int,
                   fragments: list[Fragment] | None = None) -> str:
    path = facts.path
    try:
        meta, body, offset = split_frontmatter(text)
    except FrontmatterError as exc:
        facts.issues.append(Issue(path, exc.code, frontmatter_problem(exc)))
        meta, body, offset = {}, text, 0
    _check_frontmatter(facts, meta)
    heading, links, anchors = scan_markdown(body, offset)
    if len(links) > max_links:
        facts.issues.append(Issue(path, "limit_exceeded",
                                  f"more than {max_links} wikilinks (max_links_per_document)"))
        links = links[:max_links]
    facts.links = links
    facts.anchors = anchors
    facts.sources = pointers(meta.get("sources"))
    if facts.path.startswith("05 daily/"):
        facts.sources += [pointer for pointer in _daily_sources(body)
                          if pointer not in facts.sources]
        if fragments is not None:
            fragments.extend(_daily_entries(path, body, anchors))
    title = meta.get("title")
    facts.title = (title.strip() if isinstance(title, str) and title.strip() else None) or \
        heading or stem(path)
    return f"{facts.title}\n{body}"


def _check_frontmatter(facts: Facts, meta: dict[str, Any]) -> None:
    path = facts.path

    def bad(key: str, why: str) -> None:
        facts.issues.append(Issue(path, "frontmatter_bad_field", f"'{key}' {why}"))

    if "id" in meta:
        if isinstance(meta["id"], str | int) and not isinstance(meta["id"], bool) and \
                str(meta["id"]).strip():
            facts.id = str(meta["id"])
        else:
            bad("id", "must be a non-empty string")
    if "title" in meta and not isinstance(meta["title"], str):
        bad("title", "must be a string")
    status = meta.get("status", "active")
    if status in STATUSES:
        facts.status = status
    else:
        bad("status", f"must be one of {', '.join(STATUSES)}")
    for key in ("created", "updated"):
        if key in meta and not _is_timestamp(meta[key]):
            bad(key, "must be an RFC 3339 timestamp")
    updated = meta.get("updated")
    if _is_timestamp(updated):
        facts.updated = updated.isoformat() if isinstance(updated, dt.date) else updated
    for key in ("sources", "tags", "supersedes"):
        value = meta.get(key)
        if value is not None and not (isinstance(value, str) or _is_str_list(value)):
            bad(key, "must be a string or a list of strings")
    successor = meta.get("superseded_by")
    if successor is not None and not isinstance(successor, str | list):
        bad("superseded_by", "must be a string or a list of strings")
    successors = [successor] if isinstance(successor, str) else \
        successor if isinstance(successor, list) else []
    facts.superseded_by = next((one for one in successors if isinstance(one, str) and one),
                               None)


_SOURCES_LINE = re.compile(r"^Sources: (.*)$", re.MULTILINE)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _daily_sources(body: str) -> list[str]:
    """The pointers on a Daily record's ``Sources:`` lines, each in backticks."""
    return [span for line in _SOURCES_LINE.findall(body) for span in _CODE_SPAN.findall(line)
            if POINTER.match(span)]


_DAILY_NAME = re.compile(r"05 daily/(?:.*/)?(\d{4}-\d{2}-\d{2})\.md$")
_H2 = re.compile(r" {0,3}##[ \t]")
# Lines of a Daily entry that say what it is, not what happened: its provenance, and the
# marker of an entry sync kept as the other machine's version of one (mergedriver.CONFLICT_OF).
_ENTRY_MARKERS = ("Sources: ", "Conflict of: ")


def _daily_entries(path: str, body: str, anchors: list[str]) -> list[Fragment]:
    """A Daily record's entries: each ``## entry_id`` section's text, observed on the
    record's date (its file name).

    Sections are cut at the headings the scan found, in their order, so a
    ``## `` line inside a code block (not a heading to the scan) never cuts one.
    An entry's ``Sources:`` line is provenance, not what it says, and a
    ``Conflict of:`` line marks the other machine's version of an entry that
    ``sync`` kept beside ours: both are left out of the entry's text.
    """
    if not anchors:
        return []
    day = _DAILY_NAME.match(path)
    observed = utc_stamp(day.group(1)) if day else None
    found: list[Fragment] = []
    wanted = iter(anchors)
    expected = next(wanted, None)
    anchor: str | None = None
    lines: list[str] = []
    for line in body.split("\n"):
        if expected is not None and _H2.match(line):
            match = _ATX.match(line)
            if match and len(match.group(1)) == 2 and (match.group(2) or "").strip() == expected:
                if anchor:
                    found.append(Fragment("entry", anchor, observed, "\n".join(lines).strip()))
                anchor, lines, expected = expected, [], next(wanted, None)
                continue
        if anchor is not None and not line.startswith(_ENTRY_MARKERS):
            lines.append(line)
    if anchor:
        found.append(Fragment("entry", anchor, observed, "\n".join(lines).strip()))
    return found


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_timestamp(value: Any) -> bool:
    if isinstance(value, dt.datetime | dt.date):
        return True
    if not isinstance(value, str):
        return False
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


@lru_cache(maxsize=1)
def _yaml_handler():
    """python-frontmatter's YAML handler: it finds the fences; ``load_yaml`` loads."""
    return YAMLHandler()


@lru_cache(maxsize=1)
def _markdown():
    md = MarkdownIt("commonmark")
    # Keep escapes as separate tokens: "\[\[x]]" is text, not a link. Rules that only
    # shape inline rendering (emphasis, links, entities) are off: structure needs headings,
    # code and paragraphs, and skipping the rest halves the cost of indexing.
    md.disable(["text_join", "emphasis", "link", "image", "autolink", "entity",
                "balance_pairs", "fragments_join"])
    return md


def scan_markdown(body: str, line_offset: int = 0) -> tuple[str | None, list[Link], list[str]]:
    """Return (first ``# `` heading, wikilinks, ``## `` headings) of a Markdown body.

    Second-level headings are the anchors that ``sources`` may point at
    (Daily entries are ``## <entry_id>``), matching Obsidian's heading links.

    Wikilinks are found only in prose text: code spans, fenced and indented
    code, raw HTML, escaped brackets and entities are text, not links.
    """
    if not _needs_parser(body):
        return _scan_plain(body, line_offset)
    return _scan_parsed(body, line_offset)


def _scan_parsed(body: str, line_offset: int) -> tuple[str | None, list[Link], list[str]]:
    tokens = _markdown().parse(body)
    heading: str | None = None
    links: list[Link] = []
    anchors: list[str] = []
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and heading is None:
            heading = tokens[index + 1].content.strip() or None
        elif token.type == "heading_open" and token.tag == "h2":
            anchors.append(tokens[index + 1].content.strip())
        elif token.type == "inline" and token.children is not None:
            first_line = line_offset + (token.map[0] if token.map else 0) + 1
            for breaks_before, run in _text_runs(token.children):
                links.extend(_parse_links(run, first_line + breaks_before))
    return heading, links, anchors


# Anything that can make Markdown structure other than ATX headings and prose: code
# (backticks, tildes, indentation), raw HTML, escapes, setext underlines and thematic
# breaks, block quotes and list items (which may hold headings), link definitions.
_PARSER_CHARS = "`~<\\"
_PARSER_LINE = re.compile(r"\n {0,3}(?:[ \t=\-_*+>]|\d+[.)]|\[[^\]\n]*\]:)")


def _needs_parser(body: str) -> bool:
    # A literal "\n" prefix lets the regex engine skip ahead fast; the body gets one too.
    if any(char in body for char in _PARSER_CHARS):  # substring search runs in C
        return True
    return _PARSER_LINE.search("\n" + body) is not None


_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*(?:(?<=[ \t])#+[ \t]*)?$")


def _scan_plain(body: str, line_offset: int) -> tuple[str | None, list[Link], list[str]]:
    """``scan_markdown`` for bodies with no code, HTML, quotes or lists: one pass over lines.

    Most memory documents are headings and paragraphs; for them the result is
    the parser's, at a fraction of the cost (a property test holds the two equal).
    """
    heading: str | None = None
    links: list[Link] = []
    anchors: list[str] = []
    for number, line in enumerate(body.split("\n"), start=line_offset + 1):
        match = _ATX.match(line)
        if match:
            text = (match.group(2) or "").strip()
            level = len(match.group(1))
            if level == 1 and heading is None:
                heading = text or None
            elif level == 2:
                anchors.append(text)
        if "[[" in line:
            links.extend(_parse_links(line, number))
    return heading, links, anchors


def _text_runs(children: list[Any]) -> list[tuple[int, str]]:
    """Split inline tokens into runs of prose, each with the line breaks before it.

    A wikilink never spans a code span, an escape or raw HTML, so each of
    those ends a run. The break count lets a link report its own line, not the
    first line of its paragraph (newlines inside a code span are lost by the
    parser, so a link after a multi-line code span may report an earlier line).
    """
    runs: list[tuple[int, str]] = []
    current: list[str] = []
    start = breaks = 0
    for child in children:
        if child.type in ("text", "softbreak", "hardbreak"):
            if not current:
                start = breaks
            if child.type == "text":
                current.append(child.content)
            else:
                current.append("\n")
                breaks += 1
            continue
        # code_inline, text_special (escapes), html_inline: never part of a link
        if current:
            runs.append((start, "".join(current)))
        current = []
        breaks += child.content.count("\n")
    if current:
        runs.append((start, "".join(current)))
    return runs


def _parse_links(text: str, line: int) -> list[Link]:
    links = []
    for match in _WIKILINK.finditer(text):
        inner = match.group(2)
        target, _, alias = inner.partition("|")
        target = target.rstrip("\\")
        target, _, heading = target.partition("#")
        target = target.strip()
        target = target[:-3] if target.endswith(".md") else target
        at = line + text.count("\n", 0, match.start())
        links.append(Link(target, at, heading.strip() or None, alias.strip() or None))
    return links

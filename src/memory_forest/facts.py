"""What reading one canonical file gives: ``Facts``, its ``Link``s and ``Fragment``s.

Plain data, apart from the readers that make it (``documents`` for Markdown,
``istmfacts`` for ISTM shards), so both readers stand on it and neither on the
other. Facts are JSON round-trippable, so the index can keep them and skip
re-parsing files whose size and mtime have not changed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .issues import Issue

ISTM_REQUIRED = ("event_id", "observed_at", "captured_at", "source", "kind", "payload")


class Link(NamedTuple):  # a tuple: the index rebuilds thousands of these per run
    target: str  # as written, without alias or heading, without a trailing ".md"
    line: int
    heading: str | None = None
    alias: str | None = None


@dataclass
class Facts:
    path: str
    size: int
    mtime_ns: int
    sha256: str
    title: str = ""
    id: str | None = None
    status: str = "active"
    links: list[Link] = field(default_factory=list)
    event_ids: list[str] = field(default_factory=list)  # ISTM only
    anchors: list[str] = field(default_factory=list)  # ## headings: Daily entry ids
    # What this document cites as its provenance: canonical pointers ``<path>#<anchor>``
    # (or a bare path) from frontmatter ``sources`` and, in a Daily record, the entries'
    # ``Sources:`` lines. Free-text sources ("a call with Ana") are not pointers.
    sources: list[str] = field(default_factory=list)
    updated: str | None = None  # frontmatter ``updated`` as written, when it is a timestamp
    superseded_by: str | None = None  # the first successor a superseded record names
    issues: list[Issue] = field(default_factory=list)  # problems local to this file

    @staticmethod
    def json_path(name: str) -> str:
        """Where a field sits in ``dumps``'s array, for SQLite's JSON functions."""
        return f"$[{STORED_FIELDS.index(name)}]"

    def dumps(self) -> str:
        """What the index keeps beyond its columns: the lists a writer looks files up by
        (links, event ids, anchors, sources), as positional JSON (arrays decode faster than
        objects). Path, stat, hash, title, id and status are columns; problems have
        their own table."""
        return json.dumps([getattr(self, name) for name in STORED_FIELDS], ensure_ascii=False)


STORED_FIELDS = ("links", "event_ids", "anchors", "sources")


class Fragment(NamedTuple):
    """One raw capture inside a source file: an ISTM event or a Daily entry, with its text.

    Text, like a body, is kept beside the facts and never inside them; the
    index searches fragments on their own so that a capture nobody has
    promoted yet can be found by itself.
    """

    kind: str  # "event" or "entry"
    anchor: str  # the event id, or the entry's ``## `` heading
    observed_at: str | None  # RFC 3339 UTC (``utc_stamp``); None when the file gives none
    text: str


def stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0]


def pointers(value: Any) -> list[str]:
    """The canonical pointers among frontmatter ``sources``: strings that start with a layer
    directory (``06 istm/2026-12-01.jsonl#evt-...``); anything else is free text."""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    found: list[str] = []
    for item in items:
        if isinstance(item, str) and POINTER.match(item) and item not in found:
            found.append(item)
    return found


POINTER = re.compile(r"0[0-6] [a-z_]+/")

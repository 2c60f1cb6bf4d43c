"""Read and parse documents for a build: one record per file (serial stand-in)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from .documents import Facts, read_facts
from .errors import ForestError
from .issues import Issue
from .routes import Route, parse_route
from .safety import Entry, read_regular


class Parsed(NamedTuple):
    path: str
    route: Route | None
    facts: Facts | None
    text: str
    issues: list[Issue]  # the file's route or read problem


def parse(root: Path, entries: list[Entry], limits: dict[str, int], keep_text: bool = True
          ) -> Iterator[Parsed]:
    for entry in entries:
        yield parse_one(root, entry, limits, keep_text)


def parse_one(root: Path, entry: Entry, limits: dict[str, int], keep_text: bool) -> Parsed:
    try:
        route = parse_route(entry.path)
    except ForestError as exc:
        return Parsed(entry.path, None, None, "", [Issue(entry.path, exc.code, exc.message)])
    try:
        raw = read_regular(root, entry.path, limits["max_file_bytes"])
    except ForestError as exc:
        return Parsed(entry.path, route, None, "", [Issue(entry.path, exc.code, exc.message)])
    facts, text = read_facts(route, raw, entry.mtime_ns, limits["max_links_per_document"])
    return Parsed(entry.path, route, facts, text if keep_text else "", [])

"""What a writer sees: the canonical files it depends on, read from disk, and the index.

A writer never re-reads the whole forest (at 10,000 documents that alone
costs a second). It reads from disk every file it changes, every parent it
links to and every child it lists; it re-checks against the disk the layers
it draws identifiers from (ISTM for event ids, Daily for entry ids, layers
01-04 for a sweep's snapshot); and for everything else it relies on the
index, which every writer keeps current for what it touches and which was
built only from a forest that validated and audited.

Files of a re-checked layer that differ from their index row are "stale":
their fresh facts replace the row's, they are checked with the staged files,
and the index update re-describes them.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import stat
from typing import Any

from .. import building
from ..digest import sha256_hex
from ..documents import read_facts
from ..errors import ForestError
from ..facts import Facts
from ..forest import Forest
from ..ignore import is_debris
from ..layers import BY_KEY, LAYERS
from ..routes import parse_route
from ..safety import read_regular, walk
from ..store import filerows, lookups, schema

_MODE_CODES = frozenset({"mode_file_not_private", "mode_dir_not_private"})


class View:
    """The writer's reads, over the forest's config and its read-only index connection."""

    def __init__(self, forest: Forest) -> None:
        self.forest = forest
        self.root = forest.root
        self.config = forest.config
        self.max_bytes = self.config.limits["max_file_bytes"]
        self.con: sqlite3.Connection | None = forest.reader()
        self.built_at = schema.built_at_ns(self.con)
        self._bytes: dict[str, bytes | None] = {}
        self._facts: dict[str, Facts | None] = {}
        self.stale: dict[str, Facts | None] = {}  # re-checked files that differ from the index
        self.refresh: set[str] = set()  # re-checked files whose row only needs a new mtime
        self._layers: dict[str, dict[str, str]] = {}

    def close(self) -> None:
        """Let the connection go: the writer is about to change the index under it."""
        if self.con is not None:
            self.forest.forget_index()
            self.con = None

    # --- single files, always from disk ---

    def read(self, path: str) -> bytes | None:
        if path not in self._bytes:
            try:
                self._bytes[path] = read_regular(self.root, path, self.max_bytes)
            except ForestError as exc:
                if exc.code != "not_found":
                    raise
                self._bytes[path] = None
        return self._bytes[path]

    def text(self, path: str) -> str | None:
        data = self.read(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ForestError("forest_invalid", "a file the write depends on is not UTF-8",
                              {"path": path}) from None

    def exists(self, path: str) -> bool:
        return self.read(path) is not None

    def facts(self, path: str) -> Facts | None:
        if path not in self._facts:
            data = self.read(path)
            self._facts[path] = None if data is None else read_facts(
                parse_route(path), data, 0, self.config.limits["max_links_per_document"])[0]
        return self._facts[path]

    def title(self, path: str) -> str:
        facts = self.facts(path)
        return facts.title if facts is not None else path.rsplit("/", 1)[-1][:-3]

    def is_dir(self, rel: str) -> bool:
        """A real directory (not a symlink to one) at ``rel``."""
        try:
            return stat.S_ISDIR(os.lstat(self.root / rel).st_mode)
        except FileNotFoundError:
            return False

    def listdir(self, rel_dir: str) -> list[str]:
        """Names in a directory of the forest (regular files and directories only).

        Editor and OS debris is left out, as the walk leaves it out.
        """
        try:
            with os.scandir(self.root / rel_dir) as entries:
                return sorted(e.name for e in entries if not is_debris(e.name)
                              and not stat.S_ISLNK(e.stat(follow_symlinks=False).st_mode))
        except (FileNotFoundError, NotADirectoryError):
            return []

    # --- the index, for what the writer does not re-check ---

    def _con(self) -> sqlite3.Connection:
        assert self.con is not None, "the view is closed"
        return self.con

    def paths_with_ids(self, ids: set[str]) -> dict[str, list[str]]:
        return lookups.paths_with_ids(self._con(), ids)

    def linking_to(self, target: str) -> set[str]:
        """The files the index says hold a (non-parent) link to this link target."""
        return filerows.linking_to(self._con(), {target})

    def counts(self) -> tuple[int, int]:
        return filerows.totals(self._con())

    # --- layers re-checked against the disk ---

    def layer(self, key: str) -> dict[str, str]:
        """sha256 of every file of one layer, as the disk has it now.

        Index rows are trusted where size and mtime match and the mtime is
        older than the last full build's racy window; anything else is read
        and hashed, and a file whose bytes differ from its row (or that has no
        row) becomes stale: its fresh facts are kept in ``self.stale``.
        """
        if key in self._layers:
            return self._layers[key]
        layer = BY_KEY[key]
        rows = filerows.layer_files(self._con(), layer.number)
        listing = walk(self.root, self.config.limits, under=layer.dirname)
        # A wide mode is repairable, not a fault: a file the write replaces is written 0600.
        faults = [issue for issue in listing.issues if issue.code not in _MODE_CODES]
        if faults:
            issue = faults[0]
            raise ForestError("forest_invalid", "a layer the write depends on has a problem; "
                              "run 'memory-forest validate ROOT'",
                              {"path": issue.path, "code": issue.code})
        found: dict[str, str] = {}
        racy_after = self.built_at - building.RACY_WINDOW_NS
        for entry in listing.files:
            row = rows.pop(entry.path, None)
            if row is not None and (row.size, row.mtime_ns) == (entry.size, entry.mtime_ns) \
                    and entry.mtime_ns < racy_after:
                found[entry.path] = row.sha256
                continue
            data = self.read(entry.path)
            if data is None:
                continue
            if row is not None and row.sha256 == sha256_hex(data):
                found[entry.path] = row.sha256
                if row.mtime_ns != entry.mtime_ns:
                    self.refresh.add(entry.path)  # same bytes, new mtime: refresh the row
                continue
            try:
                route = parse_route(entry.path)
            except ForestError as exc:
                raise ForestError("forest_invalid", "a file the write depends on is not "
                                  "canonical; run 'memory-forest validate ROOT'",
                                  {"path": entry.path, "code": exc.code}) from None
            facts = read_facts(route, data, entry.mtime_ns,
                               self.config.limits["max_links_per_document"])[0]
            self.stale[entry.path] = facts
            found[entry.path] = facts.sha256
        for gone in rows:
            self.stale[gone] = None
        self._layers[key] = found
        return found

    def holders(self, key: str, field: str, values: set[str]) -> dict[str, list[str]]:
        """Which files of a layer hold these ids (``event_ids`` or ``anchors``), right now.

        One pass of SQLite's JSON functions over the layer's index rows (the
        values go to a temporary table), corrected by the stale files' fresh facts.
        """
        self.layer(key)
        found: dict[str, list[str]] = {}
        if not values:
            return found
        rows = filerows.holders(self._con(), BY_KEY[key].number, Facts.json_path(field), values)
        for path, value in rows:
            if path not in self.stale:
                found.setdefault(value, []).append(path)
        prefix = BY_KEY[key].dirname + "/"
        for path, facts in self.stale.items():
            if facts is not None and path.startswith(prefix):
                for value in getattr(facts, field):
                    if value in values:
                        found.setdefault(value, []).append(path)
        return {value: sorted(paths) for value, paths in found.items()}

    def event_paths(self, event_ids: set[str]) -> dict[str, str]:
        """ISTM event id -> the file holding it, for the ids that exist."""
        return {event_id: paths[0]
                for event_id, paths in self.holders("istm", "event_ids", event_ids).items()}

    def entry_paths(self, entry_ids: set[str]) -> dict[str, list[str]]:
        """Daily entry id (``##`` anchor) -> the Daily files holding it."""
        return self.holders("daily", "anchors", entry_ids)

    def structured_hashes(self) -> dict[str, str]:
        """sha256 of every XLTM/LTM/MTM/STM file as it is on disk now."""
        return {path: sha for layer in LAYERS if layer.structured
                for path, sha in self.layer(layer.key).items()}


def snapshot_sha256(hashes: dict[str, str]) -> str:
    """One hash over every structured path and its hash (what a sweep plan binds)."""
    lines = "".join(f"{path}\t{sha}\n" for path, sha in sorted(hashes.items()))
    return sha256_hex(lines.encode("utf-8"))


def dump(value: Any) -> Any:
    """Frontmatter values made JSON-safe (YAML dates become their ISO text)."""
    if isinstance(value, dict):
        return {str(k): dump(v) for k, v in value.items()}
    if isinstance(value, list):
        return [dump(v) for v in value]
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value

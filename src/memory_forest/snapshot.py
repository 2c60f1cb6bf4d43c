"""Walk and parse a forest once into a ``Snapshot`` that validate and audit read.

``reuse`` lets the index hand back facts it already holds for files whose
size and mtime are unchanged, so a large forest is re-read only where it
changed. Modes and symlinks are still checked on every walk.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .config import Config, Opened, root_and_config
from .documents import Facts
from .errors import ForestError
from .issues import WARNING, Issue
from .layers import BY_DIR, LAYERS
from .parsing import parse, routable
from .parsing import route_or_issue as _route_or_issue  # noqa: F401 - doctor's import
from .routes import Route, parse_route
from .safety import Entry, walk
from .statefiles import CONFIG, STATE_DIR, state_rel

Reuse = Callable[[Entry], tuple[Facts, Route] | None]  # cached facts and route, or None


@dataclass
class Snapshot:
    root: Path
    config: Config
    facts: dict[str, Facts] = field(default_factory=dict)  # canonical files by path
    routes: dict[str, Route] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # searchable text of files read now
    issues: list[Issue] = field(default_factory=list)  # walk and route issues
    dirs: list[str] = field(default_factory=list)
    entries: dict[str, Entry] = field(default_factory=dict)  # every file the walk listed
    # Symlinks and special files at a canonical path: never read, and reported, but a
    # document's parent is still there, so its children are not failed for it.
    unread: set[str] = field(default_factory=set)
    total_bytes: int = 0

    def layer_counts(self) -> dict[str, int]:
        counts = {layer.dirname: 0 for layer in LAYERS}
        for route in self.routes.values():
            counts[route.layer.dirname] += 1
        return counts


def scan(forest: Opened | str | Path, reuse: Reuse | None = None, keep_text: bool = False
         ) -> Snapshot:
    root, config = root_and_config(forest)
    listing = walk(root, config.limits)
    snap = Snapshot(root, config, issues=list(listing.issues), dirs=listing.dirs,
                    entries={entry.path: entry for entry in listing.files},
                    total_bytes=listing.total_bytes)
    if not config.present:
        snap.issues.append(Issue(state_rel(CONFIG), "config_missing",
                                 f"no {CONFIG}; default limits apply", WARNING))
    for directory in listing.dirs:
        _check_directory(directory, snap.issues)
    snap.unread = {issue.path for issue in listing.issues
                   if issue.code in ("symlink", "special_file") and routable(issue.path)}
    known: dict[str, tuple[Facts, Route]] = {}
    fresh: list[Entry] = []
    for entry in listing.files:
        cached = reuse(entry) if reuse else None
        if cached is None:
            fresh.append(entry)
        else:
            known[entry.path] = cached
    # The files not reused are read now (on a pool of processes when there are many);
    # they come back in walk order, so the snapshot's order is the walk's.
    parsed = parse(root, fresh, config.limits, keep_text)
    try:
        for entry in listing.files:
            cached = known.get(entry.path)
            if cached is not None:
                snap.facts[entry.path], snap.routes[entry.path] = cached
                continue
            found = next(parsed)
            snap.issues.extend(found.issues)
            if found.route is None:
                continue
            snap.routes[entry.path] = found.route
            if found.facts is None:
                continue
            snap.facts[entry.path] = found.facts
            if keep_text:
                snap.texts[entry.path] = found.text
    finally:
        parsed.close()  # the pool, if one was started, is shut down before the scan returns
    return snap


def _check_directory(directory: str, issues: list[Issue]) -> None:
    """Directories must be layer directories or the folders of canonical routes."""
    parts = directory.split("/")
    if parts[0] == STATE_DIR:
        return
    if len(parts) == 1:
        if parts[0] not in BY_DIR:
            try:
                parse_route(parts[0] + "/x")
            except ForestError as exc:
                level = "error" if exc.code == "route_noncanonical_layer_dir" else WARNING
                issues.append(Issue(directory, exc.code, exc.message, level))
        return
    layer = BY_DIR.get(parts[0])
    depth_allowed = {"mtm": 2, "stm": 3}.get(layer.key, 1) if layer else 0
    if layer and len(parts) > depth_allowed:
        issues.append(Issue(directory, "route_bad_shape",
                            f"'{layer.dirname}' does not nest folders this deep"))

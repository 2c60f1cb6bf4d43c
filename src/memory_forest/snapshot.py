"""Walk and parse a forest once into a ``Snapshot`` that validate and audit read.

``survey`` is the walk alone, with the problems it shows; ``scan`` reads
every document as well. Modes and symlinks are checked on every walk.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .config import Config
from .errors import ForestError
from .facts import Facts
from .issues import WARNING, Issue
from .layers import BY_DIR, LAYERS
from .parsing import parse, routable
from .routes import Route, parse_route
from .safety import Entry, Walk, walk
from .statefiles import CONFIG, STATE_DIR, config_path, state_rel

if TYPE_CHECKING:
    from .forest import Forest


@dataclass
class Snapshot:
    root: Path
    config: Config
    facts: dict[str, Facts] = field(default_factory=dict)  # canonical files by path
    routes: dict[str, Route] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)  # walk and route issues
    dirs: list[str] = field(default_factory=list)
    entries: dict[str, Entry] = field(default_factory=dict)  # every file the walk listed
    # Symlinks and special files at a canonical path: never read, and reported, but a
    # document's parent is still there, so its children are not failed for it.
    unread: set[str] = field(default_factory=set)
    total_bytes: int = 0
    documents: list[Entry] = field(default_factory=list)  # listed files but root ones and state

    def layer_counts(self) -> dict[str, int]:
        """Files per layer directory, from the listing alone (a build counts before it reads)."""
        return files_per_layer([*self.entries, *self.unread])


def files_per_layer(paths: Iterable[str]) -> dict[str, int]:
    """How many files each layer holds: the one count validate, doctor, status and stats
    report. ``paths`` are the listed files and the symlinks and special files standing at
    a document's path (``unread_of``): on disk there is a file there, indexed or left out,
    so a layer's files are always its indexed documents plus the ones it left out."""
    counts = {layer.dirname: 0 for layer in LAYERS}
    for path in paths:
        layer = path.split("/", 1)[0]
        if layer in counts and "/" in path:
            counts[layer] += 1
    return counts


def listed_per_layer(listing: Walk) -> dict[str, int]:
    """``files_per_layer`` of what a walk listed, for a caller that has no snapshot."""
    return files_per_layer([*(entry.path for entry in listing.files), *unread_of(listing)])


def unread_of(listing: Walk) -> set[str]:
    """The symlinks and special files a walk found at a document's path: never read."""
    return {issue.path for issue in listing.issues
            if issue.code in ("symlink", "special_file") and routable(issue.path)}


def survey(forest: Forest) -> Snapshot:
    """Walk the forest without reading a file: the listing and the problems it shows.

    Those are the walk's own (modes, symlinks, special files), a missing
    config, badly shaped directories and files at the root: everything an
    incremental build re-derives on every run, because it costs no read.
    """
    root, config = forest.root, forest.config
    refuse_non_forest(root)
    listing = walk(root, config.limits)
    files = listing.files
    snap = Snapshot(root, config, issues=list(listing.issues), dirs=listing.dirs,
                    entries={entry.path: entry for entry in files},
                    total_bytes=listing.total_bytes)
    if not config.present:
        snap.issues.append(Issue(state_rel(CONFIG), "config_missing",
                                 f"no {CONFIG}; default limits apply", WARNING))
    for directory in listing.dirs:
        _check_directory(directory, snap.issues)
    at_root = {name for name in listing.top_files if name in snap.entries}
    for name in sorted(at_root):
        snap.issues.append(Issue(name, "unexpected_entry",
                                 "files at the root are not part of the forest", WARNING))
    # The walk lists files sorted by path, so derived state is one slice to leave out.
    state = (STATE_DIR + "/", STATE_DIR + "0")  # "0" sorts right after "/"
    start, end = (bisect.bisect_left(files, (bound,)) for bound in state)
    snap.documents = [entry for entry in files[:start] + files[end:]
                      if entry.path not in at_root] if at_root else files[:start] + files[end:]
    snap.unread = unread_of(listing)
    return snap


def refuse_non_forest(root: Path) -> None:
    """``not_a_forest`` for a folder with no config and none of the layers (an empty folder,
    a typo'd path, the home directory): seven ``layer_missing`` would not say what to do,
    and walking a big folder that was never a forest would only hit a limit."""
    if any(os.path.lexists(path) for path in (config_path(root),
                                              *(root / layer.dirname for layer in LAYERS))):
        return
    raise ForestError("not_a_forest", "no forest here (no layer directories, no "
                      ".memory-forest/forest.json): pass the forest's folder, or create one "
                      "with memory-forest init PATH (a path that does not exist yet)")


def scan(forest: Forest) -> Snapshot:
    """``survey``, then read and parse every document (route and read problems join
    ``issues``; on a pool of processes when there are many)."""
    snap = survey(forest)
    parsed = parse(snap.root, snap.documents, snap.config.limits)
    try:
        for found in parsed:
            snap.issues.extend(found.issues)
            if found.route is not None:
                snap.routes[found.path] = found.route
            if found.facts is not None:
                snap.facts[found.path] = found.facts
    finally:
        parsed.close()  # the pool, if one was started, is shut down before the scan returns
    return snap


class Presence:
    """Which canonical paths exist, for the rules that look past one file: parents, links.

    A full check knows every route; an incremental build asks its own
    ``contains`` (the index's knowledge corrected by what changed), so the
    rules read the same either way.
    """

    def __init__(self, contains: Callable[[str], bool]) -> None:
        self.contains = contains

    @classmethod
    def of(cls, snap: Snapshot) -> Presence:
        routes, unread = snap.routes, snap.unread
        return cls(lambda path: path in routes or path in unread)

    def has_target(self, target: str) -> bool:
        """Whether a link target (a path without ``.md``) names an existing file."""
        return self.contains(target + ".md") or (not target.endswith(".md")
                                                and self.contains(target))


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

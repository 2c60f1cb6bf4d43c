"""An incremental build: work in proportion to what changed, not to the forest.

A file changed when its size, mtime or inode differ from what the index
holds (one ``lstat`` each, from the walk; nothing is read or parsed for a
file that did not change), when its mtime is too close to the last build to
trust, or when a writer re-described it since. The problems a change can
affect are local, because the rules that look past one file look only at
neighbours:

- a file that appears or goes changes its children's ``parent_missing`` and
  the ``link_unresolved`` of every file linking to it (children are found by
  path, other linkers in the ``links`` table);
- a file's id and event ids decide the duplicates of every holder of the
  same values (``docs.doc_id`` and the ``events`` table);
- names that differ only by case, and everything else the walk shows, are
  judged whole on every build: they need no read.

Those files are read again and judged with the same rules as a full build,
against the index's knowledge of which files exist, and their stored
problems are replaced; every other file's problems stay as the index holds
them. A property test holds the result equal to a full build's after random
edits, additions, deletions, renames and mode changes.
"""

from __future__ import annotations

import bisect
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import store
from .index import (
    RACY_WINDOW_NS,
    READER_VERSION,
    Refreshed,
    _listed,
    forget_file,
    judge,
    scoped,
    stat_differs,
    surveyed,
    write_file,
)
from .routes import children_prefix, link_target, parent_of
from .statefiles import index_path
from .testhooks import crash_point

if TYPE_CHECKING:
    from .checks import Recorder
    from .index import Progress
    from .parsing import Parsed
    from .safety import Entry
    from .snapshot import Snapshot

def update(root: Path, progress: Progress | None = None,
           recorder: Recorder | None = None) -> Refreshed:
    """Bring an existing index of this schema and reader up to date with the disk."""
    from .checks import timed
    from .issues import Issue
    from .quarantine import triage
    from .snapshot import Presence, documents

    snap = timed(recorder, "scan", lambda: surveyed(root, recorder), _listed)
    limits = snap.config.limits
    con = sqlite3.connect(index_path(root))
    try:
        known = store.known_files(con)
        on_disk = {entry.path: entry for entry in documents(snap)}

        def routed(path: str) -> bool:
            if path in parsed:
                return parsed[path].route is not None
            found = known.get(path)
            return found is not None and found.routed and path in on_disk

        def read() -> set[str]:
            changed = _changed(con, known, on_disk)
            deleted = {path for path in known if path not in on_disk}
            parsed.update(_parse(root, [on_disk[path] for path in sorted(changed)], limits))
            appeared = {path for path in changed if path not in known} | deleted \
                | (snap.unread ^ store.unread(con)) | (store.pending(con) & on_disk.keys())
            affected = _affected(con, snap, parsed, deleted, appeared, routed)
            parsed.update(_parse(root, [on_disk[path] for path in sorted(affected)
                                        if path in on_disk and path not in parsed], limits))
            return affected

        parsed: dict[str, Parsed] = {}
        affected = timed(recorder, "read", read, lambda found: {"read": len(parsed)})
        deleted = {path for path in known if path not in on_disk}
        judged = [parsed[path] for path in sorted(affected) if path in parsed]
        routes = {p.path: p.route for p in judged if p.route is not None}
        facts = {p.path: p.facts for p in judged if p.facts is not None}
        present = Presence(lambda path: routed(path) or path in snap.unread)
        forest_issues, file_issues = judge(snap, [path for path in on_disk if routed(path)],
                                           routes, facts, present,
                                           [issue for p in judged for issue in p.issues],
                                           recorder)
        kept = [Issue(*row) for row in store.problems(con, "file") if row[0] not in affected]
        found = triage(forest_issues + kept + file_issues, snap.dirs)  # raises on a fault
        held = found.quarantined & on_disk.keys()

        def write() -> dict[str, int]:
            # A file can enter or leave quarantine without changing (a name that now collides
            # by case); it is read again so that its rows can move.
            was_held = {path for path, k in known.items() if k.held and path in on_disk}
            flipped = (held ^ was_held) - parsed.keys()
            parsed.update(_parse(root, [on_disk[path] for path in sorted(flipped)], limits))
            counts = {"added": 0, "changed": 0, "deleted": 0, "unchanged": 0}
            with con:
                for path in sorted(deleted):
                    counts["deleted"] += forget_file(con, path)
                for path in sorted(parsed):
                    outcome = write_file(con, parsed[path], on_disk[path], path in held)
                    if outcome != "held":
                        counts[outcome] += 1
                store.replace_problems(con, affected, scoped(forest_issues, file_issues))
                store.set_built(con, time.time_ns(), READER_VERSION, snap.unread)
                crash_point("indexing")  # a signal here rolls the whole update back
            return counts

        counts = timed(recorder, "index", write, dict)
    finally:
        con.close()
    expected = on_disk.keys() - held
    counts["unchanged"] = len(expected) - counts["added"] - counts["changed"]
    written = {"mode": "incremental", **counts, "documents": len(expected)}
    return Refreshed(found, written, set(expected), snap.config)


def _changed(con: sqlite3.Connection, known: dict[str, store.Known],
             on_disk: dict[str, Entry]) -> set[str]:
    """Files new, different by stat, too recent to trust, or re-described by a writer."""
    racy = store.built_at_ns(con) - RACY_WINDOW_NS
    changed = {path for path, entry in on_disk.items()
               if (k := known.get(path)) is None or stat_differs(k, entry)
               or entry.mtime_ns >= racy}
    return changed | (store.pending(con) & on_disk.keys())


def _parse(root, entries: list[Entry], limits: dict[str, int]) -> dict[str, Parsed]:
    from .parsing import parse

    return {parsed.path: parsed for parsed in parse(root, entries, limits)}


def _affected(con: sqlite3.Connection, snap: Snapshot, parsed: dict[str, Parsed],
              deleted: set[str], appeared: set[str], routed) -> set[str]:
    """The files whose problems a change can alter: the changed files, the children and
    linkers of files that appeared or went, and every holder of an id a changed file held
    before or holds now (and, once more, of the ids those holders hold)."""
    affected = set(parsed) | deleted
    listing = list(snap.entries)  # sorted by the walk
    for path in appeared:
        prefix = children_prefix(path)
        if prefix is None:
            continue
        start = bisect.bisect_left(listing, prefix)
        for child in listing[start:]:
            if not child.startswith(prefix):
                break
            if routed(child) and parent_of(child) == path:
                affected.add(child)
    affected |= store.linking_to(con, {link_target(path) for path in appeared})
    touched = set(parsed) | deleted
    ids = store.ids_of(con, touched) | {p.facts.id for p in parsed.values()
                                        if p.facts is not None and p.facts.id is not None}
    events = store.events_of(con, touched) | {event for p in parsed.values()
                                              if p.facts is not None
                                              for event in p.facts.event_ids}
    holders = store.holding_ids(con, ids) | store.holding_events(con, events)
    # Files drawn in above may share an id with files outside: their groups come too.
    drawn = (affected | holders) - touched
    holders |= store.holding_ids(con, store.ids_of(con, drawn)) \
        | store.holding_events(con, store.events_of(con, drawn))
    return affected | holders

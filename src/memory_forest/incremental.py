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
from typing import TYPE_CHECKING

from .building import (
    RACY_WINDOW_NS,
    READER_VERSION,
    Refreshed,
    compare,
    forget_file,
    judge,
    listed,
    names_digest,
    surveyed,
    write_file,
)
from .checks import timed
from .issues import Issue
from .parsing import parse
from .quarantine import triage
from .routes import children_prefix, link_target, parent_of
from .snapshot import Presence
from .statefiles import index_path
from .store import filerows, schema, statements
from .testhooks import crash_point
from .validate import casefold_collisions

if TYPE_CHECKING:
    from .building import Progress
    from .checks import Recorder
    from .forest import Forest
    from .parsing import Parsed
    from .safety import Entry
    from .snapshot import Snapshot

def update(forest: Forest, progress: Progress | None = None,
           recorder: Recorder | None = None) -> Refreshed:
    """Bring an existing index of this schema and reader up to date with the disk."""
    root = forest.root
    snap = timed(recorder, "scan", lambda: surveyed(forest, recorder), listed)
    limits, entries = snap.config.limits, snap.entries
    docs = snap.documents
    con = sqlite3.connect(index_path(root))
    try:
        stats, was_held = filerows.known_files(con)
        diff = compare(stats, docs, entries)
        parsed: dict[str, Parsed] = {}
        unrouted = {path for path, routed in was_held.items() if not routed}

        def routed(path: str) -> bool:
            if path in parsed:
                return parsed[path].route is not None
            return path in entries and path not in unrouted and path not in diff.deleted

        def read() -> set[str]:
            pending = filerows.pending(con) & entries.keys()
            racy = schema.built_at_ns(con) - RACY_WINDOW_NS
            changed = diff.new | diff.changed | pending | {
                entry.path for entry in docs if entry.mtime_ns >= racy}
            parsed.update(_parse(root, [entries[path] for path in sorted(changed)], limits))
            appeared = diff.new | diff.deleted | pending | (snap.unread ^ schema.unread(con))
            affected = _affected(con, snap, parsed, diff.deleted, appeared, routed)
            parsed.update(_parse(root, [entries[path] for path in sorted(affected)
                                        if path in entries and path not in parsed], limits))
            return affected

        affected = timed(recorder, "read", read, lambda found: {"read": len(parsed)})
        judged_files = [parsed[path] for path in sorted(affected) if path in parsed]
        routes = {p.path: p.route for p in judged_files if p.route is not None}
        facts = {p.path: p.facts for p in judged_files if p.facts is not None}
        unrouted |= {p.path for p in parsed.values() if p.route is None}
        renamed = bool(diff.new or diff.deleted) or schema.names_digest(con) != names_digest(snap)

        def names() -> list[Issue]:
            if not renamed:
                return [Issue(*row) for row in filerows.problems(con, "names")]
            return casefold_collisions([*snap.dirs, *(entry.path for entry in docs
                                                      if entry.path not in unrouted)])

        present = Presence(lambda path: routed(path) or path in snap.unread)
        judged = judge(snap, names, routes, facts, present,
                       [issue for p in judged_files for issue in p.issues], recorder)
        kept = [Issue(*row) for row in filerows.problems(con, "file") if row[0] not in affected]
        # Raises on a forest-level fault.
        found = triage(judged.every() + kept, entries, snap.unread)
        held = set(found.quarantined)

        def write() -> dict[str, int]:
            # A file can enter or leave quarantine without changing (a name that now collides
            # by case); it is read again so that its rows can move.
            flipped = (held ^ (was_held.keys() & entries.keys())) - parsed.keys()
            parsed.update(_parse(root, [entries[path] for path in sorted(flipped)], limits))
            counts = {"added": 0, "changed": 0, "deleted": 0, "unchanged": 0}
            with con:
                for path in sorted(diff.deleted):
                    counts["deleted"] += forget_file(con, path)
                for path in sorted(parsed):
                    outcome = write_file(con, parsed[path], entries[path], path in held)
                    if outcome != "held":
                        counts[outcome] += 1
                statements.replace_problems(con, affected, judged.scoped(), names=renamed)
                statements.set_built(con, time.time_ns(), READER_VERSION, snap.unread,
                                names_digest(snap))
                crash_point("indexing")  # a signal here rolls the whole update back
            return counts

        counts = timed(recorder, "index", write, dict)
    finally:
        con.close()
    documents_now = len(docs) - len(held)
    counts["unchanged"] = documents_now - counts["added"] - counts["changed"]
    written = {"mode": "incremental", **counts, "documents": documents_now}
    return Refreshed(found, written, lambda: {entry.path for entry in docs} - held, snap.config)


def _parse(root, entries: list[Entry], limits: dict[str, int]) -> dict[str, Parsed]:
    return {parsed.path: parsed for parsed in parse(root, entries, limits, keep_text=True)}


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
    affected |= filerows.linking_to(con, {link_target(path) for path in appeared})
    touched = set(parsed) | deleted
    ids = filerows.ids_of(con, touched) | {p.facts.id for p in parsed.values()
                                        if p.facts is not None and p.facts.id is not None}
    events = filerows.events_of(con, touched) | {event for p in parsed.values()
                                              if p.facts is not None
                                              for event in p.facts.event_ids}
    holders = filerows.holding_ids(con, ids) | filerows.holding_events(con, events)
    # Files drawn in above may share an id with files outside: their groups come too.
    drawn = (affected | holders) - touched
    holders |= filerows.holding_ids(con, filerows.ids_of(con, drawn)) \
        | filerows.holding_events(con, filerows.events_of(con, drawn))
    return affected | holders

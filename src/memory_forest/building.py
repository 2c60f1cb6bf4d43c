"""What full and incremental builds share: how they judge, and how they write one file.

Both builds survey the forest the same way, judge it with the same rules
(``judge``: the listing's problems whole, the files' problems for the files
read), and keep a file's rows the same way (``write_file``, ``forget_file``),
so the property test that holds an incremental index equal to a full one
compares two orders of the same steps.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from .audit import link_issues
from .checks import graded, timed
from .digest import sha256_hex
from .quarantine import triage
from .snapshot import survey
from .store import filerows, statements
from .text import index_text
from .validate import document_issues, missing_layers

if TYPE_CHECKING:

    from .checks import Recorder
    from .config import Config
    from .facts import Facts, Fragment
    from .forest import Forest
    from .issues import Issue
    from .parsing import Parsed
    from .quarantine import Triage
    from .routes import Route
    from .safety import Entry
    from .snapshot import Presence, Snapshot

# How files are read into facts. An index built under other reading rules (a frontmatter
# the old rules accepted may be refused now) is rebuilt in full by the next build. Bump it
# when documents.py reads a file differently.
READER_VERSION = "4"
# A file modified within this window of the last build may have changed without its
# mtime moving (coarse timestamps); builds and writers read such files again.
RACY_WINDOW_NS = 2_000_000_000

Progress = Callable[[int, int], None]  # (files done, files in all), for a progress bar


class Difference(NamedTuple):
    """How the disk differs from what the index knows, by stat alone."""

    new: set[str]  # paths the index does not know
    changed: set[str]  # known paths whose size, mtime or inode moved
    deleted: set[str]  # known paths gone from disk


def compare(stats: list[tuple[str, int, int, int]], documents: list[Entry],
            entries: dict[str, Entry]) -> Difference:
    """How ``documents`` (as the walk lists them, by path) differ from ``stats`` (the same
    tuples as the index holds them, by path).

    Both are sorted by path, so a forest with nothing changed is one list
    comparison in C; otherwise set differences, still no Python loop per file.
    """
    if stats == documents:
        return Difference(set(), set(), set())
    on_disk, known = set(documents), set(stats)
    fresh = {entry[0] for entry in on_disk - known}
    stale = {row[0] for row in known - on_disk}
    deleted = {path for path in stale if path not in entries}
    return Difference(fresh - stale, fresh & stale, deleted)


class Refreshed:
    """What a build did: its triage of the problems, its counts, and the paths that should
    now have rows (what ``maintain`` verifies the index against, worked out only then)."""

    def __init__(self, triage: Triage, written: dict[str, Any],
                 expected: Callable[[], set[str]], config: Config) -> None:
        self.triage = triage
        self.written = written
        self.expected = expected
        self.config = config


def surveyed(forest: Forest, recorder: Recorder | None) -> Snapshot:
    """The walk, with the documents per layer it found counted at once, so a run that stops
    at a later step still reports them."""
    snap = survey(forest)
    if recorder is not None:
        recorder.counts = snap.layer_counts()
    return snap


def listed(snap: Snapshot) -> dict[str, int]:
    return {"files": len(snap.entries)}


class Judged(NamedTuple):
    """A build's problems by where they come from, which is how the index keeps them."""

    forest: list[Issue]  # the walk's, the config's, the layers': re-derived on every build
    names: list[Issue]  # names that differ only by case: re-derived when a name changed
    files: list[Issue]  # of the files judged: route, read, parse, parent, duplicates, links

    def every(self) -> list[Issue]:
        return self.forest + self.names + self.files

    def scoped(self) -> list[tuple[str, Issue]]:
        return [*(("forest", issue) for issue in self.forest),
                *(("names", issue) for issue in self.names),
                *(("file", issue) for issue in self.files)]


def judge(snap: Snapshot, names: Callable[[], list[Issue]], routes: dict[str, Route],
          facts: dict[str, Facts], present: Presence, read_issues: list[Issue],
          recorder: Recorder | None = None) -> Judged:
    """Judge the forest as its listing shows it and these files as they were read.

    ``routes`` and ``facts`` are the files judged, ``present`` says which
    files exist beyond them; ``names`` gives the case collisions (computed,
    or as the index holds them when no name changed).
    """
    def validate() -> Judged:
        return Judged(sorted(set(snap.issues + missing_layers(snap.dirs))), names(),
                      read_issues + document_issues(facts, routes, present))

    judged = timed(recorder, "validate", validate, lambda found: _graded(found.every()))
    files = judged.files + timed(recorder, "audit",
                                 lambda: link_issues(facts, routes, present), _graded)
    return judged._replace(files=sorted(set(files)))


def _graded(found: list[Issue]) -> dict[str, int]:
    return graded(found)


def names_digest(snap: Snapshot) -> str:
    """A digest of the directory names: with the files that appeared or went, what tells an
    incremental build whether any name, and so any case collision, changed."""
    return sha256_hex("\n".join(snap.dirs).encode("utf-8", "surrogateescape"))


def refuse_forest_faults(snap: Snapshot) -> None:
    """A missing layer or an unusable root stops a build before it reads a file."""
    triage(snap.issues + missing_layers(snap.dirs), snap.entries)


def references(route: Route, facts: Facts) -> tuple[list[str], list[str], list[str]]:
    """What a file links to beyond its parent, the event ids it holds (what another file's
    change is looked up by), and the pointers it cites (what says a capture was promoted)."""
    parent = route.parent_path
    own = parent[:-3] if parent and parent.endswith(".md") else parent
    return (sorted({link.target for link in facts.links if link.target != own}),
            facts.event_ids, facts.sources)


def insert(con: sqlite3.Connection, parsed: Parsed, entry: Entry) -> int:
    return statements.insert(con, parsed.route, parsed.facts, entry.ino, full_text(parsed),
                        fragment_texts(parsed))


def fragment_texts(parsed: Parsed) -> list[tuple[Fragment, str]]:
    """Each fragment of a source file with the text it is searched by."""
    return [(fragment, index_text(fragment.text)) for fragment in parsed.fragments]


def full_text(parsed: Parsed) -> tuple[str, str, str]:
    """The title, path words and body a document is searched by."""
    return (index_text(parsed.facts.title), index_text(_path_words(parsed.route)),
            index_text(parsed.text))


def unread_words(path: str, route: Route | None) -> tuple[str, str, str]:
    """What a left-out file that could not be read is searched by: the words of its name
    (a name that is not UTF-8, kept by the walk as surrogate escapes, by what of it is)."""
    name = _path_words(route) if route else path.rsplit("/", 1)[-1]
    return "", index_text(name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")), ""


def _path_words(route: Route) -> str:
    """The names in a path worth matching: tree, branch, leaf (not "04 stm" or ".md",
    which every document shares and which would only swell the index)."""
    parts = (route.tree, route.branch, route.leaf, route.name)
    return " ".join(part for part in parts if part) or route.path.rsplit("/", 1)[-1][:-3]


def write_file(con: sqlite3.Connection, parsed: Parsed, entry: Entry, held: bool) -> str:
    """Bring one file's rows in line with its parse: a document row, or a quarantine row.

    Returns what happened to its document row: ``added``, ``changed``,
    ``unchanged`` (same bytes; metadata refreshed), ``deleted`` (it is now
    quarantined) or ``held`` (quarantined before and still).
    """
    path, facts = parsed.path, parsed.facts
    row = filerows.file_row(con, path)
    if parsed.route is not None and facts is not None:
        statements.set_references(con, path, *references(parsed.route, facts))
    else:
        statements.forget_references(con, path)
    if held:
        if row is not None:
            statements.delete(con, row.rowid)
        statements.hold(con, path, entry.size, entry.mtime_ns, entry.ino, parsed.route is not None,
                   facts.id if facts else None)
        statements.keep_words(con, path, full_text(parsed) if facts is not None
                         else unread_words(path, parsed.route))
        return "deleted" if row is not None else "held"
    statements.release(con, path)
    if row is not None and row.sha256 == facts.sha256:
        statements.refresh(con, row.rowid, facts, entry.ino)
        return "unchanged"
    if row is not None:
        statements.delete(con, row.rowid)
    insert(con, parsed, entry)
    return "changed" if row is not None else "added"


def forget_file(con: sqlite3.Connection, path: str) -> bool:
    """A file gone from disk loses every row; True when it had a document row."""
    row = filerows.file_row(con, path)
    if row is not None:
        statements.delete(con, row.rowid)
    statements.release(con, path)
    statements.forget_references(con, path)
    return row is not None



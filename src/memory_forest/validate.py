"""Structural rules over a snapshot: layers, naming, parents, identities.

Per-file problems (UTF-8, frontmatter, ISTM lines) were found when the file
was parsed; this module adds the rules that look past one file. They come in
two kinds, because an incremental build treats them differently:
``layout_issues`` need only the listing (missing layers, names that differ
only by case) and are cheap to re-derive on every build; ``document_issues``
need the parse of a document and of its neighbours (parents, duplicate ids),
so a build re-judges them only for the files a change can affect.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .facts import Facts
from .issues import Issue
from .layers import LAYERS
from .routes import Route, casefold_key
from .snapshot import Presence, Snapshot


def validate_snapshot(snap: Snapshot) -> list[Issue]:
    issues = list(snap.issues)
    issues += layout_issues(snap.dirs, snap.routes)
    issues += document_issues(snap.facts, snap.routes, Presence.of(snap))
    return sorted(set(issues))


def layout_issues(dirs: list[str], routed: Iterable[str]) -> list[Issue]:
    """Missing layer directories, and directories or routes that differ only by case."""
    return missing_layers(dirs) + casefold_collisions([*dirs, *routed])


def missing_layers(dirs: list[str]) -> list[Issue]:
    present = set(dirs)
    return [Issue(layer.dirname, "layer_missing", "layer directory is missing")
            for layer in LAYERS if layer.dirname not in present]


def document_issues(facts: dict[str, Facts], routes: dict[str, Route],
                    present: Presence) -> list[Issue]:
    """The per-file problems of these documents, their missing parents and duplicate ids.

    A duplicate is judged among ``facts`` alone: a caller judging part of a
    forest passes every holder of each id it holds.
    """
    issues = [issue for parsed in facts.values() for issue in parsed.issues]
    for path, route in routes.items():
        parent = route.parent_path
        if parent and not present.contains(parent):
            issues.append(Issue(path, "parent_missing", f"its parent '{parent}' does not exist"))
    return issues + _duplicates(facts)


def casefold_collisions(paths: Iterable[str]) -> list[Issue]:
    """Every path but the first (in sorted order) of each group that differs only by case.

    Most paths are lower-case ASCII, which case folding leaves as they are,
    and two distinct such paths can never collide: only the others are
    folded, so the rule costs a pass of string tests, not 100,000 foldings.
    """
    plain = set()
    folded: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if path.isascii() and path.islower():
            plain.add(path)
        else:
            folded[casefold_key(path)].append(path)
    issues = []
    for key, group in folded.items():
        members = sorted({*group, key} if key in plain else set(group))
        for path in members[1:]:
            issues.append(Issue(path, "route_casefold_collision",
                                f"differs only by case from '{members[0]}'"))
    return issues


def _duplicates(facts: dict[str, Facts]) -> list[Issue]:
    ids: dict[str, list[str]] = defaultdict(list)
    events: dict[str, list[str]] = defaultdict(list)
    for path, parsed in facts.items():
        if parsed.id is not None:
            ids[parsed.id].append(path)
        for event_id in parsed.event_ids:
            events[event_id].append(path)
    issues = []
    for table, code, what in ((ids, "duplicate_id", "id"),
                              (events, "istm_duplicate_event_id", "event_id")):
        for value, paths in table.items():
            for path in sorted(paths)[1:]:
                issues.append(Issue(path, code, f"{what} '{value[:80]}' is used more than once"))
    return issues

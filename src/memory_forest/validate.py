"""Structural rules over a snapshot: layers, naming, parents, identities.

Per-file problems (UTF-8, frontmatter, ISTM lines) were found when the file
was parsed; this module adds the rules that need the whole forest.
"""

from __future__ import annotations

from collections import defaultdict

from .issues import Issue
from .layers import LAYERS
from .routes import casefold_key
from .snapshot import Snapshot


def validate(snap: Snapshot) -> list[Issue]:
    issues = list(snap.issues)
    issues += _missing_layers(snap)
    issues += [issue for facts in snap.facts.values() for issue in facts.issues]
    issues += _casefold_collisions(snap)
    issues += _missing_parents(snap)
    issues += _duplicates(snap)
    return sorted(set(issues))


def _missing_layers(snap: Snapshot) -> list[Issue]:
    present = set(snap.dirs)
    return [Issue(layer.dirname, "layer_missing", "layer directory is missing")
            for layer in LAYERS if layer.dirname not in present]


def _casefold_collisions(snap: Snapshot) -> list[Issue]:
    seen: dict[str, str] = {}
    issues = []
    for path in sorted([*snap.dirs, *snap.routes]):
        key = casefold_key(path)
        if key in seen and seen[key] != path:
            issues.append(Issue(path, "route_casefold_collision",
                                f"differs only by case from '{seen[key]}'"))
        seen.setdefault(key, path)
    return issues


def _missing_parents(snap: Snapshot) -> list[Issue]:
    issues = []
    for path, route in snap.routes.items():
        parent = route.parent_path
        if parent and parent not in snap.routes and parent not in snap.unread:
            issues.append(Issue(path, "parent_missing", f"its parent '{parent}' does not exist"))
    return issues


def _duplicates(snap: Snapshot) -> list[Issue]:
    ids: dict[str, list[str]] = defaultdict(list)
    events: dict[str, list[str]] = defaultdict(list)
    for path, facts in snap.facts.items():
        if facts.id is not None:
            ids[facts.id].append(path)
        for event_id in facts.event_ids:
            events[event_id].append(path)
    issues = []
    for table, code, what in ((ids, "duplicate_id", "id"),
                              (events, "istm_duplicate_event_id", "event_id")):
        for value, paths in table.items():
            for path in sorted(paths)[1:]:
                issues.append(Issue(path, code, f"{what} '{value[:80]}' is used more than once"))
    return issues

"""Validate and audit a staged write before any canonical byte changes.

The staged files are parsed exactly as the index parses them
(``documents.read_facts``) and judged by the same rules (``validate`` and
``audit``), over a snapshot of their neighbourhood instead of the whole
forest: the staged paths, every path they link to, the ancestors of all of
those, the files that share an id or event id with them, the stale files of
the layers the writer re-checked, and, for case-only collisions, every
on-disk sibling of a new file or directory. The rest of the forest is
unchanged by the write, and it validated and audited when it was indexed.
"""

from __future__ import annotations

from typing import Any

from ..audit import audit_links
from ..documents import read_facts
from ..errors import ForestError
from ..facts import Facts
from ..issues import WARNING, Issue, has_errors, summarize
from ..layers import BY_DIR, LAYERS
from ..routes import ancestors, parse_route
from ..snapshot import Snapshot
from ..validate import validate_snapshot
from .view import View


def check_staged(view: View, staged: dict[str, bytes | None], new_dirs: list[str]
                 ) -> dict[str, Any]:
    """Raise ``write_invalid`` (or ``forest_invalid``) unless the result would be clean.

    A staged ``None`` is a file the write removes: it is left out of the
    snapshot, and a link to it from a file the write does not touch becomes a
    dangling link the writer reports (the other file still indexes).
    """
    config = view.config
    limits = config.limits
    snap = Snapshot(view.root, config)
    checked: dict[str, Facts] = {}
    removed = {path for path, data in staged.items() if data is None}
    written = {path: data for path, data in staged.items() if data is not None}
    for path, data in written.items():
        try:
            route = parse_route(path)
        except ForestError as exc:
            snap.issues.append(Issue(path, exc.code, exc.message))
            continue
        snap.routes[path] = route
        checked[path] = read_facts(route, data, 0, limits["max_links_per_document"])[0]
        if len(data) > limits["max_file_bytes"]:
            snap.issues.append(Issue(path, "file_too_large",
                                     f"would exceed max_file_bytes ({limits['max_file_bytes']})"))
    for path, facts in view.stale.items():
        if facts is not None and path not in checked and path not in removed:
            checked[path] = facts
            snap.routes[path] = parse_route(path)
    _twins(view, snap, checked, removed)
    _neighbourhood(view, snap, checked, removed)
    snap.dirs = [layer.dirname for layer in LAYERS if view.is_dir(layer.dirname)]
    snap.dirs += _siblings(view, written, new_dirs)
    _limits(view, snap, written, removed)
    snap.facts = {**snap.facts, **checked}
    issues = set(validate_snapshot(snap))
    snap.facts = checked
    link_issues = set(_as_before(view, audit_links(snap), checked))
    everything = sorted(issues | link_issues)
    if has_errors(everything):
        errors = [i for i in everything if i.level == "error"]
        ours = any(i.path in staged or i.path in new_dirs or i.path == "." or i.code in _PAIRS
                   for i in errors)
        code, what = ("write_invalid", "the write would leave the forest invalid") if ours \
            else ("forest_invalid", "the forest around this write already has errors; "
                  "run 'memory-forest validate ROOT'")
        raise ForestError(code, what, {"summary": summarize(everything),
                                       "issues": [i.to_dict() for i in errors[:50]]})
    return {"validate": summarize(sorted(issues)), "audit": summarize(sorted(link_issues)),
            "checked": len(checked)}


UNRESOLVED = frozenset({"link_unresolved", "link_child_missing"})
_PAIRS = frozenset({"duplicate_id", "istm_duplicate_event_id", "route_casefold_collision"})


def _as_before(view: View, issues: list[Issue], checked: dict[str, Facts]) -> list[Issue]:
    """An unresolved link a file already held before this write is not the write's doing.

    A leaf deleted by hand leaves its parent listing it; a write that adds a
    sibling to that parent must not fail for it. The link stays a warning
    (``audit`` still reports it), and a link the write itself adds is judged in full.
    """
    found: list[Issue] = []
    for issue in issues:
        if issue.code in UNRESOLVED and issue.path in checked:
            before = view.facts(issue.path)
            old = {link.target for link in before.links} if before is not None else set()
            line = issue.message.split(":", 1)[0]
            targets = {link.target for link in checked[issue.path].links
                       if f"line {link.line}" == line}
            if targets and targets <= old:
                issue = issue._replace(level=WARNING)
        found.append(issue)
    return found


def _neighbourhood(view: View, snap: Snapshot, checked: dict[str, Facts],
                   removed: set[str]) -> None:
    """Routes for every link target of the checked files and every ancestor, if they exist."""
    wanted: set[str] = set()
    for path in snap.routes:
        wanted.update(ancestors(path))
    for facts in checked.values():
        for link in facts.links:
            first = link.target.split("/", 1)[0]
            layer = BY_DIR.get(first)
            if layer is None:
                continue
            candidate = link.target + layer.extension
            wanted.add(candidate)
            wanted.update(ancestors(candidate))
    for path in sorted(wanted - set(snap.routes)):
        try:
            route = parse_route(path)
        except ForestError:
            continue  # audit reports the link as not canonical
        if path in removed or (path in view.stale and view.stale[path] is None):
            continue  # removed by this write, or deleted by hand since it was indexed
        if view.exists(path):
            snap.routes[path] = route


def _twins(view: View, snap: Snapshot, checked: dict[str, Facts], removed: set[str]) -> None:
    """Stand-ins for the other files that hold an id or event id of a checked file.

    A file this write removes holds nothing afterwards: a moved leaf keeps its id.
    """
    ids = {facts.id for facts in checked.values() if facts.id is not None}
    for doc_id, paths in view.paths_with_ids(ids).items():
        for path in paths:
            if path not in checked and path not in removed \
                    and view.stale.get(path, True) is not None:
                snap.routes.setdefault(path, parse_route(path))
                snap.facts[path] = Facts(path, 0, 0, "", id=doc_id)
    events = {e for facts in checked.values() for e in facts.event_ids}
    for event_id, paths in view.holders("istm", "event_ids", events).items():
        for path in paths:
            if path not in checked:
                snap.routes.setdefault(path, parse_route(path))
                stand_in = snap.facts.setdefault(path, Facts(path, 0, 0, ""))
                stand_in.event_ids.append(event_id)


def _siblings(view: View, staged: dict[str, bytes], new_dirs: list[str]) -> list[str]:
    """On-disk names beside every new file or directory, for the case-collision rule."""
    names: set[str] = set()
    for path in [*new_dirs, *(p for p in staged if not view.exists(p))]:
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        names.update(f"{parent}/{name}" if parent else name for name in view.listdir(parent))
    return sorted(names)


def _limits(view: View, snap: Snapshot, staged: dict[str, bytes], removed: set[str]) -> None:
    limits = view.config.limits
    files, size = view.counts()
    new_files = sum(1 for path in staged if not view.exists(path)) - len(removed)
    growth = sum(len(data) - len(view.read(path) or b"") for path, data in staged.items()) \
        - sum(len(view.read(path) or b"") for path in removed)
    if files + new_files > limits["max_files"]:
        snap.issues.append(Issue(".", "limit_exceeded", "the write would exceed max_files"))
    if size + growth > limits["max_total_bytes"]:
        snap.issues.append(Issue(".", "limit_exceeded", "the write would exceed max_total_bytes"))

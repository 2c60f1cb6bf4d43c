"""The link contract: who may link to whom, and the link to the immediate parent."""

from __future__ import annotations

from .documents import Facts
from .errors import ForestError
from .issues import Issue
from .layers import BY_DIR
from .routes import Route, link_target, parse_route
from .snapshot import Presence, Snapshot


def audit(snap: Snapshot) -> list[Issue]:
    """Link issues only; callers combine them with ``validate``."""
    return sorted(set(link_issues(snap.facts, snap.routes, Presence.of(snap))))


def link_issues(facts_by_path: dict[str, Facts], routes: dict[str, Route],
                present: Presence) -> list[Issue]:
    """The link problems of these documents, against the files ``present`` says exist."""
    issues: list[Issue] = []
    for path, facts in facts_by_path.items():
        route = routes[path]
        if route.layer.key == "istm":
            continue  # JSONL is data, not Markdown: text in payloads is never a link
        linked: set[str] = set()
        for link in facts.links:
            issue = _check_link(route, link.target, present)
            if issue:
                issues.append(Issue(path, issue[0], f"line {link.line}: {issue[1]}"))
            linked.add(link.target)
        parent = route.parent_path
        if parent and link_target(parent) not in linked:
            issues.append(Issue(path, "link_parent_missing",
                                f"does not link to its parent [[{link_target(parent)}]]"))
    return issues


def _check_link(source: Route, target: str, present: Presence) -> tuple[str, str] | None:
    if source.layer.key == "daily":
        return "link_in_source_layer", "Daily records hold no wikilinks; cite sources as paths"
    first = target.split("/", 1)[0]
    if first not in BY_DIR:
        return "link_not_canonical", f"[[{target[:120]}]] is not a root-relative canonical path"
    try:
        route = parse_route(target + BY_DIR[first].extension)
    except ForestError as exc:
        return "link_not_canonical", f"[[{target[:120]}]] is not a canonical path ({exc.code})"
    if route.layer == source.layer:
        return "link_lateral", f"[[{target[:120]}]] links within the same layer"
    if route.layer.key not in source.layer.links_to:
        return "link_nonadjacent", (
            f"'{source.layer.dirname}' may not link to '{route.layer.dirname}'"
        )
    if not present.has_target(target):
        return "link_unresolved", f"[[{target[:120]}]] does not resolve to a file"
    return None

"""The link contract (who may link to whom, the link to the immediate parent) and provenance
(the ISTM hash chain, and that every ``sources`` pointer resolves)."""

from __future__ import annotations

import json
from typing import Any

from . import chain
from .digest import sha256_hex
from .errors import ForestError
from .facts import Facts
from .issues import Issue
from .jsonio import dumps
from .layers import BY_DIR
from .routes import Route, link_target, parse_route
from .safety import read_regular
from .snapshot import Presence, Snapshot

# Tamper evidence: what no edit of the forest repairs, and no interrupted write causes.
CHAIN_CODES = frozenset({"istm_chain_broken", "istm_sha256_mismatch"})


def audit_links(snap: Snapshot) -> list[Issue]:
    """Link issues only; callers combine them with ``validate`` (and ``provenance``)."""
    return sorted(set(link_issues(snap.facts, snap.routes, Presence.of(snap))))


def provenance(snap: Snapshot) -> list[Issue]:
    """The chain of the ISTM files and the pointers of every ``sources``, over a whole forest.

    These are ``audit``'s findings only: an index build never judges them,
    so a broken chain or a dangling pointer never keeps a file out of the
    index or a turn from the gate. They need the whole forest (a chain runs
    across files, a pointer may name any file), which a build's or a
    writer's neighbourhood is not.
    """
    return sorted(set(chain_issues(snap) + source_issues(snap)))


def chain_issues(snap: Snapshot) -> list[Issue]:
    """Every chain of ISTM files (one per machine, one for the files without a host), each
    file in name order, each line against the hash its ``prev`` should name.

    A file that cannot be read is its own problem (validate reports it); the
    next file of its chain is then checked within itself only, as its first
    line's predecessor is unknown.
    """
    max_bytes = snap.config.limits["max_file_bytes"]
    chains = chain.chains([path.split("/", 1)[1] for path, route in snap.routes.items()
                           if route.layer.key == "istm"])
    issues: list[Issue] = []
    for names in chains.values():
        expected: str | None = chain.GENESIS
        after: str | None = None  # the file whose last line ``expected`` is the hash of
        for name in names:
            path = f"{chain.ISTM_DIR}/{name}"
            try:
                data = read_regular(snap.root, path, max_bytes)
            except ForestError:
                expected, after = None, None
                continue
            last = _check_file(path, data, expected, after, issues)
            if last is not None:
                expected, after = last, path
    return issues


def _check_file(path: str, data: bytes, expected: str | None, after: str | None,
                issues: list[Issue]) -> str | None:
    """Check one file's chained lines; return the hash of its last line (None: no line)."""
    previous, previous_number = expected, None
    for number, line in chain.lines(data):
        # A line without the field's name anywhere is unchained: no parse needed.
        record = _record(line) if b'"' + chain.FIELD.encode() + b'"' in line else None
        if record is not None and chain.FIELD in record:
            if previous is not None and record[chain.FIELD] != previous:
                issues.append(Issue(path, "istm_chain_broken",
                                    _broken(number, previous_number, after)))
            if "payload" in record and record.get("sha256") != _payload_hash(record["payload"]):
                issues.append(Issue(path, "istm_sha256_mismatch",
                                    f"line {number}: 'sha256' does not match the payload "
                                    "(the payload changed after it was captured)"))
        previous, previous_number = chain.line_hash(line), number
    return previous if previous_number is not None else None


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None  # validate reports the line
    return record if isinstance(record, dict) else None


def _payload_hash(payload: object) -> str | None:
    try:
        return sha256_hex(dumps(payload).encode("utf-8"))
    except (ValueError, UnicodeEncodeError):
        return None


def _broken(number: int, previous: int | None, after: str | None) -> str:
    if previous is not None:
        return (f"line {number}: '{chain.FIELD}' does not name line {previous} (a line before "
                "it was changed, removed, inserted or moved)")
    if after is not None:
        return (f"line {number}: '{chain.FIELD}' does not name the last line of '{after}' "
                "(that line was changed or removed, or an ISTM file between them was)")
    return (f"line {number}: '{chain.FIELD}' does not name the genesis value, yet no earlier "
            "ISTM file of its chain has a line (an earlier file or its lines were removed)")


def source_issues(snap: Snapshot) -> list[Issue]:
    """``provenance_missing`` for each ``sources`` pointer that names nothing that exists.

    A pointer ``<path>#<anchor>`` names an ISTM event (its ``event_id``) or a
    ``##`` heading (a Daily entry id); a bare path names a file. A target that
    exists but could not be read is its own problem, not the citing file's.
    """
    issues: list[Issue] = []
    for path, facts in snap.facts.items():
        for pointer in facts.sources:
            why = _unresolved(snap, pointer)
            if why:
                issues.append(Issue(path, "provenance_missing",
                                    f"source '{pointer[:300]}' does not resolve: {why}"))
    return issues


def _unresolved(snap: Snapshot, pointer: str) -> str | None:
    target, _, anchor = pointer.partition("#")
    candidates = [target] if target.endswith((".md", ".jsonl")) else [target, target + ".md"]
    for candidate in candidates:
        facts = snap.facts.get(candidate)
        if facts is not None:
            if anchor and anchor not in facts.event_ids and anchor not in facts.anchors:
                what = "event" if candidate.startswith(chain.ISTM_DIR + "/") else "entry"
                return f"'{candidate}' holds no {what} '{anchor[:200]}'"
            return None
        if candidate in snap.routes or candidate in snap.unread:
            return None  # there, but unreadable: validate reports it
    return "no such file"


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
        if route.parent_path == source.path:  # a child list naming a file that is gone
            return "link_child_missing", f"[[{target[:120]}]] lists a child that is gone"
        return "link_unresolved", f"[[{target[:120]}]] does not resolve to a file"
    return None

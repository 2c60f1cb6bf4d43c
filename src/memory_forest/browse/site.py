"""The browse model: every canonical file with its page, links resolved once.

Built in one pass over a ``Snapshot`` plus one read of each Markdown file, so
everything below is linear in the number of documents and links: backlinks,
"cited by" (from ``sources``), ownership children and id lookups are dict
appends, never a search per page.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ..digest import sha256_hex
from ..documents import frontmatter_problem, split_frontmatter
from ..errors import ForestError
from ..issues import Issue
from ..layers import LAYERS, Layer
from ..routes import Route, parse_route
from ..safe_yaml import FrontmatterError
from ..safety import read_regular
from ..snapshot import Snapshot

PAGE_DIR = "doc"
MAX_NAME_BYTES = 255


@dataclass
class Doc:
    path: str  # canonical, root-relative
    route: Route
    title: str
    status: str
    file: str  # site-relative file of its page, "/"-separated
    meta: dict[str, Any] = field(default_factory=dict)
    body: str | None = None  # Markdown body (layers 00-05), None when unreadable
    problem: str | None = None  # why the page may not show the whole file
    raw: bytes | None = None  # ISTM bytes, kept only until the page is rendered

    @property
    def layer(self) -> Layer:
        return self.route.layer

    @property
    def markdown(self) -> bool:
        return self.route.layer.key != "istm"


@dataclass
class Site:
    snap: Snapshot
    docs: dict[str, Doc]
    issues: list[Issue]
    backlinks: dict[str, list[str]]
    cited_by: dict[str, list[str]]
    children: dict[str, list[str]]
    by_id: dict[str, str]
    changed: list[str]

    def resolve(self, target: str) -> str | None:
        """Obsidian's rule: ``[[T]]`` is the file ``T.md`` at the vault root (or ``T`` itself)."""
        if target + ".md" in self.docs:
            return target + ".md"
        if target in self.docs:
            return target
        return None

    def resolve_source(self, pointer: str) -> tuple[str, str | None] | None:
        """A ``sources`` entry ``path[#anchor]`` -> (canonical path, anchor) when it exists."""
        path, _, anchor = pointer.strip().partition("#")
        path = path.strip()
        if path in self.docs:
            return path, anchor.strip() or None
        found = self.resolve(path)
        return (found, anchor.strip() or None) if found else None

    def trail(self, doc: Doc) -> list[tuple[str, Doc | None]]:
        """Root-first ownership trail (XLTM -> LTM -> MTM -> STM) of a structured page."""
        if not doc.layer.structured:
            return []
        chain: list[str] = [doc.path]
        route: Route | None = doc.route
        while route is not None and route.parent_path:
            parent = route.parent_path
            chain.append(parent)
            route = self.docs[parent].route if parent in self.docs else _route(parent)
        return [(path, self.docs.get(path)) for path in reversed(chain)]

    def by_layer(self) -> dict[str, list[Doc]]:
        groups: dict[str, list[Doc]] = {layer.dirname: [] for layer in LAYERS}
        for doc in self.docs.values():
            groups[doc.layer.dirname].append(doc)
        return groups


def page_file(path: str) -> str:
    """Site-relative page file for a canonical path: ``doc/<path without ext>.html``."""
    stem, _, _ = path.rpartition(".")
    folder, _, name = stem.rpartition("/")
    name += ".html"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:  # ".html" is longer than ".md"
        name = "_" + sha256_hex(path.encode("utf-8"))[:24] + ".html"
    return f"{PAGE_DIR}/{folder}/{name}" if folder else f"{PAGE_DIR}/{name}"


def href(from_file: str, to_file: str, fragment: str | None = None) -> str:
    """Relative, percent-encoded URL from one site file to another (works from file://)."""
    here = from_file.split("/")[:-1]
    there = to_file.split("/")
    common = 0
    while common < min(len(here), len(there) - 1) and here[common] == there[common]:
        common += 1
    url = "../" * (len(here) - common) + quote("/".join(there[common:]), safe="/")
    return f"{url}#{quote(fragment, safe='')}" if fragment else url


def build(snap: Snapshot, issues: list[Issue]) -> Site:
    docs: dict[str, Doc] = {}
    changed: list[str] = []
    max_bytes = snap.config.limits["max_file_bytes"]
    for path in sorted(snap.facts):
        facts = snap.facts[path]
        route = snap.routes[path]
        doc = Doc(path, route, facts.title or path, facts.status, page_file(path))
        _load(snap, doc, max_bytes, facts.sha256, changed)
        docs[path] = doc
    site = Site(snap, docs, issues, {}, {}, {}, {}, changed)
    _link(site)
    return site


def _load(snap: Snapshot, doc: Doc, max_bytes: int, sha256: str, changed: list[str]) -> None:
    try:
        raw = read_regular(snap.root, doc.path, max_bytes)
    except ForestError as exc:
        doc.problem = f"the file could not be read ({exc.code})"
        return
    if sha256_hex(raw) != sha256:
        changed.append(doc.path)
        doc.problem = "the file changed while the site was generated; regenerate to be sure"
    if not doc.markdown:
        doc.raw = raw
        return
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        doc.problem = "the file is not valid UTF-8; its body is not shown"
        return
    try:
        meta, body, _ = split_frontmatter(text)
    except FrontmatterError as exc:
        doc.problem = f"{frontmatter_problem(exc)}; the file is shown as text"
        meta, body = {}, text.removeprefix("\ufeff")
    doc.meta = meta
    doc.body = body


def _link(site: Site) -> None:
    backlinks: dict[str, set[str]] = defaultdict(set)
    cited_by: dict[str, set[str]] = defaultdict(set)
    children: dict[str, list[str]] = defaultdict(list)
    for path, doc in site.docs.items():
        facts = site.snap.facts[path]
        if facts.id is not None:
            site.by_id.setdefault(facts.id, path)
        if doc.markdown:
            for link in facts.links:
                target = site.resolve(link.target)
                if target and target != path:
                    backlinks[target].add(path)
        for pointer in _strings(doc.meta.get("sources")):
            found = site.resolve_source(pointer)
            if found and found[0] != path:
                cited_by[found[0]].add(path)
        parent = doc.route.parent_path
        if parent:
            children[parent].append(path)
    site.backlinks = {key: sorted(value) for key, value in backlinks.items()}
    site.cited_by = {key: sorted(value) for key, value in cited_by.items()}
    site.children = dict(children)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _route(path: str) -> Route | None:
    try:
        return parse_route(path)
    except ForestError:
        return None

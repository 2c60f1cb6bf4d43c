"""``structured-context`` and ``apply-structured``: the reviewed sweep of layers 01-04.

``structured-context`` is what a reviewer (a person or a model) reads before
proposing a Structured Sweep Plan: the current bodies of the XLTM document
and of the documents on the retrieve trails for a query, each with its route
and sha256, bounded in size, plus one snapshot hash over every structured
path and hash. It deliberately crosses the body boundary; it writes nothing.

``apply-structured`` applies a plan bound to that snapshot: if any
structured file changed since, it fails with ``snapshot_mismatch``. Changes
are applied parents first (XLTM, LTM, MTM, STM); a ``create`` materializes
missing parents, a ``replace`` must name the exact sha256 of the file it
replaces and keeps the frontmatter keys it does not set. Bodies are stored as
written (``markdown.neutralize``);
the writer adds the title heading, the ``Up:`` link and the child list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import retrieve
from ..digest import sha256_hex
from ..documents import split_frontmatter
from ..envelope import result
from ..errors import ForestError
from ..forest import ForestLike, opened
from ..layers import XLTM_PATH
from ..lockline import DEFAULT_WAIT
from ..routes import ltm_path, mtm_path, parse_route, stm_path
from . import parents, plans
from .daily import resolve_entries
from .markdown import (
    CHILD_HEADINGS,
    body_text,
    clean_text,
    document,
    edit_frontmatter,
    metadata,
    neutralize,
    replace_body,
)
from .transaction import Stage, transact
from .view import View, dump, snapshot_sha256

if TYPE_CHECKING:
    from ..results import WriteResult

MAX_BODY_CHARS = 64 * 1024
MAX_TOTAL_CHARS = 1024 * 1024
ORDER = {"xltm": 1, "ltm": 2, "mtm": 3, "stm": 4}


# --- structured-context -----------------------------------------------------------------------


def structured_context(forest: ForestLike, query: str, limit: int = 10
                       ) -> dict[str, Any]:
    with opened(forest) as forest:
        # A plan is made against exactly what the index vouches for: a changed file
        # fails closed.
        trails = retrieve.retrieve(forest, query, limit=limit, strict=True)["trails"]
        snapshot, count, documents = _context_documents(View(forest), trails)
    return result("structured_context", query=query, snapshot_sha256=snapshot,
                  structured_documents=count, count=len(documents), documents=documents,
                  body_included=True)


def _context_documents(view: View, trails: list[dict[str, Any]]
                       ) -> tuple[str, int, list[dict[str, Any]]]:
    """The snapshot hash, the structured count, and the bounded bodies on the trails."""
    try:
        hashes = view.structured_hashes()
        snapshot, count = snapshot_sha256(hashes), len(hashes)
        wanted = [XLTM_PATH] + [node["path"] for trail in trails for node in trail["nodes"]]
        documents, budget = [], MAX_TOTAL_CHARS
        for path in dict.fromkeys(wanted):
            data = view.read(path)
            if data is None:
                continue
            text = data.decode("utf-8", errors="replace")
            try:
                meta, body, _ = split_frontmatter(text)
            except ValueError:
                meta, body = {}, text
            room = max(0, min(MAX_BODY_CHARS, budget))
            route = parse_route(path)
            documents.append({
                "path": path, "layer": route.layer.dirname, "tree": route.tree,
                "branch": route.branch, "leaf": route.leaf, "title": view.title(path),
                "id": view.facts(path).id, "status": view.facts(path).status,
                "sha256": sha256_hex(data), "size": len(data), "frontmatter": dump(meta),
                "body": body[:room], "truncated": len(body) > room})
            budget -= min(len(body), room)
    finally:
        view.close()
    return snapshot, count, documents


# --- apply-structured -------------------------------------------------------------------------


def target_path(target: Any) -> str:
    layer = target.layer
    if layer == "xltm":
        return XLTM_PATH
    if layer == "ltm":
        return ltm_path(target.tree)
    if layer == "mtm":
        return mtm_path(target.tree, target.branch)
    return stm_path(target.tree, target.branch, target.leaf)


def apply_structured(forest: ForestLike, source: str,
                     wait: float = DEFAULT_WAIT) -> WriteResult:
    plan = plans.load("structured", source)
    redactions = plans.redact_text(plan)

    def prepare(stage: Stage) -> None:
        current = snapshot_sha256(stage.view.structured_hashes())
        if current != plan.snapshot_sha256:
            raise ForestError("snapshot_mismatch", "the structured layers changed since the "
                              "plan's structured-context; read it again and re-plan",
                              {"snapshot_sha256": current})
        entry_ids = [item.entry_id for change in plan.changes for item in change.daily_entries]
        daily = resolve_entries(stage, entry_ids)
        changes = sorted(enumerate(plan.changes), key=lambda item: ORDER[item[1].target.layer])
        applied, dispositions = [], []
        for number, change in changes:
            path = target_path(change.target)
            pointers = [f"{daily[item.entry_id]}#{item.entry_id}" for item in change.daily_entries
                        if item.disposition in ("promoted", "already_covered")]
            sources = parents.checked_sources(stage, change.frontmatter.sources or [])
            if change.operation == "create":
                _create(stage, path, change, sources + pointers)
            else:
                _replace(stage, path, change, pointers)
            applied.append({"change": number, "operation": change.operation, "path": path})
            dispositions += [{"entry_id": item.entry_id, "disposition": item.disposition,
                              "daily": daily[item.entry_id], "target": path}
                             for item in change.daily_entries]
        stage.details.update({"changes": sorted(applied, key=lambda item: item["change"]),
                              "dispositions": dispositions, "redactions": redactions})

    with opened(forest) as forest:
        return transact(forest, "apply_structured", plan.model_dump(mode="json"),
                        plan.transaction_id, prepare, wait)


def _body(change: Any) -> str:
    if not change.body.strip():
        return ""
    return neutralize(clean_text(change.body, "body", "plan_body"))


def _create(stage: Stage, path: str, change: Any, sources: list[str]) -> None:
    if stage.exists(path):
        raise ForestError("target_exists", "a create names a document that exists; use "
                          "replace with its preimage_sha256", {"path": path})
    fields = change.frontmatter
    title = fields.title
    if change.target.layer == "xltm":
        meta = parents.new_meta(stage, "xltm", title, sources=sources, tags=fields.tags)
        stage.put(path, document(meta, title, None, _body(change)))
        return
    new_id = parents.create(stage, path, title, _body(change), {}, sources=sources,
                            tags=fields.tags, supersedes=change.supersedes)
    if change.supersedes is not None:
        parents.supersede(stage, parents.find_by_id(stage, change.supersedes), new_id)


def _replace(stage: Stage, path: str, change: Any, pointers: list[str]) -> None:
    before = stage.view.read(path)
    if before is None:
        raise ForestError("target_missing", "a replace names a document that does not exist",
                          {"path": path})
    if sha256_hex(before) != change.preimage_sha256:
        raise ForestError("preimage_mismatch", "the document is not the one the plan was "
                          "written against", {"path": path, "sha256": sha256_hex(before)})
    text = stage.text(path) or ""
    fields = change.frontmatter
    title = fields.title or stage.title(path)
    updates: dict[str, Any] = {"updated": stage.now}
    if metadata(text).get("title") is not None or fields.title is not None:
        updates["title"] = title
    if fields.tags is not None:
        updates["tags"] = fields.tags
    if fields.sources is not None or pointers:
        listed = fields.sources if fields.sources is not None else \
            parents.add_sources(stage, path, [])
        updates["sources"] = listed + [p for p in pointers if p not in listed]
    text = edit_frontmatter(text, updates)
    layer = parse_route(path).layer.key
    heading = CHILD_HEADINGS.get(layer)
    children = (heading, parents.children(stage, path)) if heading else None
    stage.put(path, replace_body(text, body_text(title, parents.up_of(stage, path),
                                                 _body(change), children)))

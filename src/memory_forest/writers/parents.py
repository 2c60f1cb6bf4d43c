"""The ownership tree: create documents with their parents, and link parents down.

A new LTM, MTM or STM document needs its parent to exist and to link to it;
missing parents are created top-down (XLTM, then LTM, then MTM), each
linking up to its own parent, and each parent that gains a child gets a
``- [[child|title]]`` line in its ``## Trees`` / ``## Branches`` /
``## Leaves`` list. Existing documents are only ever extended by that one
line (and their ``updated`` time); every other byte stays.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ForestError
from ..layers import XLTM_PATH
from ..routes import ancestors, link_target, parent_of, parse_route
from .markdown import CHILD_HEADINGS, add_child_link, document, edit_frontmatter, metadata
from .transaction import Stage

XLTM_TITLE = "Forest root map"


def new_id(layer_key: str) -> str:
    return f"{layer_key}-{os.urandom(8).hex()}"


def new_meta(stage: Stage, layer_key: str, title: str, doc_id: str | None = None,
             **fields: Any) -> dict[str, Any]:
    meta = {"id": doc_id or new_id(layer_key), "title": title, "created": stage.now,
            "updated": stage.now, "status": "active"}
    meta.update({key: value for key, value in fields.items() if value})
    return meta


def up_of(stage: Stage, path: str) -> tuple[str, str] | None:
    parent = parent_of(path)
    if parent is None and path.startswith("00 "):
        parent = XLTM_PATH  # a Life Archive record may point at the root map
    return None if parent is None else (parent, stage.title(parent))


def create(stage: Stage, path: str, title: str, body: str, titles: dict[str, str],
           doc_id: str | None = None, **fields: Any) -> str:
    """Stage a new document at ``path`` (body already neutralized), materializing its parents.

    ``titles`` gives the title of any missing ancestor by path; a missing
    ancestor without one is titled by its own name. Returns the new id.
    """
    ensure_chain(stage, path, titles)
    meta = new_meta(stage, parse_route(path).layer.key, title, doc_id, **fields)
    stage.put(path, document(meta, title, up_of(stage, path), body))
    link_down(stage, path)
    return meta["id"]


def ensure_chain(stage: Stage, path: str, titles: dict[str, str]) -> None:
    for owner in ancestors(path):  # root first, so each owner's own parents exist
        if not stage.exists(owner):
            create(stage, owner, titles.get(owner) or _default_title(owner), "", titles)


def _default_title(path: str) -> str:
    route = parse_route(path)
    return {"xltm": XLTM_TITLE, "ltm": route.tree, "mtm": route.branch}.get(
        route.layer.key) or path


def link_down(stage: Stage, child: str) -> None:
    """Make the parent of ``child`` list it, if it does not link to it already."""
    parent = parent_of(child)
    if parent is None:
        return
    text = stage.text(parent) or ""
    target = link_target(child)
    if any(f"[[{target}{end}" in text for end in ("|", "]]", "#")):
        return
    heading = CHILD_HEADINGS[parse_route(parent).layer.key]
    text = add_child_link(text, heading, child, stage.title(child))
    stage.put(parent, touch(stage, text))


def touch(stage: Stage, text: str) -> str:
    """Set ``updated`` on a document that carries frontmatter; leave others as they are."""
    if not metadata(text) and not text.startswith("---"):
        return text
    return edit_frontmatter(text, {"updated": stage.now})


def append(stage: Stage, path: str, block: str, updates: dict[str, Any]) -> None:
    """Add ``block`` (already neutralized) at the end of an existing document."""
    text = stage.text(path) or ""
    text = edit_frontmatter(text, {"updated": stage.now, **updates})
    stage.put(path, text.rstrip("\n") + "\n\n" + block.strip("\n") + "\n")


def add_to_leaf(stage: Stage, path: str, title: str, block: str, titles: dict[str, str],
                sources: list[str], tags: list[str] | None = None) -> bool:
    """Create the leaf with ``block`` (and its missing parents) or append ``block`` to it.

    Either way its ``sources`` gain ``sources``. Returns whether it was created.
    """
    if stage.exists(path):
        append(stage, path, block, {"sources": add_sources(stage, path, sources)})
        return False
    create(stage, path, title, block, titles, sources=sources, tags=tags)
    return True


def add_sources(stage: Stage, path: str, new: list[str]) -> list[str]:
    """The document's ``sources`` as a list, with ``new`` added (no duplicates)."""
    current = metadata(stage.text(path) or "").get("sources")
    sources = [current] if isinstance(current, str) else list(current or [])
    return sources + [item for item in new if item not in sources]


def children(stage: Stage, path: str) -> list[tuple[str, str]]:
    """(path, title) of every child of an XLTM, LTM or MTM document, on disk or staged."""
    route = parse_route(path)
    if route.layer.key == "xltm":
        folder, found = "02 ltm", [f"02 ltm/{name}" for name in stage.view.listdir("02 ltm")
                                   if name.endswith("_LTM.md")]
    elif route.layer.key == "ltm":
        folder = f"03 mtm/{route.tree}"
        found = [f"{folder}/{name}" for name in stage.view.listdir(folder) if name.endswith(".md")]
    elif route.layer.key == "mtm":
        folder = f"04 stm/{route.tree}/{route.branch}"
        found = [f"{folder}/{name}" for name in stage.view.listdir(folder) if name.endswith(".md")]
    else:
        return []
    found += [p for p in stage.changes if parent_of(p) == path and p not in found]
    return [(child, stage.title(child)) for child in sorted(found)]


def find_by_id(stage: Stage, doc_id: str) -> str:
    """The path of the record with this id (found in the index, confirmed on disk)."""
    view = stage.view
    path = next((p for p in view.paths_with_ids({doc_id}).get(doc_id, [])
                 if (facts := view.facts(p)) is not None and facts.id == doc_id), None)
    if path is None:
        raise ForestError("supersede_target_missing", "no record has this id",
                          {"id": doc_id[:200]})
    return path


def supersede(stage: Stage, path: str, new_id: str) -> None:
    """Mark the record at ``path`` superseded by ``new_id``.

    Only the frontmatter changes (``status``, ``superseded_by``, ``updated``):
    history is never rewritten in place.
    """
    text = stage.text(path) or ""
    status = metadata(text).get("status", "active")
    if status != "active":
        raise ForestError("already_superseded", "only an active record can be superseded",
                          {"path": path, "status": str(status)})
    stage.put(path, edit_frontmatter(text, {"status": "superseded", "superseded_by": new_id,
                                            "updated": stage.now}))


def checked_sources(stage: Stage, sources: list[str]) -> list[str]:
    """Each source is a canonical relative path (optionally ``#anchor``) that exists."""
    for source in sources:
        path, _, anchor = source.partition("#")
        try:
            parse_route(path)
        except ForestError as exc:
            raise ForestError("source_not_canonical", "a source is not a canonical path",
                              {"source": source[:200], "reason": exc.code}, exit_code=2) from None
        facts = stage.view.facts(path)
        if facts is None or (anchor and anchor not in [*facts.anchors, *facts.event_ids]):
            raise ForestError("source_missing", "a source names a file or anchor that does not "
                              "exist", {"source": source[:200]})
    return list(sources)

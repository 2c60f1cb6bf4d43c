"""What ``move`` and ``forget`` share: naming the document, finding who links to it,
rewriting or dropping those links, and the ISTM event that records the change.

A link to a document is found through the index's link table and re-verified
against the linking file as it is now; the layers that may link to the
document are re-checked against the disk first, so a note written by hand
since the last index is found too.
"""

from __future__ import annotations

import re
from typing import Any

from ..digest import sha256_hex
from ..envelope import result
from ..errors import ForestError, usage_error
from ..forest import Forest
from ..layers import LAYERS
from ..routes import link_target, parse_route
from .capture import stage_events
from .parents import touch
from .transaction import Prepare, Stage
from .view import View

FIND_HINT = "find it with 'memory-forest route ROOT WORDS'"


def resolve(stage: Stage, source: str) -> str:
    """The root-relative path ``source`` names: a path (``.md`` optional) or a document id.

    A path is returned whether or not the file exists (``forget`` tidies a
    parent whose child is gone); an id must name an existing document.
    """
    if "/" in source:
        path = source if source.endswith(".md") else source + ".md"
        try:
            parse_route(path)
        except ForestError as exc:
            raise usage_error("document_path_invalid", "SOURCE is not a canonical document "
                              f"path or an id; {FIND_HINT}", source=source[:200],
                              reason=exc.code) from None
        return path
    view = stage.view
    found = [path for path in view.paths_with_ids({source}).get(source, [])
             if (facts := view.facts(path)) is not None and facts.id == source]
    if not found:
        raise missing(source)
    return found[0]


def missing(source: str) -> ForestError:
    return ForestError("document_missing", f"no document has this path or id; {FIND_HINT}",
                       {"source": source[:200]})


def linkers(stage: Stage, paths: list[str]) -> dict[str, list[str]]:
    """For each path, the other files that hold a wikilink to it now.

    Up links are not in the index's link table: a document's children are
    found by their path, and the writers that call this move or remove them.
    """
    view = stage.view
    layers = {parse_route(path).layer.key for path in paths}
    for layer in LAYERS:  # re-check what may link here, for notes written since the index
        if layers & layer.links_to:
            view.layer(layer.key)
    found: dict[str, list[str]] = {}
    for path in paths:
        target = link_target(path)
        candidates = view.linking_to(target)
        candidates |= {stale for stale, facts in view.stale.items() if facts is not None}
        holders = []
        for candidate in sorted(candidates - {path}):
            facts = view.stale.get(candidate) if candidate in view.stale else view.facts(candidate)
            if facts is not None and any(link.target == target for link in facts.links):
                holders.append(candidate)
        found[path] = holders
    return found


def _link_pattern(target: str) -> re.Pattern[str]:
    # An escaped '\[\[' is text a writer neutralized, never a link.
    return re.compile(r"(?<!\\)\[\[" + re.escape(target) + r"(?:\.md)?(?=[|#\]])")


def retarget(stage: Stage, path: str, old: str, new: str) -> None:
    """Point every wikilink of ``path`` to ``old`` at ``new`` (aliases and headings kept)."""
    text = stage.text(path) or ""
    changed = _link_pattern(link_target(old)).sub(lambda _: "[[" + link_target(new), text)
    if changed != text:
        stage.put(path, touch(stage, changed))


def drop_child(stage: Stage, parent: str, child: str) -> bool:
    """Remove the list line ``- [[child|...]]`` from ``parent``; whether one was there."""
    text = stage.text(parent)
    if text is None:
        return False
    line = re.compile(r"^[ \t]*[-*+][ \t]+" + _link_pattern(link_target(child)).pattern
                      + r"(?:\|[^\]\n]*)?\]\][ \t]*\r?\n?", re.MULTILINE)
    changed = line.sub("", text)
    if changed == text:
        return False
    stage.put(parent, touch(stage, changed))
    return True


def holds_link(stage: Stage, path: str, target: str) -> bool:
    text = stage.text(path)
    return text is not None and _link_pattern(link_target(target)).search(text) is not None


def record(stage: Stage, path: str) -> dict[str, Any]:
    """What the ISTM event and the receipt say of a document: path, id and sha256, no text."""
    data = stage.view.read(path)
    facts = stage.view.facts(path)
    return {"path": path, "id": None if facts is None else facts.id,
            "sha256": None if data is None else sha256_hex(data)}


def log(stage: Stage, kind: str, payload: dict[str, Any]) -> None:
    """The ISTM event of a move or a removal, in today's shard, in the same transaction."""
    captured, records = stage_events(stage, [{"observed_at": stage.now,
                                              "source": "memory-forest", "kind": kind,
                                              "payload": payload}])
    stage.details.update({"event_id": records[0]["event_id"], "shard": captured["shard"]})


def preview(forest: Forest, operation: str, prepare: Prepare) -> dict[str, Any]:
    """A dry run: stage the write over the forest as it is, then say what it would do.

    No lock is taken and nothing is written; the answer may be out of date by
    the time a real run takes the lock, which plans again.
    """
    if forest.reader() is None:
        raise ForestError("index_missing", "the forest has no index; run "
                          "'memory-forest index ROOT'")
    view = View(forest)
    try:
        stage = Stage(view)
        prepare(stage)
        changes = sorted(path for path, data in stage.changes.items()
                         if view.read(path) != data)
        removes = sorted(path for path in stage.removed if view.exists(path))
    finally:
        view.close()
    details = {key: value for key, value in stage.details.items()
               if key not in ("event_id", "shard")}
    return result(operation, dry_run=True, would_change=changes, would_remove=removes,
                  **details)

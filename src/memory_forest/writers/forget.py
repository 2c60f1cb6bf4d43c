"""``forget``: remove a leaf, or an empty branch or tree, in one journaled transaction.

``forget ROOT SOURCE`` removes the document and takes its line off its
parent's child list; ``--recursive`` removes a branch or a tree with
everything under it. An ISTM event (kind ``forget``) records what went: each
file's path, id and sha256, never its text. Wikilinks elsewhere that pointed
at a removed file are left as they are and named in the receipt
(``dangling``): they are warnings, and those files stay indexed.

A leaf already deleted by hand is forgotten too: its parent's line naming it
is removed (``tidied``), which is what the ``link_child_missing`` warning asks for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ForestError
from ..forest import ForestLike, opened
from ..lockline import DEFAULT_WAIT
from ..routes import children_prefix, parse_route
from . import relink
from .transaction import Stage, transact

if TYPE_CHECKING:
    from ..results import ForgetResult

# The layers of the ownership tree below the root map: XLTM, Life Archive, Daily and
# ISTM are records of what happened and stay.
FORGETTABLE = ("ltm", "mtm", "stm")


def forget(forest: ForestLike, source: str, recursive: bool = False,
           dry_run: bool = False, transaction_id: str | None = None,
           wait: float = DEFAULT_WAIT) -> ForgetResult:

    def prepare(stage: Stage) -> None:
        path = relink.resolve(stage, source)
        route = parse_route(path)
        if route.layer.key not in FORGETTABLE:
            raise ForestError("forget_layer_unsupported", "only a tree (LTM), a branch (MTM) or "
                              "a leaf (STM) can be forgotten; the root map, Daily, ISTM and the "
                              "Life Archive are kept", {"path": path})
        parent = route.parent_path
        if not stage.exists(path):
            if parent is None or not relink.drop_child(stage, parent, path):
                raise relink.missing(source)
            stage.details.update({"removed": [], "tidied": parent, "dangling": []})
            relink.log(stage, "forget", {"removed": [], "tidied": parent, "path": path})
            return
        below = _descendants(stage, path)
        if below and not recursive:
            raise ForestError("forget_not_empty", f"it has {len(below)} document(s) under it; "
                              "forget those first, or repeat with --recursive to remove them "
                              "all", {"path": path, "documents": len(below)})
        gone = [path, *below]
        removed = [relink.record(stage, each) for each in gone]
        links = relink.linkers(stage, gone)
        for each in gone:
            stage.remove(each)
        tidied = parent if parent is not None and relink.drop_child(stage, parent, path) else None
        dangling = [{"path": holder, "target": target}
                    for target, holders in links.items() for holder in holders
                    if stage.exists(holder) and relink.holds_link(stage, holder, target)]
        relink.log(stage, "forget", {"removed": removed, "tidied": tidied})
        stage.details.update({"removed": removed, "tidied": tidied, "dangling": dangling})

    with opened(forest) as forest:
        if dry_run:
            return relink.preview(forest, "forget", prepare)
        return transact(forest, "forget", {"source": source, "recursive": recursive},
                        transaction_id, prepare, wait)


def _descendants(stage: Stage, path: str) -> list[str]:
    """Every document owned by ``path``, on disk: a tree's branches and their leaves."""
    prefix = children_prefix(path)
    if prefix is None:
        return []
    folder = prefix.rstrip("/")
    found = []
    for name in stage.view.listdir(folder):
        child = f"{folder}/{name}"
        if name.endswith(".md") and not stage.view.is_dir(child):
            found += [child, *_descendants(stage, child)]
    return found

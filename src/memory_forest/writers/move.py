"""``move``: an STM leaf goes to another branch (or another name), keeping its id.

``move ROOT SOURCE --to TREE/BRANCH[/LEAF]`` is one journaled transaction:
the file is written at its new path with its ``Up:`` link pointing at the new
branch and removed from the old one; the old branch's ``## Leaves`` list loses
its line and the new branch's gains one; every other wikilink to the leaf (a
branch note written by hand, say) is pointed at the new path; an ISTM event
(kind ``move``: id, both paths, sha256, never the text) records it. Only
leaves move: a branch or a tree is reorganized by a sweep plan.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import ForestError, usage_error
from ..forest import Forest
from ..lockline import DEFAULT_WAIT
from ..routes import link_target, mtm_path, parse_route, stm_path
from . import parents, relink
from .markdown import check_linkable, wikilink
from .transaction import Stage, transact


def parse_to(to: str) -> tuple[str, str, str | None]:
    """(tree, branch, leaf or None) of ``--to TREE/BRANCH[/LEAF]``."""
    parts = to.split("/")
    if len(parts) not in (2, 3):
        raise usage_error("move_target_invalid", "--to is TREE/BRANCH or TREE/BRANCH/LEAF "
                          "(names, not a path); list branches with 'memory-forest route ROOT "
                          "WORDS'", to=to[:200])
    for segment, what in zip(parts, ("tree", "branch", "leaf"), strict=False):
        try:
            check_linkable(segment, what)
        except ForestError as exc:
            raise usage_error("move_target_invalid", f"--to: {exc.message}", to=to[:200],
                              reason=exc.code) from None
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def move(forest: Forest | str | Path, source: str, to: str, dry_run: bool = False,
         transaction_id: str | None = None, wait: float = DEFAULT_WAIT) -> dict[str, Any]:
    tree, branch, leaf = parse_to(to)

    def prepare(stage: Stage) -> None:
        old = relink.resolve(stage, source)
        if not stage.exists(old):
            raise relink.missing(source)
        route = parse_route(old)
        if route.layer.key != "stm":
            raise ForestError("move_not_a_leaf", "only an STM leaf moves; reorganize a branch "
                              "or a tree with a sweep plan ('memory-forest apply-structured')",
                              {"path": old})
        new = stm_path(tree, branch, leaf or route.leaf or "")
        new_parent = mtm_path(tree, branch)
        if stage.exists(new):
            raise ForestError("move_target_exists", "a leaf exists at the target; choose "
                              "another name with --to TREE/BRANCH/LEAF, or 'memory-forest "
                              "forget' the other one first", {"path": new})
        if not stage.exists(new_parent):
            raise ForestError("move_branch_missing", "the target branch does not exist; "
                              "create it first ('memory-forest remember ROOT --tree T --branch "
                              "B --leaf L ...' makes missing parents)", {"path": new_parent})
        found = relink.linkers(stage, [old])[old]
        moved = relink.record(stage, old)
        old_parent = route.parent_path or ""
        stage.put(new, _up_to(stage, stage.text(old) or "", old_parent, new_parent))
        stage.remove(old)
        relink.drop_child(stage, old_parent, old)
        for path in found:
            relink.retarget(stage, path, old, new)
        parents.link_down(stage, new)
        relink.log(stage, "move", {"id": moved["id"], "from": old, "to": new,
                                   "sha256": moved["sha256"]})
        stage.details.update({"source": old, "path": new, "id": moved["id"],
                              "relinked": [path for path in found if path != old_parent]})

    if dry_run:
        return relink.preview(forest, "move", prepare)
    return transact(forest, "move", {"source": source, "to": to}, transaction_id, prepare, wait)


def _up_to(stage: Stage, text: str, old_parent: str, new_parent: str) -> str:
    """The leaf's text with its ``Up:`` link naming the new branch (and ``updated`` set)."""
    up = re.compile(r"^(Up:[ \t]*)\[\[" + re.escape(link_target(old_parent))
                    + r"(?:\.md)?(?:\|[^\]\n]*)?\]\]", re.MULTILINE)
    link = wikilink(new_parent, stage.title(new_parent))
    return parents.touch(stage, up.sub(lambda match: match.group(1) + link, text, count=1))

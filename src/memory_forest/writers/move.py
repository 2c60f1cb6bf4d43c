"""``move``: a leaf goes to another branch, or a branch to another tree, keeping ids.

``move ROOT SOURCE --to TREE/BRANCH[/LEAF]`` moves an STM leaf; ``move ROOT
SOURCE --to TREE[/BRANCH]`` moves an MTM branch with every leaf under it. One
journaled transaction: each document is written at its new path with its
``Up:`` link naming its new parent and removed from its old one; the old
parent's child list loses the line and the new parent's gains one; every
other wikilink to a moved document (a branch note written by hand, say) is
pointed at its new path; an ISTM event (kind ``move``: ids, both paths,
sha256, never the text) records it. A tree is reorganized by a sweep plan.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import ForestError, usage_error
from ..forest import ForestLike, opened
from ..lockline import DEFAULT_WAIT
from ..routes import children_prefix, link_target, mtm_path, parent_of, parse_route, stm_path
from . import parents, relink
from .markdown import check_linkable, wikilink
from .transaction import Stage, transact

if TYPE_CHECKING:
    from ..results import MoveResult

# How many names --to takes, by the layer of what moves: (at least, at most).
_TO_SHAPES = {"stm": (2, 3, "TREE/BRANCH or TREE/BRANCH/LEAF"),
              "mtm": (1, 2, "TREE or TREE/BRANCH")}


def split_to(to: str) -> list[str]:
    """The names of ``--to``, each checked; how many it needs depends on what moves."""
    parts = to.split("/")
    if not 1 <= len(parts) <= 3:
        raise _bad_to(to, "TREE/BRANCH[/LEAF] for a leaf, TREE[/BRANCH] for a branch")
    for segment, what in zip(parts, ("tree", "branch", "leaf"), strict=False):
        try:
            check_linkable(segment, what)
        except ForestError as exc:
            raise usage_error("move_target_invalid", f"--to: {exc.message}", to=to[:200],
                              reason=exc.code) from None
    return parts


def _bad_to(to: str, shape: str) -> ForestError:
    return usage_error("move_target_invalid", f"--to is {shape} (names, not a path); list "
                       "branches with 'memory-forest route ROOT WORDS'", to=to[:200])


def move(forest: ForestLike, source: str, to: str, dry_run: bool = False,
         transaction_id: str | None = None, wait: float = DEFAULT_WAIT) -> MoveResult:
    names = split_to(to)

    def prepare(stage: Stage) -> None:
        stage.details.update(stage_move(stage, source, names, to))

    with opened(forest) as forest:
        if dry_run:
            return relink.preview(forest, "move", prepare)
        return transact(forest, "move", {"source": source, "to": to}, transaction_id,
                        prepare, wait)


def stage_move(stage: Stage, source: str, names: list[str], to: str) -> dict[str, Any]:
    """Stage the move of ``source`` to ``names`` (``split_to`` of ``to``) and its ISTM event;
    return what the receipt says of it. ``proposals accept`` stages several in one transaction.
    """
    old = relink.resolve(stage, source)
    if not stage.exists(old):
        raise relink.missing(source)
    route = parse_route(old)
    if route.layer.key not in _TO_SHAPES:
        raise ForestError("move_layer_unsupported", "only an STM leaf or an MTM branch "
                          "moves; reorganize a tree with a sweep plan ('memory-forest "
                          "apply-structured')", {"path": old})
    new = target_path(route.layer.key, names, to, route.leaf or route.branch or "")
    mapping = _mapping(stage, old, new)
    parent = parent_of(new) or ""
    if not stage.exists(parent):
        code = "move_branch_missing" if route.layer.key == "stm" else "move_tree_missing"
        raise ForestError(code, "the target branch or tree does not exist; create it "
                          "first ('memory-forest remember ROOT --tree T --branch B --leaf L "
                          "...' makes missing parents)", {"path": parent})
    found = relink.linkers(stage, list(mapping))
    moved = [{**relink.record(stage, before), "to": after}
             for before, after in mapping.items()]
    for before, after in mapping.items():
        stage.put(after, _up_to(stage, stage.text(before) or "", parent_of(before) or "",
                                parent_of(after) or ""))
        stage.remove(before)
    relink.drop_child(stage, parent_of(old) or "", old)
    parents.link_down(stage, new)
    relinked: set[str] = set()
    for target, holders in found.items():
        for holder in holders:
            relink.retarget(stage, mapping.get(holder, holder), target, mapping[target])
            relinked.add(holder)
    relink.log(stage, "move", {"moved": [{"id": item["id"], "from": item["path"],
                                          "to": item["to"], "sha256": item["sha256"]}
                                         for item in moved]})
    return {"source": old, "path": new, "id": moved[0]["id"],
            "moved": [{"from": item["path"], "to": item["to"], "id": item["id"]}
                      for item in moved],
            "relinked": sorted(relinked - set(mapping) - {parent_of(old)})}


def target_path(layer: str, names: list[str], to: str, name: str) -> str:
    """The path ``--to`` names for a document of ``layer`` (an STM leaf or an MTM branch)
    whose own name is ``name`` when ``--to`` leaves it out; ``supersede --to`` shares it."""
    fewest, most, shape = _TO_SHAPES[layer]
    if not fewest <= len(names) <= most:
        raise _bad_to(to, shape)
    if layer == "stm":
        return stm_path(names[0], names[1], names[2] if len(names) == 3 else name)
    return mtm_path(names[0], names[1] if len(names) == 2 else name)


def _mapping(stage: Stage, old: str, new: str) -> dict[str, str]:
    """Old path -> new path of every document that moves: the source first, then (for a
    branch) its leaves. Refuses a target that is taken, or a branch whose leaf folder
    already holds files there."""
    if stage.exists(new):
        raise _taken(new)
    mapping = {old: new}
    before, after = children_prefix(old), children_prefix(new)
    if before is None or after is None:
        return mapping
    if stage.view.listdir(after.rstrip("/")):
        raise _taken(after.rstrip("/"))
    for name in stage.view.listdir(before.rstrip("/")):
        if name.endswith(".md"):
            mapping[before + name] = after + name
    return mapping


def _taken(path: str) -> ForestError:
    return ForestError("move_target_exists", "a document exists at the target; choose another "
                       "name in --to, or 'memory-forest forget' the other one first",
                       {"path": path})


def _up_to(stage: Stage, text: str, old_parent: str, new_parent: str) -> str:
    """The document's text with its ``Up:`` link naming its new parent (``updated`` set)."""
    if old_parent != new_parent:
        up = re.compile(r"^(Up:[ \t]*)\[\[" + re.escape(link_target(old_parent))
                        + r"(?:\.md)?(?:\|[^\]\n]*)?\]\]", re.MULTILINE)
        link = wikilink(new_parent, stage.title(new_parent))
        text = up.sub(lambda match: match.group(1) + link, text, count=1)
    return parents.touch(stage, text)


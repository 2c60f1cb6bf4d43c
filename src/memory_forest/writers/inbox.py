"""An inbox that empties: ``consolidate`` proposes where inbox leaves go now, and
``proposals accept`` moves them there.

Each leaf of ``04 stm/inbox/inbox/`` is placed again as if it were a new fact
(its title and prose, through ``placement.place``, which never proposes the
inbox's own branch): a confident placement (rule ``confident`` or ``dense``)
becomes a proposed move to that branch. The leaves left over are grouped by
a topical word they share; a group of at least ``MIN_CLUSTER`` leaves becomes
a proposed new branch, titled by the words every leaf of the group holds, in
the tree placement finds nearest to the group's text (or a new tree of that
name when no tree is near). Accepting moves each leaf with ``move``'s own
staging, so its id, its parents' child lists and every link to it follow.

A leaf another stored proposal names, or that a review decision names (the
decision event lists the leaf ids it covered), is never proposed again.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ..digest import sha256_hex
from ..documents import split_frontmatter
from ..errors import ForestError
from ..forest import Forest
from ..jsonio import loads_strict
from ..layers import LAYERS
from ..placement import INBOX_BRANCH, INBOX_TREE, place, topical
from ..routes import ltm_path, mtm_path, parse_route, stm_path
from ..text import query_terms, slug
from . import parents
from .move import stage_move
from .transaction import Stage

# Two leaves that share a word are often a coincidence; three that come back to one topic
# are a recurring subject, the point at which a branch earns the extra hop in every trail.
MIN_CLUSTER = 3
TITLE_WORDS = 3  # a new branch's title: at most this many of the shared words
INBOX = f"04 stm/{INBOX_TREE}/{INBOX_BRANCH}"
# What the writers add around a fact: the line before it, a Daily entry's sources, and the
# pointers they quote, whose words (istm, jsonl) say nothing of the fact.
_PROVENANCE = re.compile(r"^(?:(?:Remembered|Promoted from) .*`:|Sources: .*)$")
_QUOTED = re.compile(r"`[^`\n]*`")
_ISTM = next(layer.dirname for layer in LAYERS if layer.key == "istm")


def inbox_leaves(view: Any) -> list[str]:
    return [f"{INBOX}/{name}" for name in view.listdir(INBOX) if name.endswith(".md")]


def leaf_text(view: Any, path: str) -> str:
    """A leaf's title and prose: what it says, without its heading, Up link and the line a
    writer put before the fact."""
    facts = view.facts(path)
    try:
        _, body, _ = split_frontmatter(view.text(path) or "")
    except ValueError:
        body = ""
    prose = [_QUOTED.sub(" ", line) for line in body.split("\n") if line.strip()
             and not line.startswith(("# ", "Up:")) and not _PROVENANCE.match(line)]
    return " ".join([facts.title if facts is not None else "", *prose]).strip()


def decided_leaves(forest: Forest, view: Any) -> set[str]:
    """The leaf ids any review decision names, read from the ISTM shards themselves (the
    index keeps a decision's pointers, and a leaf is named by its id, which a move keeps)."""
    found: set[str] = set()
    for name in view.listdir(_ISTM):
        data = view.read(f"{_ISTM}/{name}") if name.endswith(".jsonl") else None
        for line in (data or b"").split(b"\n"):
            if b'"leaves"' not in line:
                continue
            try:
                record = loads_strict(line)
            except ValueError:
                continue  # a damaged line is the shard's issue, reported by validate
            payload = record.get("payload") if isinstance(record, dict) else None
            if isinstance(payload, dict) and isinstance(payload.get("leaves"), list):
                found.update(item for item in payload["leaves"] if isinstance(item, str))
    return found


def propose(forest: Forest, view: Any, excluded: set[str], limit: int
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(moves, branches) for at most ``limit`` inbox leaves whose id is not ``excluded``."""
    waiting: list[tuple[str, str, str]] = []  # path, id, text
    for path in inbox_leaves(view):
        facts = view.facts(path)
        if facts is None or facts.id is None or facts.id in excluded or facts.status != "active":
            continue
        waiting.append((path, facts.id, leaf_text(view, path)))
    moves, left = [], []
    for path, leaf_id, text in waiting[:limit]:
        found = place(forest, text)
        if found.action == "inbox":  # short of confident: the leaf waits where it is
            left.append((path, leaf_id, text))
            continue
        moves.append(_move(view, path, leaf_id, found.tree, found.branch, found.as_dict()))
    return moves, _branches(forest, view, left)


def _move(view: Any, path: str, leaf_id: str, tree: str, branch: str,
          placement: dict[str, Any]) -> dict[str, Any]:
    """The proposed move; the leaf keeps its file name unless the branch has one like it."""
    name = parse_route(path).leaf or ""
    if view.exists(stm_path(tree, branch, name)):
        name = f"{name}-{leaf_id.rsplit('-', 1)[-1][:8]}"
    return {"id": leaf_id, "source": {"pointer": path, "fingerprint": sha256_hex(
        view.read(path) or b""), "observed_at": None},
        "placement": {"tree": tree, "branch": branch, "leaf": name,
                      "title": view.title(path), "action": "new_leaf",
                      "score": float(placement.get("score") or 0.0),
                      "reason": placement.get("reason") or {}}}


def _branches(forest: Forest, view: Any, left: list[tuple[str, str, str]]
              ) -> list[dict[str, Any]]:
    """Greedy, most shared word first: each leaf joins at most one new branch."""
    words = {leaf_id: {term.casefold() for term in query_terms(text) if topical(term)}
             for _, leaf_id, text in left}
    proposed, taken, branches_taken = [], set(), set()
    while True:
        counts = Counter(word for leaf_id, held in words.items() if leaf_id not in taken
                         for word in held)
        common = [(number, word) for word, number in counts.items() if number >= MIN_CLUSTER]
        if not common:
            return proposed
        _, word = max(common, key=lambda item: (item[0], len(item[1]), item[1]))
        group = [item for item in left if item[1] not in taken and word in words[item[1]]]
        taken.update(leaf_id for _, leaf_id, _ in group)
        shared = set.intersection(*(words[leaf_id] for _, leaf_id, _ in group))
        ordered = [term for term in query_terms(group[0][2]) if term.casefold() in shared]
        title = " ".join(ordered[:TITLE_WORDS]).capitalize() or word.capitalize()
        tree, branch = _home(forest, view, " ".join(text for *_, text in group), title,
                             shared, branches_taken)
        branches_taken.add((tree, branch))
        why = {"rule": "new_branch", "terms": sorted(shared)[:50]}
        proposed.append({"tree": tree, "branch": branch, "title": title,
                         "terms": sorted(shared)[:50],
                         "leaves": [_move(view, path, leaf_id, tree, branch, {"reason": why})
                                    for path, leaf_id, _ in group]})


def _home(forest: Forest, view: Any, text: str, title: str, shared: set[str],
          taken: set[tuple[str, str]]) -> tuple[str, str]:
    """The tree of the branch placement finds nearest to the group, when that branch holds
    a word the leaves share (confident or not: the branch itself does not fit, its tree
    may); else a new tree named by the title. The branch is the title's slug, numbered
    when taken."""
    reason = place(forest, text).reason
    near = reason.get("branch")
    fits = near and shared & {term.casefold() for term in reason.get("matched_terms") or []}
    base = slug(title, "topic")
    tree = (parse_route(near).tree or base) if fits else base
    branch, number = base, 1
    while view.exists(mtm_path(tree, branch)) or (tree, branch) in taken:
        number += 1
        branch = f"{base}-{number}"
    return tree, branch


def leaf_ids(proposal: Any) -> list[str]:
    """The ids of every inbox leaf a proposal would move."""
    return [move.id for move in proposal.moves] + [
        move.id for branch in proposal.branches for move in branch.leaves]


def stale_leaves(view: Any, proposal: Any) -> list[dict[str, str]]:
    """Inbox leaves that are gone or changed since the proposal was made."""
    found = []
    for move in [*proposal.moves, *(item for branch in proposal.branches
                                    for item in branch.leaves)]:
        data = view.read(move.source.pointer)
        reason = "missing" if data is None else \
            "changed" if sha256_hex(data) != move.source.fingerprint else None
        if reason is not None:
            found.append({"pointer": move.source.pointer, "reason": reason})
    return found


def stage(stage: Stage, proposal: Any) -> dict[str, Any]:
    """Stage every move and new branch of ``proposal``; what the receipt says of them."""
    moved, created = [], []
    for branch in proposal.branches:
        path = mtm_path(branch.tree, branch.branch)
        if stage.exists(path):
            raise ForestError("move_target_exists", "a branch with the proposed name was "
                              "made since; run consolidate again", {"path": path})
        parents.create(stage, path, branch.title, "", {ltm_path(branch.tree): branch.title})
        created.append(path)
    for move in [*proposal.moves, *(item for branch in proposal.branches
                                    for item in branch.leaves)]:
        target = move.placement
        names = [target.tree, target.branch, target.leaf]
        done = stage_move(stage, move.source.pointer, names, "/".join(names))
        moved.append({"id": done["id"], "from": done["source"], "to": done["path"]})
    for key in ("event_id", "shard"):  # each move's own event: the receipt lists the moves
        stage.details.pop(key, None)
    return {"moved": moved, "branches": created}

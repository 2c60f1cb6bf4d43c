"""``remember``: one durable fact now, captured and filed in one transaction.

The content becomes an ISTM event (redacted like any capture) and a block in
the STM leaf ``04 stm/<tree>/<branch>/<leaf>.md``: a new leaf is created with
its missing parents, an existing one gets the block appended. Either way the
leaf's ``sources`` point at the event. A title names a new leaf only (without
one, the leaf's name gives it); an existing leaf keeps its own, and the result
says ``title_ignored`` when one was given.

Without a tree, branch and leaf, ``placement.place`` chooses them under the
lock, against the index the write then updates: a new leaf under the branch
the fact matches with confidence (or, with ``append``, that branch's best
leaf of the fact's own instance: ``instances``), else a new leaf in the
inbox. The receipt's ``placement`` says where and why. A dry run answers the
same question without the lock, the index build or any write.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..envelope import result
from ..errors import ForestError, usage_error
from ..forest import Forest, ForestLike, opened
from ..lockline import DEFAULT_WAIT
from ..placement import INBOX_BRANCH, INBOX_TREE, Placement, place
from ..routes import ltm_path, mtm_path, stm_path
from . import parents
from .capture import check_event, stage_events
from .markdown import check_linkable, check_title, clean_text, neutralize
from .receipts import now
from .redact import Counts, redact_text, redact_value
from .transaction import Stage, transact

if TYPE_CHECKING:
    from ..results import RememberResult

MAX_CONTENT_BYTES = 256 * 1024
INBOX_TITLE = "Inbox"


def entry_block(when: str, pointer: str, text: str) -> str:
    """One remembered block: when and from which source, then the text as given."""
    return f"Remembered {when} from `{pointer}`:\n\n{neutralize(text)}"


def default_title(leaf: str) -> str:
    """The title of a new leaf named without one: ``kimchi-batch-7`` -> ``Kimchi batch 7``.

    Hyphens and underscores become spaces; a first word in lower case gets a capital
    (``iPhone-notes`` stays ``iPhone notes``).
    """
    words = leaf.replace("-", " ").replace("_", " ").split()
    if not words:
        return leaf
    if words[0].islower():
        words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words)


def _added(*parts: Counts) -> Counts:
    return {rule: sum(part.get(rule, 0) for part in parts) for part in parts for rule in part}


def read_content(raw: bytes) -> str:
    """Content given as bytes (a file, or stdin): UTF-8 text, without a byte-order mark."""
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise usage_error("content_not_utf8", "the input is not UTF-8") from None


def remember(forest: ForestLike, tree: str | None = None, branch: str | None = None,
             leaf: str | None = None, title: str | None = None, content: str | None = None,
             source: str = "memory-forest", tree_title: str | None = None,
             branch_title: str | None = None, tag: list[str] | None = None,
             append: bool = False, dry_run: bool = False,
             transaction_id: str | None = None, wait: float = DEFAULT_WAIT) -> RememberResult:
    """File ``content`` where the caller says (tree, branch and leaf), or where ``place`` finds
    it belongs; with ``dry_run`` only say where, writing nothing."""
    route = (tree, branch, leaf)
    explicit = all(part is not None for part in route)
    if not explicit and any(part is not None for part in route):
        raise usage_error("placement_incomplete", "give all of --tree, --branch and --leaf, "
                          "or none of them and let remember place the fact")
    if content is None:
        raise usage_error("content_required", "give the fact: as an argument, --content or "
                          "--file")
    if explicit:
        for segment, what in zip(route, ("tree", "branch", "leaf"), strict=True):
            check_linkable(segment, what)
    title = None if title is None else check_title(title)
    # Text outside the event (parent titles, tags) is redacted here; each part keeps its
    # own count, added to the receipt only if the part is stored (a parent that exists
    # keeps its title, an existing leaf its tags).
    named: dict[str, tuple[str, Counts]] = {}
    for kind, value in (("tree", tree_title), ("branch", branch_title)):
        if value:
            counts: Counts = {}
            named[kind] = (redact_text(check_title(value), counts), counts)
    content = clean_text(content)
    if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
        raise ForestError("content_too_large", f"content is at most {MAX_CONTENT_BYTES} bytes",
                          exit_code=2)
    tag_counts: Counts = {}
    tags = redact_value([check_title(one, "tag") for one in tag or []], tag_counts)
    request = {"tree": tree, "branch": branch, "leaf": leaf, "title": title, "content": content,
               "source": source, "tree_title": tree_title, "branch_title": branch_title,
               "tags": tags}
    if not explicit:
        request["append"] = append  # only here: a receipt of an explicit write keeps its hash

    def event(observed_at: str, where: dict[str, str] | None,
              leaf_title: str | None) -> dict[str, Any]:
        payload: dict[str, Any] = {"text": content, "route": where}
        if leaf_title is not None:
            payload["title"] = leaf_title
        return {"observed_at": observed_at, "source": source, "kind": "remember",
                "payload": payload}

    fixed = {"tree": tree, "branch": branch, "leaf": leaf} if explicit else None
    check_event(event(now(), fixed, title), 1)
    if dry_run:
        with opened(forest) as handle:
            return _preview(handle, content, fixed, append, title)

    def prepare(stage: Stage) -> None:
        placement = None
        where, leaf_title = fixed, title
        if where is None:  # placed under the lock, against the index this write updates
            placement = _place(stage.view.forest, content, append, title)
            where = {"tree": placement.tree, "branch": placement.branch,
                     "leaf": placement.leaf}
            if placement.action != "append":
                leaf_title = placement.title
        path = stm_path(where["tree"], where["branch"], where["leaf"])
        captured, records = stage_events(stage, [event(stage.now, where, leaf_title)])
        event_id = records[0]["event_id"]
        pointer = f"{captured['shard']}#{event_id}"
        payload = records[0]["payload"]  # redacted: what reaches the leaf is what was stored
        block = entry_block(stage.now, pointer, payload["text"])
        titles = _parent_titles(where, named, placement is not None)
        new_parents = [kind for kind, owner in (("tree", ltm_path(where["tree"])),
                                                ("branch", mtm_path(where["tree"],
                                                                    where["branch"])))
                       if kind in named and not stage.exists(owner)]
        created = parents.add_to_leaf(stage, path, payload.get("title") or default_title(
            where["leaf"]), block, titles, [pointer], tags)
        stored = [captured["redactions"], *(named[kind][1] for kind in new_parents),
                  tag_counts if created else {}]
        stage.details.update({"path": path, "created": created, "event_id": event_id,
                              "shard": captured["shard"], "redactions": _added(*stored),
                              "title_ignored": title is not None and not created,
                              "placement": None if placement is None
                              else placement.as_dict()})

    with opened(forest) as handle:
        return transact(handle, "remember", request, transaction_id, prepare, wait)


def _place(forest: Forest, content: str, append: bool, title: str | None) -> Placement:
    """``place`` over the text as it will be stored: a leaf's name is never redacted, so it is
    made from the redacted fact and title."""
    return place(forest, redact_text(content, {}), append=append,
                 title=None if title is None else redact_text(title, {}))


def _parent_titles(where: dict[str, str], named: dict[str, tuple[str, Counts]],
                   placed: bool) -> dict[str, str]:
    """Titles of the leaf's parents if they are new: the caller's, else "Inbox" for the inbox
    that placement files into (else the parents are titled by their names)."""
    tree, branch = where["tree"], where["branch"]
    titles = {}
    if placed and (tree, branch) == (INBOX_TREE, INBOX_BRANCH):
        titles = {ltm_path(tree): INBOX_TITLE, mtm_path(tree, branch): INBOX_TITLE}
    for kind, owner in (("tree", ltm_path(tree)), ("branch", mtm_path(tree, branch))):
        if kind in named:
            titles[owner] = named[kind][0]
    return titles


def _preview(forest: Forest, content: str, fixed: dict[str, str] | None,
             append: bool, title: str | None) -> dict[str, Any]:
    """The dry run: where the fact would go, read from the index and the disk, no lock taken.

    An explicit leaf is looked up on disk (it would be appended to when it exists); a placed
    one is ``place``'s answer, which needs the index (``index_missing`` without one, since a
    dry run builds nothing).
    """
    if fixed is None:
        placement = _place(forest, content, append, title)
        path, exists = placement.path, placement.action == "append"
    else:
        placement = None
        path = stm_path(fixed["tree"], fixed["branch"], fixed["leaf"])
        exists = os.path.lexists(forest.root / path)
    return result("remember", dry_run=True, path=path, created=not exists,
                  placement=None if placement is None else placement.as_dict())


INBOX_BODY = ("Facts that remember could not place with confidence. Each is a leaf of its own: "
              "move it to the branch it belongs to, or keep it here.")


def create_inbox(forest: Forest, wait: float = DEFAULT_WAIT) -> dict[str, Any]:
    """The inbox tree and branch (``02 ltm/inbox_LTM.md``, ``03 mtm/inbox/inbox.md``) with
    their missing parents, as one journaled write; nothing when both exist."""
    branch = mtm_path(INBOX_TREE, INBOX_BRANCH)

    def prepare(stage: Stage) -> None:
        if not stage.exists(branch):
            parents.create(stage, branch, INBOX_TITLE, INBOX_BODY,
                           {ltm_path(INBOX_TREE): INBOX_TITLE})
        stage.details["path"] = branch

    return transact(forest, "init", {"inbox": branch}, None, prepare, wait)

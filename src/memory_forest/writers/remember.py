"""``remember``: one durable fact now, captured and filed in one transaction.

The content becomes an ISTM event (redacted like any capture) and a block in
the STM leaf ``04 stm/<tree>/<branch>/<leaf>.md``: a new leaf is created with
its missing parents, an existing one gets the block appended. Either way the
leaf's ``sources`` point at the event. A title names a new leaf only (without
one, the leaf's name gives it); an existing leaf keeps its own, and the result
says ``title_ignored`` when one was given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..forest import Forest
from ..routes import ltm_path, mtm_path, stm_path
from . import parents
from .capture import check_event, stage_events
from .markdown import check_linkable, check_title, clean_text, neutralize
from .receipts import now
from .redact import Counts, redact_text, redact_value
from .transaction import Stage, transact

MAX_CONTENT_BYTES = 256 * 1024


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
    from ..errors import usage_error

    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise usage_error("content_not_utf8", "the input is not UTF-8") from None


def remember(forest: Forest | str | Path, tree: str, branch: str, leaf: str, title: str | None,
             content: str, source: str = "memory-forest", tree_title: str | None = None,
             branch_title: str | None = None, tag: list[str] | None = None,
             transaction_id: str | None = None, wait: float = 0.0) -> dict[str, Any]:
    for segment, what in ((tree, "tree"), (branch, "branch"), (leaf, "leaf")):
        check_linkable(segment, what)
    title = None if title is None else check_title(title)
    # Text outside the event (parent titles, tags) is redacted here; each part keeps its
    # own count, added to the receipt only if the part is stored (a parent that exists
    # keeps its title, an existing leaf its tags).
    title_counts: dict[str, Counts] = {}
    titles = {}
    for owner, value in ((ltm_path(tree), tree_title), (mtm_path(tree, branch), branch_title)):
        if value:
            titles[owner] = redact_text(check_title(value), title_counts.setdefault(owner, {}))
    content = clean_text(content)
    if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
        from ..errors import ForestError

        raise ForestError("content_too_large", f"content is at most {MAX_CONTENT_BYTES} bytes",
                          exit_code=2)
    tag_counts: Counts = {}
    tags = redact_value([check_title(one, "tag") for one in tag or []], tag_counts)
    path = stm_path(tree, branch, leaf)
    request = {"tree": tree, "branch": branch, "leaf": leaf, "title": title, "content": content,
               "source": source, "tree_title": tree_title, "branch_title": branch_title,
               "tags": tags}

    def event(observed_at: str) -> dict[str, Any]:
        payload = {"text": content, "route": {"tree": tree, "branch": branch, "leaf": leaf}}
        if title is not None:
            payload["title"] = title
        return {"observed_at": observed_at, "source": source, "kind": "remember",
                "payload": payload}

    check_event(event(now()), 1)

    def prepare(stage: Stage) -> None:
        captured, records = stage_events(stage, [event(stage.now)])
        event_id = records[0]["event_id"]
        pointer = f"{captured['shard']}#{event_id}"
        payload = records[0]["payload"]  # redacted: what reaches the leaf is what was stored
        block = entry_block(stage.now, pointer, payload["text"])
        leaf_title = payload.get("title") or default_title(leaf)
        new_parents = [owner for owner in titles if not stage.exists(owner)]
        created = parents.add_to_leaf(stage, path, leaf_title, block, titles, [pointer], tags)
        stored = [captured["redactions"], *(title_counts[owner] for owner in new_parents),
                  tag_counts if created else {}]
        stage.details.update({"path": path, "created": created, "event_id": event_id,
                              "shard": captured["shard"], "redactions": _added(*stored),
                              "title_ignored": title is not None and not created})

    return transact(forest, "remember", request, transaction_id, prepare, wait)

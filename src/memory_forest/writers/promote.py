"""``promote``: the compatibility path from Daily entries to one STM leaf.

The plan names Daily entry ids and a semantic route ``{tree, tree_title,
branch, branch_title, leaf}``. Each entry's text is copied into the leaf as
inert text under a line naming its source, the leaf's ``sources`` gain
``05 daily/YYYY-MM-DD.md#<entry_id>``, and missing parents are created with
the route's titles.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import ForestError
from ..routes import ltm_path, mtm_path, stm_path
from . import parents, plans
from .markdown import body_of, inert, unescape
from .transaction import Stage, run


def entry_text(text: str, entry_id: str) -> str:
    """The Markdown of one Daily entry: the lines under ``## entry_id`` up to the next heading."""
    lines = body_of(text).split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() == f"## {entry_id}"), None)
    if start is None:
        raise ForestError("daily_entry_missing", "the Daily entry heading was not found",
                          {"entry_id": entry_id})
    end = start + 1
    while end < len(lines) and not re.match(r"#{1,2} ", lines[end]):
        end += 1
    return "\n".join(lines[start + 1:end]).strip("\n")


def resolve_entries(stage: Stage, entry_ids: list[str]) -> dict[str, str]:
    """Entry id -> the one Daily file holding it (``daily_entry_missing``/``_ambiguous``)."""
    known = stage.view.entry_paths(set(entry_ids))
    found = {}
    for entry_id in entry_ids:
        paths = known.get(entry_id, [])
        if not paths:
            raise ForestError("daily_entry_missing", "no Daily record has this entry",
                              {"entry_id": entry_id})
        if len(paths) > 1:
            raise ForestError("daily_entry_ambiguous", "several Daily records have this entry",
                              {"entry_id": entry_id, "paths": paths})
        found[entry_id] = paths[0]
    return found


def promote(root: str | Path, source: str, wait: float = 0.0) -> dict[str, Any]:
    plan = plans.load("promotion", source)
    route = plan.route

    def prepare(stage: Stage) -> None:
        daily = resolve_entries(stage, plan.entry_ids)
        path = stm_path(route.tree, route.branch, route.leaf)
        pointers = [f"{daily[entry_id]}#{entry_id}" for entry_id in plan.entry_ids]
        blocks = []
        for entry_id, pointer in zip(plan.entry_ids, pointers, strict=True):
            plain = unescape(entry_text(stage.text(daily[entry_id]) or "", entry_id))
            blocks.append(f"Promoted from `{pointer}`:\n\n{inert(plain)}")
        block = "\n\n".join(blocks)
        created = not stage.exists(path)
        if created:
            titles = {ltm_path(route.tree): route.tree_title,
                      mtm_path(route.tree, route.branch): route.branch_title}
            parents.create(stage, path, plan.title or route.leaf, block, titles,
                           sources=pointers)
        else:
            sources = parents.add_sources(stage, path, [])
            again = [pointer for pointer in pointers if pointer in sources]
            if again:
                raise ForestError("entry_already_promoted", "the leaf already cites this "
                                  "Daily entry", {"path": path, "sources": again})
            parents.append(stage, path, block, {"sources": sources + pointers})
        stage.details.update({"path": path, "created": created, "dispositions": [
            {"entry_id": entry_id, "disposition": "promoted", "daily": daily[entry_id],
             "target": path} for entry_id in plan.entry_ids]})

    return run(root, "promote", plan.model_dump(mode="json"), plan.transaction_id, prepare,
               wait)

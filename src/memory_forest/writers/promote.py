"""``promote``: the compatibility path from Daily entries to one STM leaf.

The plan names Daily entry ids and a semantic route ``{tree, tree_title,
branch, branch_title, leaf}``. Each entry's text is copied into the leaf as
text (as the Daily entry holds it) under a line naming its source, the leaf's ``sources`` gain
``05 daily/YYYY-MM-DD.md#<entry_id>``, and missing parents are created with
the route's titles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ForestError
from ..routes import ltm_path, mtm_path, stm_path
from . import parents, plans
from .daily import entry_text, resolve_entries
from .markdown import neutralize
from .transaction import Stage, run


def promote(root: str | Path, source: str, wait: float = 0.0) -> dict[str, Any]:
    plan = plans.load("promotion", source)
    redactions = plans.redact_text(plan)
    route = plan.route

    def prepare(stage: Stage) -> None:
        daily = resolve_entries(stage, plan.entry_ids)
        path = stm_path(route.tree, route.branch, route.leaf)
        pointers = [f"{daily[entry_id]}#{entry_id}" for entry_id in plan.entry_ids]
        blocks = []
        for entry_id, pointer in zip(plan.entry_ids, pointers, strict=True):
            text = entry_text(stage.text(daily[entry_id]) or "", entry_id)
            blocks.append(f"Promoted from `{pointer}`:\n\n{neutralize(text)}")
        block = "\n\n".join(blocks)
        again = [p for p in pointers if p in parents.add_sources(stage, path, [])] \
            if stage.exists(path) else []
        if again:
            raise ForestError("entry_already_promoted", "the leaf already cites this Daily "
                              "entry", {"path": path, "sources": again})
        titles = {ltm_path(route.tree): route.tree_title,
                  mtm_path(route.tree, route.branch): route.branch_title}
        created = parents.add_to_leaf(stage, path, plan.title or route.leaf, block, titles,
                                      pointers)
        stage.details.update({"path": path, "created": created, "dispositions": [
            {"entry_id": entry_id, "disposition": "promoted", "daily": daily[entry_id],
             "target": path} for entry_id in plan.entry_ids], "redactions": redactions})

    return run(root, "promote", plan.model_dump(mode="json"), plan.transaction_id, prepare,
               wait)

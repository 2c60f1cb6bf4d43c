"""``promote``: the compatibility path from Daily entries to one STM leaf.

The plan names Daily entry ids and a semantic route ``{tree, tree_title,
branch, branch_title, leaf}``. Each entry's text is copied into the leaf as
text (as the Daily entry holds it) under a line naming its source, the leaf's ``sources`` gain
``05 daily/YYYY-MM-DD.md#<entry_id>``, and missing parents are created with
the route's titles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ForestError
from ..forest import ForestLike, opened
from ..lockline import DEFAULT_WAIT
from ..routes import ltm_path, mtm_path, stm_path
from . import parents, plans
from .daily import entry_text, resolve_entries
from .markdown import neutralize
from .redact import Counts, redact_text
from .transaction import Stage, transact

if TYPE_CHECKING:
    from ..results import WriteResult


def promote(forest: ForestLike, source: str, wait: float = DEFAULT_WAIT) -> WriteResult:
    plan = plans.load("promotion", source)
    route = plan.route
    tree, branch = ltm_path(route.tree), mtm_path(route.tree, route.branch)
    # Each title is stored only if its document is new: count it only then.
    found: dict[str, Counts] = {tree: {}, branch: {}, "leaf": {}}
    route.tree_title = redact_text(route.tree_title, found[tree])
    route.branch_title = redact_text(route.branch_title, found[branch])
    if plan.title is not None:
        plan.title = redact_text(plan.title, found["leaf"])

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
        titles = {tree: route.tree_title, branch: route.branch_title}
        stored = [found[owner] for owner in titles if not stage.exists(owner)]
        created = parents.add_to_leaf(stage, path, plan.title or route.leaf, block, titles,
                                      pointers)
        stored += [found["leaf"]] if created else []
        redactions = {rule: sum(part.get(rule, 0) for part in stored)
                      for part in stored for rule in part}
        stage.details.update({"path": path, "created": created, "dispositions": [
            {"entry_id": entry_id, "disposition": "promoted", "daily": daily[entry_id],
             "target": path} for entry_id in plan.entry_ids], "redactions": redactions})

    with opened(forest) as forest:
        return transact(forest, "promote", plan.model_dump(mode="json"), plan.transaction_id,
                        prepare, wait)

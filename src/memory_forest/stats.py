"""``stats``: how much memory holds, and how fresh its index is.

A read-only summary for a person or an agent deciding whether to trust the
index: documents per layer on disk and in the index, the index's age, and
how many files the last build left out for a problem. It reads the listing
and the index, never a document body.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from . import index
from .envelope import result
from .errors import ForestError
from .forest import Forest, ForestLike
from .layers import LAYERS
from .safety import walk
from .semantic import coverage
from .snapshot import listed_per_layer, refuse_non_forest
from .store import filerows, schema

if TYPE_CHECKING:
    from .results import StatsResult


def stats(forest: ForestLike) -> StatsResult:
    forest = Forest.of(forest)
    refuse_non_forest(forest.root)
    listing = walk(forest.root, forest.limits)
    on_disk = listed_per_layer(listing)
    indexed: dict[str, int] = {}
    state = index.state(forest)
    age = problems = None
    if state["state"] in ("current", "stale"):
        try:
            con = forest.reader()
        except ForestError:
            state = {"state": "invalid"}
        else:
            indexed = filerows.layer_counts(con)
            problems = state["quarantined"]  # the count status reports, read the same way
            age = max(0.0, round(time.time() - schema.built_at_ns(con) / 1e9, 3))
    layers = [{"layer": layer.key, "dir": layer.dirname, "files": on_disk.get(layer.dirname, 0),
               "indexed": indexed.get(layer.dirname, 0)} for layer in LAYERS]

    return result("stats", layers=layers, files=sum(on_disk.values()),
                  indexed=sum(indexed.values()), index=state["state"],
                  index_age_seconds=age, problems=problems, semantic=coverage(forest))


"""Review decisions are canonical data: ISTM events that say a proposal was accepted or rejected.

A proposal is derived state on the machine that made it, but the decision a
person takes on it is memory: without it, the other machine (or this one,
once ``.memory-forest/`` is rebuilt) would propose a rejected source again.
So ``proposals reject`` and ``proposals accept`` each append one event of
kind ``proposal_decision`` to this machine's ISTM shard, in the same journaled
transaction as the rest of the decision. Per-machine shards merge without
conflicts, the event is hash-chained like every capture, and ``sync`` carries
it like any other line.

The payload names the proposal's sources (``sources``: event and Daily entry
pointers) and the inbox leaves it would move (``leaves``: ids, which a move
keeps). The index records those pointers as what the decision cites, so
``consolidate`` leaves every decided source out with one query, and ``audit``
checks they resolve. A decision is bookkeeping, not a capture to file: it is
never a fragment of its own (never proposed, never returned as unfiled
evidence) and its payload is not searched.

Ground level: standard library only; the index's read of the decisions is
``store.lookups.decided``.
"""

from __future__ import annotations

from typing import Any

KIND = "proposal_decision"
SOURCE = "memory-forest"
ACCEPTED, REJECTED = "accepted", "rejected"


def is_decision(record: dict[str, Any]) -> bool:
    return record.get("kind") == KIND and isinstance(record.get("payload"), dict)


def cited_sources(record: dict[str, Any]) -> Any:
    """What a decision event's payload names as its sources (checked by the caller)."""
    return record["payload"].get("sources")


def event(decision: str, proposal_id: str, sources: list[str], observed_at: str,
          reason: str | None = None, leaves: list[str] | None = None) -> dict[str, Any]:
    """The event that records ``decision`` on a proposal; its id is the proposal's, so the
    same decision written twice is one event. ``leaves`` are the ids of the inbox leaves it
    would move: by id, not path, because a leaf keeps its id wherever it goes."""
    payload: dict[str, Any] = {"decision": decision, "proposal_id": proposal_id,
                               "sources": sources}
    if leaves:
        payload["leaves"] = leaves
    if reason is not None:
        payload["reason"] = reason
    return {"event_id": f"{decision}-{proposal_id}", "observed_at": observed_at,
            "source": SOURCE, "kind": KIND, "payload": payload}

"""Consolidation proposals: stored, listed, shown, accepted or rejected.

A proposal (``consolidate`` makes it) is a ``plans.Proposal`` document kept
privately in ``.memory-forest/proposals/<proposal_id>.json``. It is derived
state, not memory: accepting it is what writes canonical files, through the
one transaction engine, and only its status changes afterwards. The decision
on it is memory: accept and reject each append a ``decisions`` event to this
machine's ISTM shard in their transaction, so it travels with the forest and
outlives the proposal file.

Every proposal, whatever its status, keeps its sources out of later
proposals: that is the processed state ("proposed once"). Its status is the
file's, with one correction: a pending proposal whose accept or reject
transaction has a receipt was decided, and only the mark was lost (a crash
between the commit and the rewrite of this file); the next ``accept`` or
``reject`` writes the mark.

Accept re-checks, under the lock and before staging anything, that every
source is still what the proposal saw (``proposal_stale`` otherwise), then
writes the new Daily entries and files every entry in its STM leaf in one
transaction whose id is the proposal's, so a retry after a crash returns the
stored receipt instead of writing twice.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import TYPE_CHECKING, Any

from ..chain import lines
from ..decisions import event
from ..digest import sha256_hex
from ..envelope import result
from ..errors import ForestError
from ..forest import Forest, ForestLike, opened
from ..ignore import is_debris
from ..jsonio import dumps, load_object, loads_strict
from ..lockline import DEFAULT_WAIT
from ..routes import stm_path
from ..safety import makedirs_private, read_regular, write_private
from ..statefiles import PROPOSALS, proposal_rel, state_rel
from ..store import lookups
from . import inbox, parents, plans, receipts
from .capture import check_event, stage_events
from .daily import add_sections, entry_section, entry_text
from .markdown import clean_text, neutralize
from .planbase import MAX_TEXT
from .redact import redact_text
from .transaction import transact

if TYPE_CHECKING:
    from ..results import ProposalAcceptResult, ProposalRejectResult, ProposalsListResult

MAX_PROPOSAL_BYTES = 16 * 1024 * 1024
MAX_REASON = 2000
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
OPERATION = "proposals_accept"
REJECT = "proposals_reject"


def new_id() -> str:
    """Sortable by creation time, unique by its random part."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")[:-3]
    return f"p-{stamp}Z-{os.urandom(4).hex()}"


def transaction_id(proposal_id: str) -> str:
    """The accept transaction: one per proposal, so a retry finds its receipt."""
    return f"accept-{proposal_id}"


# --- storage ----------------------------------------------------------------------------------


def save(forest: Forest, document: dict[str, Any]) -> str:
    """Write a proposal document (0600, in a 0700 directory); return its relative path."""
    makedirs_private(forest.root, state_rel(PROPOSALS))
    rel = proposal_rel(document["proposal_id"])
    write_private(forest.root / rel, (dumps(document) + "\n").encode("utf-8"))
    return rel


def checked_id(proposal_id: str) -> str:
    """An id names a file: anything but a plain name is refused before any path is built."""
    if not isinstance(proposal_id, str) or not _ID.fullmatch(proposal_id):
        raise ForestError("proposal_id_invalid", "a proposal id is the 'proposal_id' that "
                          "consolidate or 'proposals list' printed", exit_code=2)
    return proposal_id


def load(forest: Forest, proposal_id: str) -> Any:
    """The stored proposal (``proposal_not_found``, ``proposal_corrupt``)."""
    rel = proposal_rel(checked_id(proposal_id))
    try:
        raw = read_regular(forest.root, rel, MAX_PROPOSAL_BYTES)
    except ForestError as exc:
        if exc.code == "not_found":
            raise ForestError("proposal_not_found", "no proposal has this id; "
                              "'memory-forest proposals list ROOT' lists them",
                              {"proposal_id": proposal_id}) from None
        raise
    try:
        proposal = plans.parse("proposal", raw)
    except ForestError as exc:
        raise ForestError("proposal_corrupt", "the stored proposal is not a valid proposal "
                          "document; reject it or delete the file and consolidate again",
                          {"path": rel, "reason": exc.code, **exc.details}) from None
    if proposal.proposal_id != proposal_id:
        raise ForestError("proposal_corrupt", "the stored proposal names another id",
                          {"path": rel})
    return proposal


def stored_ids(forest: Forest) -> list[str]:
    """The ids of every stored proposal, oldest first (the ids sort by time)."""
    try:
        with os.scandir(forest.root / state_rel(PROPOSALS)) as entries:
            names = [entry.name for entry in entries
                     if entry.name.endswith(".json") and not is_debris(entry.name)
                     and entry.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(name[:-5] for name in names if _ID.fullmatch(name[:-5]))


def every(forest: Forest) -> tuple[list[Any], list[dict[str, Any]]]:
    """Every stored proposal that can be read, and the problem of each that cannot.

    One unreadable proposal is reported with its path and never stops the rest.
    """
    found, problems = [], []
    for proposal_id in stored_ids(forest):
        try:
            found.append(load(forest, proposal_id))
        except ForestError as exc:
            problems.append({"path": proposal_rel(proposal_id), "code": exc.code,
                             "message": exc.message})
    return found, problems


def reject_transaction_id(proposal_id: str) -> str:
    """The reject transaction: one per proposal, so a retry finds its receipt."""
    return f"reject-{proposal_id}"


def status_of(forest: Forest, proposal: Any) -> str:
    """The proposal's status, counting a committed accept or reject whose mark was lost."""
    if proposal.status in ("pending", "stale"):
        if _committed(forest, proposal) is not None:
            return "accepted"
        if _receipt(forest, reject_transaction_id(proposal.proposal_id), REJECT) is not None:
            return "rejected"
    return proposal.status


def _committed(forest: Forest, proposal: Any) -> dict[str, Any] | None:
    return _receipt(forest, proposal.transaction_id, OPERATION)


def _receipt(forest: Forest, transaction_id: str, operation: str) -> dict[str, Any] | None:
    receipt = receipts.load(forest, transaction_id)
    return receipt if receipt is not None and receipt.get("operation") == operation else None


def stage_decision(stage: Any, proposal: Any, decision: str, reason: str | None = None
                   ) -> str:
    """Append the decision on ``proposal`` to this machine's ISTM shard (``decisions``), so
    that it travels with the forest; return the event's pointer."""
    record = event(decision, proposal.proposal_id, pointers(proposal), stage.now, reason,
                   inbox.leaf_ids(proposal))
    known = stage.view.event_paths({record["event_id"]}).get(record["event_id"])
    if known is not None:  # decided before, and only the local mark and receipt were lost
        return f"{known}#{record['event_id']}"
    check_event(record, 1)
    summary, _ = stage_events(stage, [record])
    return f"{summary['shard']}#{record['event_id']}"


def pointers(proposal: Any) -> list[str]:
    """Every source a proposal names (events and Daily entries)."""
    return [source.pointer for day in proposal.days for entry in day.entries
            for source in entry.sources] + [item.source.pointer for item in proposal.promotions]


def entry_ids(proposal: Any) -> list[str]:
    """The new Daily entry ids a proposal would create."""
    return [entry.entry_id for day in proposal.days for entry in day.entries]


def counts(proposal: Any) -> dict[str, int]:
    return {"entries": len(entry_ids(proposal)), "promotions": len(proposal.promotions),
            "sources": len(pointers(proposal)), "moves": len(proposal.moves),
            "branches": len(proposal.branches)}


def summary(forest: Forest, proposal: Any) -> dict[str, Any]:
    """One line of ``proposals list``."""
    return {"proposal_id": proposal.proposal_id, "created_at": proposal.created_at,
            "status": status_of(forest, proposal), "decided_at": proposal.decided_at,
            "counts": counts(proposal), "path": proposal_rel(proposal.proposal_id)}


def _document(forest: Forest, proposal: Any) -> dict[str, Any]:
    return {**proposal.model_dump(mode="json"), "status": status_of(forest, proposal)}


def _mark(forest: Forest, proposal: Any, status: str, reason: str | None = None) -> Any:
    proposal.status = status
    proposal.decided_at = receipts.now()
    if reason is not None:
        proposal.reason = reason
    save(forest, proposal.model_dump(mode="json"))
    return proposal


# --- list, show -------------------------------------------------------------------------------


def list_proposals(forest: ForestLike, status: str | None = None) -> ProposalsListResult:
    if status is not None and status not in ("pending", "accepted", "rejected", "stale"):
        raise ForestError("proposal_status_invalid", "status is pending, accepted, rejected "
                          "or stale", exit_code=2)
    with opened(forest) as forest:
        found, problems = every(forest)
        rows = [summary(forest, proposal) for proposal in found]
    rows = [row for row in rows if status is None or row["status"] == status]
    return result("proposals_list", count=len(rows), proposals=rows, problems=problems)


def show(forest: ForestLike, proposal_id: str) -> dict[str, Any]:
    with opened(forest) as forest:
        proposal = load(forest, proposal_id)
        return result("proposals_show", proposal=_document(forest, proposal),
                      path=proposal_rel(proposal_id), counts=counts(proposal))


# --- reject -----------------------------------------------------------------------------------


def reject(forest: ForestLike, proposal_id: str, reason: str | None = None,
           wait: float = DEFAULT_WAIT) -> ProposalRejectResult:
    """Record the refusal; the proposal's sources stay out of later proposals, everywhere.

    The refusal is canonical (an ISTM decision event, written in one transaction
    under the forest lock, so it cannot cross an ``accept`` of the same
    proposal); the proposal's own mark follows it.
    """
    redactions: dict[str, int] = {}
    if reason is not None:
        reason = redact_text(clean_text(reason, "reason", "reason"), redactions)
        if len(reason) > MAX_REASON:
            raise ForestError("reason_too_long", f"a reason is at most {MAX_REASON} "
                              "characters", exit_code=2)
    with opened(forest) as forest:
        proposal = load(forest, proposal_id)
        if status_of(forest, proposal) == "accepted":
            raise _already_accepted(proposal_id)

        def prepare(stage: Any) -> None:
            current = load(forest, proposal_id)  # re-read under the lock
            if status_of(forest, current) == "accepted":
                raise _already_accepted(proposal_id)
            stage.details["decision"] = stage_decision(stage, current, "rejected", reason)

        txid = reject_transaction_id(proposal_id)
        try:
            receipt = transact(forest, REJECT, {"proposal_id": proposal_id, "reason": reason},
                               txid, prepare, wait)
        except ForestError as exc:
            if exc.code != "transaction_id_conflict":  # rejected before, with another reason
                raise
            receipt = _receipt(forest, txid, REJECT) or {}
        already = proposal.status == "rejected" or receipt.get("already_applied", True)
        if proposal.status != "rejected":
            _mark(forest, proposal, "rejected", reason)
    return result(REJECT, proposal_id=proposal_id, status="rejected",
                  already_rejected=already, decided_at=proposal.decided_at,
                  counts=counts(proposal), redactions=redactions,
                  decision=receipt.get("decision"))


def _already_accepted(proposal_id: str) -> ForestError:
    return ForestError("proposal_already_accepted", "this proposal was accepted; its "
                       "entries are in the forest", {"proposal_id": proposal_id})


# --- accept -----------------------------------------------------------------------------------


def read_summaries(raw: bytes) -> dict[str, str]:
    """``--summaries FILE``: one JSON object, entry id -> new summary."""
    def bad(code: str, message: str) -> ForestError:
        return ForestError(code, message, exit_code=2)

    return inline_summaries(load_object(raw, MAX_PROPOSAL_BYTES, "summaries", bad))


def inline_summaries(value: Any) -> dict[str, str]:
    """The MCP tool's ``summaries``: an object of entry id -> summary text."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(key, str) and isinstance(text, str)
                                               for key, text in value.items()):
        raise ForestError("summaries_invalid", "summaries is one JSON object of entry id -> "
                          "summary text", exit_code=2)
    return value


def accept(forest: ForestLike, proposal_id: str,
           summaries: dict[str, str] | None = None, wait: float = DEFAULT_WAIT
           ) -> ProposalAcceptResult:
    """Apply a proposal in one transaction, then mark it accepted.

    ``summaries`` replaces the summaries of the proposal's new entries (the
    semantic part is the caller's); nothing else of the proposal can change.
    """
    with opened(forest) as forest:
        proposal = load(forest, proposal_id)
        if status_of(forest, proposal) == "rejected":
            raise ForestError("proposal_rejected", "this proposal was rejected; run "
                              "consolidate for a new one", {"proposal_id": proposal_id})
        replaced, counted = _checked_summaries(proposal, summaries or {})
        if proposal.status == "accepted" and _committed(forest, proposal) is None:
            raise _already_accepted(proposal_id)
        content = proposal.model_dump(mode="json", exclude={"status", "decided_at", "reason"})
        request = {"proposal": content, "summaries": dict(sorted((summaries or {}).items()))}

        def prepare(stage: Any) -> None:
            _stage(stage, proposal, replaced, counted)

        try:
            receipt = transact(forest, OPERATION, request, proposal.transaction_id, prepare, wait)
        except ForestError as exc:
            if exc.code == "transaction_id_conflict":  # accepted before, with other summaries
                raise _already_accepted(proposal_id) from None
            raise
        if proposal.status != "accepted":
            _mark(forest, proposal, "accepted")
    return {**receipt, "status": "accepted"}


def _checked_summaries(proposal: Any, summaries: dict[str, str]
                       ) -> tuple[dict[str, str], dict[str, int]]:
    """The caller's summaries, redacted, for the proposal's own new entries only."""
    known = set(entry_ids(proposal))
    unknown = sorted(set(summaries) - known)
    if unknown:
        raise ForestError("summaries_unknown_entry", "summaries may only name the new entries "
                          "of this proposal", {"entry_ids": unknown[:20]}, exit_code=2)
    counted: dict[str, int] = {}
    replaced = {}
    for entry_id, text in summaries.items():
        text = clean_text(text, "summary", "summary")
        if len(text) > MAX_TEXT:
            raise ForestError("summary_too_long", f"a summary is at most {MAX_TEXT} characters",
                              {"entry_id": entry_id}, exit_code=2)
        replaced[entry_id] = redact_text(text, counted)
    return replaced, counted


def _stage(stage: Any, proposal: Any, replaced: dict[str, str], counted: dict[str, int]
           ) -> None:
    forest = stage.view.forest
    current = load(forest, proposal.proposal_id)  # re-read under the lock
    if status_of(forest, current) == "rejected":
        raise ForestError("proposal_rejected", "this proposal was rejected while it was being "
                          "accepted", {"proposal_id": proposal.proposal_id})
    stale = stale_sources(stage.view, proposal) + inbox.stale_leaves(stage.view, proposal)
    if stale:
        # Under the lock, so no reject crosses it: its sources are free for the next proposal.
        _mark(forest, current, "stale")
        raise ForestError("proposal_stale", "sources of this proposal changed since it was "
                          "made; nothing was written. It is marked stale: consolidate again",
                          {"proposal_id": proposal.proposal_id, "sources": stale[:50],
                           "stale": len(stale)})
    redactions = dict(counted)
    filed = []
    for day in proposal.days:
        sections = []
        for entry in day.entries:
            text = replaced.get(entry.entry_id) or redact_text(entry.summary, redactions)
            sections.append(entry_section(entry.entry_id, text,
                                          [source.pointer for source in entry.sources]))
        daily, _ = add_sections(stage, day.date, sections)
        filed += [(entry.entry_id, daily, entry.placement, "new")
                  for entry in day.entries]
    filed += [(item.entry_id, item.source.pointer.partition("#")[0], item.placement, "promoted")
              for item in proposal.promotions]
    entries = []
    for entry_id, daily, placement, how in filed:
        pointer = f"{daily}#{entry_id}"
        leaf = stm_path(placement.tree, placement.branch, placement.leaf)
        text = redact_text(entry_text(stage.text(daily) or "", entry_id), redactions)
        block = f"Promoted from `{pointer}`:\n\n{neutralize(text)}"
        parents.add_to_leaf(stage, leaf, placement.title, block, {}, [pointer])
        entries.append({"entry_id": entry_id, "daily": daily, "leaf": leaf, "entry": how})
    stage.details.update(inbox.stage(stage, proposal))
    stage.details.update({
        "decision": stage_decision(stage, proposal, "accepted"),
        "proposal_id": proposal.proposal_id, "entries": entries, "redactions": redactions,
        "dispositions": [{"entry_id": item["entry_id"], "disposition": "promoted",
                          "daily": item["daily"], "target": item["leaf"]} for item in entries]})


def stale_sources(view: Any, proposal: Any) -> list[dict[str, str]]:
    """The proposal's sources that are no longer what it saw, each with the reason:
    ``missing`` (gone), ``changed`` (its fingerprint differs), ``cited`` (a Daily
    entry or a structured record cites it now), ``entry_exists`` (a new entry's id
    is taken)."""
    events = [source for day in proposal.days for entry in day.entries
              for source in entry.sources]
    event_files = view.event_paths({source.pointer.partition("#")[2] for source in events})
    promoted = {item.entry_id: item.source for item in proposal.promotions}
    entry_files = view.entry_paths(set(promoted) | set(entry_ids(proposal)))
    unfiled = {f"{fragment.path}#{fragment.anchor}" for fragment in lookups.unfiled(view.con)}
    cited_now = {pointer for facts in view.stale.values() if facts is not None
                 for pointer in facts.sources}  # hand edits the index has not seen yet
    stale = []
    for source in events:
        path, _, event_id = source.pointer.partition("#")
        line = event_line(view.read(path), event_id) if event_files.get(event_id) == path \
            else None
        reason = "missing" if line is None else \
            "changed" if sha256_hex(line) != source.fingerprint else None
        stale.append({"pointer": source.pointer, "reason": reason})
    for entry_id, source in promoted.items():
        path = source.pointer.partition("#")[0]
        if path not in entry_files.get(entry_id, []):
            reason = "missing"
        else:
            text = entry_text(view.text(path) or "", entry_id)
            reason = "changed" if fingerprint_text(text) != source.fingerprint else None
        stale.append({"pointer": source.pointer, "reason": reason})
    for item in stale:
        if item["reason"] is None and (item["pointer"] not in unfiled
                                       or item["pointer"] in cited_now):
            item["reason"] = "cited"
    found = [item for item in stale if item["reason"] is not None]
    found += [{"pointer": f"{entry_files[entry_id][0]}#{entry_id}", "reason": "entry_exists"}
              for entry_id in entry_ids(proposal) if entry_id in entry_files]
    return found


def event_line(data: bytes | None, event_id: str) -> bytes | None:
    """The bytes of the line that holds ``event_id`` (its line end left out), or None."""
    if data is None:
        return None

    needle = event_id.encode("utf-8")
    for _, line in lines(data):
        if needle not in line:
            continue
        try:
            record = loads_strict(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("event_id") == event_id:
            return line.removesuffix(b"\r")
    return None


def fingerprint_text(text: str) -> str:
    return sha256_hex(text.encode("utf-8"))

"""What the writers return: their receipts, remember's placement, move's and forget's, and the
proposals' results.

``consolidate`` and ``proposals show`` embed the stored proposal, whose model belongs to
the writers (``writers.plans.Proposal``) and is above this layer, so their results are
declared in ``schemas``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from .reading import Result


class Touched(TypedDict):
    path: str
    """Root-relative path of a file the write changed."""
    before_sha256: str | None
    """Hash before the write; null for a new file."""
    after_sha256: str | None
    """Hash after the write; null for a removed file."""


class WriteResult(Result):
    """A writer's receipt, as stored in ``.memory-forest/receipts/<transaction_id>.json``."""

    already_applied: bool
    """True when this transaction id had already been committed with the same request: nothing
    was written now; this is the stored receipt."""
    transaction_id: str
    receipt_version: int
    plan_sha256: str
    """sha256 of the canonical request."""
    committed_at: str
    touched: list[Touched]
    created_dirs: list[str]
    modes_restored: NotRequired[list[str]]
    """Replaced files whose mode was wider than 0600; the write made them 0600."""
    check: dict[str, Any]
    """validate and audit summaries of the checked neighbourhood of the write."""
    index: dict[str, Any]
    """The index update of the touched paths."""
    index_built: NotRequired[dict[str, Any] | None]
    """Present when this first write built the missing index."""
    recovered: NotRequired[dict[str, Any] | None]
    """Present when an interrupted earlier write was finished or undone first."""


class CaptureResult(WriteResult):
    shard: str | None
    """The ISTM shard written; null when every event was already stored."""
    event_ids: list[str]
    """The id of each event, in input order."""
    captured: int
    """Events stored now."""
    duplicates: int
    """Events already stored with the same content."""
    captured_at: str
    redactions: dict[str, int]
    """Redacted credentials per rule."""


class PlacementReason(TypedDict):
    rule: Literal["confident", "no_searchable_words", "no_candidate", "too_few_terms",
                  "low_coverage", "ambiguous"]
    """What decided: 'confident' files under the branch; every other rule files in the inbox."""
    branch: str | None
    """The best-scoring candidate branch (MTM path), null when nothing matched."""
    branch_score: float
    runner_up: str | None
    """The second-best branch, if any."""
    runner_up_score: float | None
    terms: int
    """The fact's searchable words counted."""
    matched_terms: list[str]
    """Those the best branch's subtree holds."""
    coverage: float
    """matched_terms over terms."""
    thresholds: dict[str, float]
    """The rule's constants: min_matched, min_coverage, min_margin."""
    leaf: NotRequired[str | None]
    """With append: the leaf appended to (null when no leaf of the branch matched and a new one
    was made)."""
    leaf_score: NotRequired[float | None]


class Placement(TypedDict):
    """Where remember filed a fact it was not told where to file, and why."""

    tree: str
    branch: str
    leaf: str
    title: str
    """The title a new leaf gets."""
    path: str
    """The STM leaf."""
    action: Literal["new_leaf", "append", "inbox"]
    score: float
    """The chosen branch's score (for the inbox: the best candidate's, 0 when there was none)."""
    reason: PlacementReason


class RememberReceipt(WriteResult):
    path: str
    """The STM leaf that holds the fact: open it by this path."""
    created: bool
    """True when the leaf was new."""
    event_id: str
    shard: str
    """The ISTM shard that holds the event."""
    redactions: dict[str, int]
    """Redacted credentials per rule."""
    title_ignored: NotRequired[bool]
    """True when a title was given for a leaf that exists: the leaf keeps its own."""
    placement: NotRequired[Placement | None]
    """Where remember placed the fact and why; null when the caller named tree, branch and
    leaf."""


class RememberPreview(Result):
    """A dry run: where the fact would go. Nothing was written."""

    dry_run: Literal[True]
    path: str
    """The STM leaf the fact would be filed in."""
    created: bool
    """True when that leaf would be new."""
    placement: Placement | None
    """The placement; null when the caller named tree, branch and leaf."""


# The receipt of a write, or with dry_run the preview.
RememberResult = RememberReceipt | RememberPreview


class EditPreview(Result):
    """A dry run of move or forget: what would change. Nothing was written."""

    dry_run: Literal[True]
    would_change: list[str]
    """Files that would be written."""
    would_remove: list[str]
    """Files that would be removed."""


# ``from`` is a keyword, so this one is declared the functional way (and its keys undocumented).
MovedDocument = TypedDict("MovedDocument", {"from": str, "to": str, "id": str | None})


class MoveFacts(TypedDict):
    source: str
    """The leaf's or branch's old path."""
    path: str
    """Its new path; open it by this path."""
    id: str | None
    """Its id, unchanged."""
    moved: list[MovedDocument]
    """Every document moved: the source, then a branch's leaves."""
    relinked: list[str]
    """Other files whose links now point at new paths."""


class RemovedDocument(TypedDict):
    path: str
    id: str | None
    sha256: str
    """sha256 of the removed file, as recorded in ISTM."""


class DanglingLink(TypedDict):
    path: str
    """A file that still links to a removed document (a warning)."""
    target: str
    """The removed document."""


class ForgetFacts(TypedDict):
    removed: list[RemovedDocument]
    """What was removed: tell the user."""
    tidied: str | None
    """The parent whose child list lost the line."""
    dangling: list[DanglingLink]


class MoveReceipt(WriteResult, MoveFacts):
    event_id: str
    shard: str
    """The ISTM shard that holds the move's event."""


class MovePreview(EditPreview, MoveFacts):
    pass


class ForgetReceipt(WriteResult, ForgetFacts):
    event_id: str
    shard: str
    """The ISTM shard that holds the removal's event."""


class ForgetPreview(EditPreview, ForgetFacts):
    pass


# The receipt of a move or a forget, or with dry_run the preview.
MoveResult = MoveReceipt | MovePreview
ForgetResult = ForgetReceipt | ForgetPreview


class ProposalCounts(TypedDict):
    entries: int
    """New Daily entries the proposal would write."""
    promotions: int
    """Existing Daily entries it would file in a leaf."""
    sources: int
    """Events and Daily entries it consumes."""
    moves: int
    """Inbox leaves it would move to a branch that fits them now."""
    branches: int
    """New branches it would make for inbox leaves that share a topic."""


class SkippedSource(TypedDict):
    pointer: str
    """'<path>#<anchor>' of a source left out of the proposal."""
    reason: str
    """Why: missing (not in its file any more), not_plain_text, secret_in_name (its pointer
    looks like a credential; shown redacted), or the code of the problem that placing or
    reading it met."""


class ProposalListing(TypedDict):
    proposal_id: str
    created_at: str
    status: Literal["pending", "accepted", "rejected", "stale"]
    decided_at: str | None
    counts: ProposalCounts
    path: str


class ProposalsListResult(Result):
    count: int
    proposals: list[ProposalListing]
    problems: list[dict[str, Any]]
    """Proposal files that cannot be read, each with its path and code."""


class FiledEntry(TypedDict):
    entry_id: str
    daily: str
    """The Daily record holding the entry."""
    leaf: str
    """The STM leaf it was filed in: open it by this path."""
    entry: Literal["new", "promoted"]
    """new: written by this accept; promoted: an existing Daily entry."""


class ProposalAcceptResult(WriteResult):
    proposal_id: str
    status: Literal["accepted"]
    entries: list[FiledEntry]
    dispositions: list[dict[str, Any]]
    moved: NotRequired[list[dict[str, Any]]]
    """Each inbox leaf moved: its id, from and to (its new path)."""
    branches: NotRequired[list[str]]
    """The branches made for inbox leaves."""
    redactions: dict[str, int]
    """Redacted credentials per rule."""
    decision: NotRequired[str | None]
    """The ISTM event (path#event_id) that records the decision, so that sync carries it and no
    machine proposes the sources again."""


class ProposalRejectResult(Result):
    proposal_id: str
    status: Literal["rejected"]
    already_rejected: bool
    """True when it had been rejected before: nothing changed now."""
    decided_at: str | None
    counts: ProposalCounts
    redactions: dict[str, int]
    decision: NotRequired[str | None]
    """The ISTM event (path#event_id) that records the decision, so that sync carries it and no
    machine proposes the sources again."""

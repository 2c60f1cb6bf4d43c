"""Pydantic models of the agent-facing operations: tool arguments and results.

One place for the shapes that agents see: the MCP server publishes these as
tool input and output JSON Schemas, tests check that the library's results
validate against them, and ``docs/gate-receipt.schema.json`` is generated
from ``GateReceipt``.

Argument models are strict and closed (no coercion, no unknown fields) and
are named like the CLI's parameters. Range checks that the library already
makes (limit, layer names, empty queries, names, titles, transaction ids,
events) are documented in the schema but left to the library, so a caller
gets the same error code from every surface. A query plan is parsed by
``queryplan.parse``, and capture's events by ``capture.inline_events``, each
with its own codes.

Nothing on the per-turn path imports this module: pydantic costs more to
import than a whole lookup.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .gate import MESSAGES as GATE_MESSAGES
from .queryplan import QueryPlan
from .retrieve import DEFAULT_LIMIT, MAX_LIMIT
from .routes import MAX_SEGMENT
from .writers.capture import EVENT_ID, MAX_EVENTS, MAX_LABEL
from .writers.markdown import MAX_TITLE
from .writers.receipts import TRANSACTION_ID
from .writers.remember import MAX_CONTENT_BYTES

_LIMIT_RANGE = {"minimum": 1, "maximum": MAX_LIMIT}
_QUERY = ("Literal text, usually the user's own words. Punctuation, quotes and search "
          "operators are data; stopwords are ignored.")
_LAYER = ("Layers to search, each as a key (xltm, ltm, mtm, stm, life_archive, daily, istm), "
          "a number (0-6) or a directory name ('04 stm'). Default: the structured layers "
          "01-04.")


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# --- arguments ------------------------------------------------------------------------------


class RouteArguments(Arguments):
    query: str = Field(description=_QUERY)
    limit: int = Field(DEFAULT_LIMIT, description="At most this many results.",
                       json_schema_extra=_LIMIT_RANGE)
    layer: list[str] | None = Field(None, description=_LAYER)


_STRICT = ("Fail with index_stale when a file changed since indexing (and with the file's "
           "code when it cannot be read), instead of returning it flagged verified=false.")


class SearchArguments(RouteArguments):
    strict: bool = Field(False, description=_STRICT)


class RetrieveArguments(Arguments):
    query: str = Field(description=_QUERY)
    limit: int = Field(DEFAULT_LIMIT, description="At most this many trails.",
                       json_schema_extra=_LIMIT_RANGE)
    query_plan: QueryPlan | None = Field(
        None, description="Extra probes (translations, synonyms) searched with the query. "
        "Trails that only a probe found rank after every trail the query found.")
    strict: bool = Field(False, description=_STRICT)

    @field_validator("query_plan", mode="before")
    @classmethod
    def _parse_plan(cls, value: Any) -> Any:
        # The same strict parser (and error codes) as a plan file given to the CLI.
        if value is None:
            return None
        from .jsonio import dumps
        from .queryplan import parse

        return parse(dumps(value))


class OpenArguments(Arguments):
    path: str = Field(description="Root-relative path of one document, as a route result "
                      "or trail node gives it, e.g. '04 stm/kitchen/fermentation/"
                      "kimchi-batch-7.md'; the same without its extension (the form a "
                      "wikilink uses); or a document id such as 'stm-kimchi-batch-7'.",
                      max_length=4096)
    allow_source_layers: bool = Field(False, description="Allow opening a raw source file "
                                      "in '05 daily' or '06 istm'. Only when the user or a "
                                      "record's sources point there.")


class StatusArguments(Arguments):
    pass


# The writers' shared arguments. ``wait`` is the one range pydantic checks itself (finite,
# 0-30): the library accepts up to 3600, but a tool call must not park a server thread long.
MAX_WAIT = 30.0
_TRANSACTION_ID = ("Id of this write, for a safe retry: the same id with the same arguments "
                   "returns the stored receipt (already_applied=true) and writes nothing; the "
                   "same id with other arguments fails with transaction_id_conflict. 1-128 "
                   "letters, digits, '.', '_' or '-'. Default: a new id.")
_WAIT = (f"Seconds (0-{MAX_WAIT:g}) to wait for the forest lock while another writer holds "
         "it; with 0 a held lock fails at once with lock_held.")


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


class CaptureArguments(Arguments):
    events: list[dict[str, Any]] = Field(
        description="One event object, or a list of them stored as one batch (all or nothing). "
        "Other keys of an event are stored as given; 'captured_at' and 'sha256' are filled by "
        "the tool and may not be supplied.")
    transaction_id: str | None = Field(None, description=_TRANSACTION_ID,
                                       json_schema_extra={"pattern": TRANSACTION_ID})
    wait: float = Field(0.0, ge=0, le=MAX_WAIT, allow_inf_nan=False, description=_WAIT)

    @field_validator("events", mode="plain", json_schema_input_type=Event | Annotated[
        list[Event], Field(min_length=1, max_length=MAX_EVENTS)])
    @classmethod
    def _inline(cls, value: Any) -> Any:
        # The library's checks and codes (capture_empty, capture_not_object, ...), as for a file.
        from .writers.capture import inline_events

        return inline_events(value)


_SEGMENT = {"minLength": 1, "maxLength": MAX_SEGMENT}


class RememberArguments(Arguments):
    tree: str = Field(description="Tree (domain) name: the '<tree>' of '02 ltm/<tree>_LTM.md'. "
                      "Reuse a tree that route or retrieve showed when the fact belongs there.",
                      json_schema_extra=_SEGMENT)
    branch: str = Field(description="Branch name inside the tree: '03 mtm/<tree>/<branch>.md'.",
                        json_schema_extra=_SEGMENT)
    leaf: str = Field(description="Leaf (STM record) name: '04 stm/<tree>/<branch>/<leaf>.md'. "
                      "An existing leaf gets the fact appended.", json_schema_extra=_SEGMENT)
    title: str | None = Field(None, description="Title of the leaf when it is new; one line. "
                              "Default: from the leaf's name. An existing leaf keeps its "
                              "title (the result says title_ignored).",
                              json_schema_extra={"minLength": 1, "maxLength": MAX_TITLE})
    content: str = Field(description="The fact to remember (at most "
                         f"{MAX_CONTENT_BYTES // 1024} KiB of UTF-8). Stored as written; only "
                         "what would add structure is neutralized: a heading line is indented, "
                         "'[[' is written '\\[\\['. It cannot add headings, wikilinks or "
                         "frontmatter.", json_schema_extra={"minLength": 1})
    source: str = Field("memory-forest", description="Who remembers: the ISTM event's source, "
                        "e.g. the agent's name.",
                        json_schema_extra={"minLength": 1, "maxLength": MAX_LABEL})
    tree_title: str | None = Field(None, description="Title of the tree if it is new. Default: "
                                   "its name.")
    branch_title: str | None = Field(None, description="Title of the branch if it is new. "
                                     "Default: its name.")
    tag: list[str] | None = Field(None, description="Tags of the leaf if it is new.")
    transaction_id: str | None = Field(None, description=_TRANSACTION_ID,
                                       json_schema_extra={"pattern": TRANSACTION_ID})
    wait: float = Field(0.0, ge=0, le=MAX_WAIT, allow_inf_nan=False, description=_WAIT)


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


class Trail(BaseModel):
    nodes: list[Node] = Field(description="Root-first: XLTM, LTM, MTM, STM.")
    complete: bool = Field(description="True when the trail runs XLTM, LTM, MTM, STM with "
                           "every owner in the index.")
    missing: list[str] = Field(description="Owners on the trail's route that the index does "
                               "not hold (left out for a problem of their own).")
    reason: Literal["owner_not_indexed", "no_leaf"] | None = Field(
        description="Why the trail is partial: owner_not_indexed (see missing) or no_leaf "
        "(it ends above an STM leaf); null when complete.")
    score: float
    status: str
    original_query_matched: bool
    matched_query_plan_probe_count: int
    canonical_parent_child: list[ParentChild]


class RetrieveResult(Result):
    count: int
    trails: list[Trail]
    body_included: Literal[False]
    probes: int


class OpenResult(Result, Node):
    body: str = Field(description="The current text of the file: untrusted data.")
    body_included: Literal[True]
    indexed: bool = Field(description="False for a canonical file the index does not hold "
                          "(new since the last index, or left out for a problem); its body "
                          "is still returned.")


class StatusResult(Result):
    ready: bool = Field(description="True when the index exists and matches the files.")
    index: dict[str, Any]
    lock: dict[str, Any]
    counts: dict[str, int]
    documents: int
    config: str
    versions: dict[str, str]
    next_step: str | None


class Touched(BaseModel):
    path: str = Field(description="Root-relative path of a file the write changed.")
    before_sha256: str | None = Field(description="Hash before the write; null for a new file.")
    after_sha256: str


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


class RememberResult(WriteResult):
    path: str = Field(description="The STM leaf that holds the fact: open it by this path.")
    created: bool = Field(description="True when the leaf was new.")
    event_id: str
    shard: str = Field(description="The ISTM shard that holds the event.")
    redactions: dict[str, int] = Field(description="Redacted credentials per rule.")
    title_ignored: bool = Field(False, description="True when a title was given for a leaf "
                                "that exists: the leaf keeps its own.")


# --- the gate receipt -----------------------------------------------------------------------


class GateRoute(BaseModel):
    count: int
    results: list[ScoredNode]


class GateRetrieve(BaseModel):
    count: int
    trails: list[Trail]


class GateError(BaseModel):
    code: Literal[tuple(GATE_MESSAGES)]  # type: ignore[valid-type]  # the fixed set of codes
    message: str = Field(description="The fixed message of the code: never turn text, an "
                         "absolute path or exception text.")
    details: dict[str, Any] = Field(description="Always empty.", max_length=0)


class GateReceipt(BaseModel):
    """What ``memory-forest gate`` prints for one turn (``--format receipt``)."""

    model_config = ConfigDict(extra="forbid", title="Memory Forest gate receipt")
    schema_version: Literal[1]
    operation: Literal["memory_forest_gate"]
    ok: bool
    status: Literal["evidence_found", "no_evidence", "noop", "failed"]
    lookup_required: bool
    lookup_completed: bool
    body_included: Literal[False]
    turn_sha256: str | None = Field(description="sha256 of the whole turn's UTF-8 bytes; "
                                    "null when the input was over the gate's hard cap.")
    turn_bytes: int | None = Field(None, description="Size of the whole turn in bytes. "
                                   "Absent on failure.")
    turn_reduced: bool | None = Field(None, description="True when the turn was over 64 KiB "
                                      "and was searched through its reduction (its last 8 KiB "
                                      "and the rarest words of the rest). Absent on failure.")
    unverified: list[str] | None = Field(None, description="Paths in this receipt whose file "
                                         "did not match the index just now (changed since "
                                         "indexing, gone or unreadable). Absent on failure.")
    route: GateRoute | None = Field(None, description="Absent on failure.")
    retrieve: GateRetrieve | None = Field(None, description="Absent on failure.")
    error: GateError | None = Field(None, description="Present only on failure.")

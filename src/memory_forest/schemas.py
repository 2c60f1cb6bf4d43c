"""Pydantic models of the agent-facing operations: tool arguments and results.

One place for the shapes that agents see: the MCP server publishes these as
tool input and output JSON Schemas, tests check that the library's results
validate against them, and ``docs/gate-receipt.schema.json`` is generated
from ``GateReceipt``.

Argument models are strict and closed (no coercion, no unknown fields) and
are named like the CLI's parameters. Range checks that the library already
makes (limit, layer names, empty queries) are documented in the schema but
left to the library, so a caller gets the same error code from every
surface. A query plan is parsed by ``queryplan.parse``, with its own codes.

Nothing on the per-turn path imports this module: pydantic costs more to
import than a whole lookup.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .gate import MESSAGES as GATE_MESSAGES
from .queryplan import QueryPlan
from .retrieve import DEFAULT_LIMIT, MAX_LIMIT

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


class SearchArguments(RouteArguments):
    pass


class RetrieveArguments(Arguments):
    query: str = Field(description=_QUERY)
    limit: int = Field(DEFAULT_LIMIT, description="At most this many trails.",
                       json_schema_extra=_LIMIT_RANGE)
    query_plan: QueryPlan | None = Field(
        None, description="Extra probes (translations, synonyms) searched with the query. "
        "Trails that only a probe found rank after every trail the query found.")

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
    path: str = Field(description="Root-relative path of one document, exactly as a route "
                      "result or trail node gives it, e.g. '04 stm/kitchen/fermentation/"
                      "kimchi-batch-7.md'.", max_length=4096)
    allow_source_layers: bool = Field(False, description="Allow opening a raw source file "
                                      "in '05 daily' or '06 istm'. Only when the user or a "
                                      "record's sources point there.")


class StatusArguments(Arguments):
    pass


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
    sha256: str = Field(description="Hash of the file's bytes, checked when it was returned.")
    size: int
    mtime_ns: int


class ScoredNode(Node):
    score: float


class RouteResult(Result):
    count: int
    results: list[ScoredNode]


class SearchResult(RouteResult):
    body_included: bool


class ParentChild(BaseModel):
    parent: str
    child: str


class Trail(BaseModel):
    nodes: list[Node] = Field(description="Root-first: XLTM, LTM, MTM, STM.")
    complete: bool = Field(description="False when the trail stops above an STM leaf.")
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


class StatusResult(Result):
    ready: bool = Field(description="True when the index exists and matches the files.")
    index: dict[str, Any]
    lock: dict[str, Any]
    counts: dict[str, int]
    documents: int
    config: str
    versions: dict[str, str]
    next_step: str | None


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
    turn_sha256: str | None = Field(description="sha256 of the turn's UTF-8 bytes; null "
                                    "when the turn was too large to read whole.")
    route: GateRoute | None = Field(None, description="Absent on failure.")
    retrieve: GateRetrieve | None = Field(None, description="Absent on failure.")
    error: GateError | None = Field(None, description="Present only on failure.")

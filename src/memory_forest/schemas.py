"""What only pydantic does with the shapes agents see: input events, and JSON Schemas.

Every operation's result is declared once, as a stdlib ``TypedDict`` in ``results``
(the operation returns it, the renderers read it). This module turns a result into
the JSON Schema the MCP server publishes as the tool's output schema, and checks a
real result against it (tests do). The exceptions are the two results that embed a
stored proposal, whose pydantic model belongs to the writers: they are declared here,
where ``results`` cannot reach. The gate's receipt, which hosts read rather than MCP
clients, has its own module (``gate_receipt``).

Nothing on the per-turn path imports this module: pydantic costs more to import than
a whole lookup.
"""

from __future__ import annotations

import ast
import inspect
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict, is_typeddict

from . import results
from .results import ProposalCounts, Result, SkippedSource
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

# What a tool's ``summaries`` may be: entry id -> the caller's summary.
Summaries = dict[str, str]


class ConsolidateResult(Result):
    proposal: Proposal | None
    """The proposal written; null when there was nothing to consolidate."""
    path: str | None
    """Where the proposal is stored, relative to the root."""
    counts: ProposalCounts | None
    message: str | None
    """'nothing to consolidate' when proposal is null."""
    skipped: list[SkippedSource]
    remaining: int
    """Unfiled sources left for a later proposal (beyond the limit)."""
    problems: list[dict[str, Any]]
    """Stored proposals that could not be read (their sources may be proposed again)."""
    redactions: dict[str, int]
    """Redacted credentials per rule in the generated summaries."""


class ProposalShowResult(Result):
    proposal: Proposal
    path: str
    counts: ProposalCounts


# A union has no class to carry these, and MCP asks for an object schema.
UNION_HEADS = {name: {"title": name, "type": "object", "description": description} for
               name, description in (
                   ("RememberResult", "The receipt of a write, or with dry_run the preview."),
                   ("MoveResult", "The receipt of a move, or with dry_run the preview."),
                   ("ForgetResult", "The receipt of a forget, or with dry_run the preview."))}


# The results declared here rather than in ``results``.
PROPOSAL_RESULTS = {"ConsolidateResult": ConsolidateResult,
                    "ProposalShowResult": ProposalShowResult}


def shape(name: str) -> Any:
    """The declared shape of the result the catalog names ``name``."""
    return PROPOSAL_RESULTS[name] if name in PROPOSAL_RESULTS else getattr(results, name)


@cache
def adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(shape(name))


def validate(name: str, value: Any) -> Any:
    """Check a real result against its shape; pydantic's ValidationError when it differs."""
    return adapter(name).validate_python(value)


def output_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of result ``name``, as MCP publishes it and the docs list it."""
    schema = adapter(name).json_schema()
    describe(schema)
    return {**UNION_HEADS[name], **schema} if name in UNION_HEADS else schema


def describe(schema: dict[str, Any]) -> None:
    """Give each property of a declared shape the docstring under its field.

    Pydantic reads the docstrings of the class itself only (and only when asked), not those
    of the ``TypedDict``s it extends, so the descriptions are read here, for every shape.
    """
    for entry in [schema, *schema.get("$defs", {}).values()]:
        cls = _declared(entry.get("title", ""))
        if cls is None:
            continue
        for field, text in field_docs(cls).items():
            if field in entry.get("properties", {}):
                entry["properties"][field]["description"] = text


def _declared(title: str) -> type | None:
    cls = PROPOSAL_RESULTS.get(title) or getattr(results, title, None)
    return cls if is_typeddict(cls) else None


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of ``cls`` and of the ``TypedDict``s it extends."""
    docs: dict[str, str] = {}
    for base in getattr(cls, "__orig_bases__", ()):
        if is_typeddict(base) and base is not TypedDict:
            docs.update(field_docs(base))
    try:
        body = ast.parse(inspect.getsource(cls)).body[0].body
    except OSError:  # declared the functional way (a key that is a keyword): no docstrings
        return docs
    for field, after in zip(body, body[1:], strict=False):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[field.target.id] = " ".join(after.value.value.split())
    return docs

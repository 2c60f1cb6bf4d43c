"""The published shape of the gate's receipt, what ``memory-forest gate`` prints per turn.

Hosts and hooks read this, not MCP clients, so it lives apart from the
operations' result models; ``docs/gate-receipt.schema.json`` is generated
from ``GateReceipt`` and a test keeps the two equal. Nothing on the
per-turn path imports it: pydantic costs more to import than a lookup.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .gate import MESSAGES as GATE_MESSAGES
from .schemas import LeftOut, ScoredNode, Trail, Unfiled


class GateRoute(BaseModel):
    count: int
    results: list[ScoredNode]


class GateRetrieve(BaseModel):
    count: int
    trails: list[Trail]
    unfiled: list[Unfiled] = Field(description="Raw captures no record has promoted yet that "
                                   "match the turn: unreviewed evidence.")
    left_out: list[LeftOut]
    ranking: Literal["fused", "lexical"] | None = Field(
        description="What retrieve ranked with; null when the turn had no searchable word.")
    ranking_reason: str | None = Field(
        description="Why ranking is lexical (as retrieve's ranking_reason); null when fused.")


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
    reason: str | None = Field(None, description="On failure: the error's code, what failed. "
                               "Absent otherwise.")
    fix: str | None = Field(None, description="On failure: the command that fixes it (ROOT "
                            "stands for the forest). Absent otherwise.")

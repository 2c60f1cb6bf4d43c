"""What the MCP tools and ``sync`` return, and the parts of it, declared once as ``TypedDict``s.

The operation builds this dict and returns it; the renderers read its keys through
the same names; ``schemas`` turns it into the JSON Schema that MCP publishes as the
tool's output schema and that tests validate real results against. A field's
description is the docstring under it; a key that is not always present is
``NotRequired``.

Why ``TypedDict`` and not pydantic models: ``retrieve`` and the gate run every turn,
and pydantic costs more to import than a whole lookup, so a result stays a plain dict
and its shape is a type that only annotations name. Modules import these under
``TYPE_CHECKING``, so no operation's process loads them. ``typing_extensions``
supplies ``TypedDict`` because pydantic reads only that one on Python 3.11. Pydantic
reads attribute docstrings of the class itself but not of the ``TypedDict``s it
extends, so ``schemas`` reads them all.

The catalog names a tool's result by its name here (``result="RetrieveResult"``), so
this package lists every result.
"""

from .reading import (
    LayerCount,
    LeftOut,
    Node,
    OpenResult,
    ParentChild,
    Result,
    RetrieveResult,
    RouteResult,
    ScoredNode,
    SearchHit,
    SearchResult,
    Semantic,
    StatsResult,
    StatusResult,
    Trail,
    TrailNode,
    Unfiled,
)
from .syncing import SecretFinding, SyncCommit, SyncLeft, SyncPaths, SyncResult
from .writing import (
    CaptureResult,
    DanglingLink,
    EditPreview,
    FiledEntry,
    ForgetFacts,
    ForgetPreview,
    ForgetReceipt,
    ForgetResult,
    MovedDocument,
    MoveFacts,
    MovePreview,
    MoveReceipt,
    MoveResult,
    Placement,
    PlacementReason,
    ProposalAcceptResult,
    ProposalCounts,
    ProposalListing,
    ProposalRejectResult,
    ProposalsListResult,
    RememberPreview,
    RememberReceipt,
    RememberResult,
    RemovedDocument,
    SkippedSource,
    Touched,
    WriteResult,
)

__all__ = [
    "CaptureResult", "DanglingLink", "EditPreview", "FiledEntry", "ForgetFacts", "ForgetPreview",
    "ForgetReceipt", "ForgetResult", "MoveFacts", "MovePreview", "MoveReceipt", "MoveResult",
    "MovedDocument", "RemovedDocument", "LayerCount", "LeftOut", "Node", "OpenResult",
    "ParentChild",
    "Placement", "PlacementReason", "ProposalAcceptResult", "ProposalCounts", "ProposalListing",
    "ProposalRejectResult", "ProposalsListResult", "RememberPreview", "RememberReceipt",
    "RememberResult", "Result", "RetrieveResult", "RouteResult", "ScoredNode", "SearchHit",
    "SearchResult", "SecretFinding", "Semantic", "SkippedSource", "StatsResult",
    "StatusResult", "SyncCommit", "SyncLeft", "SyncPaths", "SyncResult", "Touched", "Trail",
    "TrailNode", "Unfiled", "WriteResult",
]

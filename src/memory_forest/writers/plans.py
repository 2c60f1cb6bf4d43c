"""Plans: strict, versioned, closed JSON documents that say what a writer should do.

Four kinds: the Daily Plan (``apply-daily``), the Structured Sweep Plan
(``apply-structured``), the Promotion Plan (``promote``) and the
Consolidation Proposal, which ``consolidate`` writes and ``proposals accept``
applies (it is read back from the state directory as untrusted as any plan). A plan is
untrusted data, parsed like a QueryPlan: strict JSON (duplicate keys,
NaN/Infinity rejected), closed objects (unknown fields rejected), exact
types, bounded sizes, and every way a plan can be wrong has its own
``plan_*`` code, with ``details.loc`` naming the field. The JSON Schemas in
``docs/*.schema.json`` are generated from these models (``write_schemas``).
"""

from __future__ import annotations

import datetime as dt
import json
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ForestError
from ..jsonio import load_object
from ..routes import parse_route
from ..safety import read_caller_file
from .capture import EVENT_ID
from .markdown import check_linkable, check_title
from .planbase import DATE, EntryId, Segment, Sha256, Text, Title, _Plan, _Versioned
from .redact import find_secret, redact_value

MAX_PLAN_BYTES = 4 * 1024 * 1024
# --- Daily Plan -------------------------------------------------------------------------------


class DailyEntry(_Plan):
    """One entry of a Daily record: a summary of the ISTM events it cites."""

    entry_id: EntryId
    source_record_ids: list[Annotated[str, Field(pattern=EVENT_ID)]] = Field(
        min_length=1, max_length=1000, description="ISTM event ids; each must exist.")
    summary: Text = Field(min_length=1)


class DailyPlan(_Versioned):
    """Add entries to the Daily record of one date (05 daily/YYYY-MM-DD.md)."""

    model_config = ConfigDict(extra="forbid", strict=True, title="Memory Forest Daily Plan")
    date: str = Field(pattern=DATE)
    entries: list[DailyEntry] = Field(min_length=1, max_length=500)


# --- Structured Sweep Plan --------------------------------------------------------------------


class XltmTarget(_Plan):
    layer: Literal["xltm"]


class LtmTarget(_Plan):
    layer: Literal["ltm"]
    tree: Segment


class MtmTarget(_Plan):
    layer: Literal["mtm"]
    tree: Segment
    branch: Segment


class StmTarget(_Plan):
    layer: Literal["stm"]
    tree: Segment
    branch: Segment
    leaf: Segment


Target = Annotated[XltmTarget | LtmTarget | MtmTarget | StmTarget, Field(discriminator="layer")]


class FrontmatterFields(_Plan):
    """The frontmatter a plan may set; id, dates and status belong to the tool."""

    title: Title | None = None
    tags: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        default=None, max_length=50)
    sources: list[Annotated[str, Field(min_length=1, max_length=1000)]] | None = Field(
        default=None, max_length=200)


class Disposition(_Plan):
    entry_id: EntryId
    disposition: Literal["promoted", "already_covered", "source_only", "promotion_debt"]


class Change(_Plan):
    """Create or replace one structured document, named by its semantic target."""

    target: Target
    operation: Literal["create", "replace"]
    body: Text = Field(description="Full body text, stored as written (see docs/writing.md).")
    frontmatter: FrontmatterFields = Field(default_factory=FrontmatterFields)
    preimage_sha256: Sha256 | None = Field(
        default=None, description="replace only: sha256 of the current file bytes.")
    supersedes: str | None = Field(default=None, min_length=1, max_length=200,
                                   description="create only: id of the record this replaces.")
    daily_entries: list[Disposition] = Field(default_factory=list, max_length=500)


class StructuredSweepPlan(_Versioned):
    """Changes to XLTM/LTM/MTM/STM, bound to the snapshot they were reviewed against."""

    model_config = ConfigDict(extra="forbid", strict=True,
                              title="Memory Forest Structured Sweep Plan")
    snapshot_sha256: Sha256 = Field(description="From structured-context.")
    changes: list[Change] = Field(min_length=1, max_length=200)


# --- Promotion Plan ---------------------------------------------------------------------------


class PromotionRoute(_Plan):
    tree: Segment
    tree_title: Title
    branch: Segment
    branch_title: Title
    leaf: Segment


class PromotionPlan(_Versioned):
    """Promote Daily entries into one STM leaf (created with its parents if missing)."""

    model_config = ConfigDict(extra="forbid", strict=True, title="Memory Forest Promotion Plan")
    entry_ids: list[EntryId] = Field(min_length=1, max_length=200)
    route: PromotionRoute
    title: Title | None = Field(default=None, description="Title of a new leaf.")


# --- Consolidation Proposal -------------------------------------------------------------------

PROPOSAL_ID = r"^p-[0-9]{8}T[0-9]{9}Z-[0-9a-f]{8}$"
Pointer = Annotated[str, Field(min_length=1, max_length=1000,
                               description="'<path>#<event id or entry id>' of the source.")]


class ProposalSource(_Plan):
    """One source a proposal consumes, with what it held when the proposal was made."""

    pointer: Pointer
    fingerprint: Sha256 = Field(description="sha256 of the event's line (without its line "
                                "end), or of the Daily entry's text, when proposed.")
    observed_at: str | None = Field(default=None, max_length=100,
                                    description="The event's observed_at, or null.")


class ProposedPlacement(_Plan):
    """Where an entry would be filed: an STM leaf, chosen by placement."""

    tree: Segment
    branch: Segment
    leaf: Segment
    title: Title = Field(description="Title of the leaf if it is new.")
    action: Literal["new_leaf", "append", "inbox"]
    score: float
    reason: dict[str, Any] = Field(description="Why placement chose this leaf (the matching "
                                   "branch and its score).")


class ProposedEntry(_Plan):
    """A new Daily entry summarizing ISTM events, and the leaf it would be filed in."""

    entry_id: EntryId
    summary: Text = Field(min_length=1, description="Generated from the events' text; "
                          "'proposals accept --summaries' may replace it.")
    sources: list[ProposalSource] = Field(min_length=1, max_length=1000)
    placement: ProposedPlacement


class ProposedDay(_Plan):
    date: str = Field(pattern=DATE)
    entries: list[ProposedEntry] = Field(min_length=1, max_length=1000)


class ProposedPromotion(_Plan):
    """An existing Daily entry no structured record cites, and the leaf it would be filed in."""

    entry_id: EntryId
    source: ProposalSource
    placement: ProposedPlacement


class ProposedMove(_Plan):
    """An inbox leaf, and the branch placement now finds for it (its id is kept)."""

    id: Segment = Field(description="The leaf's id.")
    source: ProposalSource = Field(description="pointer: the leaf's path; fingerprint: the "
                                   "sha256 of its file when proposed.")
    placement: ProposedPlacement


class ProposedBranch(_Plan):
    """A new branch for inbox leaves that share a topic no branch holds."""

    tree: Segment
    branch: Segment
    title: Title
    terms: list[Segment] = Field(max_length=50, description="The words the leaves share.")
    leaves: list[ProposedMove] = Field(min_length=1, max_length=1000)


class Proposal(_Versioned):
    """A consolidation proposal: unfiled ISTM events and Daily entries, and where each goes.

    Written by ``consolidate`` under ``.memory-forest/proposals/``; applied as
    one transaction (its ``transaction_id``) by ``proposals accept``.
    """

    model_config = ConfigDict(extra="forbid", strict=True,
                              title="Memory Forest Consolidation Proposal")
    proposal_id: str = Field(pattern=PROPOSAL_ID, description="Sortable: creation time, then "
                             "random.")
    created_at: str = Field(max_length=100)
    status: Literal["pending", "accepted", "rejected", "stale"] = Field(
        description="stale: an accept found sources changed; its sources are free again.")
    decided_at: str | None = Field(default=None, max_length=100)
    reason: Text | None = Field(default=None, description="Why it was rejected, if given.")
    days: list[ProposedDay] = Field(max_length=1000, description="New Daily entries, by day.")
    promotions: list[ProposedPromotion] = Field(max_length=1000)
    moves: list[ProposedMove] = Field(default_factory=list, max_length=1000,
                                      description="Inbox leaves to move to a branch.")
    branches: list[ProposedBranch] = Field(default_factory=list, max_length=100,
                                           description="New branches, each with its leaves.")


# --- loading ----------------------------------------------------------------------------------

KINDS: dict[str, type[_Versioned]] = {
    "daily": DailyPlan,
    "structured": StructuredSweepPlan,
    "promotion": PromotionPlan,
    "proposal": Proposal,
}
SCHEMA_FILES = {
    "daily": "daily-plan.schema.json",
    "structured": "structured-sweep-plan.schema.json",
    "promotion": "promotion-plan.schema.json",
    "proposal": "proposal.schema.json",
}


def load(kind: str, source: str) -> Any:
    return parse(kind, read_caller_file(source, MAX_PLAN_BYTES, "plan"))


# The plan fields whose text reaches a canonical file as prose or a title (ids, hashes,
# routes and source paths are checked names, never credentials).
TEXT_FIELDS = frozenset({"summary", "body", "title", "tags", "tree_title", "branch_title"})


def redact_text(plan: BaseModel) -> dict[str, int]:
    """Redact credential-shaped text in every prose field of ``plan``, in place, as
    ``capture`` does for events; return the count per rule.

    For plans whose every prose field is stored (Daily, Structured Sweep); the
    promotion plan's titles are stored only for what is new, so ``promote``
    redacts them one by one."""
    counts: dict[str, int] = {}

    def walk(model: BaseModel) -> None:
        for name in type(model).model_fields:
            value = getattr(model, name)
            if isinstance(value, BaseModel):
                walk(value)
            elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
                for item in value:
                    walk(item)
            elif name in TEXT_FIELDS and value is not None:
                setattr(model, name, redact_value(value, counts))

    walk(plan)
    return counts


def parse(kind: str, raw: bytes | str) -> Any:
    data = load_object(raw, MAX_PLAN_BYTES, "plan", reject)
    try:
        plan = KINDS[kind].model_validate(data)
    except ValidationError as exc:
        raise _from_validation(exc) from None
    _check_text(data)
    _CHECKS[kind](plan)
    return plan


def _from_validation(exc: ValidationError) -> ForestError:
    error = exc.errors()[0]
    kind, loc = error["type"], tuple(str(part) for part in error["loc"])
    where = ".".join(loc)
    last = next((part for part in reversed(loc) if not part.isdigit()), "")
    if kind == "extra_forbidden":
        return reject("plan_unknown_field", f"unknown field '{where}'", where)
    if loc and loc[0] == "schema_version":
        if kind == "missing":
            return reject("plan_missing_field", "schema_version is required", where)
        return reject("plan_bad_schema_version", "schema_version must be exactly 1", where)
    if kind == "missing":
        return reject("plan_missing_field", f"'{where}' is required", where)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return reject("plan_bad_target_layer",
                      "target.layer must be one of xltm, ltm, mtm, stm", where)
    by_field = {"transaction_id": "plan_bad_transaction_id", "entry_id": "plan_bad_entry_id",
                "entry_ids": "plan_bad_entry_id", "source_record_ids": "plan_bad_event_id",
                "date": "plan_bad_date", "operation": "plan_bad_operation",
                "disposition": "plan_bad_disposition", "snapshot_sha256": "plan_bad_sha256",
                "preimage_sha256": "plan_bad_sha256"}
    if kind == "too_long" and error.get("ctx", {}).get("field_type") == "List":
        return reject("plan_too_many_items", f"'{where}' has too many items", where)
    if kind == "too_short" and error.get("ctx", {}).get("field_type") == "List":
        return reject("plan_empty_list", f"'{where}' must not be empty", where)
    if kind in ("string_too_long",) and last not in by_field:
        return reject("plan_text_too_long", f"'{where}' is too long", where)
    if kind in ("string_too_short",) and last not in by_field:
        return reject("plan_empty_text", f"'{where}' must not be empty", where)
    if last in by_field:
        return reject(by_field[last], f"'{where}' is not valid", where)
    return reject("plan_bad_value", f"'{where}' has the wrong type or value", where)


def reject(code: str, message: str, loc: str | None = None) -> ForestError:
    return ForestError(code, message, {"loc": loc} if loc else {}, exit_code=2)


def _check_text(data: Any, loc: str = "") -> None:
    """No control characters (other than line ends and tab) and only NFC text, anywhere."""
    if isinstance(data, dict):
        for key, value in data.items():
            _check_text(value, f"{loc}.{key}" if loc else key)
    elif isinstance(data, list):
        for number, value in enumerate(data):
            _check_text(value, f"{loc}.{number}")
    elif isinstance(data, str):
        if any(unicodedata.category(ch) == "Cc" and ch not in "\n\r\t" for ch in data):
            raise reject("plan_control_character", f"'{loc}' holds a control character", loc)
        if unicodedata.normalize("NFC", data) != data:
            raise reject("plan_not_nfc", f"'{loc}' must be NFC-normalized", loc)


def _check_segments(pairs: list[tuple[str, str, str]]) -> None:
    for value, what, loc in pairs:
        try:
            check_linkable(value, what)
        except ForestError as exc:
            raise reject("plan_bad_segment", f"{exc.message}", loc) from None


def _check_titles(pairs: list[tuple[str | None, str]]) -> None:
    for value, loc in pairs:
        if value is not None:
            try:
                check_title(value)
            except ForestError as exc:
                raise reject("plan_bad_title", exc.message, loc) from None


def _unique(values: list[str], code: str, what: str, loc: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise reject(code, f"{what} '{value[:80]}' appears twice", loc)
        seen.add(value)


def _check_daily(plan: DailyPlan) -> None:
    try:
        dt.date.fromisoformat(plan.date)
    except ValueError:
        raise reject("plan_bad_date", "date is not a calendar date", "date") from None
    _unique([entry.entry_id for entry in plan.entries], "plan_duplicate_entry_id", "entry_id",
            "entries")

    for number, entry in enumerate(plan.entries):
        if not entry.summary.strip():
            raise reject("plan_empty_text", "summary is empty", f"entries.{number}.summary")
        rule = find_secret(entry.entry_id)
        if rule is not None:  # the id is the entry's heading and anchor: a name, not text
            raise reject("plan_bad_entry_id", f"entry_id looks like a credential ({rule}); "
                         "choose another", f"entries.{number}.entry_id")


def _check_promotion(plan: PromotionPlan) -> None:
    route = plan.route
    _check_segments([(route.tree, "tree", "route.tree"), (route.branch, "branch", "route.branch"),
                     (route.leaf, "leaf", "route.leaf")])
    _check_titles([(route.tree_title, "route.tree_title"),
                   (route.branch_title, "route.branch_title"), (plan.title, "title")])
    _unique(plan.entry_ids, "plan_duplicate_entry_id", "entry id", "entry_ids")


def _check_structured(plan: StructuredSweepPlan) -> None:
    targets = []
    dispositions = []
    for number, change in enumerate(plan.changes):
        loc = f"changes.{number}"
        target = change.target
        _check_segments([(getattr(target, name), name, f"{loc}.target.{name}")
                         for name in ("tree", "branch", "leaf") if hasattr(target, name)])
        _check_titles([(change.frontmatter.title, f"{loc}.frontmatter.title")])
        _check_titles([(tag, f"{loc}.frontmatter.tags") for tag in change.frontmatter.tags or []])
        if change.operation == "replace" and change.preimage_sha256 is None:
            raise reject("plan_replace_without_preimage",
                         "a replace must carry the preimage_sha256 of the current file", loc)
        if change.operation == "create" and change.preimage_sha256 is not None:
            raise reject("plan_create_with_preimage", "a create has no preimage", loc)
        if change.operation == "create" and change.frontmatter.title is None:
            raise reject("plan_missing_title", "a create needs frontmatter.title", loc)
        if change.supersedes is not None and change.operation != "create":
            raise reject("plan_supersedes_requires_create",
                         "only a new record can supersede another", loc)
        if change.supersedes is not None and target.layer == "xltm":
            raise reject("plan_supersedes_requires_create", "the root map is never superseded",
                         loc)
        targets.append(json.dumps(target.model_dump(), sort_keys=True))
        dispositions += [item.entry_id for item in change.daily_entries]
    _unique(targets, "plan_duplicate_target", "target", "changes")
    _unique(dispositions, "plan_duplicate_disposition", "Daily entry", "changes")


def _check_proposal(plan: Proposal) -> None:
    promotions = [(item.source, item.placement, f"promotions.{number}", "daily")
                  for number, item in enumerate(plan.promotions)]
    entries = [(source, entry.placement, f"days.{day}.entries.{number}", "istm")
               for day, group in enumerate(plan.days)
               for number, entry in enumerate(group.entries) for source in entry.sources]
    for source, placement, loc, layer in promotions + entries:
        _check_segments([(placement.tree, "tree", f"{loc}.placement.tree"),
                         (placement.branch, "branch", f"{loc}.placement.branch"),
                         (placement.leaf, "leaf", f"{loc}.placement.leaf")])
        _check_titles([(placement.title, f"{loc}.placement.title")])
        path, mark, anchor = source.pointer.partition("#")
        if _layer_of(path) != layer or not mark or not anchor:
            raise reject("plan_bad_source", f"a source is not a {layer} pointer", loc)
    moves = [(move, f"moves.{number}") for number, move in enumerate(plan.moves)]
    moves += [(move, f"branches.{group}.leaves.{number}") for group, branch in
              enumerate(plan.branches) for number, move in enumerate(branch.leaves)]
    for move, loc in moves:
        _check_segments([(getattr(move.placement, name), name, f"{loc}.placement.{name}")
                         for name in ("tree", "branch", "leaf")])
        if _layer_of(move.source.pointer) != "stm":
            raise reject("plan_bad_source", "a moved leaf is an STM path", loc)
    for number, branch in enumerate(plan.branches):
        _check_segments([(branch.tree, "tree", f"branches.{number}.tree"),
                         (branch.branch, "branch", f"branches.{number}.branch")])
        _check_titles([(branch.title, f"branches.{number}.title")])
    _unique([move.id for move, _ in moves], "plan_duplicate_source", "leaf", "moves")
    ids = [entry.entry_id for group in plan.days for entry in group.entries]
    _unique(ids + [item.entry_id for item in plan.promotions], "plan_duplicate_entry_id",
            "entry id", "days")
    _unique([group.date for group in plan.days], "plan_duplicate_date", "date", "days")
    _unique([source.pointer for source, *_ in promotions + entries], "plan_duplicate_source",
            "source", "days")


def _layer_of(path: str) -> str | None:
    try:
        return parse_route(path).layer.key
    except ForestError:
        return None


_CHECKS = {"daily": _check_daily, "structured": _check_structured, "promotion": _check_promotion,
           "proposal": _check_proposal}


# --- JSON Schemas -----------------------------------------------------------------------------


def schema_text(kind: str) -> str:
    schema = KINDS[kind].model_json_schema()
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(docs: Path) -> None:
    """Regenerate ``docs/*.schema.json``: ``python -m memory_forest.writers.plans docs``."""
    for kind, name in SCHEMA_FILES.items():
        (docs / name).write_text(schema_text(kind), encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    import sys

    write_schemas(Path(sys.argv[1]))

"""Operations of the review loop: propose consolidation, then list, show, accept or reject."""

from __future__ import annotations

from . import DOCUMENT, INT, TEXT, Operation, Param
from .params import MAX_TOOL_WAIT, WAIT

_ID = Param(
    "proposal_id", TEXT, "The proposal's id, as consolidate or 'proposals list' printed it.",
    required=True, metavar="ID",
    doc="The proposal's id ('p-<time>-<random>'), as consolidate or proposals_list returned it.",
    schema={"pattern": "memory_forest.writers.plans:PROPOSAL_ID"})

CONSOLIDATE_TOOL = (
    "Propose how to file what nothing has filed yet: the ISTM events no Daily entry or leaf "
    "cites and the Daily entries no structured record cites. Writes one proposal (no canonical "
    "file changes): new Daily entries grouped by day, each summarizing its events (the "
    "summary is generated from the events' text, with their pointers '06 istm/<shard>.jsonl#"
    "<event_id>' as sources), and for every new and every unpromoted Daily entry the STM leaf "
    "it would be filed in, with the reason (the matching branch and its score); 'moves': inbox "
    "leaves a branch now fits, each with its id and target; 'branches': a new branch (tree, "
    "branch, title, shared terms) for three or more inbox leaves sharing a topic. A source any "
    "earlier proposal names (pending, accepted or rejected), or a decision taken on any "
    "machine, is not proposed again; at most "
    "'limit' sources go into one proposal and 'remaining' says how many wait for the next. "
    "Returns the whole proposal (null with 'nothing to consolidate' when there is nothing). "
    "Next: read it, then call proposals_accept (optionally with better 'summaries') or "
    "proposals_reject. Holds the forest lock while it runs (when a writer has it, waits its turn "
    f"for up to 'wait' seconds, default and at most {MAX_TOOL_WAIT:g}, then lock_held).")

PROPOSALS_LIST_TOOL = (
    "List the stored consolidation proposals, oldest first: proposal_id, created_at, status "
    "(pending, accepted, rejected, or stale: an accept found its sources changed), decided_at "
    "and counts (new entries, promotions of existing Daily entries, sources). 'status' keeps "
    "one status only. A proposal file that cannot be read is listed under problems, never "
    "stopping the rest. Read-only.")

PROPOSALS_SHOW_TOOL = (
    "Return one consolidation proposal whole: its days with the new Daily entries (entry_id, "
    "summary, sources with their fingerprints, placement: tree, branch, leaf, title, action, "
    "score, reason) and its promotions of existing Daily entries. Read it before accepting: "
    "the summaries are generated and may deserve rewriting; the placements are the tool's and "
    "cannot be changed (reject the proposal if they are wrong). Read-only; unknown id: "
    "proposal_not_found.")

PROPOSALS_ACCEPT_TOOL = (
    "Apply a pending consolidation proposal in one journaled transaction: the new Daily "
    "entries are written to '05 daily/<date>.md' (each a '## <entry_id>' section citing its "
    "events), and every entry, new or existing, is filed in its proposed STM leaf (created "
    "with its parents if missing, or appended to) citing '05 daily/<date>.md#<entry_id>'; "
    "the proposed branches are created and the inbox leaves moved (ids kept, parents' lists "
    "and links updated; 'moved' lists id, from, to). "
    "'summaries' (an object of entry_id -> text, for the proposal's new entries only) replaces "
    "generated summaries with yours; nothing else of the proposal can be changed. Credential-"
    "shaped text is redacted. If any source changed since the proposal was made (edited, "
    "deleted, or cited by something else since), the call fails with proposal_stale, lists "
    "those sources and writes nothing; the proposal is marked stale and its sources are free "
    "again: call consolidate for a fresh proposal. Returns the receipt. "
    "Safe to retry: accepting an accepted proposal with the same summaries returns the stored "
    "receipt (already_applied=true); with other summaries it fails with "
    "proposal_already_accepted; a rejected one fails with proposal_rejected. Holds the lock "
    f"only while it writes (waiting its turn for up to 'wait' seconds, default and at most "
    f"{MAX_TOOL_WAIT:g}).")

PROPOSALS_REJECT_TOOL = (
    "Reject a pending consolidation proposal: the decision is written as one ISTM event "
    "('decision': its path#event_id, which sync carries to every machine), the proposal is "
    "kept with status rejected (and your 'reason'), and its sources are not proposed again on "
    "any machine (they stay findable as unfiled captures). Rejecting a rejected proposal "
    "changes nothing "
    "(already_rejected=true); an accepted one fails with proposal_already_accepted.")

SUMMARIES = Param(
    "summaries", DOCUMENT, "A JSON file: an object of entry id -> new summary.",
    file_flags=("--summaries",), input_code="summaries",
    doc="Your summaries for the proposal's new Daily entries: an object of entry_id -> "
    "summary text (stored as written, redacted, only structure neutralized). Entries left "
    "out keep the generated summary; naming an entry the proposal does not create fails "
    "with summaries_unknown_entry.",
    reader="memory_forest.writers.proposals:read_summaries",
    parser="memory_forest.writers.proposals:inline_summaries",
    tool_type="memory_forest.schemas:Summaries",
    max_bytes="memory_forest.writers.proposals:MAX_PROPOSAL_BYTES")

OPERATIONS = (
    Operation(
        "consolidate", "memory_forest.writers.consolidate:consolidate",
        "Propose Daily entries and placements for unfiled sources, and homes for inbox leaves.",
        "memory-forest consolidate ~/memory --limit 50",
        help="Writes a proposal under the state directory; no canonical file changes. Review "
        "it with 'proposals show', then 'proposals accept' or 'proposals reject'.",
        params=(Param("limit", INT, "At most this many sources in the proposal (1-1000).",
                      flags=("--limit", "-n"), default=200,
                      doc="At most this many sources (events and Daily entries) in the "
                      "proposal; the rest wait for the next one.",
                      schema={"minimum": 1,
                              "maximum": "memory_forest.writers.consolidate:MAX_LIMIT"}),
                WAIT),
        writes=True, destructive=False, render="consolidate", tool=CONSOLIDATE_TOOL,
        title="Propose consolidation", result="ConsolidateResult"),
    Operation(
        "proposals_list", "memory_forest.writers.proposals:list_proposals",
        "List consolidation proposals with their status and counts.",
        "memory-forest proposals list ~/memory --status pending",
        params=(Param("status", TEXT, "Only proposals with this status: pending, accepted, "
                      "rejected or stale.", flags=("--status",),
                      schema={"enum": ["pending", "accepted", "rejected", "stale"]}),),
        render="proposals", tool=PROPOSALS_LIST_TOOL, title="List proposals",
        result="ProposalsListResult", command=("proposals", "list")),
    Operation(
        "proposals_show", "memory_forest.writers.proposals:show",
        "Show one proposal: its new Daily entries, their sources and placements.",
        "memory-forest proposals show ~/memory p-20261130T090000123Z-5f2a9c01",
        help="--json prints the whole proposal document.",
        params=(_ID,), render="proposal", tool=PROPOSALS_SHOW_TOOL, title="Show a proposal",
        result="ProposalShowResult", command=("proposals", "show")),
    Operation(
        "proposals_accept", "memory_forest.writers.proposals:accept",
        "Apply a proposal in one transaction (optionally with your summaries).",
        "memory-forest proposals accept ~/memory p-20261130T090000123Z-5f2a9c01 "
        "--summaries summaries.json",
        params=(_ID, SUMMARIES, WAIT), writes=True, destructive=False, render="receipt",
        tool=PROPOSALS_ACCEPT_TOOL, title="Accept a proposal", result="ProposalAcceptResult",
        command=("proposals", "accept")),
    Operation(
        "proposals_reject", "memory_forest.writers.proposals:reject",
        "Reject a proposal; its sources are not proposed again, on any machine.",
        "memory-forest proposals reject ~/memory p-20261130T090000123Z-5f2a9c01 "
        '--reason "wrong branch"',
        params=(_ID, Param("reason", TEXT, "Why, for the record.", flags=("--reason",),
                           doc="Why it was rejected, kept in the proposal and the decision event "
                           "(redacted)."),
                WAIT),
        writes=True, destructive=False, render="rejected", tool=PROPOSALS_REJECT_TOOL,
        title="Reject a proposal", result="ProposalRejectResult",
        command=("proposals", "reject")),
)

"""Operations that write: each runs as one journaled transaction under the forest lock."""

from __future__ import annotations

from . import DOCUMENT, FLAG, TEXT, TEXTS, Operation, Param
from .params import CAPTURE_WAIT, MAX_TOOL_WAIT, PLAN, TRANSACTION_ID, WAIT

_SEGMENT = {"minLength": 1, "maxLength": "memory_forest.routes:MAX_SEGMENT"}
_LABEL = {"minLength": 1, "maxLength": "memory_forest.writers.capture:MAX_LABEL"}

CAPTURE_TOOL = (
    "Append raw events to the forest's raw layer, the ISTM shard of today "
    "('06 istm/YYYY-MM-DD.jsonl', UTC; in a forest kept in git, this machine's own "
    "'06 istm/YYYY-MM-DD.<host>.jsonl'); no other canonical file changes. 'events' is one event "
    "object or a list of them, stored as one batch, all or nothing. Each needs observed_at "
    "(RFC 3339 with a time zone), source, kind and payload; the tool adds captured_at, sha256, "
    "prev (the sha256 of the line before: ISTM is hash-chained) and, when absent, event_id. "
    "Credential-shaped strings (keys, tokens, passwords) become "
    "[REDACTED:<rule>] before anything is stored. Events are stored as JSON data: they never "
    "become Markdown, links or instructions. The forest lock is held only while the write runs; "
    "when another writer holds it the call waits its turn (first come, first served) for up to "
    f"'wait' seconds (default and at most {MAX_TOOL_WAIT:g}), then fails with lock_held. "
    "Safe to retry: the same transaction_id with the same events returns "
    "the stored receipt (already_applied=true), and an event_id already stored with the same "
    "content is not stored twice (with other content: capture_event_conflict). Returns the "
    "receipt: event_ids, shard, redaction counts, touched files.")

REMEMBER_TOOL = (
    "Record one durable fact now, in one transaction: the content is captured as an ISTM event "
    "(kind 'remember', redacted like capture) in today's ISTM shard (as capture writes it) and "
    "filed as a dated block, citing that event, in an STM leaf "
    "'04 stm/<tree>/<branch>/<leaf>.md'. Leave "
    "tree, branch and leaf out and the tool places the fact: it ranks the existing branches and "
    "leaves against it (the index retrieve uses) and, when one branch matches with confidence, "
    "files a new leaf there (named and titled from the fact's first words, or 'title'), or with "
    "append=true adds the block to that branch's best-matching leaf (never to one naming another "
    "batch, year or name than the fact); otherwise it files a new "
    "leaf in the inbox, '04 stm/inbox/inbox/'. The result's 'placement' says where it went and "
    "why (the branch, its score, the rule that decided); check it, and move an inbox fact later "
    "if you know its place. Give all of tree, branch and leaf to choose yourself "
    "(placement_incomplete for only some): an existing leaf gets the block appended and keeps "
    "its title; a new leaf is created with 'title' (default: from its name), after any missing "
    "parent, each parent gaining one link to its new child. dry_run=true returns the placement "
    "and writes nothing. The content is stored as written; only what would change the leaf's "
    "structure is neutralized, visibly (a heading line indented, '[[' written '\\[\\['), so "
    "it adds no heading, wikilink or frontmatter. No other canonical file changes. The index is "
    "updated, so retrieve and open find the leaf at once. The forest lock is held only while the "
    "write runs; when another writer has it the call waits its turn for up to 'wait' seconds "
    f"(default and at most {MAX_TOOL_WAIT:g}), then fails with lock_held. Pass a "
    "transaction_id to retry safely: the same id and arguments "
    "return the stored receipt (already_applied=true) instead of writing twice.")

MOVE_TOOL = (
    "Move one STM leaf to another branch (or give it another name), or one MTM branch with all "
    "its leaves to another tree, keeping every id, in one transaction: each document is written "
    "at its new path with its 'Up:' link naming its new parent and removed from its old path; "
    "the old parent's child list loses its line and the new parent's gains one; every other "
    "wikilink in the forest that pointed at a moved document is pointed at its new path; an "
    "ISTM event (kind 'move': ids, both paths, sha256, never the text) records it. 'source' is "
    "a root-relative path or an id; 'to' is 'TREE/BRANCH' or 'TREE/BRANCH/LEAF' for a leaf, "
    "'TREE' or 'TREE/BRANCH' for a branch (the last name renames it). The new parent must exist "
    "(move_branch_missing, move_tree_missing), the target must not (move_target_exists); a "
    "tree does not move (move_layer_unsupported). dry_run=true returns what would change and "
    "writes nothing. Use it to file an inbox fact ('04 stm/inbox/inbox/...') where it belongs. "
    "The lock and wait behave as for remember; pass a transaction_id to retry safely.")

FORGET_TOOL = (
    "Remove one document from the forest in one transaction: a leaf (STM), or an empty branch "
    "(MTM) or tree (LTM); recursive=true removes a branch or tree with everything under it. Its "
    "line is taken off its parent's child list, and an ISTM event (kind 'forget') records each "
    "removed file's path, id and sha256 (never its text). The receipt's 'removed' lists what "
    "went: tell the user. Wikilinks elsewhere that pointed at it are left and listed in "
    "'dangling' (warnings; those files stay indexed). A leaf already deleted by hand is "
    "forgotten too: its parent's line for it is removed ('tidied'). 'source' is a root-relative "
    "path or an id. The root map, Daily, ISTM and the Life Archive are never removed "
    "(forget_layer_unsupported); a non-empty branch or tree needs recursive "
    "(forget_not_empty). dry_run=true returns what would be removed and writes nothing. The "
    "lock and wait behave as for remember; pass a transaction_id to retry safely.")

SOURCE = Param("source", TEXT, "The document: its root-relative path or its id.", required=True,
               metavar="SOURCE",
               doc="The document: its root-relative path ('04 stm/inbox/inbox/drip.md'; '.md' "
               "may be left out) or its frontmatter id.", schema={"minLength": 1})

EVENTS = Param(
    "events", DOCUMENT, "A JSON object or JSONL file of events.", required=True,
    file_flags=("--file", "-f"), stdin_mark=True, input_code="capture_input",
    doc="One event object, or a list of them stored as one batch (all or nothing). Other keys "
    "of an event are stored as given; 'captured_at', 'sha256' and 'prev' are filled by the tool "
    "and may not be supplied.",
    reader="memory_forest.writers.capture:parse_input",
    parser="memory_forest.writers.capture:inline_events",
    tool_type="memory_forest.schemas:EventBatch",
    max_bytes="memory_forest.writers.capture:MAX_INPUT_BYTES")

CONTENT = Param(
    "content", TEXT, "The fact to remember.", flags=("--content",), required=True,
    file_flags=("--file", "-f"), metavar="TEXT", positional_value=True,
    doc="The fact to remember (at most 256 KiB of UTF-8). Stored as written; only what would "
    "add structure is neutralized: a heading line is indented, '[[' is written '\\[\\['. It "
    "cannot add headings, wikilinks or frontmatter.", schema={"minLength": 1},
    reader="memory_forest.writers.remember:read_content",
    max_bytes="memory_forest.writers.remember:MAX_CONTENT_BYTES")

# move and forget plan their whole write over the index before taking the lock.
EDIT_DRY_RUN = Param("dry_run", FLAG, "Say what would change or be removed; write nothing, take "
                     "no lock.", flags=("--dry-run",),
                     doc="Return the files that would change and be removed; nothing is written "
                     "and no lock is taken (needs the index: index_missing).")

OPERATIONS = (
    Operation(
        "capture", "memory_forest.writers.capture:capture_events",
        "Append raw events (one JSON object, or JSONL) to today's ISTM shard, redacting secrets.",
        "memory-forest capture ~/memory --file events.jsonl",
        params=(EVENTS, TRANSACTION_ID, CAPTURE_WAIT), writes=True, destructive=False,
        render="receipt", tool=CAPTURE_TOOL, title="Capture raw events",
        result="CaptureResult"),
    Operation(
        "remember", "memory_forest.writers.remember:remember",
        "Capture one fact as an ISTM event and file it in an STM leaf (placed for you, or where "
        "you say), in one transaction.",
        'memory-forest remember ~/memory "Kimchi batch 8: less salt, 2 weeks at 4 C." --dry-run',
        help="Without --tree, --branch and --leaf the fact is placed: a new leaf under the "
        "branch it matches with confidence (with --append, that branch's best leaf), else a "
        "new leaf in the inbox tree (04 stm/inbox/inbox/). The receipt's placement says where "
        "and why. Give all three to choose the leaf yourself (docs/writing.md, \"Where "
        "remember files a fact\").",
        params=(
            Param("tree", TEXT, "Tree (domain) name; with --branch and --leaf.", flags=("--tree",),
                  schema=_SEGMENT,
                  doc="Tree (domain) name: the '<tree>' of '02 ltm/<tree>_LTM.md'. Give tree, "
                  "branch and leaf together, or none of them to let remember place the fact."),
            Param("branch", TEXT, "Branch name inside the tree; with --tree and --leaf.",
                  flags=("--branch",), schema=_SEGMENT,
                  doc="Branch name inside the tree: '03 mtm/<tree>/<branch>.md'. Only with tree "
                  "and leaf."),
            Param("leaf", TEXT, "Leaf (STM record) name; with --tree and --branch.",
                  flags=("--leaf",), schema=_SEGMENT,
                  doc="Leaf (STM record) name: '04 stm/<tree>/<branch>/<leaf>.md'. An existing "
                  "leaf gets the fact appended. Only with tree and branch."),
            Param("title", TEXT, "Title of the leaf when it is new (default: from the fact's "
                  "first words, or the leaf's name); an existing leaf keeps its own.",
                  flags=("--title",),
                  schema={"minLength": 1, "maxLength": "memory_forest.writers.markdown:MAX_TITLE"},
                  doc="Title of the leaf when it is new; one line. Default: the fact's first "
                  "words when remember places the fact, else the leaf's name. A placed leaf is "
                  "named from it too. An existing leaf keeps its title (the result says "
                  "title_ignored)."),
            CONTENT,
            Param("source", TEXT, "Who remembers: the ISTM event's source.", flags=("--source",),
                  default="memory-forest", schema=_LABEL,
                  doc="Who remembers: the ISTM event's source, e.g. the agent's name."),
            Param("tree_title", TEXT, "Title of the tree if it is new.", flags=("--tree-title",),
                  doc="Title of the tree if it is new. Default: its name."),
            Param("branch_title", TEXT, "Title of the branch if it is new.",
                  flags=("--branch-title",),
                  doc="Title of the branch if it is new. Default: its name."),
            Param("tag", TEXTS, "Tag of a new leaf; repeatable.", flags=("--tag",),
                  default=None, doc="Tags of the leaf if it is new."),
            Param("append", FLAG, "When placed: add the fact to the best-matching leaf of the "
                  "chosen branch instead of a new leaf.", flags=("--append",),
                  doc="When remember places the fact under a branch with confidence: append it "
                  "to that branch's best-matching leaf instead of creating a new leaf (a new "
                  "leaf when none matched, or when that leaf names another instance: another "
                  "batch number, year or name than the fact). Ignored with an explicit leaf, "
                  "which is appended to when it exists."),
            Param("dry_run", FLAG, "Print where the fact would go; write nothing, take no lock.",
                  flags=("--dry-run",),
                  doc="Return the placement (or the explicit leaf) and whether the leaf would be "
                  "new; nothing is written, no lock taken, no index built (a placement needs "
                  "the index: index_missing without one)."),
            TRANSACTION_ID, WAIT),
        writes=True, destructive=False, render="receipt", tool=REMEMBER_TOOL,
        title="Remember a fact", result="RememberResult"),
    Operation(
        "move", "memory_forest.writers.move:move",
        "Move a leaf to another branch (or a branch to another tree), keeping ids and relinking.",
        'memory-forest move ~/memory "04 stm/inbox/inbox/drip-filter" --to greenhouse/irrigation',
        help="One transaction: the moved files, both parents' child lists and every wikilink "
        "that pointed at them change together; an ISTM event records the move "
        "(docs/writing.md, \"Moving and forgetting\").",
        params=(SOURCE,
                Param("to", TEXT, "Where: TREE/BRANCH[/LEAF] for a leaf, TREE[/BRANCH] for a "
                      "branch; the last name renames it.",
                      flags=("--to",), required=True, metavar="TREE/BRANCH[/LEAF]",
                      schema={"minLength": 1},
                      doc="Where it goes: for a leaf 'TREE/BRANCH' (same name) or "
                      "'TREE/BRANCH/LEAF'; for a branch 'TREE' (same name) or 'TREE/BRANCH'. "
                      "The new parent must exist."),
                EDIT_DRY_RUN,
                TRANSACTION_ID, WAIT),
        writes=True, destructive=False, render="receipt", tool=MOVE_TOOL,
        title="Move a leaf", result="MoveResult"),
    Operation(
        "forget", "memory_forest.writers.forget:forget",
        "Remove a leaf (or an empty branch or tree) and its parent's link to it; ISTM records "
        "what went.",
        'memory-forest forget ~/memory "04 stm/inbox/inbox/old-note.md" --dry-run',
        help="The removed files' path, id and sha256 (never the text) are recorded in an ISTM "
        "event; links elsewhere that pointed at them are listed as dangling. A leaf deleted by "
        "hand is forgotten too: its parent's line is removed (docs/writing.md, \"Moving and "
        "forgetting\").",
        params=(SOURCE,
                Param("recursive", FLAG, "Remove a branch or tree with everything under it.",
                      flags=("--recursive",),
                      doc="Remove a branch or a tree with every document under it; without it "
                      "a non-empty one fails with forget_not_empty."),
                EDIT_DRY_RUN,
                TRANSACTION_ID, WAIT),
        writes=True, destructive=True, render="receipt", tool=FORGET_TOOL,
        title="Forget a document", result="ForgetResult"),
    Operation(
        "apply_daily", "memory_forest.writers.daily:apply_daily",
        "Apply a Daily Plan: add entries (with stable ## anchors) to 05 daily/YYYY-MM-DD.md.",
        "memory-forest apply-daily ~/memory daily-plan.json",
        params=(PLAN, WAIT), writes=True, render="receipt"),
    Operation(
        "apply_structured", "memory_forest.writers.structured:apply_structured",
        "Apply a Structured Sweep Plan bound to a structured-context snapshot.",
        "memory-forest apply-structured ~/memory sweep-plan.json",
        params=(PLAN, WAIT), writes=True, render="receipt"),
    Operation(
        "promote", "memory_forest.writers.promote:promote",
        "Promote Daily entries into one STM leaf (a Promotion Plan), creating missing parents.",
        "memory-forest promote ~/memory promotion-plan.json",
        params=(PLAN, WAIT), writes=True, render="receipt"),
    Operation(
        "supersede", "memory_forest.writers.supersede:supersede",
        "Create a new record (beside an old one, or at --to) and mark the old one superseded.",
        "memory-forest supersede ~/memory --id stm-kimchi-batch-7 --file kimchi-batch-7b.md",
        params=(Param("old_id", TEXT, "Id of the record to supersede.", flags=("--id",),
                      required=True, metavar="ID"),
                Param("file", TEXT, "The new record (NAME.md).", flags=("--file", "-f"),
                      required=True, metavar="NAME.md"),
                Param("to", TEXT, "Where the new record goes: TREE/BRANCH[/LEAF] for a leaf, "
                      "TREE[/BRANCH] for a branch (missing parents are made); without it, "
                      "beside the old one.", flags=("--to",), metavar="TREE/BRANCH[/LEAF]"),
                TRANSACTION_ID, WAIT),
        writes=True, render="receipt"),
)

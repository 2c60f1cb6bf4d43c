"""Parameters that several operations share, declared once."""

from __future__ import annotations

from ..lockline import DEFAULT_CAPTURE_WAIT, DEFAULT_WAIT
from . import FLAG, FLOAT, INT, TEXT, TEXTS, Param

QUERY = Param(
    "query", TEXT, "Literal text; punctuation and operators are data.",
    doc="Literal text, usually the user's own words. Punctuation, quotes and search operators "
    "are data; stopwords are ignored.", required=True)

LIMIT = Param(
    "limit", INT, "At most this many results (1-100).", flags=("--limit", "-n"), default=10,
    doc="At most this many results.", schema={"minimum": 1,
                                              "maximum": "memory_forest.retrieve:MAX_LIMIT"})

LAYER = Param(
    "layer", TEXTS, "Layer to search (key, number or directory); repeatable. Default: 01-04.",
    flags=("--layer", "-l"), default=None, choices="memory_forest.layers:BY_KEY",
    doc="Layers to search, each as a key (xltm, ltm, mtm, stm, life_archive, daily, istm), a "
    "number (0-6) or a directory name ('04 stm'). Default: the structured layers 01-04.")

STRICT = Param(
    "strict", FLAG, "Fail closed (index_stale) when a file changed since indexing, instead of "
    "flagging it.", flags=("--strict",),
    doc="Fail with index_stale when a file changed since indexing (and with the file's code "
    "when it cannot be read), instead of returning it flagged verified=false.")

# Agents and hooks do not retry a write that failed for contention, so a writer waits its
# turn by default (lockline's DEFAULT_WAIT); 0 fails fast. The library accepts up to 3600 s.
# A tool call must not park a server thread long: its wait, default included, stops here.
MAX_TOOL_WAIT = 30.0
WAIT = Param(
    "wait", FLOAT, "Seconds (0-3600) to wait in line for the forest lock; 0 fails at once "
    "with lock_held.", flags=("--wait",),
    default=DEFAULT_WAIT, tool_max="memory_forest.catalog.params:MAX_TOOL_WAIT",
    doc=f"Seconds (0-{MAX_TOOL_WAIT:g}, default {min(DEFAULT_WAIT, MAX_TOOL_WAIT):g}) to wait for "
    "the forest lock while another writer holds it; waiting writers are served in arrival "
    "order. With 0 a held lock fails at once with lock_held.")
CAPTURE_WAIT = WAIT.replace(default=DEFAULT_CAPTURE_WAIT)

TRANSACTION_ID = Param(
    "transaction_id", TEXT, "Id for an idempotent retry (default: a new one).",
    flags=("--transaction-id",), metavar="ID",
    doc="Id of this write, for a safe retry: the same id with the same arguments returns the "
    "stored receipt (already_applied=true) and writes nothing; the same id with other "
    "arguments fails with transaction_id_conflict. 1-128 letters, digits, '.', '_' or '-'. "
    "Default: a new id.", schema={"pattern": "memory_forest.writers.receipts:TRANSACTION_ID"})

PLAN = Param("source", TEXT, "Plan JSON file, or - for stdin.", required=True, metavar="PLAN",
             tool=False)

LEXICAL = Param(
    "lexical", FLAG, "Rank by the lexical core alone, even when semantic ranking is on.",
    flags=("--lexical",),
    doc="Rank by the lexical core alone for this call, even when 'index --semantic' turned "
    "semantic ranking on for the forest. Without the semantic extra ranking is lexical anyway.")

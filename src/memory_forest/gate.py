"""The per-turn gate: consult memory before every reply, and say so in a receipt.

``consult(forest, data)`` takes the bytes of one user turn, runs ``route`` and then
``retrieve`` on it (always both, in that order, for any non-blank turn, on one
``Forest``: one root check, one config, one index connection) and returns one
receipt::

    {"schema_version": 1, "operation": "memory_forest_gate", "ok": true,
     "status": "evidence_found" | "no_evidence" | "noop",
     "lookup_required": bool, "lookup_completed": bool, "body_included": false,
     "route": {"count", "results"},
     "retrieve": {"count", "trails", "unfiled", "left_out", "ranking", "ranking_reason"},
     "turn_sha256", "turn_bytes", "turn_reduced", "unverified"}

Decisions the receipt encodes:

- A blank turn (empty or whitespace only) is ``noop``: nothing to look up, the
  forest is not touched.
- A turn with no searchable word (punctuation, stopwords) is ``no_evidence``
  with ``lookup_completed: true``: the root and the index were opened and
  checked, both phases ran, and nothing can match such a turn.
- Every result the receipt names was re-hashed against its file just now. A
  file changed since indexing is flagged on its node (``verified: false``,
  ``changed_since_index``) and listed in ``unverified``; the status stays
  ``evidence_found`` and the hook context marks those files. ``strict``
  fails the gate with ``index_stale`` instead.
- After the trails, ``retrieve.unfiled`` lists the raw captures (ISTM events,
  Daily entries) that match the turn but that no record has promoted yet,
  re-hashed like the trails. They are evidence too (the status is
  ``evidence_found`` when only they match), and the hook context lists them,
  by path and id and never by text, as raw and unreviewed.
- ``retrieve.left_out`` names (path and code) the files the index left out
  because they cannot be read as documents, when they hold the turn's words.
  They are not evidence (nothing in them was read for the turn or vouched
  for), so they leave the status as it is; they say memory may hold more.
- Size never blocks a turn. A turn over ``MAX_TURN_BYTES`` is reduced
  deterministically (``reduce_turn``: its last ``TAIL_BYTES`` plus the rarest
  words of the rest) and the receipt says ``turn_reduced: true``;
  ``turn_sha256`` and ``turn_bytes`` always describe the whole turn. Only
  input over the hard cap ``MAX_INPUT_BYTES`` is refused.
- The gate fails only when memory cannot be consulted at all: no forest, no
  index, a corrupt index, a forest-level fault. A failure receipt says why
  (``reason``) and the command that fixes it (``fix``). A hook blocks the turn
  only for a fault in the turn itself or in the hook line; for any other it
  lets the turn through with ``lookup_completed: false``, ``reason`` and
  ``fix``, unless ``--strict`` (fail closed).

A failure is ``ok: false`` with a code from a fixed set and a fixed message
for that code: never the turn, an absolute path or exception text. The gate
never rebuilds the index and never writes memory (the one thing it may change
is derived: a hot journal a killed writer left is rolled back before the
index is read, see ``indexheal``), never uses the network and never returns
a body.

Host adapters turn the same receipt into a hook answer. Claude Code and Codex
share one ``UserPromptSubmit`` protocol (input: a JSON object with a string
``prompt``; output: ``hookSpecificOutput.additionalContext`` or
``decision: "block"`` with a ``reason``), so ``claude-code`` and ``codex`` are
two names for one adapter, ``hookcontext``: fixed prose plus one JSON tree,
within a byte budget.

This module runs in a fresh process on every agent turn: it imports only the
retrieval path (no rich or pydantic). Its command-line options are declared
in the catalog with every other operation's.
"""

from __future__ import annotations

import sys
from typing import Any, BinaryIO, NamedTuple, TextIO

from . import SCHEMA_VERSION
from .digest import sha256_hex
from .errors import ForestError
from .forest import Forest, ForestLike
from .hookcontext import (
    DEFAULT_CONTEXT_BYTES,
    HOOK_EVENT,
    MAX_CONTEXT_BYTES,
    MIN_CONTEXT_BYTES,
    hook_output,
    passed_through,
)

OPERATION = "memory_forest_gate"
MAX_TURN_BYTES = 64 * 1024  # a longer turn is searched through its reduction
TAIL_BYTES = 8 * 1024  # the end of a long turn, where its question usually is
# How much of the rest a reduction draws rare words from: the last MiB before the tail,
# and of that the last 10,000 distinct words, so that even a paste at the hard cap
# (or one of CJK text, where every character pair is a term) costs a bounded time.
HEAD_WINDOW_BYTES = 1024 * 1024
MAX_HEAD_TERMS = 10_000
# The hard cap on what is read from stdin, turn or hook JSON alike: far above any paste
# (a hook's JSON escapes can take six bytes per character), and still a bounded read.
MAX_INPUT_BYTES = 16 * 1024 * 1024
MAX_HOOK_BYTES = MAX_INPUT_BYTES
MAX_LIMIT = 10
HOOK_FORMATS = ("claude-code", "codex")
FORMATS = ("receipt", *HOOK_FORMATS)

DEFAULT_LIMIT = 5

# Every code a failure receipt can carry, with the only message it is ever shown with.
MESSAGES: dict[str, str] = {
    "index_missing": "the forest has no index; run 'memory-forest index ROOT'",
    "index_stale": "a memory file changed since it was indexed; run 'memory-forest index ROOT'",
    "index_corrupt": "the index cannot be read; run 'memory-forest index ROOT --full'",
    "index_schema_mismatch": "the index has another schema; run 'memory-forest index ROOT --full'",
    "index_unavailable": "the index cannot be opened; run 'memory-forest index ROOT'",
    "root_missing": "the forest root does not exist",
    "root_not_directory": "the forest root is not a directory",
    "root_symlink": "the forest root is a symlink; configure the real directory",
    "root_unreadable": "the forest root cannot be read",
    "symlink": "a symlink inside the forest was refused",
    "config_invalid": "the forest config cannot be used; run 'memory-forest doctor ROOT'",
    "file_unreadable": "a memory file could not be read safely",
    "turn_too_large": f"the turn is larger than the gate's input cap of {MAX_INPUT_BYTES} bytes",
    "turn_not_utf8": "the turn is not UTF-8 text",
    "hook_input_too_large": f"the hook input is larger than the gate's input cap of "
                            f"{MAX_HOOK_BYTES} bytes",
    "hook_input_invalid": "the hook input is not a JSON object with a string 'prompt'",
    "hook_event_unsupported": f"the gate answers only the {HOOK_EVENT} hook event",
    "format_unknown": f"unknown format; use one of: {', '.join(FORMATS)}",
    "limit_out_of_range": f"limit must be between 1 and {MAX_LIMIT}",
    "context_bytes_out_of_range": f"context-bytes must be between {MIN_CONTEXT_BYTES} and "
                                  f"{MAX_CONTEXT_BYTES}",
    "lookup_failed": "the memory lookup failed; run 'memory-forest doctor ROOT'",
    "io_error": "the disk failed while memory was read; run 'memory-forest doctor ROOT'",
    "interrupted": "the memory lookup was interrupted",
    "internal_error": "the memory lookup failed unexpectedly; run 'memory-forest doctor ROOT'",
}
_USAGE = frozenset({"format_unknown", "limit_out_of_range", "context_bytes_out_of_range"})
# The command that fixes each failure the user cannot fix by rewording the turn.
_DOCTOR = "memory-forest doctor ROOT"
_REINSTALL = "memory-forest hooks install --client CLIENT --root ROOT"
FIXES: dict[str, str] = {
    "index_missing": "memory-forest index ROOT",
    "index_stale": "memory-forest index ROOT",
    "index_corrupt": "memory-forest index ROOT --full",
    "index_schema_mismatch": "memory-forest index ROOT --full",
    "index_unavailable": "memory-forest index ROOT",
    "hook_input_invalid": _REINSTALL,
    "hook_event_unsupported": _REINSTALL,
    "format_unknown": _REINSTALL,
    "limit_out_of_range": _REINSTALL,
    "context_bytes_out_of_range": _REINSTALL,
}
# Failures a hook blocks the turn for: the turn itself (the user sends it again, shorter or
# as UTF-8) or the hook line (wrong from its first prompt, so it is fixed at install time,
# and a hook that cannot read its input cannot say what it let through). Every other
# failure (derived state, a lock, the disk, the forest) cannot be fixed inside the
# conversation: the hook lets the turn through and says so.
_BLOCKING = frozenset({"turn_too_large", "turn_not_utf8", "hook_input_too_large",
                       "hook_input_invalid", "hook_event_unsupported",
                       "context_bytes_out_of_range"})
_FILE_CODES = frozenset({"not_found", "not_regular_file", "file_too_large", "os_error"})


class Options(NamedTuple):
    """How one gate run looks up a turn and answers: one field per parameter the catalog
    declares for ``gate``, with the same default (a test holds the two equal).

    Built once at the process edge and passed whole, so an option reaches every
    phase without being threaded through each function by hand.
    """

    format: str = "receipt"
    limit: int = DEFAULT_LIMIT
    strict: bool = False
    lexical: bool = False  # keep retrieve to the lexical core when semantic ranking is on
    context_bytes: int = DEFAULT_CONTEXT_BYTES


DEFAULTS = Options()


class _Refused(Exception):
    """A gate failure whose code is already one of ``MESSAGES``."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


# --- the gate operation ---------------------------------------------------------------------


def consult(forest: ForestLike, data: bytes, options: Options = DEFAULTS) -> dict[str, Any]:
    """The receipt for one turn given as raw bytes (UTF-8, at most ``MAX_INPUT_BYTES``).

    Never raises: every failure becomes a failure receipt. Without the semantic
    extra retrieve is lexical whatever ``options.lexical`` says, never a failure.
    """
    # The hash of a turn over the cap would be the hash of a prefix: better none at all.
    digest = sha256_hex(data) if len(data) <= MAX_INPUT_BYTES else None
    try:
        if digest is None:
            raise _Refused("turn_too_large")
        try:
            turn = data.decode("utf-8")
        except UnicodeDecodeError:
            raise _Refused("turn_not_utf8") from None
        return _lookup(forest, turn, digest, options)
    except (Exception, KeyboardInterrupt) as exc:  # the gate's edge: a bounded receipt
        return failure(_code_of(exc), digest)


def _lookup(forest: ForestLike, turn: str, digest: str, options: Options) -> dict[str, Any]:
    """Route, then retrieve, one turn; both phases run for every non-blank turn."""
    from .forest import opened
    from .retrieve import retrieve, route

    if not 1 <= options.limit <= MAX_LIMIT:
        raise _Refused("limit_out_of_range")
    size = len(turn.encode("utf-8"))
    if not turn.strip():
        return _receipt("noop", digest, size, False, [], [], [], required=False)
    with opened(forest) as forest:
        # Prove the index is there and readable even for a turn no phase can search.
        con = forest.reader()
        reduced = size > MAX_TURN_BYTES
        query = reduce_turn(con, turn) if reduced else turn
        routed = _phase(route, forest, query, options)
        found = _phase(retrieve, forest, query, options, lexical=options.lexical)
    results, trails = routed.get("results", []), found.get("trails", [])
    unfiled = found.get("unfiled", [])
    status = "evidence_found" if results or trails or unfiled else "no_evidence"
    return _receipt(status, digest, size, reduced, results, trails, unfiled, required=True,
                    ranking=found.get("ranking"), ranking_reason=found.get("ranking_reason"),
                    left_out=found.get("left_out", []))


def reduce_turn(con: Any, turn: str) -> str:
    """A long turn cut to what is searched: its end, plus the rarest words before it.

    The last ``TAIL_BYTES`` (cut on a character and a word boundary) are kept
    as written, because a question after a pasted log or a long preamble is
    usually at the end; of the text before (its last ``HEAD_WINDOW_BYTES``,
    and of those the last ``MAX_HEAD_TERMS`` distinct words), the
    ``MAX_QUERY_TERMS`` words the fewest documents hold
    (``ranking.chosen_terms``) go before it. Given the same index, the same
    turn always reduces to the same text.
    """
    from .ranking import MAX_QUERY_TERMS, chosen_terms
    from .text import query_terms

    tail = turn.encode("utf-8")[-TAIL_BYTES:].decode("utf-8", errors="ignore")
    head = turn[: len(turn) - len(tail)]
    if head and tail and head[-1].isalnum() and tail[0].isalnum():
        # The cut split a word: it goes with the head (a tail of one word stays whole).
        cut = _first_break(tail)
        head, tail = head + tail[:cut], tail[cut:]
    window = head.encode("utf-8")[-HEAD_WINDOW_BYTES:].decode("utf-8", errors="ignore")
    if len(window) < len(head):  # the window's first word may be cut: leave it out
        window = window[_first_break(window):]
    rare = chosen_terms(con, query_terms(window)[-MAX_HEAD_TERMS:], MAX_QUERY_TERMS)
    # The tail goes last: a long query is embedded by its end (semantic_model.Model.bounded).
    return f"{' '.join(rare)}\n{tail}"


def _first_break(text: str) -> int:
    """Where the first word of ``text`` ends (0 when it is all one word)."""
    return next((i for i, ch in enumerate(text) if not ch.isalnum()), 0)


def _phase(call: Any, forest: Forest, turn: str, options: Options,
           **extra: Any) -> dict[str, Any]:
    try:
        return call(forest, turn, limit=options.limit, strict=options.strict, **extra)
    except ForestError as exc:
        if exc.code in ("query_not_searchable", "query_empty"):
            return {}  # no searchable word: the phase ran and nothing can match
        raise


def _receipt(status: str, turn_sha256: str, turn_bytes: int, reduced: bool,
             results: list[dict[str, Any]], trails: list[dict[str, Any]],
             unfiled: list[dict[str, Any]], required: bool, ranking: str | None = None,
             ranking_reason: str | None = None,
             left_out: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """``ranking`` is what retrieve ranked with (None when no phase could search the turn),
    so a host can tell a fused answer from a keyword one without a second call."""
    from .retrieve import unverified

    nodes = [*results, *(node for trail in trails for node in trail["nodes"]), *unfiled]
    return {
        "schema_version": SCHEMA_VERSION,
        "operation": OPERATION,
        "ok": True,
        "status": status,
        "lookup_required": required,
        "lookup_completed": required,
        "body_included": False,
        "route": {"count": len(results), "results": results},
        "retrieve": {"count": len(trails), "trails": trails, "unfiled": unfiled,
                     "left_out": left_out or [], "ranking": ranking,
                     "ranking_reason": ranking_reason},
        "turn_sha256": turn_sha256,
        "turn_bytes": turn_bytes,
        "turn_reduced": reduced,
        "unverified": unverified(nodes),
    }


def failure(code: str, turn_sha256: str | None = None) -> dict[str, Any]:
    """A failure receipt: a code from ``MESSAGES`` and its fixed message, nothing else."""
    return {
        "schema_version": SCHEMA_VERSION,
        "operation": OPERATION,
        "ok": False,
        "status": "failed",
        "lookup_required": True,
        "lookup_completed": False,
        "body_included": False,
        "error": {"code": code, "message": MESSAGES[code], "details": {}},
        "reason": code,
        "fix": FIXES.get(code, _DOCTOR),
        "turn_sha256": turn_sha256,
    }


def _code_of(exc: BaseException) -> str:
    """One of ``MESSAGES``: the code every surface gives ``exc``, folded into the gate's set."""
    from .envelope import error_of

    if isinstance(exc, _Refused):
        return exc.code
    code = error_of(exc)[0]["code"]
    if code in MESSAGES:
        return code
    if code.startswith("config_"):
        return "config_invalid"
    if code in _FILE_CODES:
        return "file_unreadable"
    return "lookup_failed"



# --- host adapters --------------------------------------------------------------------------


def answer(forest: ForestLike, raw: bytes, options: Options = DEFAULTS
           ) -> tuple[dict[str, Any], int]:
    """The object to print and the exit code for one gate run in ``options.format``.

    ``options.context_bytes`` bounds a hook format's context; it is checked in every
    format, so a hook line that is wrong is wrong the same way when tried by hand.
    """
    if options.format not in FORMATS:
        return failure("format_unknown"), 2
    budget_ok = MIN_CONTEXT_BYTES <= options.context_bytes <= MAX_CONTEXT_BYTES
    if options.format == "receipt":
        receipt = consult(forest, raw, options) if budget_ok else \
            failure("context_bytes_out_of_range")
        if receipt["ok"]:
            return receipt, 0
        return receipt, 2 if receipt["error"]["code"] in _USAGE else 1
    try:
        if not budget_ok:
            raise _Refused("context_bytes_out_of_range")
        turn = _hook_prompt(raw)
    except (Exception, KeyboardInterrupt) as exc:
        return hook_answer(failure(_code_of(exc)), options.strict), 0
    receipt = consult(forest, turn, options)
    return hook_answer(receipt, options.strict, options.context_bytes), 0


def hook_answer(receipt: dict[str, Any], strict: bool,
                budget: int = DEFAULT_CONTEXT_BYTES) -> dict[str, Any]:
    """The hook's answer under the gate's failure policy.

    A failure in the turn or the hook line (``_BLOCKING``) blocks it; any other
    lets it through, saying the lookup did not complete, why, and what fixes
    it, because a fault in derived state or the disk would otherwise block
    every prompt of the conversation, and no prompt can fix it. ``strict`` blocks on
    every failure (fail closed).
    """
    if receipt["ok"] or strict or receipt["error"]["code"] in _BLOCKING:
        return hook_output(receipt, budget)
    return passed_through(receipt)


def _hook_prompt(raw: bytes) -> bytes:
    """The user's turn from a ``UserPromptSubmit`` hook input, as UTF-8 bytes."""
    from .jsonio import StrictJSONError, loads_strict

    if len(raw) > MAX_HOOK_BYTES:
        raise _Refused("hook_input_too_large")
    try:
        data = loads_strict(raw)
    except StrictJSONError as exc:  # a \ud800 escape is text no UTF-8 turn can hold
        code = "turn_not_utf8" if exc.kind == "lone_surrogate" else "hook_input_invalid"
        raise _Refused(code) from None
    if not isinstance(data, dict) or not isinstance(data.get("prompt"), str):
        raise _Refused("hook_input_invalid")
    if data.get("hook_event_name", HOOK_EVENT) != HOOK_EVENT:
        raise _Refused("hook_event_unsupported")
    try:
        return data["prompt"].encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape
        raise _Refused("turn_not_utf8") from None


# --- the process edge -----------------------------------------------------------------------


def run_process(root: str, stdin: BinaryIO | None = None, stdout: TextIO | None = None,
                **values: Any) -> int:
    """Read the turn (or hook input) from stdin, print one JSON object, return the exit code.

    ``values`` are the catalog's parameters of ``gate`` as the command line parsed
    them: they become the one ``Options`` the run passes whole.
    """
    from .jsonio import dumps

    options = Options(**values)
    source = stdin if stdin is not None else sys.stdin.buffer
    bound = MAX_INPUT_BYTES if options.format == "receipt" else MAX_HOOK_BYTES
    try:
        raw = source.read(bound + 1)  # one byte over the bound is enough to refuse
    except (OSError, ValueError):
        raw = None
    if raw is None:
        outcome, code = (failure("internal_error"), 1) if options.format == "receipt" else \
            (hook_answer(failure("internal_error"), options.strict), 0)
    else:
        outcome, code = answer(root, raw, options)
    (stdout or sys.stdout).write(dumps(outcome) + "\n")
    return code

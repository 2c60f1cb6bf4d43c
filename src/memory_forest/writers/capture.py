"""``capture``: append raw events to ISTM, with credential redaction.

Callers supply ``observed_at``, ``source``, ``kind`` and ``payload`` (and
may supply ``event_id`` and further keys of their own). The tool fills
``event_id`` when it is absent, ``captured_at`` (one UTC time per batch),
``sha256`` = sha256 of the canonical JSON of the stored payload, and ``prev``
= sha256 of the line before it, which chains the lines of the ISTM layer
(``chain``: the first line of a shard names the last line of the shard
before it). Events go to the dated shard ``06 istm/YYYY-MM-DD.jsonl`` of
the capture day, or in a forest kept in git to this machine's shard
``06 istm/YYYY-MM-DD.<host>.jsonl``, so machines never append to one file.

Before anything is stored, every string (values and keys, in the payload at
any depth and in the caller's own fields) goes through ``redact``: credential-
shaped text is replaced by ``[REDACTED:<rule>]`` and the result counts
redactions per rule. An ``event_id`` holding a credential is refused
(``secret_in_name``): it is a name, stored as given. A batch is all or
nothing: one bad event rejects the batch.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from typing import TYPE_CHECKING, Any

from .. import chain
from ..digest import sha256_hex
from ..errors import ForestError
from ..forest import ForestLike, opened
from ..jsonio import StrictJSONError, dumps, loads_strict
from ..lockline import DEFAULT_CAPTURE_WAIT
from .redact import redact_value, refuse_secret_name
from .transaction import Stage, transact

if TYPE_CHECKING:
    from ..results import CaptureResult

MAX_INPUT_BYTES = 64 * 1024 * 1024
MAX_EVENTS = 100_000
MAX_EVENT_BYTES = 1024 * 1024
MAX_LABEL = 200
EVENT_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_EVENT_ID = re.compile(EVENT_ID)
CALLER_FIELDS = ("observed_at", "source", "kind", "payload")
TOOL_FIELDS = ("captured_at", "sha256", chain.FIELD)
_LABEL_BAD = re.compile(r"[\x00-\x1f\x7f-\x9f]")

# --- input ------------------------------------------------------------------------------------


def parse_input(raw: bytes) -> list[dict[str, Any]]:
    """One JSON object, or JSONL: one object per non-blank line."""
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise _bad("capture_not_utf8", "the input is not UTF-8") from None
    try:
        whole = loads_strict(text)
    except StrictJSONError as exc:
        if exc.kind != "syntax":
            raise _json_error(exc, 1) from None
        whole = None
    else:
        if not isinstance(whole, dict):
            raise _bad("capture_not_object", "each event is one JSON object")
        return [whole]
    events = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            event = loads_strict(line)
        except StrictJSONError as exc:
            raise _json_error(exc, number) from None
        if not isinstance(event, dict):
            raise _bad("capture_not_object", "each event is one JSON object", line=number)
        events.append(event)
        if len(events) > MAX_EVENTS:
            raise _bad("capture_too_many_events", f"a batch holds at most {MAX_EVENTS} events")
    if not events:
        raise _bad("capture_empty", "the input holds no event")
    return events


def inline_events(value: Any) -> list[dict[str, Any]]:
    """Events given as a value rather than a file (the MCP tool's ``events``).

    One JSON object is one event, a list of objects a batch. The checks and
    codes are those of a file: the same limits on events and bytes, and
    NaN or Infinity (which a lenient JSON parser upstream may have let
    through) are rejected, never stored.
    """
    items = [value] if isinstance(value, dict) else value
    if not isinstance(items, list):
        raise _bad("capture_not_object", "events are one JSON object or a list of objects")
    if not items:
        raise _bad("capture_empty", "the input holds no event")
    if len(items) > MAX_EVENTS:
        raise _bad("capture_too_many_events", f"a batch holds at most {MAX_EVENTS} events")
    size = 0
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise _bad("capture_not_object", "each event is one JSON object", event=number)
        try:
            size += len(json.dumps(item, ensure_ascii=False, allow_nan=False).encode()) + 1
        except ValueError:
            raise _bad("capture_non_finite", f"event {number} holds NaN or Infinity",
                       event=number) from None
        except (TypeError, RecursionError):
            raise _bad("capture_invalid_json", f"event {number} is not plain JSON",
                       event=number) from None
        if size > MAX_INPUT_BYTES:
            raise _bad("capture_input_too_large",
                       f"the input is larger than {MAX_INPUT_BYTES} bytes")
    return items


def _json_error(exc: StrictJSONError, line: int) -> ForestError:
    code = {"duplicate_key": "capture_duplicate_key", "non_finite": "capture_non_finite"}.get(
        exc.kind, "capture_invalid_json")
    return _bad(code, f"line {line} is not strict JSON: {exc}", line=line)


def _bad(code: str, message: str, **details: Any) -> ForestError:
    return ForestError(code, message, details, exit_code=2)


def check_event(event: dict[str, Any], number: int) -> None:
    for key in CALLER_FIELDS:
        if key not in event:
            raise _bad("capture_missing_field", f"event {number} lacks '{key}'",
                       event=number, field=key)
    for key in TOOL_FIELDS:
        if key in event:
            raise _bad("capture_reserved_field", f"'{key}' is filled by the tool, not the caller",
                       event=number, field=key)
    event_id = event.get("event_id")
    if event_id is not None and not (isinstance(event_id, str) and _EVENT_ID.fullmatch(event_id)):
        raise _bad("capture_bad_event_id", "event_id is 1-128 letters, digits, '.', '_', ':' "
                   "or '-', starting with a letter or digit", event=number)
    if event_id is not None:
        refuse_secret_name(event_id, "event_id", event=number)
    if not _is_timestamp(event["observed_at"]):
        raise _bad("capture_bad_observed_at", "observed_at must be an RFC 3339 timestamp with "
                   "a time zone", event=number)
    for key in ("source", "kind"):
        value = event[key]
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_LABEL \
                or _LABEL_BAD.search(value):
            raise _bad(f"capture_bad_{key}", f"{key} must be a short one-line string",
                       event=number)


def _is_timestamp(value: Any) -> bool:
    if not isinstance(value, str) or "T" not in value.upper():
        return False
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return parsed.tzinfo is not None


# --- staging ----------------------------------------------------------------------------------


def new_event_id(stamp: str, token: str, number: int) -> str:
    """Sortable and unique: capture time, a per-batch random token, the batch position."""
    return f"evt-{stamp}-{token}-{number:05d}"


def stage_events(stage: Stage, events: list[dict[str, Any]]
                 ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Append ``events`` (already checked) to today's shard.

    Returns the summary for the receipt and the stored record of each event,
    in input order (for a duplicate, the record already stored).
    """
    captured_at = stage.now
    day = captured_at[:10]
    shard = chain.shard_path(stage.view.root, day)
    stamp = captured_at.replace("-", "").replace(":", "").replace(".", "")
    token = os.urandom(4).hex()
    counts: dict[str, int] = {}
    prepared = []
    for number, event in enumerate(events, start=1):
        record = redact_value({key: value for key, value in event.items()
                               if key != "event_id"}, counts)
        record["event_id"] = event.get("event_id") or new_event_id(stamp, token, number)
        record["captured_at"] = captured_at
        record["sha256"] = sha256_hex(dumps(record["payload"]).encode("utf-8"))
        prepared.append(record)
    known = stage.view.event_paths({record["event_id"] for record in prepared})
    shards: dict[str, dict[str, dict[str, Any]]] = {}
    batch: dict[str, dict[str, Any]] = {}
    lines: list[bytes] = []
    records: list[dict[str, Any]] = []
    duplicates = 0
    before = b""
    prev: str | None = None  # worked out when the first new line needs it
    for number, record in enumerate(prepared, start=1):
        event_id = record["event_id"]
        previous = batch.get(event_id)
        if previous is None and event_id in known:
            previous = _stored(stage, known[event_id], event_id, shards)
        if previous is not None:
            if _content(previous) != _content(record):
                raise ForestError("capture_event_conflict", "an event with this event_id "
                                  "already exists with different content",
                                  {"event_id": event_id, "event": number})
            duplicates += 1
            records.append(previous)
            continue
        if prev is None:
            before = stage.read(shard) or b""
            prev = _head(stage, shard, before)
        record[chain.FIELD] = prev
        line = dumps(record)
        if len(line) > MAX_EVENT_BYTES:
            raise _bad("capture_event_too_large", f"an event is at most {MAX_EVENT_BYTES} bytes "
                       "of JSON", event=number)
        encoded = line.encode("utf-8")
        prev = chain.line_hash(encoded)
        batch[event_id] = record
        records.append(record)
        lines.append(encoded)
    if lines:
        if before and not before.endswith(b"\n"):
            before += b"\n"
        data = before + b"\n".join(lines) + b"\n"
        limit = stage.view.config.limits["max_file_bytes"]
        if len(data) > limit:
            raise ForestError("istm_shard_full", f"today's ISTM shard would exceed "
                              f"max_file_bytes ({limit}); raise the limit in forest.json",
                              {"path": shard, "size": len(data)})
        stage.put(shard, data)
    ids = [record["event_id"] for record in prepared]
    summary = {"shard": shard if lines else None, "event_ids": ids, "captured": len(lines),
               "duplicates": duplicates, "captured_at": captured_at, "redactions": counts}
    return summary, records


def _head(stage: Stage, shard: str, before: bytes) -> str:
    """What the first new line of ``shard`` chains to: the shard's own last line, else the
    last line of the shard before it (read from its end, never whole)."""
    last = chain.last_line(before)
    if last is not None:
        return chain.line_hash(last)
    return chain.head_of(stage.view.root, shard, stage.view.listdir(chain.ISTM_DIR))


def _content(record: dict[str, Any]) -> dict[str, Any]:
    """What makes two records the same event: not when it was captured, nor where its line
    sits in the chain."""
    return {key: value for key, value in record.items()
            if key not in ("captured_at", chain.FIELD)}


def _stored(stage: Stage, path: str, event_id: str,
            shards: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any] | None:
    """The stored record of ``event_id`` in the shard ``path`` (each shard parsed once)."""
    if path not in shards:
        shards[path] = {}
        for line in (stage.read(path) or b"").decode("utf-8").split("\n"):
            record = loads_strict(line) if line.strip() else None
            if isinstance(record, dict) and isinstance(record.get("event_id"), str):
                shards[path][record["event_id"]] = record
    return shards[path].get(event_id)


# --- the command ------------------------------------------------------------------------------


def capture_events(forest: ForestLike, events: list[dict[str, Any]],
                   transaction_id: str | None = None,
                   wait: float = DEFAULT_CAPTURE_WAIT) -> CaptureResult:
    """Capture events (from ``parse_input`` for a file or stdin, ``inline_events`` for a tool).

    The request a receipt binds is the list of events, so the same batch given
    as a file to the CLI or inline to the MCP tool is the same request.
    """
    for number, event in enumerate(events, start=1):
        check_event(event, number)

    def prepare(stage: Stage) -> None:
        stage.details.update(stage_events(stage, events)[0])

    with opened(forest) as forest:
        return transact(forest, "capture", events, transaction_id, prepare, wait)

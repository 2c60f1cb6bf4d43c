"""The MCP server's stdio framing: every line read strictly, every request answered.

The SDK's own stdio transport parses with a lenient JSON parser (a repeated
key silently keeps its last value) and turns a line it cannot read into an
exception its session only logs, so a client would wait forever for an
answer. The server therefore reads its frames itself, one JSON-RPC message
per line, with the same strict rules as every other JSON input
(``jsonio``), and answers what it refuses:

* a line that is not JSON (or not UTF-8): ``-32700`` parse error, id null;
* a batch array, a scalar, a frame with no ``method`` that is no response,
  a ``jsonrpc`` other than ``"2.0"``, ``params`` that are not an object, a
  repeated key in the envelope, or an ``id`` that is not a string or an
  integer a JSON client can hold exactly (at most 2^53 - 1 in magnitude):
  ``-32600`` invalid request, with the id echoed when it is valid, else null;
* a ``tools/call`` whose arguments break a strict rule (a repeated key, a
  lone surrogate, NaN, nesting past 64 levels): a tool error with a stable
  code, as for any other bad argument. An argument the CLI reads from a file
  (``events``, ``query_plan``, ``summaries``) is held to that file's reader,
  so it gets the CLI's code (``capture_duplicate_key``,
  ``query_plan_duplicate_key``, ...); any other one gets ``usage_error``
  with ``details.reason``;
* any other request breaking those rules: ``-32600``.

A notification (a method without an id) that breaks them is dropped, as
JSON-RPC wants no answer to a notification. Everything else goes on to the
SDK's session. The wire is the process's own copy of stdin and stdout: while
the server runs, fd 0 reads the null device and fd 1 writes to stderr, so
nothing the process runs can read a frame or break one with a stray print.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

from . import catalog
from .envelope import failure
from .errors import ForestError
from .jsonio import TOKEN, StrictJSONError, check_depth, dumps, is_utf8

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# The largest integer every JSON client holds exactly (a JavaScript number).
MAX_ID = 2**53 - 1
# What ``jsonio`` refuses in a value that parses (``StrictJSONError`` kinds).
STRICT_KINDS = ("duplicate_key", "lone_surrogate", "non_finite", "too_deep")
# Longer digit strings are not turned into ints (the interpreter refuses past 4300).
MAX_DIGITS = 64


class _Object(dict):
    """A parsed JSON object that keeps its pairs as written, a repeated key included."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


class _Huge:
    """An integer too long to be any value a tool or an id can take, kept as its digits."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits


def _int(text: str) -> int | _Huge:
    return int(text) if len(text.lstrip("-")) <= MAX_DIGITS else _Huge(text)


def _parse(text: str) -> Any:
    """The frame as written: nothing refused but syntax, every repeated key kept."""
    return json.loads(text, object_pairs_hook=_Object, parse_int=_int)


def _flaw(value: Any) -> str | None:
    """Which strict rule ``value`` breaks, if any (the ``StrictJSONError`` kinds)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not is_utf8(item):
                return "lone_surrogate"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "non_finite"
        elif isinstance(item, _Huge):
            return "non_finite"
        elif isinstance(item, _Object):
            if len(item.pairs) != len(item):
                return "duplicate_key"
            stack.extend(key for key, _ in item.pairs)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _text(value: Any) -> str:
    """``value`` as JSON again, repeated keys, NaN and long numbers as they were written."""
    if isinstance(value, _Object):
        return "{" + ",".join(f"{json.dumps(key)}:{_text(item)}"
                              for key, item in value.pairs) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_text(item) for item in value) + "]"
    if isinstance(value, _Huge):
        return value.digits
    return json.dumps(value)


def _scalar(text: str, key: str, level: int = 1) -> Any:
    """The value of ``key`` at nesting ``level`` of a line too deep to parse, if scalar."""
    depth = 0
    for match in TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
        elif token in ("]", "}"):
            depth -= 1
        elif depth == level and token == json.dumps(key):
            rest = text[match.end():].lstrip()
            if rest.startswith(":"):
                try:
                    value, _ = json.JSONDecoder().raw_decode(rest[1:].lstrip())
                except (ValueError, RecursionError):
                    return None
                return value
    return None


def screen(line: bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``(message, None)`` to pass a frame on, ``(None, answer)`` to refuse it, or
    ``(None, None)`` for a line that needs neither (blank, or a bad notification)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, _rpc_error(None, PARSE_ERROR, "parse error: the line is not UTF-8")
    if not text.strip():
        return None, None
    try:
        check_depth(text)
    except StrictJSONError:
        # Too deep to parse safely: answer from the header fields a flat scan finds.
        header = {key: value for key in ("jsonrpc", "id", "method")
                  if (value := _scalar(text, key)) is not None}
        # The tool's name (in params) only labels the tool error.
        return None, _refuse(header, "too_deep", _scalar(text, "name", level=2))
    try:
        frame = _parse(text)
    except (ValueError, RecursionError):
        return None, _rpc_error(None, PARSE_ERROR, "parse error: the line is not JSON")
    if not isinstance(frame, dict):
        what = "a batch (send one message per line)" if isinstance(frame, list) \
            else "not an object"
        return None, _rpc_error(None, INVALID_REQUEST, f"invalid request: {what}")
    problem = _envelope_problem(frame)
    if problem is not None:
        return None, _refuse(frame, problem)
    if "method" not in frame:
        return frame, None  # a response to the server
    params = frame.get("params") or {}
    if frame["method"] == "tools/call" and "id" in frame:
        arguments = params.get("arguments")
        refused = _arguments_refusal(params.get("name"), arguments)
        if refused is not None:
            return None, _tool_error(frame["id"], refused)
        params = {key: value for key, value in params.items() if key != "arguments"}
    reason = _flaw(params)
    return (None, _refuse(frame, reason)) if reason else (frame, None)


def _envelope_problem(frame: _Object) -> str | None:
    if len(frame.pairs) != len(frame):
        return "a key appears twice"
    if frame.get("jsonrpc") != "2.0":
        return "jsonrpc is not \"2.0\""
    if "id" in frame and not _valid_id(frame["id"]):
        return f"the id is not a string or an integer of at most {MAX_ID} in magnitude"
    if "method" not in frame:
        return None if "id" in frame and ("result" in frame) != ("error" in frame) \
            else "no method, and no response"
    if not isinstance(frame["method"], str):
        return "the method is not a string"
    if not isinstance(frame.get("params") or {}, dict):
        return "params is not an object"
    return None


def _valid_id(value: Any) -> bool:
    if isinstance(value, str):
        return is_utf8(value)
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_ID


def _refuse(header: dict[str, Any], reason: str, name: str | None = None) -> dict[str, Any] | None:
    """The answer to a frame that breaks a rule; None for a notification."""
    request_id = header.get("id")
    echoed = request_id if _valid_id(request_id) and not (
        isinstance(header, _Object) and [key for key, _ in header.pairs].count("id") > 1) \
        else None
    method = header.get("method")
    if isinstance(method, str) and request_id is None and "id" not in header:
        return None  # a notification: JSON-RPC wants no answer
    if reason in STRICT_KINDS:
        if method == "tools/call" and echoed is not None:
            return _tool_error(echoed, _usage(_tool_name(name), reason, None))
        reason = f"not strict JSON ({reason.replace('_', ' ')})"
    return _rpc_error(echoed, INVALID_REQUEST, f"invalid request: {reason}")


def _arguments_refusal(name: Any, arguments: Any) -> dict[str, Any] | None:
    """The failure for tool arguments that break a strict rule, with the CLI's code."""
    name = _tool_name(name)
    if not isinstance(arguments, _Object):
        reason = _flaw(arguments)
        return _usage(name, reason, None) if reason else None
    if len(arguments.pairs) != len(arguments):
        names = [key for key, _ in arguments.pairs]
        return _usage(name, "duplicate_key", sorted({key for key in names
                                                     if names.count(key) > 1}))
    readers = {param.name: param.reader for op in catalog.tools() if op.name == name
               for param in op.params if param.tool and param.reader}
    for key, value in arguments.pairs:
        reason = _flaw(key) or _flaw(value)
        if reason is None:
            continue
        if key in readers:
            refused = _as_read_by_the_cli(name, readers[key], value)
            if refused is not None:
                return refused
        return _usage(name, reason, [key] if is_utf8(key) else None)
    return None


def _as_read_by_the_cli(name: str, reader: str, value: Any) -> dict[str, Any] | None:
    """The failure the CLI's reader gives for this value written to a file, if any."""
    try:
        catalog.resolve(reader)(_text(value).encode("utf-8"))
    except ForestError as exc:
        return failure(name, exc.to_dict())
    return None


def _usage(name: str, reason: str, fields: list[str] | None) -> dict[str, Any]:
    where = f" ({', '.join(fields)})" if fields else ""
    details: dict[str, Any] = {"reason": reason, **({"fields": fields} if fields else {})}
    return failure(name, {"code": "usage_error", "message": f"invalid arguments{where}: not "
                          f"strict JSON ({reason.replace('_', ' ')})", "details": details})


def _tool_name(name: Any) -> str:
    """The tool's name for the failure's ``operation``, when it is a printable name."""
    return name if isinstance(name, str) and name.isprintable() and len(name) <= 64 \
        else "tools/call"


def tool_error(outcome: dict[str, Any]) -> dict[str, Any]:
    """A tool result for a failure: the envelope as one text block, no structured content.

    Structured content must match the tool's output schema, which describes
    the success; the TypeScript SDK checks it even on an error result.
    """
    return {"content": [{"type": "text", "text": dumps(outcome)}], "isError": True}


def _tool_error(request_id: Any, outcome: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": tool_error(outcome)}


def _rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


@asynccontextmanager
async def stdio(message_of: Callable[[dict[str, Any]], Any]) -> AsyncIterator[tuple[Any, Any]]:
    """The server's read and write streams over the process's stdin and stdout.

    ``message_of`` turns a frame that passed the screen into the SDK's
    message; what it refuses is answered as an invalid request.
    """
    import anyio  # installed with the optional SDK, like everything that calls this

    wire_in, wire_out, restore = _claim()
    inbound_writer, inbound = anyio.create_memory_object_stream(0)
    outbound, outgoing = anyio.create_memory_object_stream(0)
    pending = _Pending(anyio.Event)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_read, anyio.wrap_file(wire_in), inbound_writer, outbound.clone(),
                             message_of, pending)
            group.start_soon(_write, anyio.wrap_file(wire_out), outgoing, pending)
            async with outbound:
                yield inbound, outbound
    finally:
        restore()


class _Pending:
    """The ids of requests passed to the session and not answered yet.

    A client may close stdin right after its last request; the session stops
    when its read stream ends, so that stream stays open until every request
    it was given has its answer (or was cancelled), at most ``DRAIN_SECONDS``.
    """

    def __init__(self, event: Callable[[], Any]) -> None:
        self.ids: set[Any] = set()
        self.event = event
        self.empty = event()
        self.empty.set()

    def add(self, request_id: Any) -> None:
        if not self.ids:
            self.empty = self.event()
        self.ids.add(request_id)

    def discard(self, request_id: Any) -> None:
        self.ids.discard(request_id)
        if not self.ids:
            self.empty.set()


# Beyond the longest a tool call can take to start writing (a 30 s wait for the lock).
DRAIN_SECONDS = 60.0


async def _read(wire: Any, inbound: Any, outbound: Any, message_of: Callable[..., Any],
                pending: _Pending) -> None:
    import anyio

    async with inbound, outbound:
        async for line in wire:
            message, answer = screen(line)
            if message is not None:
                try:
                    forwarded = message_of(message)
                except ValueError:  # the SDK's models refuse it: answered as any invalid frame
                    answer = _refuse(message, "not a message the SDK can read")
                else:
                    _track(message, pending)
                    await inbound.send(forwarded)
                    continue
            if answer is not None:
                await outbound.send(answer)
        with anyio.move_on_after(DRAIN_SECONDS):
            await pending.empty.wait()


def _track(frame: dict[str, Any], pending: _Pending) -> None:
    if "method" in frame and "id" in frame:
        pending.add(frame["id"])
    elif frame.get("method") == "notifications/cancelled":
        pending.discard((frame.get("params") or {}).get("requestId"))


async def _write(wire: Any, outgoing: Any, pending: _Pending) -> None:
    async with outgoing:
        async for item in outgoing:
            if isinstance(item, dict):
                text = dumps(item)
            else:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                message = getattr(item.message, "root", item.message)  # 1.x wraps it
                if not hasattr(message, "method"):  # an answer, not the server's own request
                    pending.discard(getattr(message, "id", None))
            await wire.write(text.encode("utf-8") + b"\n")
            await wire.flush()


def _claim() -> tuple[BinaryIO, BinaryIO, Callable[[], None]]:
    """Private copies of fd 0 and 1 for the protocol, and how to give the fds back."""
    try:
        saved = os.dup(0), os.dup(1)
    except OSError:  # no descriptors to spare: serve the streams in place
        return sys.stdin.buffer, sys.stdout.buffer, lambda: None
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
    except OSError:  # no stderr to divert to: the copies still carry the protocol
        pass

    def restore() -> None:
        for fd, copy in zip((0, 1), saved, strict=True):
            os.dup2(copy, fd)

    return (os.fdopen(saved[0], "rb", closefd=False), os.fdopen(saved[1], "wb", closefd=False),
            restore)

"""Strict JSON in, deterministic JSON out.

Every piece of JSON this tool accepts (config, ISTM lines, plans, hook input)
goes through ``loads_strict``: duplicate keys, NaN/Infinity and numbers
outside the IEEE-754 double range are rejected instead of silently guessed.
So are nesting deeper than ``MAX_DEPTH`` (counted by a flat scan before the
recursive parser can run out of stack) and lone surrogates (``"\\ud800"``),
which no UTF-8 file can hold, so nothing built from them could be written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

# Memory records are shallow; 64 levels leave room for any real payload and
# stay far below the interpreter's recursion limit.
MAX_DEPTH = 64

# A string token (skipped whole) or one bracket; the unrolled loop keeps long
# strings linear.
TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
# A \uD800-\uDFFF escape: only such text can parse into a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class StrictJSONError(ValueError):
    """``kind`` is one of ``syntax``, ``duplicate_key``, ``non_finite``,
    ``too_deep``, ``lone_surrogate``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def loads_strict(text: str | bytes) -> Any:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise StrictJSONError("syntax", "not UTF-8") from None
    if not is_utf8(text):
        raise StrictJSONError("lone_surrogate", "text holds a lone surrogate")
    check_depth(text)
    try:
        data = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except StrictJSONError:
        raise
    except (ValueError, RecursionError) as exc:
        raise StrictJSONError("syntax", str(exc).split(":")[0]) from None
    if _SURROGATE_ESCAPE.search(text) and not is_utf8(dumps(data)):
        raise StrictJSONError("lone_surrogate", "a \\u escape gives a lone surrogate")
    return data


def check_value(value: Any) -> None:
    """Hold an already-parsed value (MCP arguments) to the same bounds, without recursing."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not is_utf8(item):
                raise StrictJSONError("lone_surrogate", "a string holds a lone surrogate")
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise StrictJSONError("too_deep", f"nested deeper than {MAX_DEPTH} levels")
        children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)


def check_depth(text: str) -> None:
    """Refuse nesting beyond ``MAX_DEPTH`` without recursing (strings are skipped)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return  # too few brackets to nest that deep: the common case costs two counts
    depth = 0
    for match in TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                raise StrictJSONError("too_deep", f"nested deeper than {MAX_DEPTH} levels")
        elif token in ("]", "}"):
            depth -= 1


def is_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8: false for lone surrogates, such as the escapes
    Python gives undecodable bytes in file names and command-line arguments."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def load_object(raw: bytes | str, max_bytes: int, prefix: str,
                reject: Callable[[str, str], Exception]) -> dict[str, Any]:
    """One strict JSON object of at most ``max_bytes``, as every plan is read.

    Failures go through ``reject(code, message)`` with the codes
    ``<prefix>_too_large``, ``_duplicate_key``, ``_invalid_json``, ``_not_object``.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if len(raw) > max_bytes:
        raise reject(f"{prefix}_too_large", f"at most {max_bytes} bytes are accepted")
    try:
        data = loads_strict(raw)
    except StrictJSONError as exc:
        kind = "duplicate_key" if exc.kind == "duplicate_key" else "invalid_json"
        raise reject(f"{prefix}_{kind}", f"not strict JSON: {exc}") from None
    if not isinstance(data, dict):
        raise reject(f"{prefix}_not_object", "expected one JSON object")
    return data


def dumps(obj: Any) -> str:
    """Compact, sorted, UTF-8 JSON: the only shape of machine output."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise StrictJSONError("duplicate_key", f"duplicate key '{key[:80]}'")
        data[key] = value
    return data


def _no_constant(name: str) -> Any:
    raise StrictJSONError("non_finite", f"{name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError("non_finite", "number outside the double range")
    return value

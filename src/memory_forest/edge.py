"""The one place where a library call becomes output and an exit code.

Every command ends here: a result is printed as one JSON object or rendered
for a person, and an exception becomes one failure object with a stable
code (``envelope.outcome_of``), never a traceback. The MCP server and the gate use
the same mapping for their own answers.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from .envelope import failure, outcome_of
from .jsonio import dumps, is_utf8


def present(operation: str, call: Callable[[], dict[str, Any] | None], json_mode: bool,
            style: str = "generic") -> int:
    """Run one library call, print its outcome, and return the exit code.

    0, 1, 2 (usage), or 128 + the signal number when interrupted: 130 for
    Ctrl-C, 143 for SIGTERM and 129 for SIGHUP (received while a command held
    the lock, see ``lock.interruptible``).

    A result that is not ok may name its own exit code (``maintain`` uses 3
    for "built, with problems"); otherwise it is 1. A call that returns
    nothing (``serve``, once its client has left) prints nothing. ``style``
    names the ``render`` function that shows the result to a person.
    """
    outcome, code = outcome_of(operation, call)
    if outcome is not None:
        emit(outcome, json_mode, style)
    return code


def refuse_undecodable(args: list[str]) -> int | None:
    """Exit code 2 after a ``usage_error`` when an argument is not valid UTF-8, else None.

    On POSIX ``sys.argv`` holds bytes that are not UTF-8 as lone surrogates
    (``surrogateescape``); such a value cannot be stored, searched or printed
    as text, so it is refused here, before any command sees it. The message
    names the argument (its option, or its position) but never echoes it.
    """
    for position, arg in enumerate(args, start=1):
        if is_utf8(arg):
            continue

        where = _argument_name(args, position)
        emit(failure(_operation(args), {
            "code": "usage_error",
            "message": f"{where} is not valid UTF-8; pass it as UTF-8 text",
            "details": {"argument": position, "option": _option_of(args, position)}}),
            "--json" in args)
        return 2
    return None


def _option_of(args: list[str], position: int) -> str | None:
    """The option whose value argument ``position`` (1-based) is, if any."""
    arg, before = args[position - 1], args[position - 2] if position > 1 else ""
    for candidate in (arg.partition("=")[0], before):
        if candidate.startswith("--") and is_utf8(candidate) and candidate != "--":
            return candidate.partition("=")[0]
    return None


def _argument_name(args: list[str], position: int) -> str:
    option = _option_of(args, position)
    return f"the value of {option}" if option else f"argument {position}"


def _operation(args: list[str]) -> str:
    """The command the line names, as a parse error names it (``memory-forest`` if none)."""
    first = next((arg for arg in args if not arg.startswith("-")), "")
    return first if first.isascii() and first.replace("-", "").isalpha() else "memory-forest"


# Characters str.splitlines() takes for a line break that JSON leaves unescaped; written
# escaped inside strings, so one result is always exactly one line.
_LINE_BREAKS = {ord(ch): f"\\u{ord(ch):04x}" for ch in "\x85\u2028\u2029"}


def emit(outcome: dict[str, Any], json_mode: bool, style: str = "generic") -> None:
    if json_mode:
        text = dumps(outcome)
        if not is_utf8(text):  # a path with non-UTF-8 bytes: escape it rather than crash

            text = json.dumps(outcome, sort_keys=True, separators=(",", ":"))
        sys.stdout.write(text.translate(_LINE_BREAKS) + "\n")
    else:
        from .render import render

        render(outcome, style)

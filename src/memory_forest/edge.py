"""The one place where a library call becomes output and an exit code.

Every command, whether parsed by typer (``cli``) or by the lean per-turn
parser (``entry``), ends here: a result is printed as one JSON object or
rendered for a person; a ``ForestError`` becomes one failure object with its
stable code; a failing disk (an ``OSError``, or SQLite's "disk is full")
becomes ``io_error`` naming the errno; anything else unexpected is reported
by class only, never as a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .jsonio import is_utf8


def run(operation: str, call: Callable[[], dict[str, Any]], json_mode: bool) -> int:
    """Run one library call, print its outcome, and return the exit code.

    0, 1, 2 (usage), or 128 + the signal number when interrupted: 130 for
    Ctrl-C, 143 for SIGTERM and 129 for SIGHUP (received while a command held
    the lock, see ``lock.interruptible``).

    A result that is not ok may name its own exit code (``maintain`` uses 3
    for "built, with problems"); otherwise it is 1.
    """
    from .envelope import failure
    from .errors import ForestError, as_io_error

    try:
        outcome = call()
    except ForestError as exc:
        outcome = failure(operation, exc.to_dict())
        code = exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C, or a stop signal while the lock was held
        signum = getattr(exc, "signum", 2)  # lock.Interrupted names its signal; else SIGINT
        outcome = failure(operation, {"code": "interrupted", "message": "interrupted",
                                      "details": {"signal": _signal_name(signum)}})
        code = 128 + signum
    except Exception as exc:  # the edge: never a traceback, only the class name
        disk = as_io_error(exc)
        error = disk.to_dict() if disk else {"code": "internal_error",
                                             "message": f"unexpected {type(exc).__name__}",
                                             "details": {"class": type(exc).__name__}}
        outcome = failure(operation, error)
        code = 1
    else:
        code = 0 if outcome.get("ok") else outcome.get("exit_code", 1)
    emit(outcome, json_mode)
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
        from .envelope import failure

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


def emit(outcome: dict[str, Any], json_mode: bool) -> None:
    if json_mode:
        from .jsonio import dumps

        text = dumps(outcome)
        if not is_utf8(text):  # a path with non-UTF-8 bytes: escape it rather than crash
            import json

            text = json.dumps(outcome, sort_keys=True, separators=(",", ":"))
        sys.stdout.write(text + "\n")
    else:
        from .render import render

        render(outcome)


def _signal_name(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)

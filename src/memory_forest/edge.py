"""The one place where a library call becomes output and an exit code.

Every command, whether parsed by typer (``cli``) or by the lean per-turn
parser (``entry``), ends here: a result is printed as one JSON object or
rendered for a person; a ``ForestError`` becomes one failure object with its
stable code; anything unexpected is reported by class only, never as a
traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def run(operation: str, call: Callable[[], dict[str, Any]], json_mode: bool) -> int:
    """Run one library call, print its outcome, and return the exit code.

    0, 1, 2 (usage), or 128 + the signal number when interrupted: 130 for
    Ctrl-C, 143 for SIGTERM and 129 for SIGHUP (received while a command held
    the lock, see ``lock.interruptible``).

    A result that is not ok may name its own exit code (``maintain`` uses 3
    for "built, with problems"); otherwise it is 1.
    """
    from .envelope import failure
    from .errors import ForestError

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
        outcome = failure(operation, {"code": "internal_error",
                                      "message": f"unexpected {type(exc).__name__}",
                                      "details": {"class": type(exc).__name__}})
        code = 1
    else:
        code = 0 if outcome.get("ok") else outcome.get("exit_code", 1)
    emit(outcome, json_mode)
    return code


def emit(outcome: dict[str, Any], json_mode: bool) -> None:
    if json_mode:
        from .jsonio import dumps

        sys.stdout.write(dumps(outcome) + "\n")
    else:
        from .render import render

        render(outcome)


def _signal_name(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)

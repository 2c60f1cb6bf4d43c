"""The envelope every result shares (``ok``, ``operation``, ``schema_version``), and
the one mapping from an exception to a failure with a stable code.

It sits below everything that produces a result (operations, retrieval, the
writers) and everything that answers with one (the CLI, the MCP server, the
gate), so none of them has to import another layer to shape its answer, and
a failure has the same code on every surface.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from . import SCHEMA_VERSION
from .errors import ForestError, as_index_error, as_io_error


def result(operation: str, ok: bool = True, **fields: Any) -> dict[str, Any]:
    return {"ok": ok, "operation": operation, "schema_version": SCHEMA_VERSION, **fields}


def failure(operation: str, error: dict[str, Any]) -> dict[str, Any]:
    """A failed result: ``error`` is ``{"code", "message", "details"}``."""
    return result(operation, ok=False, error=error)


def outcome_of(operation: str, call: Callable[[], dict[str, Any] | None]
               ) -> tuple[dict[str, Any] | None, int]:
    """The call's result and exit code, every exception turned into a failure with its code.

    The one mapping every surface uses: a ``ForestError`` keeps its stable
    code; a failing disk (an ``OSError``, or SQLite's "disk is full") is
    ``io_error`` naming the errno; an interruption is ``interrupted`` with
    the signal; anything else is ``internal_error`` naming only the class.
    """
    try:
        outcome = call()
    except (Exception, KeyboardInterrupt) as exc:  # never a traceback, only a code
        error, code = error_of(exc)
        return failure(operation, error), code
    if outcome is None:
        return None, 0
    return outcome, 0 if outcome.get("ok") else outcome.get("exit_code", 1)


def error_of(exc: BaseException) -> tuple[dict[str, Any], int]:
    """The error object and exit code an exception stands for."""
    if isinstance(exc, ForestError):
        return exc.to_dict(), exc.exit_code
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or a stop signal while the lock was held
        signum = getattr(exc, "signum", 2)  # lock.Interrupted names its signal; else SIGINT
        return {"code": "interrupted", "message": "interrupted",
                "details": {"signal": _signal_name(signum)}}, 128 + signum
    disk = as_io_error(exc) if isinstance(exc, Exception) else None
    if disk is not None:
        return disk.to_dict(), 1
    damaged = as_index_error(exc)
    if damaged is not None:
        return damaged.to_dict(), damaged.exit_code
    return {"code": "internal_error", "message": f"unexpected {type(exc).__name__}",
            "details": {"class": type(exc).__name__}}, 1


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)

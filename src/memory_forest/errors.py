"""One error type for the whole library; only the edges (CLI, MCP, gate) render it."""

from __future__ import annotations

import errno
import sys
from typing import Any


class ForestError(Exception):
    """A handled failure with a stable snake_case ``code``.

    ``message`` is short and safe to show: it never carries file contents or
    absolute paths of memory, only root-relative paths. ``exit_code`` is 1 for
    handled failures and 2 for usage errors.
    """

    def __init__(
        self,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        exit_code: int = 1,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        self.exit_code = exit_code

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


def usage_error(code: str, message: str, **details: Any) -> ForestError:
    return ForestError(code, message, details, exit_code=2)


# What a person can do about each errno the disk is most likely to report.
_IO_HINTS = {
    "ENOSPC": "the disk is full; free some space and run the command again",
    "EDQUOT": "the disk quota is used up; free some space and run the command again",
    "EROFS": "the filesystem is read-only; remount it read-write or use another root",
    "EIO": "the disk reported an I/O error; check the device, then run the command again",
    "EACCES": "permission denied; check who owns the forest",
    "EPERM": "the operation is not permitted; check who owns the forest",
    "EMFILE": "too many open files; close some programs and run the command again",
}


def io_error(exc: OSError) -> ForestError:
    """The stable form of an ``OSError`` nothing closer to it handled: ``io_error``.

    Only the errno's name goes into the details, never ``exc.filename``: that
    is an absolute path, and messages carry root-relative paths only.
    """
    name = errno.errorcode.get(exc.errno, "") if isinstance(exc.errno, int) else ""
    hint = _IO_HINTS.get(name, "a filesystem operation failed; run the command again, "
                               "then 'memory-forest doctor ROOT'")
    return ForestError("io_error", f"{name or 'I/O error'}: {hint}",
                       {"errno": name or None})


# SQLite reports a full or failing disk as its own error, not as an OSError.
_SQLITE_ERRNO = {"SQLITE_FULL": "ENOSPC", "SQLITE_IOERR": "EIO", "SQLITE_READONLY": "EROFS"}


def as_index_error(exc: BaseException) -> ForestError | None:
    """``index_corrupt`` for a SQLite error that is not the disk's: the databases are derived
    state, so one that fails half-way through a query is damaged, and a rebuild heals it."""
    sqlite3 = sys.modules.get("sqlite3")  # no SQLite error without the module loaded
    if sqlite3 is None or not isinstance(exc, sqlite3.DatabaseError) or as_io_error(exc):
        return None
    return ForestError("index_corrupt", "the index cannot be read; run "
                       "'memory-forest index ROOT --full' to rebuild it",
                       {"error": type(exc).__name__})


def as_io_error(exc: BaseException) -> ForestError | None:
    """``io_error`` for an OSError or a SQLite disk failure; None for anything else."""
    if isinstance(exc, OSError):
        return io_error(exc)
    name = getattr(exc, "sqlite_errorname", None)
    if not isinstance(name, str):
        return None
    for prefix, errno_name in _SQLITE_ERRNO.items():
        if name.startswith(prefix):
            return io_error(OSError(getattr(errno, errno_name), name))
    return None

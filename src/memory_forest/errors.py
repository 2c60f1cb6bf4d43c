"""One error type for the whole library; only the edges (CLI, MCP, gate) render it."""

from __future__ import annotations

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

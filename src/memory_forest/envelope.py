"""The envelope every result shares: ``ok``, ``operation`` and ``schema_version``.

It sits below everything that produces a result (operations, retrieval, the
writers) and everything that prints one (the edges), so none of them has to
import another layer just to shape its answer.
"""

from __future__ import annotations

from typing import Any

from . import SCHEMA_VERSION


def result(operation: str, ok: bool = True, **fields: Any) -> dict[str, Any]:
    return {"ok": ok, "operation": operation, "schema_version": SCHEMA_VERSION, **fields}


def failure(operation: str, error: dict[str, Any]) -> dict[str, Any]:
    """A failed result: ``error`` is ``{"code", "message", "details"}``."""
    return result(operation, ok=False, error=error)

"""Findings of validate and audit: one small record each, sortable and JSON-ready."""

from __future__ import annotations

from typing import NamedTuple

ERROR = "error"
WARNING = "warning"


class Issue(NamedTuple):  # ordered and hashable as a tuple: (path, code, message, level)
    path: str  # root-relative; "." for the root itself
    code: str
    message: str
    level: str = ERROR

    def to_dict(self) -> dict[str, str]:
        return self._asdict()


def has_errors(issues: list[Issue]) -> bool:
    return any(issue.level == ERROR for issue in issues)


def summarize(issues: list[Issue]) -> dict[str, int]:
    errors = sum(1 for issue in issues if issue.level == ERROR)
    return {"errors": errors, "warnings": len(issues) - errors}

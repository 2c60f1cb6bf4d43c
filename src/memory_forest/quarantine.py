"""Sorting what validate and audit found into what blocks, what is left out, what is noted.

Indexing is forgiving about what it reads: a problem in one file is that
file's problem. Only a fault of the forest as a whole stops a build; a
document with an error-level issue is quarantined (left out of the index and
reported with its path); everything else is indexed, its warnings reported.
``validate`` and ``audit`` stay strict and never go through here.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from .errors import ForestError
from .issues import ERROR, WARNING, Issue

# A wide mode is repairable ('doctor --repair') and says nothing about the content.
MODE_CODES = frozenset({"mode_file_not_private", "mode_dir_not_private"})
# Faults no quarantine can route around: the index would describe a different forest.
FOREST_FAULTS = frozenset({"layer_missing"})


class Triage(NamedTuple):
    problems: list[Issue]  # every finding, sorted; modes demoted to warnings
    quarantined: frozenset[str]  # listed files kept out of the index (each has a row saying so)
    unread: frozenset[str] = frozenset()  # symlinks and special files where a document would be

    @property
    def left_out(self) -> int:
        return left_out(self.quarantined, self.unread)

    def by_path(self) -> dict[str, list[Issue]]:
        found: dict[str, list[Issue]] = {}
        for issue in self.problems:
            found.setdefault(issue.path, []).append(issue)
        return found

    def counts(self) -> dict[str, int]:
        errors = sum(1 for issue in self.problems if issue.level == ERROR)
        return {"errors": errors, "warnings": len(self.problems) - errors,
                "quarantined": self.left_out}

    def fields(self) -> dict[str, object]:
        """What ``index`` and ``maintain`` report: the problem list and the quarantine count."""
        return {"problems": [issue.to_dict() for issue in self.problems],
                "quarantined": self.left_out}


def left_out(quarantined: Collection[str], unread: Collection[str]) -> int:
    """How many documents the index leaves out: every surface reports this one count.

    The quarantined files, and the symlinks and special files that stand where
    a document would (never read, so never in the quarantine table: the index
    keeps them as its ``unread`` list). ``index`` and ``maintain`` count them
    from the build, ``stats`` and ``status`` from the index it wrote.
    """
    return len(set(quarantined) | set(unread))


def for_indexing(issues: list[Issue]) -> list[Issue]:
    """Issues as indexing grades them: a wide mode is a warning, not an error."""
    return sorted({issue._replace(level=WARNING) if issue.code in MODE_CODES else issue
                   for issue in issues})


def triage(issues: list[Issue], files: Collection[str],
           unread: Collection[str] = frozenset()) -> Triage:
    """Raise on a forest-level fault; otherwise name the paths to quarantine.

    Every error-level issue on a listed file inside a layer quarantines that
    path; ``unread`` (symlinks and special files at a document's path) are
    left out too (``left_out``). An error on a directory, on the root or on a
    file at the root (never a document) is reported but leaves nothing out.
    """
    problems = for_indexing(issues)
    faults = [issue for issue in problems if _is_forest_fault(issue)]
    if faults:
        first = faults[0]
        raise ForestError(first.code, f"the forest cannot be indexed: {first.path}: "
                          f"{first.advice}",
                          {"issues": [issue.to_dict() for issue in faults]})
    quarantined = frozenset(issue.path for issue in problems if issue.level == ERROR
                            and "/" in issue.path and issue.path in files)
    return Triage(problems, quarantined, frozenset(unread))


def _is_forest_fault(issue: Issue) -> bool:
    # The root itself unreadable leaves nothing to index; its mode alone is repairable.
    return issue.level == ERROR and (issue.code in FOREST_FAULTS or issue.path == ".")

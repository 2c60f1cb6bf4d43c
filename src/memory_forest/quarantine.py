"""Sorting what validate and audit found into what blocks, what is left out, what is noted.

Indexing is forgiving about what it reads: a problem in one file is that
file's problem. Only a fault of the forest as a whole stops a build. A
document that cannot be read as one (bad UTF-8, frontmatter that does not
parse, a file over the size limit) is quarantined: left out of the index and
reported with its path. A document that reads fine but breaks a link rule,
has lost its parent file or has a wide mode is indexed all the same (its
owner comes from its path, which alone decides ownership) and its problem is
reported as a warning.
``validate`` and ``audit`` stay strict and never go through here.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from .errors import ForestError
from .issues import ERROR, WARNING, Issue

# A wide mode is repairable ('doctor --repair') and says nothing about the content.
MODE_CODES = frozenset({"mode_file_not_private", "mode_dir_not_private"})
# A broken link says nothing about whether the document can be read: a note written by
# hand or in Obsidian (a sibling link, no 'Up:' line) is findable the moment it is indexed.
# Ownership comes from the path alone, so a broken link never claims or loses an owner;
# a parent whose child is gone keeps its place on every trail through it.
LINK_CODES = frozenset({"link_lateral", "link_nonadjacent", "link_not_canonical",
                        "link_unresolved", "link_child_missing", "link_parent_missing",
                        "link_in_source_layer"})
# A parent file that is gone (a branch deleted by hand): the path still names the owner,
# and the trail says it is missing ('owner_not_indexed') rather than hiding the leaf.
ORPHAN_CODES = frozenset({"parent_missing"})
# What indexing reports and indexes all the same; 'validate' and 'audit' keep them errors.
INDEXED_ANYWAY = MODE_CODES | LINK_CODES | ORPHAN_CODES
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
    """Issues as indexing grades them: a wide mode, a broken link or a missing parent is
    a warning."""
    return sorted({issue._replace(level=WARNING) if issue.code in INDEXED_ANYWAY else issue
                   for issue in issues})


def keeps_out(issue: Issue) -> bool:
    """Whether this issue (as validate or audit found it) keeps its file out of the index."""
    return issue.level == ERROR and issue.code not in INDEXED_ANYWAY


def triage(issues: list[Issue], files: Collection[str],
           unread: Collection[str] = frozenset()) -> Triage:
    """Raise on a forest-level fault; otherwise name the paths to quarantine.

    Every issue that ``keeps_out`` a listed file inside a layer quarantines that
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

"""Findings of validate and audit: one small record each, sortable and JSON-ready.

Every finding a person reads ends with what to do about it, and that advice
lives in one table (``FIXES``): the checks say what is wrong, this module
says which command fixes it or confirms the fix. The table is applied where
a finding leaves the library (``to_dict``, ``advice``), never stored, so the
index keeps the bare finding and a better hint reaches old indexes too.
"""

from __future__ import annotations

from typing import NamedTuple

ERROR = "error"
WARNING = "warning"

_REINDEX = "then run memory-forest index ROOT"
_REVALIDATE = "then run memory-forest validate ROOT"
_REAUDIT = "then run memory-forest audit ROOT"
_RESHAPE = f"rename or move it to fit its layer, {_REVALIDATE}"
_ISTM_LINE = f"correct or remove that line, {_REINDEX}"
_LINK_AS_PATH = f"cite the other note as a plain path in backticks or in sources:, {_REAUDIT}"
_READ_AGAIN = f"check its permissions and the disk, {_REINDEX}"
_RESTORE = f"restore the file from git or a backup, {_REAUDIT}"

# What to do about each finding, naming the memory-forest command that fixes or re-checks it.
FIXES: dict[str, str] = {
    "route_unknown_layer": f"move it into a layer, {_REVALIDATE}",
    "route_noncanonical_layer_dir": f"rename the directory as the message says, {_REVALIDATE}",
    "route_bad_shape": _RESHAPE,
    "route_bad_segment": _RESHAPE,
    "route_escape": _RESHAPE,
    "route_extension_case": _RESHAPE,
    "route_casefold_collision": f"rename one of the two, {_REVALIDATE}",
    "layer_missing": f"create it with mkdir -m 700, {_REVALIDATE}",
    "parent_missing": "create the parent (memory-forest remember creates missing parents) "
                      f"or move the file, {_REVALIDATE}",
    "duplicate_id": f"give one of them a new id, {_REINDEX}",
    "unexpected_entry": f"move it into a layer or out of the forest, {_REVALIDATE}",
    "config_missing": "nothing needed; memory-forest init writes one for a new forest",
    "istm_blank_line": f"nothing needed; remove the line, {_REVALIDATE} to clear this",
    "istm_invalid_json": _ISTM_LINE,
    "istm_duplicate_key": _ISTM_LINE,
    "istm_non_finite": _ISTM_LINE,
    "istm_not_object": _ISTM_LINE,
    "istm_missing_key": _ISTM_LINE,
    "istm_bad_event_id": _ISTM_LINE,
    "istm_duplicate_event_id": f"give one of the events a new event_id, {_REINDEX}",
    "frontmatter_invalid": f"correct the frontmatter at that line, {_REINDEX}",
    "frontmatter_unsafe": f"write the value out plainly, {_REINDEX}",
    "frontmatter_bad_field": f"correct that key, {_REINDEX}",
    "not_utf8": f"save it as UTF-8, {_REINDEX}",
    "mode_dir_not_private": "run memory-forest doctor ROOT --repair",
    "mode_file_not_private": "run memory-forest doctor ROOT --repair",
    "symlink": f"replace it with a regular file or remove it, {_REVALIDATE}",
    "special_file": f"remove it, {_REVALIDATE}",
    "limit_exceeded": "raise the limit in .memory-forest/forest.json or archive old files, "
                      f"{_REVALIDATE}",
    "file_too_large": f"split it or raise max_file_bytes in .memory-forest/forest.json, "
                      f"{_REINDEX}",
    "not_regular_file": _READ_AGAIN,
    "not_found": _READ_AGAIN,
    "os_error": _READ_AGAIN,
    "unreadable_directory": _READ_AGAIN,
    "link_parent_missing": f"add the [[...]] link to its parent, {_REAUDIT}",
    "link_unresolved": f"fix the link's target, {_REAUDIT}",
    "link_child_missing": "run memory-forest forget ROOT <the child's path> to take it off "
                          f"the list (or put the file back), {_REAUDIT}",
    "link_not_canonical": f"write the target as a root-relative path, {_REAUDIT}",
    "link_lateral": _LINK_AS_PATH,
    "link_nonadjacent": _LINK_AS_PATH,
    "link_in_source_layer": f"write it as a plain path, {_REAUDIT}",
    "istm_chain_broken": _RESTORE,
    "istm_sha256_mismatch": _RESTORE,
    "provenance_missing": f"correct or remove the pointer, {_REAUDIT}",
}
# A code the table does not know yet still gets a command that shows the whole picture.
_UNKNOWN = "see docs/troubleshooting.md, then run memory-forest audit ROOT"


class Issue(NamedTuple):  # ordered and hashable as a tuple: (path, code, message, level)
    path: str  # root-relative; "." for the root itself
    code: str
    message: str
    level: str = ERROR

    @property
    def advice(self) -> str:
        """The message and what to do about it, as every surface shows it."""
        return f"{self.message}: {FIXES.get(self.code, _UNKNOWN)}"

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "code": self.code, "message": self.advice,
                "level": self.level}


def has_errors(issues: list[Issue]) -> bool:
    return any(issue.level == ERROR for issue in issues)


def summarize(issues: list[Issue]) -> dict[str, int]:
    errors = sum(1 for issue in issues if issue.level == ERROR)
    return {"errors": errors, "warnings": len(issues) - errors}

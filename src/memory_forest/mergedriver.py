"""The merge drivers git runs for a Markdown file changed on both sides of a ``sync``.

``sync`` registers them in the repository's local config before every merge
(``merge.memory-forest-daily.driver``, ``merge.memory-forest-record.driver``)
and ``.gitattributes`` names them: ``daily`` for ``05 daily/*.md``, ``record``
for the other layers' Markdown.

``daily``: a Daily record is a list of ``## <entry_id>`` sections, and two
machines that each added entries to the same day have not conflicted: the
result keeps every entry of both sides once (ours first, in order, then
theirs that ours lacks), ours' frontmatter with ``updated`` the later of the
two. Git's own line merge would instead write conflict markers into the file.

An entry id present on both sides with different text, or a side that is not
a Daily record this can read, is a real conflict: the driver exits 1 and
leaves ours untouched (no marker ever lands); ``sync`` then keeps both
versions of the entry in the record (``daily_conflict_entries``), or files
theirs as a conflict copy when a side cannot be read as entries.

``record``: two machines that each filed a fact under the same parent have
each added a line to its child list and moved its ``updated``; git's line
merge sees both as a conflict. The driver sets ``updated`` to the later of
the two on all three versions, takes the child links theirs added out of
theirs, lets ``git merge-file`` merge the rest (a change to the same lines on
both sides is still a conflict: exit 1, and ``sync`` files theirs as a
conflict copy), then files theirs' new links in ours' child list. Nothing
else is merged by hand.

Run as ``python -m memory_forest.mergedriver daily|record BASE OURS THEIRS``
(git's ``%O %A %B``); the result replaces OURS.
"""

from __future__ import annotations

import re
import sys

from .gitrepo import merge_file
from .writers.markdown import (
    add_child_link,
    body_of,
    edit_frontmatter,
    headings,
    metadata,
    replace_body,
)

DRIVERS = {"daily": "memory-forest-daily", "record": "memory-forest-record"}
# The marker line of a Daily entry ``sync`` kept as the other side's version of an entry.
CONFLICT_OF = "Conflict of: "
_CHILD = re.compile(r"^- \[\[([^|\]\n]+)\|([^\]\n]*)\]\]\s*$")
_UPDATED = re.compile(r'^updated: .*$', re.MULTILINE)


def merge(ours: str, theirs: str) -> str | None:
    """The merged text, or None when the two sides truly conflict."""
    merged = _merge_entries(ours, theirs, None)
    return None if merged is None else merged[0]


def daily_conflict_entries(ours: str, theirs: str, tag: str) -> tuple[str, list[str]] | None:
    """Both sides' entries in one Daily record, an entry changed two ways kept twice.

    What ``sync`` does with a record the driver refused: ours' entry stays as
    it is; theirs follows it as ``## <entry_id><tag>`` (``tag``:
    ``-conflict-<host>-<time>``) with a ``Conflict of: <entry_id>`` line, which
    the Daily parser reads as a marker, not as the entry's text. Returns the
    text and the conflict entries' ids; None when a side is not a list of entries.
    """
    return _merge_entries(ours, theirs, tag)


def _merge_entries(ours: str, theirs: str, tag: str | None
                   ) -> tuple[str, list[str]] | None:
    head_ours, sections_ours = _sections(body_of(ours), headings)
    _, sections_theirs = _sections(body_of(theirs), headings)
    if sections_ours is None or sections_theirs is None:
        return None
    merged = dict(sections_ours)
    beside: dict[str, str] = {}  # an entry of ours -> theirs' version of it, right after it
    for entry_id, text in sections_theirs.items():
        if entry_id not in merged:
            merged[entry_id] = text
        elif merged[entry_id].strip() != text.strip():
            if tag is None:
                return None
            rest = text.split("\n", 1)[1] if "\n" in text else ""
            beside[entry_id] = f"## {entry_id}{tag}\n\n{CONFLICT_OF}{entry_id}\n{rest}"
    sections = [part for entry_id, text in merged.items()
                for part in (text, beside.get(entry_id)) if part is not None]
    conflicts = [f"{entry_id}{tag}" for entry_id in beside]
    body = "\n\n".join([head_ours.strip("\n"), *(text.strip("\n") for text in sections)])
    result = replace_body(ours, body + "\n")
    later = max(str(metadata(ours).get("updated") or ""), str(metadata(theirs).get("updated")
                                                              or ""))
    if later and later != str(metadata(ours).get("updated") or ""):
        result = edit_frontmatter(result, {"updated": later})
    return result, conflicts


def _sections(body: str, headings) -> tuple[str, dict[str, str] | None]:
    """The text before the first entry (the ``# Daily <date>`` title), and each
    ``## <entry_id>`` section by id; None for a body that is not such a list."""
    lines = body.split("\n")
    found = [(line, level, title) for line, level, title in headings(body) if level <= 2]
    if found and found[0][1] == 1:
        head_end = found[1][0] if len(found) > 1 else len(lines)
        found = found[1:]
    else:
        head_end = found[0][0] if found else len(lines)
    sections: dict[str, str] = {}
    for number, (line, level, title) in enumerate(found):
        if level != 2 or title in sections:
            return body, None  # a second title or a repeated entry
        end = found[number + 1][0] if number + 1 < len(found) else len(lines)
        sections[title] = "\n".join(lines[line:end])
    return "\n".join(lines[:head_end]), sections


def merge_record(base: str, ours: str, theirs: str) -> str | None:
    """Ours and theirs merged as described above, or None for a real conflict."""
    stamps = [str(metadata(text).get("updated") or "") for text in (ours, theirs)]
    later = max(stamps)
    if later:
        line = f'updated: "{later}"'
        base, ours, theirs = (_UPDATED.sub(line, text, count=1) for text in (base, ours, theirs))
    known = set(base.split("\n"))
    added, kept, heading = [], [], None
    for line in theirs.split("\n"):
        if line.startswith("## "):
            heading = line[3:].strip()
        if line not in known and _CHILD.match(line) and heading:
            added.append((heading, line))
        else:
            kept.append(line)
    merged = merge_file(base, ours, "\n".join(kept))
    if merged is None:
        return None
    for heading, line in added:
        if line not in merged.split("\n"):
            path, alias = _CHILD.match(line).groups()
            merged = add_child_link(merged, heading, path, alias)
    return merged


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] not in DRIVERS:
        sys.stderr.write("usage: python -m memory_forest.mergedriver daily|record "
                         "BASE OURS THEIRS\n")
        return 2
    kind, base_path, ours_path, theirs_path = argv
    try:
        texts = []
        for path in (base_path, ours_path, theirs_path):
            with open(path, encoding="utf-8") as handle:
                texts.append(handle.read())
        base, ours, theirs = texts
        merged = merge(ours, theirs) if kind == "daily" else merge_record(base, ours, theirs)
    except (OSError, ValueError):
        return 1
    if merged is None:
        return 1
    with open(ours_path, "w", encoding="utf-8") as handle:
        handle.write(merged)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

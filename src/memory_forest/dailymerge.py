"""The merge driver git runs for a Daily record changed on both sides of a ``sync``.

``sync`` registers it in the repository's local config before every merge
(``merge.memory-forest-daily.driver``) and ``.gitattributes`` names it for
``05 daily/*.md``. A Daily record is a list of ``## <entry_id>`` sections, and two
machines that each added entries to the same day have not conflicted: the
result keeps every entry of both sides once (ours first, in order, then
theirs that ours lacks), ours' frontmatter with ``updated`` the later of the
two. Git's own line merge would instead write conflict markers into the file.

An entry id present on both sides with different text, or a side that is not
a Daily record this can read, is a real conflict: the driver exits 1 and
leaves ours untouched, so ``sync`` aborts the merge (no marker ever lands).

Run as ``python -m memory_forest.dailymerge BASE OURS THEIRS`` (git's ``%O %A %B``);
the result replaces OURS.
"""

from __future__ import annotations

import sys

DRIVER = "memory-forest-daily"


def merge(ours: str, theirs: str) -> str | None:
    """The merged text, or None when the two sides truly conflict."""
    from .writers.markdown import body_of, edit_frontmatter, headings, metadata, replace_body

    head_ours, sections_ours = _sections(body_of(ours), headings)
    _, sections_theirs = _sections(body_of(theirs), headings)
    if sections_ours is None or sections_theirs is None:
        return None
    merged = dict(sections_ours)
    for entry_id, text in sections_theirs.items():
        if entry_id not in merged:
            merged[entry_id] = text
        elif merged[entry_id].strip() != text.strip():
            return None
    body = "\n\n".join([head_ours.strip("\n"), *(text.strip("\n") for text in merged.values())])
    result = replace_body(ours, body + "\n")
    later = max(str(metadata(ours).get("updated") or ""), str(metadata(theirs).get("updated")
                                                              or ""))
    if later and later != str(metadata(ours).get("updated") or ""):
        result = edit_frontmatter(result, {"updated": later})
    return result


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


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: python -m memory_forest.dailymerge BASE OURS THEIRS\n")
        return 2
    _, ours_path, theirs_path = argv
    try:
        with open(ours_path, encoding="utf-8") as handle:
            ours = handle.read()
        with open(theirs_path, encoding="utf-8") as handle:
            theirs = handle.read()
        merged = merge(ours, theirs)
    except (OSError, ValueError):
        return 1
    if merged is None:
        return 1
    with open(ours_path, "w", encoding="utf-8") as handle:
        handle.write(merged)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

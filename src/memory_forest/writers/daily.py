"""``apply-daily``: add entries to the Daily record of one date.

Each entry becomes a ``## <entry_id>`` section (a stable anchor that
``sources`` can cite as ``05 daily/YYYY-MM-DD.md#<entry_id>``) holding the
summary as written and a ``Sources:`` line naming each ISTM event as a plain
path in backticks (Daily holds no wikilinks). Every cited event must exist,
and an entry id is unique across all Daily records.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import ForestError
from ..forest import ForestLike, opened
from ..lockline import DEFAULT_WAIT
from . import parents, plans
from .markdown import body_of, clean_text, document, headings, neutralize
from .transaction import Stage, transact

if TYPE_CHECKING:
    from ..results import WriteResult


def entry_section(entry_id: str, summary: str, pointers: list[str]) -> str:
    sources = ", ".join(f"`{pointer}`" for pointer in pointers)
    text = clean_text(summary, "summary", "plan_summary").strip("\n")
    return f"## {entry_id}\n\n{neutralize(text)}\n\nSources: {sources}"


def entry_text(text: str, entry_id: str) -> str:
    """The Markdown of one Daily entry: the lines under ``## entry_id`` up to the next
    first- or second-level heading (as the parser reads them: a ``#`` line in code is text)."""
    found = entry_texts(text)
    if entry_id not in found:
        raise ForestError("daily_entry_missing", "the Daily entry heading was not found",
                          {"entry_id": entry_id})
    return found[entry_id]


@lru_cache(maxsize=8)
def entry_texts(text: str) -> dict[str, str]:
    """Every entry of a Daily record by id, from one parse (the first of a repeated id).

    Cached by the record's text: a writer filing many entries of one record (promote,
    a proposal's accept) parses it once, not once an entry. Callers only read the dict.
    """
    body = body_of(text)
    found = headings(body)
    lines = body.split("\n")
    bounds = [n for n, level, _ in found if level <= 2] + [len(lines)]
    entries: dict[str, str] = {}
    for n, level, title in found:
        if level == 2 and title not in entries:
            end = next(bound for bound in bounds if bound > n)
            entries[title] = "\n".join(lines[n + 1:end]).strip("\n")
    return entries


def resolve_entries(stage: Stage, entry_ids: list[str]) -> dict[str, str]:
    """Entry id -> the one Daily file holding it (``daily_entry_missing``/``_ambiguous``)."""
    known = stage.view.entry_paths(set(entry_ids))
    found = {}
    for entry_id in entry_ids:
        paths = known.get(entry_id, [])
        if not paths:
            raise ForestError("daily_entry_missing", "no Daily record has this entry",
                              {"entry_id": entry_id})
        if len(paths) > 1:
            raise ForestError("daily_entry_ambiguous", "several Daily records have this entry",
                              {"entry_id": entry_id, "paths": paths})
        found[entry_id] = paths[0]
    return found


def add_sections(stage: Stage, date: str, sections: list[str]) -> tuple[str, bool]:
    """Stage ``sections`` at the end of the Daily record of ``date`` (created if missing).

    Returns its path and whether it is new.
    """
    path = f"05 daily/{date}.md"
    text = stage.text(path)
    block = "\n\n".join(sections)
    if text is None:
        title = f"Daily {date}"
        meta = parents.new_meta(stage, "daily", title)
        stage.put(path, document(meta, title, None, block))
    else:
        stage.put(path, parents.touch(stage, text).rstrip("\n") + "\n\n" + block + "\n")
    return path, text is None


def apply_daily(forest: ForestLike, source: str,
                wait: float = DEFAULT_WAIT) -> WriteResult:
    plan = plans.load("daily", source)
    redactions = plans.redact_text(plan)

    def prepare(stage: Stage) -> None:
        events = stage.view.event_paths({rid for entry in plan.entries
                                         for rid in entry.source_record_ids})
        known = stage.view.entry_paths({entry.entry_id for entry in plan.entries})
        sections = []
        for entry in plan.entries:
            if entry.entry_id in known:
                raise ForestError("daily_entry_exists", "a Daily entry with this id exists",
                                  {"entry_id": entry.entry_id, "path": known[entry.entry_id][0]})
            missing = [rid for rid in entry.source_record_ids if rid not in events]
            if missing:
                raise ForestError("daily_source_missing", "an entry cites ISTM events that do "
                                  "not exist", {"entry_id": entry.entry_id,
                                                "event_ids": missing[:20]})
            sections.append(entry_section(entry.entry_id, entry.summary, [
                f"{events[rid]}#{rid}" for rid in entry.source_record_ids]))
        path, created = add_sections(stage, plan.date, sections)
        stage.details.update({"path": path, "created": created,
                              "entries": [entry.entry_id for entry in plan.entries],
                              "redactions": redactions})

    with opened(forest) as forest:
        return transact(forest, "apply_daily", plan.model_dump(mode="json"),
                        plan.transaction_id, prepare, wait)

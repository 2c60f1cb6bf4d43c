"""What an ISTM shard holds for the index: its event ids, its captures and what it cites.

Every line is checked (strict JSON, one object, the required keys); a bad
line is that line's issue, never the file's end. Each event with an id is a
fragment (a capture ``consolidate`` may propose and ``retrieve`` may return
as unfiled evidence) and its payload's text is searched. A review decision
(``decisions``) is the exception: it is bookkeeping, so it is neither a
fragment nor searched, and the pointers it names are what the shard cites;
so are the events ``move`` and ``forget`` log of their own work.
"""

from __future__ import annotations

from typing import Any

from .decisions import SOURCE, cited_sources, is_decision
from .facts import ISTM_REQUIRED, Facts, Fragment, pointers, stem
from .issues import WARNING, Issue
from .jsonio import StrictJSONError, loads_strict
from .stamps import utc_stamp

# What move and forget log of their own work: a record of what the writers did, like a
# decision; as a capture, consolidate would file it back into the inbox it empties.
WRITER_LOGS = frozenset({"move", "forget"})


def read_istm(facts: Facts, text: str, fragments: list[Fragment] | None = None) -> str:
    """Check every line of an ISTM shard; return searchable text of the payloads (and add
    each event with an id to ``fragments``)."""
    path = facts.path
    searchable: list[str] = []
    decided: list[str] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            facts.issues.append(Issue(path, "istm_blank_line", f"line {number} is blank", WARNING))
            continue
        try:
            record = loads_strict(line)
        except StrictJSONError as exc:
            code = {"duplicate_key": "istm_duplicate_key", "non_finite": "istm_non_finite"}.get(
                exc.kind, "istm_invalid_json")
            facts.issues.append(Issue(path, code, f"line {number}: {exc}"))
            continue
        if not isinstance(record, dict):
            facts.issues.append(Issue(path, "istm_not_object", f"line {number} is not an object"))
            continue
        missing = [key for key in ISTM_REQUIRED if key not in record]
        if missing:
            facts.issues.append(Issue(path, "istm_missing_key",
                                      f"line {number} lacks {', '.join(missing)}"))
        event_id = record.get("event_id")
        if isinstance(event_id, str) and event_id and is_decision(record):
            facts.event_ids.append(event_id)  # bookkeeping: cites, is never filed or searched
            decided += pointers(cited_sources(record))
            continue
        if isinstance(event_id, str) and event_id and record.get("kind") in WRITER_LOGS \
                and record.get("source") == SOURCE:
            facts.event_ids.append(event_id)
            continue
        payload = _flatten(record.get("payload"))
        if isinstance(event_id, str) and event_id:
            facts.event_ids.append(event_id)
            if fragments is not None:
                fragments.append(Fragment("event", event_id,
                                          utc_stamp(record.get("observed_at")), payload))
        elif "event_id" in record:
            facts.issues.append(Issue(path, "istm_bad_event_id",
                                      f"line {number}: event_id must be a non-empty string"))
        searchable.append(payload)
    facts.sources = list(dict.fromkeys(decided))
    facts.title = stem(path)
    return "\n".join(s for s in searchable if s)


def _flatten(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return " ".join(_flatten(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_flatten(v) for v in value)
    return ""

"""Times as the index keeps them: RFC 3339 UTC to the second, one spelling for all.

Frontmatter ``updated``, an event's ``observed_at``, a Daily record's date and
a ``--since``/``--until`` bound all pass through ``utc_stamp``, so they compare
as plain strings, in SQL and in Python alike. On the per-turn path: only
datetime and time.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_stamp(value: Any) -> str | None:
    """A date or timestamp as RFC 3339 UTC to the second (``2026-11-28T09:00:00Z``).

    One spelling for every time the index keeps, so that times compare as
    strings; a time without a zone is taken as UTC, a date as its midnight.
    None for anything that is not a date or timestamp.
    """
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if not isinstance(value, dt.datetime):
        return None
    if value.tzinfo is not None:
        try:
            value = value.astimezone(dt.UTC)
        except OverflowError:  # a zone that moves the time out of the years datetime holds
            return None
    return (f"{value.year:04d}-{value.month:02d}-{value.day:02d}T"
            f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}Z")


def from_ns(mtime_ns: int) -> str:
    """A file's mtime as a stamp."""
    return time.strftime(FORMAT, time.gmtime(mtime_ns // 1_000_000_000))


def seconds(stamp: str) -> float:
    """A stamp as seconds since the epoch."""
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

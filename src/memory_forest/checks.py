"""The check of a whole forest: scan it, validate it, audit it; then triage it for indexing.

``validate``, ``audit`` and ``browse`` report what ``check_forest`` finds. Index
builds run the same rules in the same order (``building.judge``), over the
whole forest or over the files a change can affect.
(``writers/check.check_staged`` applies the same rules to the neighbourhood of a staged
write instead of the whole forest.)

``maintain`` reports how long each step took by handing in a ``Recorder``;
without one the steps just run, at no cost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .audit import audit_links, provenance
from .errors import ForestError
from .issues import summarize
from .quarantine import for_indexing, triage
from .snapshot import scan
from .validate import validate_snapshot

if TYPE_CHECKING:
    from .forest import Forest
    from .issues import Issue
    from .quarantine import Triage
    from .snapshot import Snapshot

T = TypeVar("T")
Counted = Callable[[Any], dict[str, Any]]  # what a step's value reports as its counts


class Recorder:
    """Duration, outcome and counts of each step of one run, in the order they ran.

    ``counts`` (documents per layer) is filled in as soon as the scan is done,
    so a run that stops at a later step still reports what it found.
    """

    def __init__(self) -> None:
        self.steps: dict[str, dict[str, Any]] = {}
        self.counts: dict[str, int] = {}

    def step(self, name: str, call: Callable[[], T], counted: Counted | None = None) -> T:
        started = time.perf_counter()
        try:
            value = call()
        except ForestError:
            self.steps[name] = {"ok": False, "duration_ms": elapsed_ms(started)}
            raise
        self.steps[name] = {"ok": True, "duration_ms": elapsed_ms(started),
                            **(counted(value) if counted else {})}
        return value


def timed(recorder: Recorder | None, name: str, call: Callable[[], T],
          counted: Counted | None = None) -> T:
    """``call()``, recorded as step ``name`` when there is a recorder."""
    return call() if recorder is None else recorder.step(name, call, counted)


def elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


class Checked:
    """A scanned forest and every issue validate (and audit) found in it, sorted."""

    __slots__ = ("issues", "snap")

    def __init__(self, snap: Snapshot, issues: list[Issue]) -> None:
        self.snap = snap
        self.issues = issues

    def triage(self) -> Triage:
        """What indexing makes of the issues: raises on a forest-level fault, else names
        the files to quarantine (``quarantine.triage``)."""
        return triage(self.issues, self.snap.entries, self.snap.unread)


def check_forest(forest: Forest, audit: bool = True,
                 recorder: Recorder | None = None) -> Checked:
    """Scan, validate and (unless ``audit`` is false) audit the forest: its links, and its
    provenance (``audit.provenance``), which only a whole-forest check can judge."""
    snap = timed(recorder, "scan", lambda: scan(forest),
                 _scanned)
    if recorder is not None:
        recorder.counts = snap.layer_counts()
    found = set(timed(recorder, "validate", lambda: validate_snapshot(snap), graded))
    if audit:
        found |= set(timed(recorder, "audit",
                           lambda: audit_links(snap) + provenance(snap),
                           graded))
    return Checked(snap, sorted(found))


def _scanned(snap: Snapshot) -> dict[str, int]:
    return {"files": len(snap.facts)}


def graded(found: list[Issue]) -> dict[str, int]:
    """A step's counts, graded as indexing grades them (a wide mode is a warning): a timed
    run is one that indexes."""
    return summarize(for_indexing(found))

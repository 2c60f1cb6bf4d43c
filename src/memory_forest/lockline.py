"""The line of writers waiting for the forest lock: first come, first served.

Agents and hooks do not retry a write that failed for contention, so a
writer waits for the lock by default, and waiters are served in arrival
order rather than by whoever polls at the right moment.

The line needs no state of its own. Every writer already stages its lock
directory beside the lock (``<lock>.<pid>-<hex>.new`` with ``owner.json``)
before it claims the lock; that staged directory is its ticket. The owner
record carries ``ticket``, the wall-clock nanosecond at which it was made,
so the directories beside the lock are the line, ordered by ticket (then by
name, for two stamps that are equal). A writer claims the lock only when no
live ticket is ahead of it.

A waiter that dies leaves its staged directory, but never blocks the line:

- **Dead on this host.** Its pid is gone, so its ticket no longer counts
  (and the next acquire removes it as debris, as before).
- **Too old.** No writer waits longer than ``MAX_WAIT_SECONDS``, so an
  older ticket no longer counts, whatever its pid says.
- **Unprovable.** A ticket from another host, a pid reused by an unrelated
  process, a waiter stopped with SIGSTOP: once the lock has been seen free
  for ``PATIENCE_SECONDS`` in a row while such a ticket stays ahead, the
  waiters behind it stop deferring to it. A live first waiter polls every
  few milliseconds, so a lock left free that long has nobody taking it.

So a released lock never stays free longer than ``PATIENCE_SECONDS`` while
someone waits, and a waiter whose deadline passes makes one last claim
whatever the line says before it gives up with ``lock_held``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_WAIT_SECONDS = 3600.0  # the longest any writer waits: an older ticket waits no more
# A writer's default wait: every surface and library writer takes it from here. A capture is
# short and often a hook's only record of an event, so it waits longer.
DEFAULT_WAIT = 30.0
DEFAULT_CAPTURE_WAIT = 120.0
PATIENCE_SECONDS = 1.0
FIRST_POLL_SECONDS = 0.005  # the first in line claims a released lock at once
BEHIND_POLL_SECONDS = 0.02  # the others only watch the line: each look lists the folder


class Line:
    """One waiter's view of the line in front of the lock at ``path``.

    ``staged`` is its own ticket; ``is_ticket`` says whether a name beside
    the lock is a staged directory, ``read_owner`` reads one's owner record
    and ``dead`` says whether that owner provably no longer runs.
    """

    def __init__(self, path: Path, staged: Path, ticket: int,
                 is_ticket: Callable[[str], bool],
                 read_owner: Callable[[Path], dict[str, Any] | None],
                 dead: Callable[[dict[str, Any]], bool]) -> None:
        self.path, self.place = path, (ticket, staged.name)
        self.is_ticket, self.read_owner, self.dead = is_ticket, read_owner, dead
        self.owners: dict[str, dict[str, Any]] = {}  # an owner file never changes once written
        self.free_since: float | None = None
        self.first = False

    def my_turn(self) -> bool:
        """Whether this waiter may claim the lock now (see the module docstring)."""
        self.first = not self._anyone_ahead()
        if self.first:
            return True
        if os.path.lexists(self.path):
            self.free_since = None
            return False
        now = time.monotonic()
        if self.free_since is None:
            self.free_since = now
        return now - self.free_since >= PATIENCE_SECONDS

    def pause(self) -> float:
        return FIRST_POLL_SECONDS if self.first else BEHIND_POLL_SECONDS

    def _anyone_ahead(self) -> bool:
        try:
            entries = list(os.scandir(self.path.parent))
        except OSError:
            return False  # cannot see the line: claim as before it existed
        oldest = time.time_ns() - int(MAX_WAIT_SECONDS * 1e9)
        for entry in entries:
            name = entry.name
            if name == self.place[1] or not self.is_ticket(name):
                continue
            owner = self._owner(Path(entry.path))
            if owner is None or type(owner.get("ticket")) is not int:
                continue  # still being staged (it arrives after us), or an older version's
            ticket = owner["ticket"]
            if oldest <= ticket and (ticket, name) < self.place and not self.dead(owner):
                return True
        return False

    def _owner(self, staged: Path) -> dict[str, Any] | None:
        owner = self.owners.get(staged.name)
        if owner is None:
            owner = self.read_owner(staged)
            if owner is not None:
                self.owners[staged.name] = owner
        return owner

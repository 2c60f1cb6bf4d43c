"""Crash and failure points for the tests; never set in use.

``MEMORY_FOREST_TEST_CRASH_AT=<step>`` makes the process SIGKILL itself when
it reaches that step (recovery must finish or undo whatever it was doing);
``MEMORY_FOREST_TEST_FAIL_AT=<step>[,<step>...]`` raises an OSError there
instead (the caller itself must undo it);
``MEMORY_FOREST_TEST_SIGNAL_AT=<step>:<SIGTERM|SIGHUP|SIGINT>`` sends the
process that signal there, so a stop signal lands at an exact point.

The writers' steps are listed in ``writers.journal``; the lock's are
``lock_staged`` (its private directory exists, the owner file does not) and
``lock_owned`` (the owner file is written, the directory is not yet renamed
into place); the index's is ``indexing`` (every row is written, the new index
is not yet committed); semantic embedding's is ``embedding`` (a batch of
vectors is committed, the next is not begun); ``sync``'s are ``sync_committed`` (the local commit is
made, nothing is fetched into the work tree yet) and ``sync_merged`` (the
merge is done, modes, checks, index and push are not).

It lives below both the lock and the writers so neither imports the other.
"""

from __future__ import annotations

import errno
import os
import signal

CRASH_ENV = "MEMORY_FOREST_TEST_CRASH_AT"
FAIL_ENV = "MEMORY_FOREST_TEST_FAIL_AT"
SIGNAL_ENV = "MEMORY_FOREST_TEST_SIGNAL_AT"


def crash_point(step: str) -> None:
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
    if step in os.environ.get(FAIL_ENV, "").split(","):
        raise OSError(errno.EIO, f"injected failure at {step}")
    at, _, name = os.environ.get(SIGNAL_ENV, "").partition(":")
    if at == step and name in ("SIGTERM", "SIGHUP", "SIGINT"):
        os.kill(os.getpid(), getattr(signal, name))

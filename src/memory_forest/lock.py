"""The sibling lock ``<ROOT>.maintenance.lock``: one writer at a time.

The lock is a directory next to the forest, never inside it, holding
``owner.json`` with pid, host, start time and command. It never exists
without its owner file:

- **Acquire.** The directory is built privately beside the lock, as
  ``<lock>.<pid>-<hex>.new`` with ``owner.json`` inside, then renamed
  to the lock's name without replacing anything (``renameat2`` with
  ``RENAME_NOREPLACE`` where the kernel has it; elsewhere a plain rename,
  which fails onto a non-empty directory, after checking that the name is
  free). A held lock makes the rename fail; the writer waits in line
  (``lockline``: first come, first served) and claims the lock when its turn
  comes, or fails with ``lock_held`` once ``wait`` runs out (at once with 0).
  A lock whose owner is provably dead fails at once with ``lock_stale``:
  nobody will ever release it.
- **Release.** The lock is renamed aside to ``<lock>.<pid>-<hex>.old`` and
  then deleted, so no moment leaves an empty lock directory behind.

A kill at any point therefore leaves either no lock, a whole lock (its pid is
dead: ``lock_stale``), or a ``.new``/``.old`` directory beside it that blocks
nothing and is debris: the next acquire or unlock removes it once its owner
is dead on this host or, without a readable owner, once it is older than the
grace period.

A lock directory with no readable owner file can still come from an older
version or a hand-made ``mkdir``. It counts as held for a grace period (a
writer of an older version may be between its mkdir and its owner write),
then as stale. The grace is ``MEMORY_FOREST_LOCK_GRACE_SECONDS`` (default
60; a value that is not a finite number >= 0 is ignored).

A stale lock is never taken over by a writer; ``unlock --stale`` and
``doctor --repair`` remove it after checking again. While a command holds the
lock, SIGTERM, SIGHUP and SIGINT raise ``Interrupted`` in the main thread, so
the writer's own clean-up runs (journal undo, index rollback, release) just
as for Ctrl-C; the per-turn gate and retrieval never take the lock and never
install a handler.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import errno
import json
import math
import os
import re
import shutil
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import ForestError, usage_error
from .lockline import MAX_WAIT_SECONDS, Line
from .safety import mkdir_private, write_new_private
from .testhooks import crash_point

OWNER = "owner.json"
GRACE_ENV = "MEMORY_FOREST_LOCK_GRACE_SECONDS"
DEFAULT_GRACE_SECONDS = 60.0
_STALE_CHECK_SECONDS = 0.25  # how often a waiter looks whether the holder died
_PRIVATE = ("token", "ticket")  # never shown: the token proves ownership, the ticket is internal
_STAGED, _RETIRED = ".new", ".old"
_DEBRIS = re.compile(r"\.[0-9]+-[0-9a-f]{8}\.(new|old)")


def lock_path(root: Path) -> Path:
    return root.with_name(root.name + ".maintenance.lock")


# --- holding the lock ---------------------------------------------------------------------


class Interrupted(KeyboardInterrupt):
    """A stop signal received while the lock was held; the edges report it as
    ``interrupted`` with exit code 128 + the signal number (SIGINT 130,
    SIGHUP 129, SIGTERM 143). A KeyboardInterrupt, so every clean-up path that
    already handles Ctrl-C handles it too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class _Guard:
    """The stop-signal handler of one locked command.

    The first signal raises ``Interrupted``; any later one is ignored, so a
    second Ctrl-C or a repeated SIGTERM cannot cut the clean-up short. While
    ``deferred`` (the release itself), a signal is only remembered and raised
    once the lock is gone.
    """

    def __init__(self) -> None:
        self.raised = False
        self.deferring = False
        self.pending: int | None = None

    def handle(self, signum: int, _frame: Any) -> None:
        if self.raised:
            return
        if self.deferring:
            self.pending = self.pending or signum
            return
        self.raised = True
        raise Interrupted(signum)

    @contextmanager
    def deferred(self) -> Iterator[None]:
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = False
        if self.pending is not None and not self.raised:
            self.raised = True
            raise Interrupted(self.pending)


_guard: _Guard | None = None


@contextmanager
def interruptible() -> Iterator[None]:
    """Turn SIGTERM, SIGHUP and SIGINT into ``Interrupted`` for the body (main thread only).

    Only commands that take the lock enter this; a worker thread (the MCP
    server's) cannot install handlers and keeps the process's own.
    """
    global _guard
    if threading.current_thread() is not threading.main_thread() or _guard is not None:
        yield
        return
    guard = _Guard()
    previous = {signum: signal.signal(signum, guard.handle) for signum in _STOP_SIGNALS}
    _guard = guard
    try:
        yield
    finally:
        _guard = None
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def held(root: Path, command: str, wait: float = 0.0) -> Iterator[dict[str, Any]]:
    """Hold the lock for the body of a ``with`` block; raise if another holds it.

    A stop signal anywhere inside (acquire and release included) releases the
    lock before ``Interrupted`` reaches the caller.
    """
    with interruptible():
        owner = acquire(root, command, wait)
        try:
            yield owner
        finally:
            release(root, owner)


def check_wait(wait: float) -> float:
    """``--wait`` is a finite number of seconds in [0, 3600]; NaN would wait forever."""
    if isinstance(wait, bool) or not isinstance(wait, int | float) or not math.isfinite(wait) \
            or not 0 <= wait <= MAX_WAIT_SECONDS:
        raise usage_error("wait_out_of_range",
                          f"--wait takes a number of seconds from 0 to {MAX_WAIT_SECONDS:g}",
                          wait=str(wait))
    return float(wait)


def acquire(root: Path, command: str, wait: float = 0.0) -> dict[str, Any]:
    """Take the lock (see the module docstring) and return its owner record."""
    deadline = time.monotonic() + check_wait(wait)
    path = lock_path(root)
    owner = _new_owner(command)
    staged = _sibling(path, _STAGED)
    try:
        _stage(staged, owner)
        _wait_turn(root, staged, owner, deadline)
        clear_debris(root)
    except BaseException:
        if os.path.lexists(staged):
            _discard(staged)
        else:  # renamed into place before the error or signal: give it back
            release(root, owner)
        raise
    return owner


def _wait_turn(root: Path, staged: Path, owner: dict[str, Any], deadline: float) -> None:
    """Claim the lock in arrival order; past the deadline, one last claim out of turn."""
    path = lock_path(root)
    line = Line(path, staged, owner["ticket"], _is_staged(path), read_owner, _owner_dead)
    next_check = time.monotonic() + _STALE_CHECK_SECONDS
    while True:
        late = time.monotonic() >= deadline
        if (late or line.my_turn()) and _claim(staged, path):
            return
        if late:
            raise _held_error(root)
        if time.monotonic() >= next_check:
            if state(root)["state"] == "stale":
                raise _held_error(root)
            next_check = time.monotonic() + _STALE_CHECK_SECONDS
        time.sleep(line.pause())


def _is_staged(path: Path) -> Callable[[str], bool]:
    prefix = path.name

    def is_staged(name: str) -> bool:
        tail = name[len(prefix):]
        return name.startswith(prefix) and tail.endswith(_STAGED) and bool(
            _DEBRIS.fullmatch(tail))
    return is_staged


def _new_owner(command: str) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "command": command,
        "token": os.urandom(8).hex(),
        "ticket": time.time_ns(),  # its place in the line of waiters
    }


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(f"{path.name}.{os.getpid()}-{os.urandom(4).hex()}{suffix}")


def _stage(staged: Path, owner: dict[str, Any]) -> None:
    mkdir_private(staged)
    crash_point("lock_staged")
    write_new_private(staged / OWNER, json.dumps(owner, sort_keys=True).encode())
    crash_point("lock_owned")


def _claim(staged: Path, path: Path) -> bool:
    """Rename the staged directory to the lock's name; False when a lock is there."""
    try:
        _rename_noreplace(staged, path)
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            return False
        raise
    return True


def _rename_noreplace(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``, failing with EEXIST when ``dst`` exists.

    A plain rename replaces an empty directory, which an older version's lock
    (mkdir first, owner file after) briefly is; ``renameat2`` with
    ``RENAME_NOREPLACE`` closes that gap where the kernel and filesystem
    support it. Elsewhere the name is checked first and the rename still
    refuses any non-empty directory, every lock this version makes.
    """
    renameat2 = _renameat2()
    if renameat2 is not None:
        if renameat2(-100, os.fsencode(src), -100, os.fsencode(dst), 1) == 0:  # AT_FDCWD
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(code, os.strerror(code))
    if os.path.lexists(dst):
        raise OSError(errno.EEXIST, os.strerror(errno.EEXIST))
    os.rename(src, dst)


_RENAMEAT2: list[Any] = []


def _renameat2() -> Any:
    if not _RENAMEAT2:
        try:
            function = ctypes.CDLL(None, use_errno=True).renameat2
            function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                                 ctypes.c_uint]
        except (AttributeError, OSError):
            function = None
        _RENAMEAT2.append(function)
    return _RENAMEAT2[0]


def release(root: Path, owner: dict[str, Any]) -> None:
    """Remove the lock only if it is still ours: rename it aside, then delete it."""
    path = lock_path(root)
    deferred = _guard.deferred() if _guard is not None else _nothing()
    with deferred:
        current = read_owner(path)
        if current is None or current.get("token") != owner.get("token"):
            return
        _retire(path)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _retire(path: Path) -> None:
    """Move the lock out of the way in one rename, then delete what was moved."""
    retired = _sibling(path, _RETIRED)
    try:
        os.rename(path, retired)
    except FileNotFoundError:
        return
    _discard(retired)


def _discard(path: Path) -> None:
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def read_owner(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / OWNER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --- state, staleness and recovery --------------------------------------------------------


def state(root: Path) -> dict[str, Any]:
    """``free``, ``held`` (owner alive or unknown) or ``stale`` (owner gone).

    Stale is provable only two ways: the owner's pid is dead on this host, or
    the directory has no readable owner and is older than the grace period
    (then ``owner`` is empty and ``ownerless`` is true).
    """
    path = lock_path(root)
    try:
        age = time.time() - os.lstat(path).st_mtime
    except FileNotFoundError:
        return {"state": "free"}
    owner = read_owner(path)
    if owner is None:
        stale = age >= grace_seconds()
        return {"state": "stale" if stale else "held", "owner": {}, "ownerless": True,
                "age_seconds": max(round(age), 0)}
    public = {k: v for k, v in owner.items() if k not in _PRIVATE}
    return {"state": "stale" if _owner_dead(owner) else "held", "owner": public}


def grace_seconds() -> float:
    """How long a lock without a readable owner counts as held (see the module docstring)."""
    try:
        value = float(os.environ.get(GRACE_ENV, DEFAULT_GRACE_SECONDS))
    except ValueError:
        return DEFAULT_GRACE_SECONDS
    return value if math.isfinite(value) and value >= 0 else DEFAULT_GRACE_SECONDS


def _owner_dead(owner: dict[str, Any]) -> bool:
    if owner.get("host") != socket.gethostname():
        return False  # cannot prove a process on another host is gone
    pid = owner.get("pid")
    if type(pid) is not int or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _held_error(root: Path) -> ForestError:
    info = state(root)
    if info["state"] == "stale":
        return ForestError(
            "lock_stale",
            "a previous writer died holding the lock; check it, then run "
            "'memory-forest unlock ROOT --stale'",
            _details(info),
        )
    return ForestError("lock_held", "another writer holds the forest lock; run the command "
                       "again, or give it longer with --wait SECONDS", _details(info))


def _details(info: dict[str, Any]) -> dict[str, Any]:
    extra = {key: info[key] for key in ("ownerless", "age_seconds") if key in info}
    return {**info.get("owner", {}), **extra}


def unlock_stale(root: Path) -> dict[str, Any]:
    """Remove a stale lock after checking again; a live (or unprovable) one is refused.

    The owner is read before the check and again just before the lock is
    renamed aside: a lock that changed hands in between is left alone.
    """
    path = lock_path(root)
    record = read_owner(path)
    info = state(root)
    if info["state"] == "free":
        clear_debris(root)
        raise ForestError("lock_not_held", "the forest is not locked")
    if info["state"] != "stale":
        raise ForestError("lock_held", "the lock owner is alive (or on another host, or the "
                          "lock is younger than its grace period); refusing to remove it",
                          _details(info))
    if read_owner(path) != record:
        raise ForestError("lock_held", "the lock changed hands while it was checked; "
                          "refusing to remove it", _details(state(root)))
    _retire(path)
    clear_debris(root)
    return _details(info)


def clear_debris(root: Path) -> list[str]:
    """Remove the ``.new``/``.old`` directories a killed acquire or release left beside
    the lock: a ``.old`` always (it was released), a ``.new`` once its owner is dead on
    this host or, with no readable owner, once it is older than the grace period."""
    path = lock_path(root)
    removed = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not name.startswith(path.name) or not _DEBRIS.fullmatch(name[len(path.name):]):
            continue  # only names this module makes: the parent may be a home directory
        if name.endswith(_STAGED) and not _staged_is_dead(Path(entry.path)):
            continue
        try:
            _discard(Path(entry.path))
        except OSError:
            continue  # not ours to remove (another user's, a read-only disk): it blocks nothing
        removed.append(name)
    return removed


def _staged_is_dead(staged: Path) -> bool:
    owner = read_owner(staged)
    if owner is not None:
        return _owner_dead(owner)
    try:
        return time.time() - os.lstat(staged).st_mtime >= grace_seconds()
    except FileNotFoundError:
        return False

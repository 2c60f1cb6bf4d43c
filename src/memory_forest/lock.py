"""The sibling lock ``<ROOT>.maintenance.lock``: one writer at a time.

The lock is a directory created with mkdir (atomic on every POSIX
filesystem) next to the forest, never inside it, holding ``owner.json`` with
pid, host, start time and command. A held lock makes another writer fail at
once with ``lock_held``; a lock whose process is gone is reported as
``lock_stale`` and removed only by an explicit ``unlock --stale``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import ForestError
from .safety import DIR_MODE, write_private

OWNER = "owner.json"


def lock_path(root: Path) -> Path:
    return root.with_name(root.name + ".maintenance.lock")


@contextmanager
def held(root: Path, command: str, wait: float = 0.0) -> Iterator[dict[str, Any]]:
    """Hold the lock for the body of a ``with`` block; raise if another holds it."""
    owner = acquire(root, command, wait)
    try:
        yield owner
    finally:
        release(root, owner)


def acquire(root: Path, command: str, wait: float = 0.0) -> dict[str, Any]:
    path = lock_path(root)
    deadline = time.monotonic() + max(wait, 0.0)
    while True:
        try:
            os.mkdir(path, DIR_MODE)
            break
        except FileExistsError:
            if time.monotonic() >= deadline:
                raise _held_error(root) from None
            time.sleep(0.02)
    os.chmod(path, DIR_MODE)
    owner = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "command": command,
        "token": os.urandom(8).hex(),
    }
    write_private(path / OWNER, json.dumps(owner, sort_keys=True).encode())
    return owner


def release(root: Path, owner: dict[str, Any]) -> None:
    """Remove the lock only if it is still ours."""
    path = lock_path(root)
    current = read_owner(path)
    if current is not None and current.get("token") != owner.get("token"):
        return
    try:
        (path / OWNER).unlink()
    except FileNotFoundError:
        pass
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass


def read_owner(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / OWNER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def state(root: Path) -> dict[str, Any]:
    """``free``, ``held`` (owner alive or unknown) or ``stale`` (owner dead, same host)."""
    path = lock_path(root)
    if not os.path.lexists(path):
        return {"state": "free"}
    owner = read_owner(path)
    public = {k: v for k, v in (owner or {}).items() if k != "token"}
    return {"state": "stale" if _is_stale(owner) else "held", "owner": public}


def _is_stale(owner: dict[str, Any] | None) -> bool:
    if not owner or owner.get("host") != socket.gethostname():
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
            info.get("owner", {}),
        )
    return ForestError("lock_held", "another writer holds the forest lock; try again later",
                       info.get("owner", {}))


def unlock_stale(root: Path) -> dict[str, Any]:
    """Remove a lock only after re-checking that its owner process is gone."""
    info = state(root)
    if info["state"] == "free":
        raise ForestError("lock_not_held", "the forest is not locked")
    if info["state"] != "stale":
        raise ForestError("lock_held", "the lock owner is alive (or on another host); "
                          "refusing to remove it", info.get("owner", {}))
    path = lock_path(root)
    for name in os.listdir(path):
        os.unlink(path / name)
    os.rmdir(path)
    return info["owner"]

"""What a running watcher says of itself: its state file, and its answers about the index.

Read by ``status``, ``doctor`` and ``index`` without importing the watcher
(which loads the file-system event library): the state file names the
watcher's pid, and the service answers how far behind it is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import warmsocket
from .statefiles import state_dir

STATE_FILE = "watch.json"
LOCK_FILE = "watch.lock"

# In the watcher's own process, its status, asked directly: the service runs ``index``
# lines there, and would otherwise wait on its own socket.
_local: dict[str, Callable[[], dict[str, Any]]] = {}


def answer_locally(root: Path, status: Callable[[], dict[str, Any]]) -> None:
    """Let this process's ``index`` ask the watcher of ``root`` directly."""
    _local[os.fspath(root)] = status


def read_state(root: Path) -> dict[str, Any] | None:
    """The watcher's ``watch.json``, or None when there is none (or it is unreadable)."""
    try:
        data = json.loads((state_dir(root) / STATE_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def report(root: Path) -> dict[str, Any]:
    """Whether a watcher runs on ``root``, its pid, and how far behind it is: what the
    service says, else what its state file says of a watcher that does not answer."""
    status = _status(root)
    if status is not None:
        return {"running": True, **{key: status.get(key) for key in (
            "pid", "current", "behind_seconds", "last_built_at", "builds", "answered",
            "error", "embedding")}}
    state = read_state(root)
    if state is None or not _alive(state.get("pid")):
        return {"running": False}
    return {"running": True, "pid": state["pid"], "current": False, "answering": False}


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def current_build(root: Path, judged: bool = True) -> dict[str, Any] | None:
    """The last build's summary when a watcher runs on ``root`` and has applied every change
    it has seen, and (``judged``) judged the forest since: ``index`` then has nothing to
    build. Embedding needs only the first: the index's rows name every document's bytes."""
    status = _status(root)
    if status is None or not status.get("current") or not status.get("last") or \
            (judged and not status.get("settled")):
        return None
    return status["last"]


def _status(root: Path) -> dict[str, Any] | None:
    local = _local.get(os.path.realpath(root))
    if local is not None:
        return local()
    answer = warmsocket.request(os.fspath(root), "status", b"")
    if answer is None or not answer.startswith(b"ok "):
        return None
    try:
        status = json.loads(answer.partition(b"\n")[2])
    except ValueError:
        return None
    return status if isinstance(status, dict) else None

"""After sync commits or merges: directories, private modes, the index and its problems.

The work follows what changed since the last sync that got this far, never
the size of the forest. Each settle records the commit it settled (and when)
in the repository's local config, so the next one knows which paths git has
written since: the tree difference between that commit and HEAD. Modes are
restored on those paths and the directories leading to them, and inside
``.git`` on what was written since (git runs with umask 077 under sync, but
a hand ``git commit`` or a ``git clone`` does not). The index is brought up
to date incrementally, which re-judges only the changed files and their
neighbours; its problem list, the whole forest's, is what ``checks`` reports.

Without a record (the first sync of a clone, a repository made again) the
whole forest and the whole of ``.git`` are walked, as ``doctor --repair`` does.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from . import index
from .errors import ForestError
from .forest import Forest
from .gitrepo import Repo
from .issues import Issue, summarize
from .layers import LAYERS
from .modes import restore_modes
from .safety import mkdir_private
from .statefiles import STATE_DIR
from .syncsafety import derived_failure

MAX_LISTED = 200
SETTLED = "memory-forest.settled"  # the commit the last settle left the work tree at
SETTLED_AT = "memory-forest.settledat"  # when, in nanoseconds since the epoch


def settle(root: Path, repo: Repo) -> dict[str, Any]:
    """Directories git cannot carry, private modes, the index and its problems."""
    started = time.time_ns()
    since = _settled(repo)
    changed = None if since is None else repo.lines_z(
        "diff", "--name-only", "-z", "--no-renames", since[0], "HEAD")
    done: dict[str, Any] = {"created_dirs": missing_dirs(root)}
    done["modes"] = restore_modes(root, changed, None if since is None else since[1])
    done["index"], done["checks"] = _index(root)
    if repo.has_commit():
        repo.config(SETTLED, repo.rev("HEAD"))
        repo.config(SETTLED_AT, str(started))
    return done


def _settled(repo: Repo) -> tuple[str, int] | None:
    """The last settled commit and time, or None when there is none to trust."""
    commit, at = repo.get_config(SETTLED), repo.get_config(SETTLED_AT)
    if not commit or not at or not at.isdigit() or not repo.has_commit(commit):
        return None
    return commit, int(at)


def _index(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The incremental build's report, and its problems as sync reports its checks."""
    try:
        # A handle of its own: the merge may have changed forest.json.
        with Forest.open(root) as forest:
            built = index.build(forest)  # incremental when an index exists
    except (ForestError, OSError, sqlite3.Error) as exc:
        failure = derived_failure(exc)  # what was merged is still pushed
        return {"error": failure}, {"error": failure}
    problems = [Issue(**problem) for problem in built["problems"]]
    errors = [problem for problem in built["problems"] if problem["level"] == "error"]
    return built, {"summary": summarize(problems), "errors": errors[:MAX_LISTED]}


def missing_dirs(root: Path) -> list[str]:
    """Create the layer directories and the state directory git could not carry.

    Git stores files, not directories: an empty layer (a new forest has six)
    never reaches a clone, and neither does ``.memory-forest/`` without its config.
    """
    made = []
    for name in (*(layer.dirname for layer in LAYERS), STATE_DIR):
        if not os.path.lexists(root / name):
            mkdir_private(root / name)
            made.append(name)
    return made

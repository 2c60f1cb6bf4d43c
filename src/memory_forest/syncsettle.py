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
import stat
import time
from pathlib import Path
from typing import Any

from .errors import ForestError
from .forest import Forest
from .gitrepo import Repo
from .issues import Issue, summarize
from .layers import LAYERS
from .modes import repair_modes, restore_mode
from .safety import mkdir_private
from .statefiles import STATE_DIR
from .syncsafety import derived_failure

MAX_LISTED = 200
SETTLED = "memory-forest.settled"  # the commit the last settle left the work tree at
SETTLED_AT = "memory-forest.settledat"  # when, in nanoseconds since the epoch
# A write in the same instant as the record, on a clock of coarse granularity, still counts.
RACY_NS = 2_000_000_000


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
    from . import index

    try:
        built = index.build(root)  # incremental when an index exists
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


# --- modes -----------------------------------------------------------------------------------


def restore_modes(root: Path, changed: list[str] | None = None,
                  since_ns: int | None = None) -> dict[str, Any]:
    """0700/0600 on what git wrote, and group and other bits off what it wrote in ``.git``.

    ``changed``: the paths git wrote, or None for every file (``doctor
    --repair``'s walk). A clone or a merge writes with the user's umask (0644,
    0755). Inside ``.git`` only the group and other bits are taken away: git
    keeps its objects read-only, and private is the point, not writable.
    """
    if changed is None:
        report = repair_modes(Forest.of(root))
    else:
        report = {"modes": [], "modes_failed": []}
        _restore(root, _with_dirs(changed), report)
    _restore(root, [".", ".gitignore", ".gitattributes"], report)
    report["git_modes"] = _private_git_dir(root, since_ns)
    report["modes"] = report["modes"][:MAX_LISTED]
    return report


def _with_dirs(paths: list[str]) -> list[str]:
    """The paths and every directory leading to them, parents first."""
    found = set()
    for path in paths:
        parts = path.split("/")
        found.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
    return sorted(found)


def _restore(root: Path, paths: list[str], report: dict[str, Any]) -> None:
    for rel in paths:
        try:
            st = os.lstat(root / rel)
        except (FileNotFoundError, NotADirectoryError):
            continue  # deleted by the merge
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_ISLNK(st.st_mode) or stat.S_IMODE(st.st_mode) == want:
            continue
        try:
            report["modes"].append(restore_mode(root, rel))
        except (ForestError, OSError) as exc:
            report["modes_failed"].append({"path": rel, "code": getattr(
                exc, "code", type(exc).__name__)})


def _private_git_dir(root: Path, since_ns: int | None) -> int:
    """Strip group and other bits under ``.git``, never following a symlink; how many.

    With ``since_ns``, the files of a directory are looked at only when the
    directory changed since then (a new entry changes its directory's mtime),
    and a directory with no subdirectory (its link count says so) is not even
    listed: after one commit that is a few of git's hundreds of directories.
    """
    changed = 0
    top = root / ".git"
    try:
        if stat.S_ISLNK(os.lstat(top).st_mode):
            return 0
    except FileNotFoundError:
        return 0
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            st = os.lstat(directory)
        except OSError:
            continue
        fresh = since_ns is None or st.st_mtime_ns >= since_ns - RACY_NS
        if fresh or st.st_mode & 0o077:
            changed += _private_entry(directory)
        if not fresh and st.st_nlink == 2:
            continue  # no subdirectory, and no entry added since
        try:
            with os.scandir(directory) as it:
                listed = list(it)
        except OSError:
            continue
        for entry in listed:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif fresh and entry.is_file(follow_symlinks=False) and \
                        entry.stat(follow_symlinks=False).st_mode & 0o077:
                    changed += _private_entry(Path(entry.path))
            except FileNotFoundError:  # git removed it since the listing (a pack, a lock)
                continue
    return changed


def _private_entry(path: Path) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return 0
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if not mode & 0o077:
            return 0
        os.fchmod(fd, mode & 0o700)
        return 1
    finally:
        os.close(fd)

"""Private modes: put 0700/0600 back on what the walk found with another mode.

``doctor --repair`` and ``sync`` (after git wrote files with its own modes)
both restore modes this one way, through descriptors opened without
following a symlink.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from .errors import ForestError
from .forest import Forest
from .quarantine import MODE_CODES
from .safety import DIR_MODE, FILE_MODE, open_nofollow, walk

MAX_LISTED_MODES = 200  # sync lists what it changed, briefly
# A write in the same instant as sync's record, on a clock of coarse granularity, still counts.
RACY_NS = 2_000_000_000


def repair_modes(forest: Forest) -> dict[str, Any]:
    """Restore 0700/0600 on whatever the walk found with another mode.

    The walk never follows a symlink and skips debris and the tool
    directories; each fix opens the entry itself with O_NOFOLLOW and changes
    the mode through that descriptor, so a name swapped for a symlink since
    the walk is refused, never followed. ``modes`` lists each change;
    ``modes_failed`` what could not be opened (a file with no read permission).
    """
    root = forest.root
    try:
        listing = walk(root, forest.limits)
    except ForestError as exc:
        return {"modes": [], "modes_failed": [{"path": ".", "code": exc.code}]}
    changed, failed = [], []
    for issue in listing.issues:
        if issue.code not in MODE_CODES:
            continue
        try:
            changed.append(restore_mode(root, issue.path))
        except (ForestError, OSError) as exc:
            code = exc.code if isinstance(exc, ForestError) else type(exc).__name__
            failed.append({"path": issue.path, "code": code})
    return {"modes": changed, "modes_failed": failed}


def restore_mode(root: Path, rel: str) -> dict[str, str]:
    if rel == ".":
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    else:
        # O_NONBLOCK: a FIFO swapped in would otherwise block the open; fstat refuses it.
        fd = open_nofollow(root, rel, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            want = DIR_MODE
        elif stat.S_ISREG(st.st_mode):
            want = FILE_MODE
        else:
            raise ForestError("special_file", "only regular files and directories are repaired")
        os.fchmod(fd, want)
    finally:
        os.close(fd)
    return {"path": rel, "was": f"{stat.S_IMODE(st.st_mode):04o}", "now": f"{want:04o}"}

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
    report["modes"] = report["modes"][:MAX_LISTED_MODES]
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
        want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
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

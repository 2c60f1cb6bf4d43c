"""Private modes: put 0700/0600 back on what the walk found with another mode.

``doctor --repair`` and ``sync`` (after git wrote files with its own modes)
both restore modes this one way, through descriptors opened without
following a symlink.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ForestError

if TYPE_CHECKING:
    from .forest import Forest


def repair_modes(forest: Forest) -> dict[str, Any]:
    """Restore 0700/0600 on whatever the walk found with another mode.

    The walk never follows a symlink and skips debris and the tool
    directories; each fix opens the entry itself with O_NOFOLLOW and changes
    the mode through that descriptor, so a name swapped for a symlink since
    the walk is refused, never followed. ``modes`` lists each change;
    ``modes_failed`` what could not be opened (a file with no read permission).
    """
    from .quarantine import MODE_CODES
    from .safety import walk

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
    from .safety import DIR_MODE, FILE_MODE, open_nofollow

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

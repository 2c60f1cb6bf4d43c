"""The index's files on disk: only regular files are opened, a hot journal is rolled back.

While a transaction commits, SQLite keeps the pages it changes in a rollback
journal beside the index (``index.sqlite3-journal``; in WAL mode a ``-wal``
and a ``-shm``). A writer killed mid-commit leaves that journal *hot*: the
database file holds half a transaction until someone rolls it back. A
read-only connection cannot, so every reader saw a half-written file (no
schema at all) until the index was rebuilt, and a full build that merely
renamed a new file into place left the old journal to be played back over it.

So the readers hand a hot journal to ``roll_back``: a read-write open, in
which SQLite itself takes the exclusive lock on the database file and plays
the journal back. A live writer's journal is never hot (it holds a lock SQLite
checks first), so this never disturbs one, and the per-turn gate never waits
for the forest's writer lock to do it. A full build removes the old file's
journal when it publishes its own file.

Where SQLite expects a regular file, anything else is never opened: a FIFO
would make the open wait forever, a directory or a device cannot be an index.
Readers report ``index_unavailable``; the writers (``index``, every write,
``doctor --repair``) remove it, since all of it is derived and rebuilt.

On the per-turn path (``indexreader.connect`` calls ``ready``): stdlib only.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

from .errors import ForestError
from .safety import open_regular
from .statefiles import INDEX, index_path, state_rel
from .store import schema

SIBLINGS = ("-journal", "-wal", "-shm")
FIX = "memory-forest index ROOT"
ROLLBACK_TIMEOUT = 2.0  # seconds SQLite waits for a live writer's lock before giving up


def files(root: Path) -> list[Path]:
    """The index and every file SQLite may keep beside it."""
    path = index_path(root)
    return [path, *(path.with_name(INDEX + suffix) for suffix in SIBLINGS)]


def journal_path(root: Path) -> Path:
    return index_path(root).with_name(INDEX + "-journal")


def kind(path: Path) -> str | None:
    """``None`` when absent, else ``regular``, ``symlink``, ``fifo``, ``directory`` or ``other``."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    return "directory" if stat.S_ISDIR(mode) else "other"


def unavailable(path: Path, found: str) -> ForestError:
    return ForestError("index_unavailable",
                       f"the index cannot be opened (a {found} where a regular file belongs); "
                       f"run '{FIX}' to rebuild it",
                       {"piece": state_rel(path.name), "found": found, "fix": FIX})


def ready(root: Path) -> None:
    """Make the index safe to open read-only, or raise ``index_unavailable``.

    An absent index is left to the caller (``index_missing``). The index is
    opened once without blocking and checked with ``fstat``, so no FIFO or
    unreadable file reaches SQLite; a hot journal is rolled back.
    """
    for path in files(root)[1:]:
        found = kind(path)
        if found not in (None, "regular"):
            raise unavailable(path, found)
    path = index_path(root)
    try:
        fd = open_regular(path)
    except OSError:
        raise unavailable(path, _unusable(path)) from None
    if fd is None:
        return
    os.close(fd)
    if hot(root):
        roll_back(root)


def _unusable(path: Path) -> str:
    """What stands where a regular file belongs, or why the regular file there cannot be read."""
    found = kind(path)
    return "unreadable file" if found in ("regular", None) else found


def hot(root: Path) -> bool:
    """A journal with content beside the index: hot, unless a live writer is committing."""
    try:
        st = os.lstat(journal_path(root))
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


def roll_back(root: Path) -> bool:
    """Play a hot journal back through a read-write open; False when SQLite could not.

    A journal cut short (a full disk, a torn copy) restores only part of the
    pages, leaving an index whose schema reads fine and whose tables do not:
    one that fails SQLite's quick check after the rollback is removed, so
    readers say the index is missing and the next writer builds a new one.
    """
    path = index_path(root)
    try:
        before = os.stat(path).st_ino
        con = sqlite3.connect(f"{path.as_uri()}?mode=rw", uri=True, timeout=ROLLBACK_TIMEOUT)
        try:
            sound = schema.passes_quick_check(con)
        finally:
            con.close()
    except (OSError, sqlite3.DatabaseError):
        return False
    if not sound:
        try:
            if os.stat(path).st_ino == before:  # not a new index a build just renamed in
                path.unlink()
        except FileNotFoundError:
            pass
        return False
    return not hot(root)


def damaged(root: Path) -> list[dict[str, Any]]:
    """Each piece of the index's files that no reader can use, with its code and fix."""
    found = []
    for path in files(root):
        what = kind(path)
        if what == "regular" and not os.access(path, os.R_OK):
            what = "unreadable file"
        if what not in (None, "regular"):
            found.append({"piece": state_rel(path.name), "code": "index_unavailable",
                          "found": what, "fix": FIX})
    if hot(root):
        found.append({"piece": state_rel(journal_path(root).name), "code": "index_hot_journal",
                      "found": "hot journal", "fix": FIX})
    return found


def heal(root: Path) -> list[str]:
    """Under the writer lock: remove what is not a regular file, roll back a hot journal.

    A journal SQLite cannot roll back goes with the index it belongs to, so
    the next build starts over. Returns the pieces removed.
    """
    removed = []
    for path in files(root):
        if kind(path) not in (None, "regular"):
            _remove(path)
            removed.append(state_rel(path.name))
    if hot(root) and not roll_back(root):
        for path in files(root):
            if kind(path) is not None:
                _remove(path)
                removed.append(state_rel(path.name))
    return removed


def discard_old(root: Path) -> None:
    """Before a full build renames its file into place: the old file's leftovers go first.

    The old journal belongs to the old file; left beside the new one, the next
    read-write open would play it back over the new pages.
    """
    for path in files(root):
        if path.name == INDEX and kind(path) in (None, "regular"):
            continue  # replaced by the rename itself, so readers never see no index
        if kind(path) is not None:
            _remove(path)


def _remove(path: Path) -> None:
    if kind(path) == "directory":
        import shutil  # only a writer ever removes one; the per-turn path never gets here

        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)

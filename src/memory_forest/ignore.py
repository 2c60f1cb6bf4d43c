"""What the forest never reads: tool directories at the root and editor or OS debris.

Ground level, no imports of our own: the walk (``safety``), the writers'
directory listings and everything above them ask this one predicate, so a
name is ignored everywhere or nowhere.
"""

from __future__ import annotations

# Tool and editor directories at the root: never followed, never written.
IGNORED_ROOT_DIRS = frozenset({".obsidian", ".git", ".trash"})
# The files git reads at the root of a synced forest (``sync`` writes them): git's, not memory.
IGNORED_ROOT_FILES = frozenset({".gitignore", ".gitattributes"})
IGNORED_ROOT = IGNORED_ROOT_DIRS | IGNORED_ROOT_FILES

# Files that editors and operating systems drop beside the ones a person edits.
_DEBRIS_NAMES = frozenset({".ds_store", "thumbs.db", "desktop.ini"})
# The last characters a debris name not starting with "." or "#" can end with.
_LAST_CHARS = frozenset("~pPeEbBiI")


def is_debris(name: str) -> bool:
    """True for editor swap, backup and lock files and OS folder metadata.

    vim ``.x.swp``/``.x.swo``, backups ``x~``, Emacs locks ``.#x`` and
    autosaves ``#x#``, LibreOffice locks ``.~lock.x#``, other programs'
    ``x.tmp``, and ``.DS_Store``, ``Thumbs.db``, ``desktop.ini`` (in any case:
    the systems that write them ignore case). Decided by the name alone, so a
    debris symlink (an Emacs lock is one) is skipped before anything follows it.
    """
    if name[0] not in ".#" and name[-1] not in _LAST_CHARS:
        return False  # the common case, a note or an event file, decided in two lookups
    if name.lower() in _DEBRIS_NAMES:
        return True
    if name.startswith(".") and name[1:].endswith((".swp", ".swo")):
        return True
    if name.endswith(("~", ".tmp")) or name.startswith(".#"):
        return True
    return len(name) > 1 and name.startswith(("#", ".~lock.")) and name.endswith("#")


# The same debris as gitignore patterns, for the ``.gitignore`` that ``sync`` writes: what
# the forest never reads, git never commits. Case variants of the OS names are spelled out
# because git matches case-exactly where the systems that write them do not.
GIT_DEBRIS_PATTERNS = (".*.swp", ".*.swo", "*~", "*.tmp", ".#*", "\\#*#", ".~lock.*#",
                       ".[Dd][Ss]_[Ss]tore", "[Tt]humbs.db",
                       "[Dd]esktop.ini")

"""Receipts and proposals hold only regular JSON files: anything else there is debris.

A FIFO, socket, device or symlink in ``receipts/`` or ``proposals/`` is
never read (every read goes through ``safety.read_regular``, which opens
without blocking and refuses it), but ``validate`` and ``maintain`` report it
as an error until someone removes it. None of them can hold a receipt or a
proposal, so ``doctor`` names each one and ``doctor --repair`` removes it.
A regular file or a directory is left alone: it may be what the user meant
to keep, and the readers report it by path.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from .statefiles import PROPOSALS, RECEIPTS, state_dir, state_rel

FIX = "memory-forest doctor ROOT --repair"


def _debris(root: Path) -> list[tuple[str, Path]]:
    found = []
    for folder in (RECEIPTS, PROPOSALS):
        try:
            with os.scandir(state_dir(root) / folder) as entries:
                names = sorted(entry.name for entry in entries)
        except (NotADirectoryError, FileNotFoundError, PermissionError):
            continue
        for name in names:
            path = state_dir(root) / folder / name
            mode = os.lstat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                found.append((state_rel(folder, name), path))
    return found


def damaged(root: Path) -> list[dict[str, Any]]:
    """Each entry of receipts/ or proposals/ that is neither a file nor a directory."""
    return [{"piece": rel, "code": "special_file", "found": "not a regular file", "fix": FIX}
            for rel, _ in _debris(root)]


def heal(root: Path) -> list[str]:
    """Remove them (``doctor --repair``, under the lock); returns what was removed."""
    removed = []
    for rel, path in _debris(root):
        path.unlink(missing_ok=True)
        removed.append(rel)
    return removed

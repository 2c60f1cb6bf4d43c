"""Test helpers for forests kept in git: one identity, one view of the canonical files.

The hermetic environment itself is the ``hermetic_git`` fixture in conftest:
no user or system git config, so the fallback identity and default branch apply.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    """Run git with a fixed identity (a test's hand-made commits need one); its stdout."""
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          cwd=cwd, input=stdin, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def canonical_files(root: Path) -> dict[str, bytes]:
    """Every file outside .git and .memory-forest, by relative path: what sync must keep."""
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in root.rglob("*")
            if path.is_file() and not path.relative_to(root).as_posix().startswith(
                (".git/", ".memory-forest/"))}

"""Opening the derived index to read it: the one door retrieval, the gate and writers use.

Apart from ``index.py`` (which builds) so that the ``Forest`` handle, and
with it every turn, loads the checks an open needs (symlinks refused, the
index's files healed, the schema's version compared) and none of the build
chain: the walk, parsing, validation and the audit stay unloaded until an
operation builds.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from . import indexheal
from .errors import ForestError
from .statefiles import STATE_DIR, index_path
from .store import schema


def connect(root: Path) -> sqlite3.Connection:
    """Open the index read-only, failing with a code when it is absent or foreign."""
    path = index_path(root)
    _refuse_symlinks(root, path)
    indexheal.ready(root)
    if not path.exists():
        raise ForestError("index_missing",
                          "the forest has no index; run 'memory-forest index ROOT'")
    try:
        con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            _check_schema(con)
        except ForestError:
            con.close()
            if indexheal.hot(root):  # a journal SQLite could not roll back (a read-only disk)
                raise indexheal.unavailable(indexheal.journal_path(root), "hot journal") \
                    from None
            raise
    except sqlite3.DatabaseError as exc:
        raise ForestError("index_corrupt", "the index cannot be read; run "
                          "'memory-forest index ROOT' to rebuild it",
                          {"error": type(exc).__name__}) from None
    return con


def _refuse_symlinks(root: Path, path: Path) -> None:
    for candidate in (root / STATE_DIR, path):
        if candidate.is_symlink():
            raise ForestError("symlink", "the index path is a symlink; refusing to follow it",
                              {"path": os.path.relpath(candidate, root)})


def _check_schema(con: sqlite3.Connection) -> None:
    found = schema.schema_version(con)
    if found != str(schema.INDEX_SCHEMA_VERSION):
        raise ForestError(
            "index_schema_mismatch",
            f"the index has schema {found!s}, this tool needs {schema.INDEX_SCHEMA_VERSION}; "
            "run 'memory-forest index ROOT' to rebuild it",
            {"found": found, "expected": schema.INDEX_SCHEMA_VERSION},
        )

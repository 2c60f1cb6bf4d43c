"""The matrix cache: every chunk vector as one float32 matrix, memory-mapped by readers.

Reading 30,000 chunk rows out of SQLite and converting them costs more than the rest of a
retrieval. After each run that changed the vectors, the writer saves them as one float32
matrix (vectors.<generation>.npy) with its keys (vectors.cache.json); a reader loads it by
memory map when the generation is the vectors file's, else reads the file (slower, the
same result). Imported only with ``semantic``, so numpy is imported lazily like there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

DIMENSIONS = 384  # multilingual-e5-small's
CACHE_KEYS = "vectors.cache.json"


def matrix_of(blob: bytes) -> Any:
    import numpy as np

    return np.frombuffer(blob, dtype="<f2").reshape(-1, DIMENSIONS).astype(np.float32)


def _paths(root: Path, generation: str) -> tuple[Path, Path]:
    from .statefiles import state_dir

    return state_dir(root) / CACHE_KEYS, state_dir(root) / f"vectors.{generation}.npy"


def read(root: Path, generation: str | None) -> tuple[list[str], list[int], Any] | None:
    import json

    import numpy as np

    if not generation:
        return None
    keys_path, matrix_path = _paths(root, generation)
    try:
        if keys_path.is_symlink() or matrix_path.is_symlink():
            return None
        keys = json.loads(keys_path.read_text(encoding="utf-8"))
        if keys.get("generation") != generation:
            return None
        matrix = np.load(matrix_path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        return None
    hashes, counts = keys["hashes"], keys["counts"]
    if matrix.shape != (sum(counts), DIMENSIONS) or matrix.dtype != np.float32:
        return None
    return hashes, counts, matrix


def write(root: Path, vectors: sqlite3.Connection, generation: str) -> None:
    """Save the vectors as the matrix cache of ``generation``; older matrices go."""
    import json

    import numpy as np

    from . import store
    from .safety import FILE_MODE
    from .statefiles import state_dir

    hashes, counts, blob = store.all_vectors(vectors)
    keys_path, matrix_path = _paths(root, generation)
    for target, write in ((matrix_path, lambda handle: np.save(handle, matrix_of(blob))),
                          (keys_path, lambda handle: handle.write(json.dumps(
                              {"generation": generation, "hashes": hashes,
                               "counts": counts}).encode("utf-8")))):
        temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(temp, target)
    for old in state_dir(root).glob("vectors.*.npy"):
        if old != matrix_path:
            old.unlink(missing_ok=True)

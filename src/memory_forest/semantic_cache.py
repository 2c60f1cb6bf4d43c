"""The matrix cache: every chunk vector as one float32 matrix, memory-mapped by readers.

Reading 30,000 chunk rows out of SQLite and converting them costs more than the rest of a
retrieval. After each run that changed the vectors, the writer saves them as one float32
matrix (vectors.<generation>.npy) with its keys (vectors.cache.json); a reader loads it by
memory map when the generation is the vectors file's, else reads the file (slower, the
same result). A cache a reader cannot use in every detail (not a regular file, keys of
another shape, a matrix of another size) is passed over the same way, and the next writer
replaces it. Imported only with ``semantic``, so numpy is imported lazily like there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .safety import FILE_MODE
from .semantic_state import (
    CACHE_KEYS,
    DIMENSIONS,
    MAX_KEYS_BYTES,
    VECTOR_BYTES,
    Invalid,
    keys_shape,
    matrix_layout,
    open_regular,
    read_regular,
)
from .statefiles import state_dir
from .store import vectorfile

if TYPE_CHECKING:
    import sqlite3



def matrix_of(blob: bytes) -> Any:
    import numpy as np

    return np.frombuffer(blob, dtype="<f2").reshape(-1, DIMENSIONS).astype(np.float32)


def _paths(root: Path, generation: str) -> tuple[Path, Path]:
    return state_dir(root) / CACHE_KEYS, state_dir(root) / f"vectors.{generation}.npy"


def read(root: Path, generation: str | None) -> tuple[list[str], list[int], Any] | None:
    """The cached hashes, chunk counts and matrix of ``generation``; None when there is no
    usable cache of it."""
    if not generation or not generation.isalnum():
        return None
    keys_path, matrix_path = _paths(root, generation)
    try:
        data = read_regular(keys_path, MAX_KEYS_BYTES)
        if data is None:
            return None
        found, hashes, counts = keys_shape(data)
        if found != generation:
            return None
        matrix = _mapped(matrix_path)
    except (Invalid, OSError, ValueError):
        return None
    if matrix.shape != (sum(counts), DIMENSIONS):
        return None
    return hashes, counts, matrix


def _mapped(path: Path) -> Any:
    """The float32 matrix saved at ``path``, memory-mapped from a descriptor opened as a
    regular file (``np.load`` would open a FIFO and wait on it), its header checked first
    (``semantic_state.matrix_layout``)."""
    import numpy as np


    with os.fdopen(open_regular(path), "rb") as handle:
        rows, offset = matrix_layout(handle)
        if not rows:  # no vectors yet: nothing to map
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        return np.memmap(handle, dtype="<f4", mode="r", offset=offset,
                         shape=(rows, DIMENSIONS))


def write(root: Path, vectors: sqlite3.Connection, generation: str) -> None:
    """Save the vectors as the matrix cache of ``generation``; older matrices go."""
    import numpy as np


    hashes, counts, blob = vectorfile.all_vectors(vectors, VECTOR_BYTES)
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

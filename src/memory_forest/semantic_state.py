"""Semantic state checked before it is used: the vectors file and the matrix cache are
derived, so anything damaged in them is bypassed by readers and rebuilt by writers.

A reader (``retrieve``, the gate, ``status``, ``stats``) that finds a piece it
cannot use ranks lexically with ``ranking_reason: semantic_state_invalid``;
it never fails and never waits. Only regular files are opened: a FIFO where
the vectors file belongs would block ``open`` (and SQLite) forever, so each
piece is first opened without blocking and checked with ``fstat``. A writer
(``index --semantic``, ``maintain``, ``doctor --repair``) first heals: it
removes what is not a regular file, rolls back a hot journal by opening the
file read-write, drops the rows of any document whose vectors have the wrong
shape (they are embedded again), and replaces a vectors file it cannot open,
or whose tables are not the ones it writes, with an empty one.

Stdlib only at import: the lexical path imports this module's callers lazily.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import sqlite3
import struct
from pathlib import Path
from typing import BinaryIO

from . import safety
from .safety import FILE_MODE
from .statefiles import state_dir, state_rel, vectors_path
from .store import vectorfile

INVALID = "semantic_state_invalid"
FIX = "memory-forest index ROOT --semantic"
# The shapes on disk that this module checks and the cache and the engine write.
DIMENSIONS = 384  # multilingual-e5-small's
VECTOR_BYTES = DIMENSIONS * 2  # one chunk vector as stored: float16
CACHE_KEYS = "vectors.cache.json"
# The vectors file's meta row that says semantic ranking is on for this forest.
ENABLED_KEY = "enabled"
# The companions SQLite keeps beside the vectors file: a rollback journal, or WAL files.
COMPANIONS = ("-journal", "-wal", "-shm")
MAX_KEYS_BYTES = 256 << 20  # far above 100,000 documents' keys; a bigger file is not ours


class Invalid(Exception):
    """A piece of semantic state that exists but cannot be used."""


def regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (False when it is absent), checked on a descriptor
    opened without blocking or following a symlink; raises ``Invalid`` for anything else."""
    fd = _open(path)
    if fd is None:
        return False
    os.close(fd)
    return True


def read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes, None when it is absent;
    ``Invalid`` for anything else."""
    fd = _open(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise Invalid(f"{path.name} is larger than {limit} bytes")
    return data


def open_regular(path: Path) -> int:
    """A read-only descriptor on a regular file; ``Invalid`` when it is absent or not one."""
    fd = _open(path)
    if fd is None:
        raise Invalid(f"{path.name} is missing")
    return fd


def _open(path: Path) -> int | None:
    try:
        return safety.open_regular(path)
    except safety.NotRegular:
        raise Invalid(f"{path.name} is not a regular file") from None
    except OSError as exc:  # a symlink (ELOOP), no permission, a socket ...
        raise Invalid(f"{path.name} cannot be opened ({exc.strerror})") from None


def vectors_present(root: Path) -> bool:
    """Whether the vectors file is there to be read (False when absent); ``Invalid`` when it,
    or a journal or WAL file beside it, is not a regular file."""
    path = vectors_path(root)
    present = regular(path)
    for suffix in COMPANIONS:
        regular(path.with_name(path.name + suffix))
    return present


def matrix_layout(handle: BinaryIO) -> tuple[int, int]:
    """(rows, offset of the data) of a matrix cache file, read from its header: a version
    1.0 array file of float32 rows of ``DIMENSIONS``, C order, whose length is exactly
    what the header says; ``Invalid`` otherwise. Stdlib only, so ``doctor`` checks it
    without numpy."""
    head = handle.read(10)
    if len(head) != 10 or head[:8] != b"\x93NUMPY\x01\x00":
        raise Invalid("the matrix is not a version 1.0 array file")
    (size,) = struct.unpack("<H", head[8:])
    try:
        header = ast.literal_eval(handle.read(size).decode("latin-1"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise Invalid("the matrix header cannot be read") from None
    if not isinstance(header, dict) or header.get("descr") != "<f4" \
            or header.get("fortran_order") is not False \
            or not isinstance(header.get("shape"), tuple) or len(header["shape"]) != 2 \
            or header["shape"][1] != DIMENSIONS or type(header["shape"][0]) is not int:
        raise Invalid("the matrix is not a float32 table of chunk vectors")
    rows, offset = header["shape"][0], 10 + size
    if rows < 0 or os.fstat(handle.fileno()).st_size != offset + rows * DIMENSIONS * 4:
        raise Invalid("the matrix file has another length than its header says")
    return rows, offset


# --- what doctor names -------------------------------------------------------------------


def damaged(root: Path) -> list[dict[str, str]]:
    """Each piece of semantic state that a reader would bypass: its path, the code and the
    command that rebuilds it. Reads only (a hot journal is named, not rolled back)."""
    found = []
    path = vectors_path(root)
    try:
        if vectors_present(root):
            con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
            try:
                problem = vectorfile.vectors_problem(con)
                if problem is None and vectorfile.misshapen_vectors(con, VECTOR_BYTES):
                    problem = "misshapen vectors"
            finally:
                con.close()
            if problem:
                raise Invalid(problem)
    except (Invalid, sqlite3.DatabaseError):
        found.append(_entry(path.name))
    found += [_entry(entry.name) for entry in _cache_entries(root) if _cache_damaged(entry)]
    return found


def _cache_damaged(entry: Path) -> bool:
    """Whether a file of the matrix cache is not what its writer leaves: keys of the
    writer's shape, or a matrix whose header and length agree."""
    try:
        if entry.name == CACHE_KEYS:
            keys_shape(read_regular(entry, MAX_KEYS_BYTES) or b"")
        else:
            with os.fdopen(open_regular(entry), "rb") as handle:
                matrix_layout(handle)
    except Invalid:
        return True
    return False


def _entry(name: str) -> dict[str, str]:
    return {"piece": state_rel(name), "code": INVALID, "fix": FIX}


def _cache_entries(root: Path) -> list[Path]:
    """The matrix cache's files (and any directory or FIFO left in their place)."""
    directory = state_dir(root)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [directory / name for name in names
            if name == CACHE_KEYS or (name.startswith("vectors.") and name.endswith(".npy"))]


def keys_shape(data: bytes) -> tuple[str, list[str], list[int]]:
    """The matrix cache's keys (generation, hashes, chunk counts), or ``Invalid``: one
    hash per count, each count a positive integer."""
    try:
        keys = json.loads(data)
    except ValueError:
        raise Invalid("the cache keys are not JSON") from None
    if not isinstance(keys, dict):
        raise Invalid("the cache keys are not an object")
    generation, hashes, counts = keys.get("generation"), keys.get("hashes"), keys.get("counts")
    if not isinstance(generation, str) or not isinstance(hashes, list) \
            or not isinstance(counts, list) or len(hashes) != len(counts) \
            or not all(isinstance(sha, str) for sha in hashes) \
            or not all(type(count) is int and count > 0 for count in counts):
        raise Invalid("the cache keys do not have the shape the writer gives them")
    return generation, hashes, counts


# --- healing (writers) -------------------------------------------------------------------


def heal(root: Path) -> list[str]:
    """Make the semantic state usable again (the caller is a writer); the pieces it rebuilt
    or removed, by root-relative path.

    What is not a regular file goes (a symlink itself, never its target). The
    vectors file is opened read-write, which rolls back a hot journal; one that
    still cannot be read, or whose tables are not ours, is replaced by an empty
    one that keeps semantic ranking on (the file only exists once it was turned
    on), so the next embedding run fills it again. A damaged file of the matrix
    cache goes: the reader falls back to the vectors file until a writer saves it again.
    """

    healed: list[str] = []
    path = vectors_path(root)
    for target in [path, *(path.with_name(path.name + s) for s in COMPANIONS)]:
        try:
            regular(target)
        except Invalid:
            _remove(target)
            healed.append(state_rel(target.name))
    for target in _cache_entries(root):
        if _cache_damaged(target):
            _remove(target)
            healed.append(state_rel(target.name))
    if state_rel(path.name) in healed:
        problem, dropped = "not a regular file", 0
    elif not path.exists():
        return healed
    else:
        problem, dropped = _usable(path)
    if problem:
        _replace_empty(path)
    if (problem or dropped) and state_rel(path.name) not in healed:
        healed.append(state_rel(path.name))
    return healed


def _usable(path: Path) -> tuple[str | None, int]:
    """What makes the vectors file unusable (None when nothing does), once a read-write
    open rolled back any hot journal; and how many documents' misshapen vectors it then
    dropped."""
    try:
        con = sqlite3.connect(path, timeout=30)
        try:
            problem = vectorfile.vectors_problem(con)
            return problem, 0 if problem else vectorfile.drop_misshapen_vectors(con, VECTOR_BYTES)
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return "unreadable", 0


def _replace_empty(path: Path) -> None:
    """A new, empty vectors file with semantic ranking on in place of ``path``."""
    for target in [path, *(path.with_name(path.name + s) for s in COMPANIONS)]:
        _remove(target)
    con = create(path)
    try:
        with con:
            vectorfile.set_vectors_meta(con, ENABLED_KEY, "1")
    finally:
        con.close()


def _created(path: Path) -> Path:
    """``path``, created private (0600) and empty when it is new."""
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE))
    return path


def create(path: Path) -> sqlite3.Connection:
    """The vectors file for writing, created private when it is new."""
    return vectorfile.open_vectors(os.fspath(_created(path)), create=True)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)

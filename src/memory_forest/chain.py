"""The hash chain of ISTM lines: what a line's ``prev`` field names, and how to find it.

Every event line the tool writes carries ``prev``: the sha256 (hex) of the
exact bytes of the line before it in the same file, without its newline.
The first line of a file names the last line of the nearest earlier ISTM
file by name of the same machine that has one (``06 istm/2026-12-01.jsonl``
before ``06 istm/2026-12-02.jsonl``; ``2026-12-01.laptop.jsonl`` before
``2026-12-02.laptop.jsonl``), or ``GENESIS`` when there is none. A line is
what lies between two newlines; blank lines are not events and are skipped.

A forest kept in git is written on several machines, each appending to its
own shard ``<day>.<host>.jsonl``: two machines never append to one file, so
a merge never interleaves their lines, and each machine's files are one
chain. Files without a host (``<day>.jsonl``, ``events.jsonl``) are one
more chain, the one a forest outside git writes.

So a line changed, removed, inserted or moved shows as the next line naming
a hash that is not its predecessor's; ``audit`` walks each chain's files in
name order and says where. Capture and audit share these rules so that what
one writes the other accepts.
"""

from __future__ import annotations

import os
import re
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

from .digest import sha256_hex
from .errors import ForestError
from .routes import is_host, parse_route
from .safety import open_nofollow

FIELD = "prev"
GENESIS = "0" * 64
ISTM_DIR = "06 istm"
HOST_ENV = "MEMORY_FOREST_HOST"
HOST_FALLBACK = "host"
_NOT_HOST = re.compile(r"[^a-z0-9-]+")
# What one backward read takes; an event line is at most 1 MiB, most are a few hundred bytes.
TAIL_CHUNK = 64 * 1024


def line_hash(line: bytes) -> str:
    return sha256_hex(line)


def lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every non-blank line, numbered as validate numbers them."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield number, line


def last_line(data: bytes) -> bytes | None:
    """The last non-blank line of ``data``, found from the end."""
    end = len(data)
    while end > 0:
        start = data.rfind(b"\n", 0, end) + 1
        if data[start:end].strip():
            return data[start:end]
        end = start - 1
    return None


def host_segment(raw: str) -> str:
    """A host name made safe for a file name: lowercase ``[a-z0-9-]``, 1 to 63 characters.

    Whatever the machine calls itself (``Ana's MacBook.local``, a name with
    spaces or non-ASCII letters) becomes one DNS-label-like segment, the shape
    ``routes`` accepts in a shard name; a name with nothing usable in it
    (or only a reserved word) becomes ``host``.
    """
    segment = _NOT_HOST.sub("-", raw.lower()).strip("-")[:63].strip("-")
    return segment if is_host(segment) else HOST_FALLBACK


def this_host() -> str:
    """This machine's segment: ``MEMORY_FOREST_HOST`` when set and not empty (tests simulate
    machines by it), else the host name."""
    raw = os.environ.get(HOST_ENV)
    if not raw:
        raw = socket.gethostname()
    return host_segment(raw)


def replicated(root: Path) -> bool:
    """Whether the forest is kept in git: its root holds ``.git`` (a directory, or the file
    a linked worktree has). Only then do captures go to per-machine shards."""
    return os.path.lexists(root / ".git")


def shard_path(root: Path, day: str) -> str:
    """The ISTM shard this machine appends to on ``day``: ``06 istm/<day>.jsonl``, or
    ``06 istm/<day>.<host>.jsonl`` in a replicated forest."""
    if replicated(root):
        return f"{ISTM_DIR}/{day}.{this_host()}.jsonl"
    return f"{ISTM_DIR}/{day}.jsonl"


def host_of(name: str) -> str | None:
    """The machine an ISTM file name (of ``06 istm/``) belongs to; None for the files
    without a host (``<day>.jsonl``, ``events.jsonl``)."""
    stem = name.removesuffix(".jsonl")
    return stem.partition(".")[2] or None


def shard_names(names: list[str]) -> list[str]:
    """The ISTM file names among ``names`` (of ``06 istm/``), in name order."""
    found = []
    for name in names:
        try:
            parse_route(f"{ISTM_DIR}/{name}")
        except ForestError:
            continue
        found.append(name)
    return sorted(found)


def chains(names: list[str]) -> dict[str | None, list[str]]:
    """The ISTM file names among ``names``, by machine (None: no host), each in chain order."""
    found: dict[str | None, list[str]] = {}
    for name in shard_names(names):
        found.setdefault(host_of(name), []).append(name)
    return found


def tail_line(root: Path, rel: str) -> bytes | None:
    """The last non-blank line of the file ``rel``, read backwards in chunks.

    Capture needs only this line of the previous shard, which can be several
    megabytes: reading it whole would cost a batch more than the batch itself.
    Returns None for a file with no line; raises ``not_regular_file`` for
    anything but a regular file, and the open's own error otherwise.
    """
    fd = open_nofollow(root, rel, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ForestError("not_regular_file", "not a regular file", {"path": rel})
        end = st.st_size
        tail = b""
        while end > 0:
            start = max(0, end - TAIL_CHUNK)
            tail = os.pread(fd, end - start, start) + tail
            end = start
            # Only a line with a newline before it (or the file's start) is whole.
            whole = tail if end == 0 else tail[tail.find(b"\n") + 1:] if b"\n" in tail else b""
            found = last_line(whole)
            if found is not None:
                return found
        return None
    finally:
        os.close(fd)


def head_of(root: Path, shard: str, names: list[str]) -> str:
    """The hash the first line of ``shard`` names, given the names in ``06 istm/``.

    That is the last line of the nearest earlier ISTM file of the same
    machine (or, for a file without a host, without one) that has a line;
    a directory or other non-file where a shard would be (or a file gone since
    the listing) is passed over, as the walk and ``audit`` pass it over.
    """
    current = shard.rsplit("/", 1)[-1]
    same = chains(names).get(host_of(current), [])
    for name in reversed([n for n in same if n < current]):
        try:
            found = tail_line(root, f"{ISTM_DIR}/{name}")
        except ForestError as exc:
            if exc.code not in ("not_regular_file", "not_found"):
                raise
            continue
        if found is not None:
            return line_hash(found)
    return GENESIS

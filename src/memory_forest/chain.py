"""The hash chain of ISTM lines: what a line's ``prev`` field names, and how to find it.

Every event line the tool writes carries ``prev``: the sha256 (hex) of the
exact bytes of the line before it in the same file, without its newline.
The first line of a file names the last line of the nearest earlier ISTM
file by name that has one (``06 istm/2026-12-01.jsonl`` before
``06 istm/2026-12-02.jsonl``), or ``GENESIS`` when there is none. A line is
what lies between two newlines; blank lines are not events and are skipped.

So a line changed, removed, inserted or moved shows as the next line naming
a hash that is not its predecessor's; ``audit`` walks the files in name
order and says where. Capture and audit share these rules so that what one
writes the other accepts.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from .digest import sha256_hex
from .errors import ForestError
from .routes import parse_route

FIELD = "prev"
GENESIS = "0" * 64
ISTM_DIR = "06 istm"
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


def shard_names(names: list[str]) -> list[str]:
    """The ISTM file names among ``names`` (of ``06 istm/``), in chain order."""
    found = []
    for name in names:
        try:
            parse_route(f"{ISTM_DIR}/{name}")
        except ForestError:
            continue
        found.append(name)
    return sorted(found)


def tail_line(root: Path, rel: str) -> bytes | None:
    """The last non-blank line of the file ``rel``, read backwards in chunks.

    Capture needs only this line of the previous shard, which can be several
    megabytes: reading it whole would cost a batch more than the batch itself.
    Returns None for a file with no line; raises ``not_regular_file`` for
    anything but a regular file, and the open's own error otherwise.
    """
    from .safety import open_nofollow

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

    That is the last line of the nearest earlier ISTM file that has a line;
    a directory or other non-file where a shard would be (or a file gone since
    the listing) is passed over, as the walk and ``audit`` pass it over.
    """
    current = shard.rsplit("/", 1)[-1]
    for name in reversed([n for n in shard_names(names) if n < current]):
        try:
            found = tail_line(root, f"{ISTM_DIR}/{name}")
        except ForestError as exc:
            if exc.code not in ("not_regular_file", "not_found"):
                raise
            continue
        if found is not None:
            return line_hash(found)
    return GENESIS

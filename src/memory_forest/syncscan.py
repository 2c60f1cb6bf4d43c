"""What sync would publish, scanned as it would be published.

A push sends objects, not files: every blob of every commit the remote has
not seen, including a blob a later commit replaced (a token committed, then
removed from the file, is still in the history that leaves). So the scan
reads the blobs each of those commits added or changed, each distinct blob
once, whole, from one ``git cat-file --batch``; and the working-tree files
the next commit would take. The cost follows what changed, never the size
of the forest: after one write, a few blobs; on a first push, all of them.

Text is what decodes as UTF-8, or as UTF-16/32 with a byte-order mark, or as
UTF-16 without one (recognised by its NUL bytes); anything else is binary,
which the credential rules cannot read and so is refused (rule ``binary``)
unless ``allow_binary(path)`` says the file is an attachment published on
purpose. A finding names the path, the line, the rule and, for a committed
blob, the oldest commit that added it; never the matched text.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .credentials import findings
from .errors import ForestError
from .gitrepo import Repo
from .safety import open_nofollow

BINARY = "binary"
# Checked in this order: the UTF-32 LE mark begins with the UTF-16 LE one.
MARKS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
# How much of a file without a mark is looked at to recognise UTF-16 by its NULs.
SAMPLE_BYTES = 64 * 1024
SUBMODULE = "160000"  # a commit id, not a blob: nothing of ours to read


def nothing_allowed(path: str) -> bool:
    """The default: no binary content is published."""
    return False


def scan(repo: Repo, remote: str | None, changes: list[str],
         allow_binary: Callable[[str], bool] = nothing_allowed) -> list[dict[str, Any]]:
    """Findings in the commits ``remote`` has not seen, then in the working-tree ``changes``.

    With no remote nothing is published, so only the changes are read; the
    first push to a remote reads every commit reachable from HEAD.
    """
    found = committed(repo, remote, allow_binary) if remote is not None else []
    return found + working(repo.root, changes, allow_binary)


def committed(repo: Repo, remote: str, allow_binary: Callable[[str], bool]
              ) -> list[dict[str, Any]]:
    """The blobs of every commit reachable from HEAD and from no ref of ``remote``."""
    if not repo.has_commit():
        return []
    # -c: a merge lists only what differs from every parent (what the merge itself
    # wrote); --reverse: a blob is credited to the oldest commit that added it.
    listing = repo.run("log", "--raw", "-z", "-c", "--root", "--no-renames", "--no-abbrev",
                       "--reverse", "--format=C%H", "HEAD", "--not",
                       f"--remotes={remote}").stdout
    wanted: dict[str, tuple[str, str]] = {}
    for commit, mode, blob, path in _changed_blobs(listing):
        # An id of zeros (any hash length) is a deletion: no blob.
        if blob.strip("0") and mode != SUBMODULE and blob not in wanted:
            wanted[blob] = (path, commit)
    found = []
    for blob, data in repo.objects(wanted):
        path, commit = wanted[blob]
        found += [{**finding, "commit": commit} for finding in _judge(path, data, allow_binary)]
    return found


def _changed_blobs(listing: bytes) -> list[tuple[str, str, str, str]]:
    """``(commit, mode, blob, path)`` from ``git log --raw -z -c --format=C%H``.

    A raw entry is ``:<modes> <blob ids> <status>`` and then the path, as two
    NUL-separated fields; a merge's entry has one colon per parent, and its
    last mode and id are the merge's own.
    """
    entries = []
    commit = ""
    fields = iter(listing.split(b"\0"))
    for field in fields:
        field = field.lstrip(b"\n")
        if field.startswith(b":"):
            parents = len(field) - len(field.lstrip(b":"))
            words = field[parents:].decode("ascii").split()
            path = os.fsdecode(next(fields, b""))
            entries.append((commit, words[parents], words[2 * parents + 1], path))
        elif field.startswith(b"C"):
            commit = field[1:].decode("ascii")
    return entries


def working(root: Path, changes: list[str], allow_binary: Callable[[str], bool]
            ) -> list[dict[str, Any]]:
    """The files (and symlink targets) the next commit would take, read whole."""
    found = []
    for rel in sorted(changes):
        try:
            data = _whole(root, rel)
        except (ForestError, OSError):
            continue  # deleted (or a FIFO, a socket): nothing of it is published
        found += _judge(rel, data, allow_binary)
    return found


def _whole(root: Path, rel: str) -> bytes:
    """A file's bytes whatever its size, or a symlink's target (what git would store)."""
    if os.path.islink(root / rel):
        return os.fsencode(os.readlink(root / rel))
    fd = open_nofollow(root, rel, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO never blocks it
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ForestError("not_regular_file", "not a regular file", {"path": rel})
        return handle.read()


def _judge(path: str, data: bytes, allow_binary: Callable[[str], bool]
           ) -> list[dict[str, Any]]:
    text = decoded(data)
    if text is None:
        return [] if allow_binary(path) else [{"path": path, "line": 0, "rule": BINARY}]
    return [{"path": path, "line": number, "rule": rule} for number, rule in findings(text)]


def decoded(data: bytes) -> str | None:
    """The text ``data`` holds, or None when it is binary."""
    for mark, codec in MARKS:
        if data.startswith(mark):
            return _strict(data[len(mark):], codec)
    if b"\0" in data:
        codec = _utf16_without_mark(data)
        if codec is not None:
            text = _strict(data, codec)
            if text is not None:
                return text
    return _strict(data, "utf-8")


def _strict(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return None


def _utf16_without_mark(data: bytes) -> str | None:
    """UTF-16 of mostly Latin text has a NUL in every other byte, and in no other."""
    if len(data) % 2:
        return None
    sample = data[:SAMPLE_BYTES]
    pairs = len(sample) // 2
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if odd * 4 >= pairs and even * 10 <= odd:
        return "utf-16-le"
    if even * 4 >= pairs and odd * 10 <= even:
        return "utf-16-be"
    return None

"""Filesystem guards: the real root, a bounded symlink-free walk, private atomic writes.

Everything that touches the disk for the forest goes through here, so the
rules (no symlink is ever followed, nothing escapes the root, directories are
0700 and files 0600) live in one place.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from stat import S_ISDIR, S_ISLNK, S_ISREG
from typing import NamedTuple

from .errors import ForestError
from .ignore import IGNORED_ROOT, is_debris
from .issues import Issue
from .testhooks import crash_point
from .warmsocket import STATE_DIR

DIR_MODE = 0o700
FILE_MODE = 0o600


def open_root(path: str | os.PathLike[str]) -> Path:
    """Return the forest root as an absolute path, or fail closed.

    The root must be a real directory selected exactly: a symlink as the root
    is refused rather than resolved, so the caller always knows what is read.
    """
    root = Path(os.path.abspath(os.fspath(path)))
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        raise ForestError("root_missing", "the forest root does not exist: pass the forest's "
                          "folder, or create one with memory-forest init PATH") from None
    except OSError as exc:
        raise ForestError("root_unreadable", "the forest root cannot be inspected",
                          {"error": type(exc).__name__}) from None
    if stat.S_ISLNK(st.st_mode):
        raise ForestError("root_symlink", "the forest root is a symlink; pass the real directory")
    if not stat.S_ISDIR(st.st_mode):
        raise ForestError("root_not_directory", "the forest root is not a directory: pass the "
                          "forest's folder, or create one with memory-forest init PATH")
    return root


class Entry(NamedTuple):
    path: str  # root-relative, "/"-separated
    size: int
    mtime_ns: int
    ino: int = 0  # with size and mtime, what tells an incremental build a file changed


class Walk:
    """What a walk found. A plain class: this module is on the per-turn path."""

    def __init__(self) -> None:
        self.files: list[Entry] = []
        self.dirs: list[str] = []
        self.issues: list[Issue] = []
        self.total_bytes = 0
        self.ignored = 0  # editor and OS debris skipped by name
        self.top_files: list[str] = []  # regular files directly under the walk's top


_STATE_PREFIX = STATE_DIR + "/"


def walk(root: Path, limits: dict[str, int], under: str = "") -> Walk:
    """List every file and directory under ``root`` without following anything.

    Symlinks and special files become issues and are never opened. The tool
    and editor directories at the root (and git's files there) are skipped
    entirely, and so is editor and OS debris anywhere (``ignore.is_debris``;
    counted, never stat'ed or reported). Crossing a count, depth or byte limit fails closed with
    ``limit_exceeded``. The byte limit is memory's: the derived state under
    ``.memory-forest/`` (an index, vectors and their cache grow to gigabytes
    at 200,000 documents) is listed but never counted toward it.

    One ``lstat`` per entry and nothing else: an incremental build compares
    size, mtime and inode with what the index holds, so this loop is what a
    no-change ``index`` costs (about half a second per 100,000 files here).

    ``under`` (a relative directory, e.g. one layer) limits the walk to that
    subtree; writers use it to re-check only the layers they depend on.
    """
    result = Walk()
    files, dirs, issues = result.files, result.dirs, result.issues
    make = tuple.__new__  # an Entry without NamedTuple's Python-level constructor
    max_files, max_dirs, max_depth = limits["max_files"], limits["max_dirs"], limits["max_depth"]
    max_bytes = limits["max_total_bytes"]
    total = 0
    if not under:
        _check_mode(os.lstat(root), ".", issues)
    stack: list[tuple[str, int]] = [(under, under.count("/") + 1 if under else 0)]
    while stack:
        rel_dir, depth = stack.pop()
        prefix = rel_dir + "/" if rel_dir else ""
        try:
            with os.scandir(root / rel_dir if rel_dir else root) as it:
                listed = list(it)
        except OSError as exc:
            issues.append(Issue(rel_dir or ".", "unreadable_directory",
                                f"cannot list directory ({type(exc).__name__})"))
            continue
        for entry in listed:
            name = entry.name
            if not rel_dir and name in IGNORED_ROOT:
                continue
            if is_debris(name):
                result.ignored += 1
                continue
            rel = prefix + name
            st = entry.stat(follow_symlinks=False)
            mode = st.st_mode
            if S_ISREG(mode):
                if mode & 0o7777 != FILE_MODE:
                    _check_mode(st, rel, issues)
                files.append(make(Entry, (rel, st.st_size, st.st_mtime_ns, st.st_ino)))
                if not rel_dir:
                    result.top_files.append(rel)
                if not rel.startswith(_STATE_PREFIX):
                    total += st.st_size
                if len(files) > max_files or total > max_bytes:
                    result.total_bytes = total
                    _limit(limits, "max_files", len(files))
                    _limit(limits, "max_total_bytes", total)
            elif S_ISDIR(mode):
                if mode & 0o7777 != DIR_MODE:
                    _check_mode(st, rel, issues)
                dirs.append(rel)
                if len(dirs) > max_dirs or depth + 1 > max_depth:
                    _limit(limits, "max_dirs", len(dirs))
                    _limit(limits, "max_depth", depth + 1)
                stack.append((rel, depth + 1))
            elif S_ISLNK(mode):
                issues.append(Issue(rel, "symlink", "symlinks are not allowed in a forest"))
            else:
                issues.append(Issue(rel, "special_file",
                                    "only regular files and directories are allowed"))
    result.total_bytes = total
    files.sort()
    dirs.sort()
    return result


def _limit(limits: dict[str, int], name: str, value: int) -> None:
    if value > limits[name]:
        raise ForestError("limit_exceeded", f"the forest exceeds its {name} limit ({limits[name]})",
                          {"limit": name, "value": limits[name]})


def _check_mode(st: os.stat_result, rel: str, issues: list[Issue]) -> None:
    mode = stat.S_IMODE(st.st_mode)
    want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
    if mode != want:
        code = "mode_dir_not_private" if want == DIR_MODE else "mode_file_not_private"
        issues.append(Issue(rel, code, f"mode is {mode:04o}, must be {want:04o}"))


def read_regular(root: Path, rel: str, max_bytes: int) -> bytes:
    """Read one file under the root, refusing symlinks at every step and large files."""
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
    # forever; with it, the open returns and the fstat check below refuses it.
    fd = open_nofollow(root, rel, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ForestError("not_regular_file", "not a regular file", {"path": rel})
        if st.st_size > max_bytes:
            raise ForestError("file_too_large", "file exceeds max_file_bytes", {"path": rel})
        data = _read_or_issue(fd, rel, max_bytes)
        if len(data) > max_bytes:
            raise ForestError("file_too_large", "file exceeds max_file_bytes", {"path": rel})
        return data
    finally:
        os.close(fd)


def _read_or_issue(fd: int, rel: str, max_bytes: int) -> bytes:
    """Read an open file; a failing read (EIO on a bad sector) is this file's problem.

    It becomes ``os_error`` naming the path and the errno, so a reader reports
    the one file and goes on with the rest of the forest. Tests inject the
    failure with ``MEMORY_FOREST_TEST_FAIL_AT=read:<path>`` (see testhooks).
    """
    try:
        crash_point(f"read:{rel}")
        return read_bounded(fd, max_bytes)
    except OSError as exc:
        name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        raise ForestError("os_error", f"cannot read file ({name})",
                          {"path": rel, "errno": name}) from None


def read_bounded(fd: int, max_bytes: int) -> bytes:
    """Read at most ``max_bytes + 1`` bytes (one more than allowed shows a file grew)."""
    chunks = []
    remaining = max_bytes + 1
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_caller_file(source: str, max_bytes: int, prefix: str, exit_code: int = 2) -> bytes:
    """Read a file named by the caller (a plan, an event batch, content) outside the forest.

    ``-`` reads stdin. Otherwise the file must be a regular file, not a
    symlink, and at most ``max_bytes`` long; each way it can fail has its
    own code, ``<prefix>_unreadable``, ``_symlink``, ``_not_regular_file``
    or ``_too_large``.
    """
    def reject(kind: str, message: str) -> ForestError:
        return ForestError(f"{prefix}_{kind}", message, exit_code=exit_code)

    too_large = reject("too_large", f"the input is larger than {max_bytes} bytes")
    if source == "-":
        data = sys.stdin.buffer.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise too_large
        return data
    try:
        st = os.lstat(source)
    except OSError:
        raise reject("unreadable", "the file cannot be read") from None
    if stat.S_ISLNK(st.st_mode):
        raise reject("symlink", "the file is a symlink")
    if not stat.S_ISREG(st.st_mode):
        raise reject("not_regular_file", "the input must be a regular file")
    if st.st_size > max_bytes:
        raise too_large
    # The checks above ran on a name; the file can still refuse to open or to read
    # (permissions, a symlink swapped in since, I/O errors): each is a clean rejection.
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise reject("symlink", "the file is a symlink") from None
        raise reject("unreadable", "the file cannot be read") from None
    try:
        data = read_bounded(fd, max_bytes)
    except OSError:
        raise reject("unreadable", "the file cannot be read") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise too_large
    return data


class NotRegular(OSError):
    """Something other than a regular file stands where one belongs."""


def open_regular(path: Path, flags: int = os.O_RDONLY, mode: int = 0o600) -> int | None:
    """A descriptor on the regular file at ``path``; None when nothing is there.

    The one way a state file (the index and its journal, the vectors, the
    matrix cache, the run log) is opened: never through a symlink, and
    non-blocking, since opening a FIFO would otherwise wait forever for its
    other end; ``fstat`` then refuses anything but a regular file with
    ``NotRegular``. Any other failure is the ``OSError`` itself.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except FileNotFoundError:
        return None
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{path.name} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_nofollow(root: Path, rel: str, flags: int = os.O_RDONLY) -> int:
    """Open ``root/rel`` walking one component at a time with O_NOFOLLOW.

    Checking a path first and opening it later would race with a swapped-in
    symlink; opening each directory by fd relative to its parent does not.
    """
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ForestError("route_escape", "path escapes the forest root", {"path": rel[:500]})
    nofollow = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | nofollow)
    try:
        for part in parts[:-1]:
            try:
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=dir_fd)
            except FileNotFoundError:
                raise _missing(rel) from None
            except OSError as exc:
                raise _unsafe(rel, exc) from None
            # Swap first, then close: a signal that interrupts between the two must not
            # leave ``dir_fd`` naming a closed descriptor for the ``finally`` to close again.
            parent_fd, dir_fd = dir_fd, next_fd
            os.close(parent_fd)
        try:
            return os.open(parts[-1], flags | nofollow, FILE_MODE, dir_fd=dir_fd)
        except FileNotFoundError:
            raise _missing(rel) from None
        except OSError as exc:
            raise _unsafe(rel, exc) from None
    finally:
        os.close(dir_fd)


def _missing(rel: str) -> ForestError:
    return ForestError("not_found", "no such file in the forest", {"path": rel})


def _unsafe(rel: str, exc: OSError) -> ForestError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return ForestError("symlink", "a symlink is in the way; refusing to follow it",
                           {"path": rel})
    return ForestError("os_error", f"cannot open file ({type(exc).__name__})", {"path": rel})


def mkdir_private(path: Path) -> None:
    """Create one directory with exactly 0700 (chmod undoes any umask)."""
    os.mkdir(path, DIR_MODE)
    os.chmod(path, DIR_MODE)


def makedirs_private(root: Path, rel_dir: str) -> list[str]:
    """Create missing directories below the root, each 0700; return the ones created.

    Each new directory's parent is fsynced: a file written into it later is only
    durable if the directory's own entry is.
    """
    created = []
    current = root
    for part in rel_dir.split("/") if rel_dir else []:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            mkdir_private(current)
            fsync_dir(current.parent)
            created.append(os.path.relpath(current, root).replace(os.sep, "/"))
            continue
        if not stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode):
            raise ForestError("symlink", "a non-directory is in the way", {"path": rel_dir})
    return created


def write_private(path: Path, data: bytes) -> None:
    """Atomically replace ``path`` with ``data``; the file is 0600 from its first byte.

    The temporary file is created with O_EXCL and mode 0600 in the target's
    directory, fsynced, then renamed over the target, and the directory is
    fsynced so the rename survives a crash. A crash at any moment leaves the
    old bytes or the new ones under ``path``, never a mix; at worst a
    ``.tmp`` file is left beside it, which every reader skips as debris.

    The test hook ``replace:<file name>`` sits between the temporary file's
    fsync and the rename, the one moment the two versions exist side by side.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        write_new_private(tmp, data)
        crash_point(f"replace:{path.name}")
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def write_new_private(path: Path, data: bytes) -> None:
    """Create ``path`` exclusively (never through a symlink), 0600 from its first byte,
    write ``data`` and fsync it. Fails with FileExistsError if anything is there."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make the directory's entries durable: a rename or an unlink is only on disk
    once its directory is fsynced."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

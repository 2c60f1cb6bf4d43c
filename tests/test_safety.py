"""Filesystem guards: the real root, the bounded symlink-free walk, private writes."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import raises_code, write

from memory_forest.config import DEFAULT_LIMITS
from memory_forest.ignore import is_debris
from memory_forest.safety import (
    DIR_MODE,
    FILE_MODE,
    makedirs_private,
    mkdir_private,
    open_root,
    read_regular,
    walk,
    write_private,
)
from memory_forest.testhooks import CRASH_ENV, FAIL_ENV


def private_dir(path: Path) -> Path:
    path.mkdir()
    path.chmod(0o700)
    return path


def issue_pairs(result) -> list[tuple[str, str]]:
    return sorted((issue.path, issue.code) for issue in result.issues)


# --- the root -------------------------------------------------------------------------------


def test_open_root_returns_an_absolute_real_directory(tmp_path: Path, monkeypatch) -> None:
    root = private_dir(tmp_path / "f")
    monkeypatch.chdir(tmp_path)
    assert open_root("f") == root


def test_open_root_refusals(tmp_path: Path) -> None:
    raises_code(lambda: open_root(tmp_path / "missing"), "root_missing")
    write(tmp_path, "file", "x")
    raises_code(lambda: open_root(tmp_path / "file"), "root_not_directory")
    os.symlink(private_dir(tmp_path / "real"), tmp_path / "link")
    raises_code(lambda: open_root(tmp_path / "link"), "root_symlink")


# --- walk -----------------------------------------------------------------------------------


def test_walk_lists_files_and_dirs_sorted_with_sizes(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    write(root, "b/2.md", "22")
    write(root, "a/1.md", "1")
    result = walk(root, DEFAULT_LIMITS)
    assert [(e.path, e.size) for e in result.files] == [("a/1.md", 1), ("b/2.md", 2)]
    assert result.dirs == ["a", "b"]
    assert result.total_bytes == 3
    assert result.issues == []


def test_walk_reports_symlinks_without_following_them(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    outside = private_dir(tmp_path / "outside")
    write(outside, "secret.md", "secret")
    write(root, "layer/ok.md", "ok")
    os.symlink(outside / "secret.md", root / "layer/file-link.md")
    os.symlink(outside, root / "layer/dir-link")
    os.symlink(root / "missing", root / "dangling")
    result = walk(root, DEFAULT_LIMITS)
    assert issue_pairs(result) == [("dangling", "symlink"), ("layer/dir-link", "symlink"),
                                   ("layer/file-link.md", "symlink")]
    assert [e.path for e in result.files] == ["layer/ok.md"]  # nothing reached through a link
    assert result.dirs == ["layer"]


def test_walk_reports_special_files(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    os.mkfifo(root / "pipe", 0o600)
    assert issue_pairs(walk(root, DEFAULT_LIMITS)) == [("pipe", "special_file")]


def test_walk_checks_every_mode_including_the_root(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    write(root, "d/open.md", "x", mode=0o644)
    write(root, "d/exec.md", "x", mode=0o700)
    write(root, "d/ok.md", "x")
    (root / "d").chmod(0o750)
    root.chmod(0o755)
    assert issue_pairs(walk(root, DEFAULT_LIMITS)) == [
        (".", "mode_dir_not_private"), ("d", "mode_dir_not_private"),
        ("d/exec.md", "mode_file_not_private"), ("d/open.md", "mode_file_not_private"),
    ]


@pytest.mark.parametrize("name", [".obsidian", ".git", ".trash"])
def test_walk_ignores_tool_directories_at_the_root(tmp_path: Path, name: str) -> None:
    root = private_dir(tmp_path / "f")
    tool = root / name
    tool.mkdir()
    tool.chmod(0o777)
    write(root, f"{name}/config.json", "{}", mode=0o666)
    os.symlink("/", tool / "escape")
    os.mkfifo(tool / "fifo")
    result = walk(root, DEFAULT_LIMITS)
    assert result.issues == []
    assert result.files == [] and result.dirs == []


def test_tool_directory_names_are_ignored_only_at_the_root(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    write(root, "layer/.obsidian/x.md", "x")
    os.symlink("/", root / "layer/.obsidian/escape")
    result = walk(root, DEFAULT_LIMITS)
    assert issue_pairs(result) == [("layer/.obsidian/escape", "symlink")]
    assert [e.path for e in result.files] == ["layer/.obsidian/x.md"]


def test_a_symlinked_tool_directory_is_skipped_not_followed(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    outside = private_dir(tmp_path / "outside")
    write(outside, "x.md", "x", mode=0o644)
    os.symlink(outside, root / ".git")
    result = walk(root, DEFAULT_LIMITS)
    assert result.issues == [] and result.files == []


@pytest.mark.parametrize(
    ("limit", "value"),
    [("max_files", 2), ("max_dirs", 1), ("max_depth", 2), ("max_total_bytes", 10)],
)
def test_walk_fails_closed_past_a_limit(tmp_path: Path, limit: str, value: int) -> None:
    root = private_dir(tmp_path / "f")
    for rel in ("a/b/c/1.md", "a/2.md", "x/3.md"):
        write(root, rel, "12345")
    error = raises_code(lambda: walk(root, dict(DEFAULT_LIMITS, **{limit: value})),
                        "limit_exceeded")
    assert error.details["limit"] == limit


def test_walk_within_limits_is_fine(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    write(root, "a/1.md", "12345")
    limits = dict(DEFAULT_LIMITS, max_files=1, max_dirs=1, max_depth=1, max_total_bytes=5)
    assert [e.path for e in walk(root, limits).files] == ["a/1.md"]


# --- reading --------------------------------------------------------------------------------


def test_read_regular_reads_exact_bytes(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    write(root, "a/b.md", b"\x00bytes\xff")
    assert read_regular(root, "a/b.md", 100) == b"\x00bytes\xff"


def test_read_regular_refuses_symlinks_at_every_step(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    outside = private_dir(tmp_path / "outside")
    write(outside, "sub/secret.md", "secret")
    private_dir(root / "a")
    os.symlink(outside / "sub/secret.md", root / "a/file.md")
    os.symlink(outside / "sub", root / "dir")
    raises_code(lambda: read_regular(root, "a/file.md", 100), "symlink")
    raises_code(lambda: read_regular(root, "dir/secret.md", 100), "symlink")


def test_read_regular_refuses_escapes_large_files_and_directories(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    write(root, "a/big.md", "x" * 11)
    raises_code(lambda: read_regular(root, "../f/a/big.md", 100), "route_escape")
    raises_code(lambda: read_regular(root, "a/./big.md", 100), "route_escape")
    raises_code(lambda: read_regular(root, "a/big.md", 10), "file_too_large")
    raises_code(lambda: read_regular(root, "a", 100), "not_regular_file")
    raises_code(lambda: read_regular(root, "a/missing.md", 100), "not_found")
    raises_code(lambda: read_regular(root, "nope/missing.md", 100), "not_found")


def test_read_regular_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    os.mkfifo(root / "pipe", 0o600)
    outcome: list[str] = []

    def attempt() -> None:
        try:
            read_regular(root, "pipe", 100)
        except Exception as exc:  # recorded and asserted below
            outcome.append(getattr(exc, "code", type(exc).__name__))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=5)
    if worker.is_alive():  # unblock the thread so the test run can end
        with open(root / "pipe", "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert outcome == ["not_regular_file"]


# --- writing --------------------------------------------------------------------------------


def test_mkdir_private_is_0700_whatever_the_umask(tmp_path: Path, umask_zero) -> None:
    mkdir_private(tmp_path / "d")
    assert stat.S_IMODE(os.lstat(tmp_path / "d").st_mode) == DIR_MODE


def test_write_private_is_0600_and_atomic(tmp_path: Path, umask_zero) -> None:
    target = tmp_path / "file.md"
    write_private(target, b"one")
    assert target.read_bytes() == b"one"
    assert stat.S_IMODE(os.lstat(target).st_mode) == FILE_MODE
    target.chmod(0o644)
    write_private(target, b"two")  # replacing also resets the mode
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(os.lstat(target).st_mode) == FILE_MODE
    assert sorted(os.listdir(tmp_path)) == ["file.md"]  # no temporary file left behind


def test_makedirs_private_creates_only_missing_dirs(tmp_path: Path, umask_zero) -> None:
    root = private_dir(tmp_path / "f")
    private_dir(root / "a")
    assert makedirs_private(root, "a/b/c") == ["a/b", "a/b/c"]
    for rel in ("a/b", "a/b/c"):
        assert stat.S_IMODE(os.lstat(root / rel).st_mode) == DIR_MODE
    assert makedirs_private(root, "a/b/c") == []


def test_makedirs_private_refuses_a_symlink_in_the_way(tmp_path: Path) -> None:
    root = private_dir(tmp_path / "f")
    outside = private_dir(tmp_path / "outside")
    os.symlink(outside, root / "a")
    raises_code(lambda: makedirs_private(root, "a/b"), "symlink")
    assert os.listdir(outside) == []


# --- atomic and durable replacement -----------------------------------------------------------


def test_a_failure_before_the_rename_leaves_the_old_file_untouched(
        tmp_path: Path, monkeypatch) -> None:
    """A write that fails between its temporary file and the rename changes nothing:
    the same inode, bytes and mode, and no temporary file left."""
    target = tmp_path / "file.md"
    write_private(target, b"old bytes")
    inode = os.lstat(target).st_ino
    monkeypatch.setenv(FAIL_ENV, "replace:file.md")
    with pytest.raises(Exception) as failed:  # the OSError, or the stable code it maps to
        write_private(target, b"new bytes, longer than the old ones")
    assert isinstance(failed.value, OSError) or getattr(failed.value, "code", "") == "io_error"
    assert target.read_bytes() == b"old bytes"
    assert os.lstat(target).st_ino == inode
    assert sorted(os.listdir(tmp_path)) == ["file.md"]


def test_a_kill_before_the_rename_leaves_the_old_bytes_whole(tmp_path: Path) -> None:
    """SIGKILL between the temporary file and the rename: the target still holds every
    old byte and none of the new; the new bytes sit only in a temporary file that readers
    skip as debris."""
    target = tmp_path / "file.md"
    old, new = b"o" * 300_000, b"n" * 700_000
    write_private(target, old)
    script = ("import sys; from pathlib import Path; from memory_forest.safety import "
              "write_private; write_private(Path(sys.argv[1]), b'n' * 700_000)")
    killed = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True,
                            env={**os.environ, CRASH_ENV: "replace:file.md"}, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert target.read_bytes() == old
    [leftover] = [name for name in os.listdir(tmp_path) if name != "file.md"]
    assert is_debris(leftover) and (tmp_path / leftover).read_bytes() == new


class SyscallLog:
    """Records, in order, every fsync (by the path its descriptor names) and every rename
    (the interpreter's own audit event) made while recording is on."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.on = False

    def audit(self, event: str, args: tuple) -> None:
        if self.on and event == "os.rename":
            self.calls.append(("rename", os.fspath(args[0]), os.fspath(args[1])))

    def fsync(self, real):
        def recording(fd: int) -> None:
            if self.on:
                self.calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
            real(fd)
        return recording


_LOG = SyscallLog()
sys.addaudithook(_LOG.audit)  # audit hooks cannot be removed; it records only when on


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to name an fd")
def test_write_private_fsyncs_the_file_before_the_rename_and_the_directory_after(
        tmp_path: Path, monkeypatch) -> None:
    """The order crash safety rests on: the new bytes are on disk before the rename makes
    them the file, and the rename is on disk (the directory fsynced) before the call
    returns. Removing either fsync, or writing in place without a rename, fails this."""
    target = tmp_path / "file.md"
    write_private(target, b"old")
    monkeypatch.setattr(os, "fsync", _LOG.fsync(os.fsync))
    _LOG.calls, _LOG.on = [], True
    try:
        write_private(target, b"new")
    finally:
        _LOG.on = False
    [(kind, temporary), rename, directory] = _LOG.calls
    assert kind == "fsync" and is_debris(Path(temporary).name)
    assert Path(temporary).parent == tmp_path
    assert rename == ("rename", temporary, str(target))
    assert directory == ("fsync", str(tmp_path))
    assert target.read_bytes() == b"new"

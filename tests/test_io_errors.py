"""A failing disk is a stable code, never a crash: ``io_error`` naming the errno.

A write that meets ENOSPC, EIO, EROFS... fails with ``io_error`` and
``{"errno": NAME}`` in its details, and every canonical file keeps its bytes
(the journal rolls the write back). A read that fails on one canonical file
is that file's problem (``os_error``), reported with its path while the rest
of the forest is indexed and searched. Each case runs through the real CLI;
ENOSPC runs for real on a small tmpfs where this machine lets the tests mount
one, and as an injected failure (``MEMORY_FOREST_TEST_FAIL_AT``) everywhere.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from forestkit import canonical_state

from memory_forest import operations
from memory_forest.errors import as_io_error, io_error
from memory_forest.testhooks import FAIL_ENV
from memory_forest.writers import journal

REMEMBER = ["--tree", "kitchen", "--branch", "pickles", "--leaf", "dill", "--title",
            "Dill pickles", "--content", "Brine at 5 percent."]


def cli(*args: str | os.PathLike[str], fail: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(FAIL_ENV, None)
    if fail:
        env[FAIL_ENV] = fail
    return subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args),
                           "--json"], capture_output=True, text=True, env=env, timeout=60)


def outcome(proc: subprocess.CompletedProcess) -> dict:
    import json

    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0])


@pytest.fixture
def forest(example_forest: Path) -> Path:
    operations.index(example_forest)
    return example_forest


@pytest.mark.parametrize("step", ["staged", "journaled", "writing", "written", "indexed",
                                  "receipted"])
def test_an_io_failure_during_a_write_is_io_error_and_changes_nothing(forest, step):
    before = canonical_state(forest)
    proc = cli("remember", forest, *REMEMBER, fail=step)
    failed = outcome(proc)
    assert proc.returncode == 1
    assert failed["error"]["code"] == "io_error"
    assert failed["error"]["details"] == {"errno": "EIO"}
    assert failed["error"]["message"].startswith("EIO: ")
    assert canonical_state(forest) == before  # bytes, modes and mtimes
    assert not journal.pending(forest)
    assert outcome(cli("remember", forest, *REMEMBER))["ok"]


def test_the_mcp_tool_gives_the_same_io_error(forest, monkeypatch):
    from memory_forest import mcp_server

    before = canonical_state(forest)
    monkeypatch.setenv(FAIL_ENV, "writing")
    answer = mcp_server.call(forest, "remember", {
        "tree": "kitchen", "branch": "pickles", "leaf": "dill", "title": "Dill pickles",
        "content": "Brine at 5 percent.", "source": "test-agent"})
    assert answer["ok"] is False
    assert answer["error"]["code"] == "io_error"
    assert answer["error"]["details"] == {"errno": "EIO"}
    assert canonical_state(forest) == before


def test_io_error_names_the_errno_and_never_an_absolute_path():
    for code in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO):
        name = errno.errorcode[code]
        error = io_error(OSError(code, os.strerror(code), "/home/someone/memory/x.md"))
        assert (error.code, error.details) == ("io_error", {"errno": name})
        assert error.message.startswith(f"{name}: ") and "/home" not in error.message
    assert io_error(OSError("no errno")).details == {"errno": None}


def test_sqlite_disk_failures_map_to_their_errno():
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorname = "SQLITE_FULL"
    broken = sqlite3.OperationalError("disk I/O error")
    broken.sqlite_errorname = "SQLITE_IOERR_WRITE"
    assert as_io_error(full).details == {"errno": "ENOSPC"}
    assert as_io_error(broken).details == {"errno": "EIO"}
    assert as_io_error(sqlite3.OperationalError("no such table")) is None
    assert as_io_error(ValueError("x")) is None


def test_an_eio_reading_one_file_during_index_is_that_files_problem(forest):
    bad = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    assert (forest / bad).is_file()
    indexed = outcome(cli("index", forest, "--full", fail=f"read:{bad}"))
    problems = {item["path"]: item for item in indexed.get("problems", [])}
    assert problems[bad]["code"] == "os_error", indexed
    assert "EIO" in problems[bad]["message"]
    con = sqlite3.connect(forest / ".memory-forest/index.sqlite3")
    try:
        paths = {row[0] for row in con.execute("SELECT path FROM docs")}
    finally:
        con.close()
    assert bad not in paths and "03 mtm/kitchen/fermentation.md" in paths
    checked = outcome(cli("validate", forest, fail=f"read:{bad}"))
    assert (bad, "os_error") in {(i["path"], i["code"]) for i in checked["issues"]}
    assert outcome(cli("validate", forest))["ok"]  # the disk answers again: all is well


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 2 MiB tmpfs, unmounted afterwards; skipped where mounting is not allowed."""
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mount.mkdir()
    if not shutil.which("mount") or os.geteuid() != 0:
        pytest.skip("a real ENOSPC needs root to mount a small tmpfs (injected EIO still runs)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs",
                           os.fspath(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount refused a small tmpfs ({done.stderr.strip()[:80]}); "
                    "the injected failures still run")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", os.fspath(mount)], capture_output=True)


def _fill(disk: Path, leave: int) -> Path:
    """Fill the disk, then give back ``leave`` bytes."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def test_a_full_disk_is_io_error_enospc_and_changes_nothing(small_disk, forest):
    root = Path(shutil.copytree(forest, small_disk / "forest", symlinks=True))
    before, seen = canonical_state(root), []
    # From no room at all to a few pages: the write runs out at a different step each time.
    for leave in (0, 4096, 8192, 16384, 32768, 65536):
        filler = _fill(small_disk, leave)
        proc = cli("remember", root, *REMEMBER)
        result = outcome(proc)
        filler.unlink()
        if result["ok"]:
            break
        assert result["error"]["code"] == "io_error", result
        assert result["error"]["details"] == {"errno": "ENOSPC"}
        assert canonical_state(root) == before
        seen.append(leave)
        assert outcome(cli("doctor", root, "--repair"))["ok"]
    assert seen, "the disk was never full enough to fail the write"
    assert outcome(cli("remember", root, *REMEMBER))["ok"]
    assert outcome(cli("audit", root))["ok"]


def test_readers_flag_a_file_the_disk_cannot_read_and_answer_the_rest(forest):
    bad = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    found = outcome(cli("search", forest, "kimchi", fail=f"read:{bad}"))
    assert found["ok"] and found["count"] > 1
    by_path = {hit["path"]: hit for hit in found["results"]}
    assert (by_path[bad]["read_error"], by_path[bad]["verified"]) == ("os_error", False)
    assert all(hit["verified"] for path, hit in by_path.items() if path != bad)
    opened = outcome(cli("open", forest, bad, fail=f"read:{bad}"))
    assert opened["error"]["code"] == "os_error"
    assert opened["error"]["details"] == {"path": bad, "errno": "EIO"}

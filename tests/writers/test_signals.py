"""Stop signals (SIGTERM from systemd or timeout, SIGHUP, SIGINT) while a command holds the
lock: the lock is released, the index is the old one or the new one, never a partial one,
and an interrupted write is undone or left recoverable.

Two ways to deliver the signal, both to a real CLI process: at an exact step through
``MEMORY_FOREST_TEST_SIGNAL_AT=<step>:<signal>`` (the process signals itself), and from
outside with ``Popen.send_signal`` into an ``index`` of a forest big enough to be mid-build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from forestkit import skeleton, write_doc
from writerkit import assert_whole, state

from memory_forest import lock, operations
from memory_forest.testhooks import SIGNAL_ENV

INDEX = Path(".memory-forest/index.sqlite3")
EXIT = {"SIGTERM": 143, "SIGHUP": 129, "SIGINT": 130}


def cli(*args, signal_at: str | None = None) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith(
        "MEMORY_FOREST_TEST_")}
    if signal_at:
        env[SIGNAL_ENV] = signal_at
    return subprocess.run([sys.executable, "-m", "memory_forest", *map(str, args), "--json"],
                          capture_output=True, text=True, env=env, timeout=60)


def assert_interrupted(done: subprocess.CompletedProcess, name: str) -> dict:
    assert done.returncode == EXIT[name], done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stdout.splitlines()  # one JSON object
    outcome = json.loads(line)
    assert outcome["ok"] is False and outcome["error"]["code"] == "interrupted"
    assert outcome["error"]["details"]["signal"] == name
    return outcome


def assert_no_lock(root: Path) -> None:
    assert lock.state(root) == {"state": "free"}
    prefix = lock.lock_path(root).name
    assert [name for name in os.listdir(root.parent) if name.startswith(prefix)] == []


def index_sound(root: Path) -> list[tuple[str, str]]:
    """The index's (path, sha256) rows, after checking SQLite's own integrity."""
    assert not [name for name in os.listdir(root / INDEX.parent) if name.endswith(".tmp")]
    con = sqlite3.connect(f"file:{root / INDEX}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return sorted(con.execute("SELECT path, sha256 FROM docs"))
    finally:
        con.close()


@pytest.fixture
def forest(example_forest: Path) -> Path:
    operations.index(example_forest)
    return example_forest


REMEMBER = ["remember", "--tree", "kitchen", "--branch", "pickles", "--leaf", "dill",
            "--title", "Dill pickles", "--content", "Brine at 5 percent."]


@pytest.mark.parametrize("at", ["lock_staged:SIGTERM", "lock_owned:SIGHUP", "staged:SIGTERM",
                                "journaled:SIGTERM", "writing:SIGTERM", "writing:SIGHUP",
                                "written:SIGTERM", "indexed:SIGTERM", "receipted:SIGINT"])
def test_a_writer_stopped_at_any_step_undoes_itself_and_releases_the_lock(forest, at):
    before, rows = state(forest), index_sound(forest)
    stopped = cli(REMEMBER[0], forest, *REMEMBER[1:], signal_at=at)
    assert_interrupted(stopped, at.split(":")[1])
    assert_no_lock(forest)
    assert state(forest) == before and index_sound(forest) == rows
    assert operations.doctor(forest)["journal"] == {"state": "clear"}
    assert cli(REMEMBER[0], forest, *REMEMBER[1:]).returncode == 0  # nothing blocks the next
    assert_whole(forest)


@pytest.mark.parametrize("full", [False, True])
def test_index_stopped_before_its_commit_keeps_the_old_index(forest, full):
    write_doc(forest, "04 stm/kitchen/fermentation/sauerkraut.md", "Sauerkraut", "Cabbage.",
              "stm-sauerkraut")
    before = (forest / INDEX).read_bytes()
    stopped = cli("index", forest, *(["--full"] if full else []), signal_at="indexing:SIGTERM")
    assert_interrupted(stopped, "SIGTERM")
    assert_no_lock(forest)
    assert (forest / INDEX).read_bytes() == before
    index_sound(forest)


def test_maintain_stopped_by_systemd_logs_the_run_and_releases_the_lock(forest, tmp_path):
    write_doc(forest, "04 stm/kitchen/fermentation/sauerkraut.md", "Sauerkraut", "Cabbage.",
              "stm-sauerkraut")
    log = tmp_path / "runs.jsonl"
    stopped = cli("maintain", forest, "--log", log, signal_at="indexing:SIGTERM")
    outcome = assert_interrupted(stopped, "SIGTERM")
    assert outcome["steps"]["lock"]["ok"] is True and "index" not in outcome["steps"]
    assert json.loads(log.read_text())["code"] == "interrupted"
    assert_no_lock(forest)
    index_sound(forest)


def test_doctor_repair_stopped_mid_recovery_leaves_the_journal_recoverable(forest):
    before = state(forest)
    env = {**os.environ, "MEMORY_FOREST_TEST_CRASH_AT": "writing"}
    killed = subprocess.run([sys.executable, "-m", "memory_forest", REMEMBER[0], str(forest),
                             *REMEMBER[1:], "--json"], env=env, capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    stopped = cli("doctor", forest, "--repair", signal_at="recovering:SIGTERM")
    assert_interrupted(stopped, "SIGTERM")
    assert_no_lock(forest)
    assert operations.doctor(forest)["journal"]["state"] == "interrupted"
    repaired = operations.doctor(forest, repair=True)
    assert repaired["repair"]["journal"]["action"] == "rolled_back"
    assert state(forest) == before
    assert_whole(forest)


# --- a real index, signalled from outside ---------------------------------------------------


@pytest.fixture(scope="module")
def big_forest(tmp_path_factory) -> Path:
    """About 5,000 documents: a full index takes long enough to be caught mid-build."""
    body = "Tomato basil pepper compost mulch trellis seedling harvest. " * 12
    trees = {f"t{a}": {f"b{b}": {f"l{c}": body for c in range(100)} for b in range(10)}
             for a in range(5)}
    return skeleton(tmp_path_factory.mktemp("signals"), trees)


def disk_rows(root: Path) -> list[tuple[str, str]]:
    rows = []
    for directory, _, names in os.walk(root):
        if ".memory-forest" in directory:
            continue
        for name in names:
            path = Path(directory) / name
            rows.append((path.relative_to(root).as_posix(),
                         hashlib.sha256(path.read_bytes()).hexdigest()))
    return sorted(rows)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_from_outside_mid_index_leaves_the_old_or_the_new_index(
        big_forest, tmp_path, name):
    root = Path(shutil.copytree(big_forest, tmp_path / "forest", symlinks=True))
    operations.index(root)
    for leaf in range(100):  # the next index differs from this one in 100 rows
        write_doc(root, f"04 stm/t0/b0/l{leaf}.md", f"L{leaf}", "Rewritten.",
                  f"stm-t0-b0-l{leaf}")
    old, new = index_sound(root), disk_rows(root)
    assert old != new
    for delay in (0.15, 0.05, 0.3, 0.5, 0.02):
        proc = subprocess.Popen([sys.executable, "-m", "memory_forest", "index", str(root),
                                 "--full", "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        held_by_it = time.monotonic() + 30
        while not lock.lock_path(root).exists() and proc.poll() is None \
                and time.monotonic() < held_by_it:
            time.sleep(0.002)
        time.sleep(delay)
        proc.send_signal(getattr(signal, name))
        out, err = proc.communicate(timeout=60)
        assert_no_lock(root)
        rows = index_sound(root)
        assert rows in (old, new), "a partial index"
        if proc.returncode == EXIT[name]:
            assert_interrupted(subprocess.CompletedProcess(proc.args, proc.returncode, out, err),
                               name)
            assert rows == old
            report = operations.doctor(root)
            assert report["lock"] == {"state": "free"} and report["index"]["state"] == "stale"
            return
        assert proc.returncode in (0, -getattr(signal, name)), out + err  # done first
        old = rows
    pytest.fail("no signal landed while the index was being built")


# --- where handlers are installed -----------------------------------------------------------


def test_handlers_are_installed_only_while_the_lock_is_held(forest):
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP,
                                                              signal.SIGINT)}
    with lock.held(forest, "index"):
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert {signum: signal.getsignal(signum) for signum in before} == before
    operations.status(forest)  # readers and the gate's path never touch them
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_a_worker_thread_takes_the_lock_without_handlers(forest):
    """The MCP server writes from a worker thread, where handlers cannot be installed."""
    seen = []

    def write() -> None:
        with lock.held(forest, "capture") as owner:
            seen.append((owner["command"], signal.getsignal(signal.SIGTERM)))

    worker = threading.Thread(target=write)
    worker.start()
    worker.join()
    assert seen == [("capture", signal.getsignal(signal.SIGTERM))]
    assert_no_lock(forest)

"""``unlock ROOT --stale``: removes a lock only when its owner is provably gone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from memory_forest import cli, lock, operations
from memory_forest.errors import ForestError
from memory_forest.safety import write_private


@pytest.fixture
def forest(tmp_path: Path) -> Path:
    operations.init(tmp_path / "memory", example=True)
    return tmp_path / "memory"


def dead_pid() -> int:
    """The pid of a process of ours that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def plant_lock(root: Path, **owner_fields: object) -> dict:
    """A real lock directory, as a writer leaves it, with its owner rewritten."""
    owner = lock.acquire(root, "maintain")
    owner.update(owner_fields)
    write_private(lock.lock_path(root) / lock.OWNER, json.dumps(owner).encode())
    return owner


def run_unlock(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        cli.main(["unlock", *args])
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_stale_lock_of_a_dead_process_is_removed(
    forest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = dead_pid()
    plant_lock(forest, pid=pid)
    assert lock.state(forest)["state"] == "stale"

    code, out, _ = run_unlock([str(forest), "--stale", "--json"], capsys)

    assert code == 0
    outcome = json.loads(out)
    assert outcome["ok"] is True and outcome["operation"] == "unlock"
    removed = outcome["removed"]
    assert removed["pid"] == pid
    assert removed["host"] == socket.gethostname()
    assert removed["command"] == "maintain"
    assert "token" not in removed
    assert not os.path.lexists(lock.lock_path(forest))
    assert lock.state(forest) == {"state": "free"}


def test_lock_of_a_live_process_is_refused(
    forest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    owner = lock.acquire(forest, "remember")  # this very test process: alive
    try:
        code, out, _ = run_unlock([str(forest), "--stale", "--json"], capsys)
        assert code == 1
        outcome = json.loads(out)
        assert outcome["ok"] is False
        assert outcome["error"]["code"] == "lock_held"
        assert outcome["error"]["details"]["pid"] == os.getpid()
        assert lock.read_owner(lock.lock_path(forest))["token"] == owner["token"]
    finally:
        lock.release(forest, owner)


def test_lock_from_another_host_is_never_called_stale(
    forest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plant_lock(forest, pid=dead_pid(), host="another-host.invalid")
    code, out, _ = run_unlock([str(forest), "--stale", "--json"], capsys)
    assert code == 1 and json.loads(out)["error"]["code"] == "lock_held"
    assert os.path.isdir(lock.lock_path(forest))


def test_free_forest_reports_not_locked(forest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_unlock([str(forest), "--stale", "--json"], capsys)
    assert code == 1 and json.loads(out)["error"]["code"] == "lock_not_held"


def test_without_stale_nothing_is_removed(forest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plant_lock(forest, pid=dead_pid())
    code, out, _ = run_unlock([str(forest), "--json"], capsys)
    assert code == 2 and json.loads(out)["error"]["code"] == "unlock_requires_stale"
    assert os.path.isdir(lock.lock_path(forest))


def test_symlink_root_is_refused(forest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plant_lock(forest, pid=dead_pid())
    link = forest.with_name("link")
    link.symlink_to(forest)
    code, out, _ = run_unlock([str(link), "--stale", "--json"], capsys)
    assert code == 1 and json.loads(out)["error"]["code"] == "root_symlink"
    assert os.path.isdir(lock.lock_path(forest))


def test_human_output_names_the_removed_owner(
    forest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = dead_pid()
    plant_lock(forest, pid=pid)
    code, out, _ = run_unlock([str(forest), "--stale"], capsys)
    assert code == 0
    assert "removed stale lock" in out and f"pid {pid}" in out


# --- locks without an owner file, and what a killed acquire or release leaves ---------------


def ownerless_lock(root: Path, age_seconds: float) -> Path:
    """A lock directory as an older version left it when killed before its owner write."""
    path = lock.lock_path(root)
    os.mkdir(path, 0o700)
    stamp = os.lstat(path).st_mtime - age_seconds
    os.utime(path, (stamp, stamp))
    return path


def test_an_ownerless_lock_is_held_within_the_grace(
    forest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ownerless_lock(forest, age_seconds=5)
    assert lock.state(forest)["state"] == "held"
    code, out, _ = run_unlock([str(forest), "--stale", "--json"], capsys)
    assert code == 1 and json.loads(out)["error"]["code"] == "lock_held"
    assert json.loads(out)["error"]["details"]["ownerless"] is True
    assert path.is_dir()


def test_an_ownerless_lock_past_the_grace_is_removed(
    forest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ownerless_lock(forest, age_seconds=lock.DEFAULT_GRACE_SECONDS + 1)
    assert lock.state(forest)["state"] == "stale"
    code, out, _ = run_unlock([str(forest), "--stale"], capsys)
    assert code == 0 and "no owner file" in out
    assert lock.state(forest) == {"state": "free"}


@pytest.mark.parametrize("value, grace", [("5", 5.0), ("0", 0.0), ("nan", 60.0),
                                          ("-3", 60.0), ("inf", 60.0), ("soon", 60.0)])
def test_the_grace_comes_from_the_environment_when_it_is_a_number(
    monkeypatch: pytest.MonkeyPatch, value: str, grace: float
) -> None:
    monkeypatch.setenv(lock.GRACE_ENV, value)
    assert lock.grace_seconds() == grace


def test_doctor_repair_refuses_a_live_lock(forest: Path) -> None:
    owner = lock.acquire(forest, "remember")  # this very test process: alive
    try:
        with pytest.raises(ForestError) as caught:
            operations.doctor(forest, repair=True, wait=0)
        assert caught.value.code == "lock_held"
        assert lock.read_owner(lock.lock_path(forest))["token"] == owner["token"]
    finally:
        lock.release(forest, owner)


def debris(root: Path, pid: int, suffix: str, owner: dict | None) -> Path:
    name = f"{lock.lock_path(root).name}.{pid}-{os.urandom(4).hex()}{suffix}"
    path = lock.lock_path(root).with_name(name)
    os.mkdir(path, 0o700)
    if owner is not None:
        write_private(path / lock.OWNER, json.dumps(owner).encode())
    return path


def test_debris_is_removed_only_once_its_owner_is_gone(forest: Path) -> None:
    me = {"pid": os.getpid(), "host": socket.gethostname()}
    gone = {"pid": dead_pid(), "host": socket.gethostname()}
    live = debris(forest, os.getpid(), ".new", me)  # an acquire in progress
    young = debris(forest, 1, ".new", None)  # between its mkdir and its owner write
    dead = debris(forest, gone["pid"], ".new", gone)
    released = debris(forest, os.getpid(), ".old", me)
    elsewhere = debris(forest, gone["pid"], ".new", {**gone, "host": "another-host.invalid"})
    unrelated = forest.with_name(lock.lock_path(forest).name + ".notes.old")  # not a name
    unrelated.mkdir()  # the lock makes: never touched
    with lock.held(forest, "index"):
        pass
    assert sorted(p.name for p in forest.parent.iterdir() if p.name.startswith(
        lock.lock_path(forest).name)) == sorted(p.name for p in (live, young, elsewhere,
                                                                 unrelated))
    stamp = os.lstat(young).st_mtime - lock.DEFAULT_GRACE_SECONDS - 1
    os.utime(young, (stamp, stamp))
    assert lock.clear_debris(forest) == [young.name]
    assert not dead.exists() and not released.exists() and live.is_dir()

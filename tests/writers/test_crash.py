"""Crash safety: a writer killed (SIGKILL) at every step leaves a forest that recovery
turns into exactly the before state or exactly the after state, and no acknowledged
capture is ever lost.

The writer runs as a real CLI process; ``MEMORY_FOREST_TEST_CRASH_AT=<step>`` makes it
SIGKILL itself at that step (docs/writing.md, "Test hooks"). Recovery runs either as
``doctor --repair`` (CLI) or as the next writer after ``unlock --stale``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crashkit import structured_plan
from writerkit import assert_whole, event, istm_records, jsonl, state, write_json

from memory_forest import lock, operations, testhooks
from memory_forest.digest import sha256_hex
from memory_forest.errors import ForestError
from memory_forest.writers import journal
from memory_forest.writers.capture import capture_events, parse_input

STEPS = ["staged", "journaled", "writing", "written", "indexed", "receipted"]
ROLLED_BACK = {"staged", "journaled", "writing"}


def cli(*args, crash: str | None = None, **env_vars: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(testhooks.CRASH_ENV, None)
    if crash:
        env[testhooks.CRASH_ENV] = crash
    env.update(env_vars)
    return subprocess.run([sys.executable, "-m", "memory_forest", *map(str, args), "--json"],
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def forest(example: Path) -> Path:
    """A fresh indexed copy of the example forest (conftest's ``example``)."""
    return example


def writer_args(root: Path, tmp_path: Path, kind: str) -> list:
    if kind == "capture":
        source = tmp_path / "events.jsonl"
        source.write_bytes(jsonl([event(n, event_id=f"crash-{n}") for n in range(3)]))
        return ["capture", root, "--file", source]
    if kind == "remember":  # a new leaf in a new branch: five files, two new directories
        return ["remember", root, "--tree", "kitchen", "--branch", "pickles", "--leaf", "dill",
                "--title", "Dill pickles", "--content", "Brine at 5 percent."]
    plan = structured_plan(root, "sweep-crash")
    return ["apply-structured", root, write_json(tmp_path / "plan.json", plan)]


def manifest(root: Path) -> dict | None:
    path = root / ".memory-forest/journal/manifest.json"
    return json.loads(path.read_text()) if path.exists() else None


def check_outcome(root: Path, before: dict, pending: dict | None, step: str) -> None:
    """Exactly the before state (files, directories, modes, mtimes), or exactly the after
    state: every touched file its after-image, every created directory there and 0700,
    and nothing else changed."""
    after = state(root)
    if step in ROLLED_BACK:
        assert after == before, f"not the before state after a crash at {step}"
        return
    assert pending is not None and pending["state"] == "written"
    touched = {entry["path"]: entry["after"]["sha256"] for entry in pending["entries"]}
    for path, sha in touched.items():
        assert sha256_hex(after[path][0]) == sha, f"{path} is not its after-image"
    created = {f"{rel}/" for rel in pending["dirs"]}
    assert {rel: after[rel] for rel in created} == {rel: (b"", 0, 0o700) for rel in created}
    assert {p: v for p, v in after.items() if p not in touched and p not in created} == \
        {p: v for p, v in before.items() if p not in touched}
    receipt = root / f".memory-forest/receipts/{pending['transaction_id']}.json"
    assert {i["path"] for i in json.loads(receipt.read_text())["touched"]} == set(touched)


@pytest.mark.parametrize("kind", ["capture", "remember", "apply-structured"])
@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_each_step_is_recovered_by_repair(forest, tmp_path, kind, step):
    args = writer_args(forest, tmp_path, kind)
    before = state(forest)
    killed = cli(*args, crash=step)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert lock.state(forest)["state"] == "stale"
    pending = manifest(forest)
    with pytest.raises(ForestError) as refused:  # a dead writer's lock is never taken over
        capture_events(forest, [event(98)])
    assert refused.value.code == "lock_stale"
    report = operations.doctor(forest, repair=True)  # what 'doctor --repair' runs
    assert report["repair"]["unlocked"]["command"].startswith(kind.replace("-", "_"))
    expected = "rolled_back" if step in ROLLED_BACK else "rolled_forward"
    assert report["repair"]["journal"]["action"] == (
        "discarded_debris" if step == "staged" else expected)
    assert report["journal"] == {"state": "clear"} and report["lock"] == {"state": "free"}
    check_outcome(forest, before, pending, step)
    assert_whole(forest)


def test_doctor_repair_on_the_command_line(forest, tmp_path):
    before = state(forest)
    assert cli(*writer_args(forest, tmp_path, "remember"), crash="writing").returncode == \
        -signal.SIGKILL
    assert json.loads(cli("doctor", forest).stdout)["journal"]["state"] == "interrupted"
    refused = cli("remember", forest, "--tree", "kitchen", "--branch", "pickles", "--leaf",
                  "dill", "--title", "Dill", "--content", "x")
    assert refused.returncode == 1 and json.loads(refused.stdout)["error"]["code"] == "lock_stale"
    repaired = cli("doctor", forest, "--repair")  # clears the stale lock itself, then recovers
    assert repaired.returncode == 0, repaired.stdout
    report = json.loads(repaired.stdout)
    assert report["repair"]["unlocked"]["command"].startswith("remember")
    assert report["repair"]["journal"]["action"] == "rolled_back"
    assert report["journal"] == {"state": "clear"} and report["lock"] == {"state": "free"}
    assert state(forest) == before


@pytest.mark.parametrize("step", ["journaled", "writing", "written", "receipted"])
def test_the_next_writer_recovers_first(forest, tmp_path, step):
    args = writer_args(forest, tmp_path, "remember")
    before = state(forest)
    assert cli(*args, crash=step).returncode == -signal.SIGKILL
    pending = manifest(forest)
    lock.unlock_stale(forest)
    source = tmp_path / "next.jsonl"
    source.write_bytes(jsonl([event(99, event_id="after-crash")]))
    out = capture_events(forest, parse_input(source.read_bytes()))
    assert out["recovered"]["action"] == ("rolled_back" if step in ROLLED_BACK
                                          else "rolled_forward")
    shard = out["shard"]
    before.pop(shard, None)
    current = state(forest)
    current.pop(shard)
    if step not in ROLLED_BACK:  # the directories the rolled-forward write created
        for rel in pending["dirs"]:
            assert current.pop(f"{rel}/") == (b"", 0, 0o700)
    check_outcome_without(current, before, pending, step, shard)
    assert "after-crash" in {r["event_id"] for r in istm_records(forest)}
    assert_whole(forest)


def check_outcome_without(current, before, pending, step, shard):
    """The recovered state, leaving out ``shard``: the next capture appended to it.

    Every other path the interrupted write touched must hold its after-image: a
    touched file that went missing is a lost write, never something to skip.
    """
    if step in ROLLED_BACK:
        assert current == before
        return
    touched = {e["path"]: e["after"]["sha256"] for e in pending["entries"]}
    touched.pop(shard, None)
    assert touched, "the interrupted write touched nothing to check"
    for path, sha in touched.items():
        assert path in current, f"{path} went missing in recovery"
        assert sha256_hex(current[path][0]) == sha, f"{path} is not its after-image"
    assert {p: v for p, v in current.items() if p not in touched} == \
        {p: v for p, v in before.items() if p not in touched}


def test_a_crash_during_recovery_is_recovered(forest, tmp_path):
    args = writer_args(forest, tmp_path, "remember")
    before = state(forest)
    assert cli(*args, crash="writing").returncode == -signal.SIGKILL
    lock.unlock_stale(forest)
    assert cli("doctor", forest, "--repair", crash="recovering").returncode == -signal.SIGKILL
    assert journal.describe(forest)["phase"] == "rolling_back"
    lock.unlock_stale(forest)
    assert operations.doctor(forest, repair=True)["repair"]["journal"]["action"] == \
        "rolled_back"
    assert state(forest) == before
    assert_whole(forest)


def test_no_acknowledged_capture_is_lost_across_many_crashes(forest, tmp_path):
    rng = random.Random(20261130)
    acknowledged: set[str] = set()
    batches = 0
    for round_number in range(12):
        step = rng.choice([None, None, *STEPS])
        records = [event(n, event_id=f"r{round_number}-{n}") for n in range(rng.randint(1, 4))]
        source = tmp_path / f"batch-{round_number}.jsonl"
        source.write_bytes(jsonl(records))
        for attempt in range(2):  # a client retries the same batch after a crash
            result = cli("capture", forest, "--file", source, "--wait", "5",
                         crash=step if attempt == 0 else None)
            if result.returncode == 0:
                acknowledged.update(json.loads(result.stdout)["event_ids"])
                batches += 1
                break
            assert result.returncode == -signal.SIGKILL
            lock.unlock_stale(forest)  # the operator's explicit step after a crash
            operations.doctor(forest, repair=True)
    ids = [record["event_id"] for record in istm_records(forest)]
    assert len(ids) == len(set(ids)), "an event was stored twice"
    assert acknowledged <= set(ids), "an acknowledged capture was lost"
    assert batches == 12
    assert_whole(forest)


# --- between every rename, and inside the manifest write -------------------------------------

RENAMES = {"remember": 4, "apply-structured": 7}  # the files each writer above replaces


def kill_and_repair(root: Path, args: list, step: str) -> tuple[dict | None, dict]:
    """Run a writer killed at ``step``; return the manifest it left and the repair report."""
    killed = cli(*args, crash=step)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    pending = manifest(root)
    report = operations.doctor(root, repair=True)
    assert report["journal"] == {"state": "clear"} and report["lock"] == {"state": "free"}
    return pending, report


@pytest.mark.parametrize(("kind", "renamed"),
                         [(kind, n) for kind, count in RENAMES.items()
                          for n in range(1, count + 1)])
def test_a_crash_after_any_rename_rolls_back_exactly(forest, tmp_path, kind, renamed):
    """Killed with ``renamed`` of the files in place: all of them, and every directory the
    write created, are undone; the last one (every file in place, the journal not yet
    ``written``) too."""
    before = state(forest)
    pending, report = kill_and_repair(forest, writer_args(forest, tmp_path, kind),
                                      f"writing:{renamed}")
    assert len(pending["entries"]) == RENAMES[kind] and pending["state"] == "prepared"
    assert report["repair"]["journal"]["action"] == "rolled_back"
    check_outcome(forest, before, pending, "writing")
    for rel in pending["dirs"]:
        assert not os.path.lexists(forest / rel), f"{rel} was left behind"
    assert_whole(forest)


def test_a_crash_inside_the_manifest_write_rolls_back(forest, tmp_path):
    """Killed between the new manifest's temporary file and its rename (every canonical
    file is in place): the manifest on disk still says ``prepared``, so recovery rolls
    back, and the half-done manifest write is cleared with the journal."""
    before = state(forest)
    killed = cli(*writer_args(forest, tmp_path, "apply-structured"),
                 crash="replace:manifest.json")
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert manifest(forest)["state"] == "prepared"
    [temporary] = (forest / ".memory-forest/journal").glob(".manifest.json.*.tmp")
    assert json.loads(temporary.read_bytes())["state"] == "written"
    report = operations.doctor(forest, repair=True)
    assert report["repair"]["journal"]["action"] == "rolled_back"
    assert not (forest / ".memory-forest/journal").exists()
    check_outcome(forest, before, None, "writing")
    assert_whole(forest)


def test_a_torn_manifest_temporary_file_is_ignored(forest, tmp_path):
    """A kill in the middle of writing the new manifest leaves a partial temporary file;
    the manifest itself is whole, and recovery follows it."""
    before = state(forest)
    assert cli(*writer_args(forest, tmp_path, "remember"),
               crash="replace:manifest.json").returncode == -signal.SIGKILL
    [temporary] = (forest / ".memory-forest/journal").glob(".manifest.json.*.tmp")
    temporary.write_bytes(temporary.read_bytes()[:40])
    lock.unlock_stale(forest)
    source = tmp_path / "next.jsonl"
    source.write_bytes(jsonl([event(5, event_id="after-torn")]))
    out = capture_events(forest, parse_input(source.read_bytes()))  # the next writer recovers first
    assert out["recovered"]["action"] == "rolled_back"
    current = state(forest)
    shard = out["shard"]
    assert {p: v for p, v in current.items() if p != shard} == \
        {p: v for p, v in before.items() if p != shard}
    assert_whole(forest)


def test_a_torn_manifest_is_refused_with_journal_corrupt(forest, tmp_path):
    """If the manifest itself were torn (a write that was not atomic, a damaged disk), the
    next writer refuses with ``journal_corrupt``, not an internal error, and changes no
    canonical byte."""
    assert cli(*writer_args(forest, tmp_path, "remember"),
               crash="writing:2").returncode == -signal.SIGKILL
    path = forest / ".memory-forest/journal/manifest.json"
    path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
    lock.unlock_stale(forest)
    before = state(forest)
    refused = cli("remember", forest, "--tree", "kitchen", "--branch", "pickles", "--leaf",
                  "gherkin", "--title", "Gherkins", "--content", "Small ones.")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert json.loads(refused.stdout)["error"]["code"] == "journal_corrupt"
    assert "Traceback" not in refused.stderr
    assert state(forest) == before


@pytest.mark.parametrize("step", ["recovering:2", "recovering:3", "recovering:4",
                                  "replace:manifest.json"])
def test_a_crash_at_any_point_of_a_rollback_is_recovered(forest, tmp_path, step):
    """Recovery itself killed after any file it put back, or inside its own manifest
    rewrite (state ``rolling_back``): the next recovery finishes the rollback."""
    before = state(forest)
    assert cli(*writer_args(forest, tmp_path, "remember"),
               crash="writing:4").returncode == -signal.SIGKILL
    lock.unlock_stale(forest)
    assert cli("doctor", forest, "--repair", crash=step).returncode == -signal.SIGKILL
    lock.unlock_stale(forest)
    report = operations.doctor(forest, repair=True)
    assert report["repair"]["journal"]["action"] == "rolled_back"
    assert state(forest) == before
    assert_whole(forest)


def test_a_crash_inside_a_handled_failures_undo_is_recovered(forest, tmp_path):
    """A failure after the second rename starts the in-process undo, and the process is
    killed inside the undo's manifest rewrite: recovery finishes the rollback."""
    before = state(forest)
    killed = cli(*writer_args(forest, tmp_path, "apply-structured"),
                 crash="replace:manifest.json", **{testhooks.FAIL_ENV: "writing:2"})
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert manifest(forest)["state"] == "prepared"
    report = operations.doctor(forest, repair=True)
    assert report["repair"]["journal"]["action"] == "rolled_back"
    assert state(forest) == before
    assert_whole(forest)


def test_a_crash_inside_the_receipt_write_rolls_forward(forest, tmp_path):
    """Killed between the receipt's temporary file and its rename (state ``written``):
    recovery rolls forward and writes the receipt whole."""
    args = [*writer_args(forest, tmp_path, "remember"), "--transaction-id", "receipt-kill"]
    before = state(forest)
    pending, report = kill_and_repair(forest, args, "replace:receipt-kill.json")
    assert report["repair"]["journal"]["action"] == "rolled_forward"
    check_outcome(forest, before, pending, "written")
    retried = cli(*args)  # the client's retry is answered from the receipt
    assert retried.returncode == 0 and json.loads(retried.stdout)["already_applied"] is True
    assert_whole(forest)


# --- the lock itself --------------------------------------------------------------------------


def lock_debris(root: Path) -> list[str]:
    prefix = lock.lock_path(root).name + "."
    return sorted(name for name in os.listdir(root.parent) if name.startswith(prefix))


@pytest.mark.parametrize("step", ["lock_staged", "lock_owned"])
def test_a_kill_while_taking_the_lock_leaves_no_lock(forest, tmp_path, step):
    """Killed between the lock directory's creation and its owner write (or just before
    the rename): the lock never appeared, so the next writer runs at once."""
    before = state(forest)
    killed = cli(*writer_args(forest, tmp_path, "remember"), crash=step)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert lock.state(forest) == {"state": "free"}
    assert state(forest) == before
    [leftover] = lock_debris(forest)
    assert leftover.endswith(".new")
    source = tmp_path / "next.jsonl"
    source.write_bytes(jsonl([event(7, event_id="after-lock-kill")]))
    assert cli("capture", forest, "--file", source).returncode == 0
    # An owner file names a dead pid: debris at once. No owner: debris after the grace.
    assert lock_debris(forest) == ([] if step == "lock_owned" else [leftover])
    if step == "lock_staged":
        cleared = cli("unlock", forest, "--stale", MEMORY_FOREST_LOCK_GRACE_SECONDS="0")
        assert json.loads(cleared.stdout)["error"]["code"] == "lock_not_held"
        assert lock_debris(forest) == []
    assert lock.state(forest) == {"state": "free"}
    assert_whole(forest)


def old_version_lock(root: Path, age_seconds: float = 0.0, debris: bool = False) -> Path:
    """The lock an older version left when killed between mkdir and its owner write."""
    path = lock.lock_path(root)
    os.mkdir(path, 0o700)
    if debris:
        (path / f".owner.json.{os.getpid()}.0a1b2c3d.tmp").write_bytes(b'{"pid"')
    stamp = os.lstat(path).st_mtime - age_seconds
    os.utime(path, (stamp, stamp))
    return path


def test_an_ownerless_lock_is_held_for_the_grace_then_stale(forest, tmp_path):
    old_version_lock(forest, debris=True)
    args = writer_args(forest, tmp_path, "remember")
    young = cli(*args, "--wait", "0")
    assert json.loads(young.stdout)["error"]["code"] == "lock_held"
    assert json.loads(young.stdout)["error"]["details"]["ownerless"] is True
    refused = cli("unlock", forest, "--stale")
    assert json.loads(refused.stdout)["error"]["code"] == "lock_held"
    short = {"MEMORY_FOREST_LOCK_GRACE_SECONDS": "0"}
    stale = cli(*args, **short)
    assert json.loads(stale.stdout)["error"]["code"] == "lock_stale"
    unlocked = cli("unlock", forest, "--stale", **short)
    assert unlocked.returncode == 0, unlocked.stdout
    assert json.loads(unlocked.stdout)["removed"]["ownerless"] is True
    assert lock_debris(forest) == [] and lock.state(forest) == {"state": "free"}
    done = cli(*args)
    assert done.returncode == 0, done.stdout
    assert_whole(forest)


def test_the_reported_repro_clears_once_older_than_the_grace(forest):
    """mkdir -m700 ROOT.maintenance.lock; memory-forest unlock ROOT --stale --json"""
    old_version_lock(forest, age_seconds=lock.DEFAULT_GRACE_SECONDS + 5)
    unlocked = cli("unlock", forest, "--stale")
    assert unlocked.returncode == 0, unlocked.stdout
    assert not os.path.lexists(lock.lock_path(forest))


def test_doctor_repair_clears_an_ownerless_stale_lock(forest):
    old_version_lock(forest, age_seconds=lock.DEFAULT_GRACE_SECONDS + 5)
    repaired = cli("doctor", forest, "--repair")
    assert repaired.returncode == 0, repaired.stdout
    report = json.loads(repaired.stdout)
    assert report["repair"]["unlocked"]["ownerless"] is True
    assert report["lock"] == {"state": "free"} and lock_debris(forest) == []


def test_a_kill_while_releasing_leaves_no_lock(forest, tmp_path):
    """The lock is renamed aside before it is deleted: what a kill leaves there is debris."""
    owner = lock.acquire(forest, "maintain")
    retired = lock.lock_path(forest).with_name(lock.lock_path(forest).name + ".1-00ff00ff.old")
    os.rename(lock.lock_path(forest), retired)  # where a kill after the rename stops
    assert lock.state(forest) == {"state": "free"}
    lock.release(forest, owner)  # no longer ours to release: nothing happens
    assert lock_debris(forest) == [retired.name]
    with lock.held(forest, "index"):
        pass
    assert lock_debris(forest) == []


def test_kills_at_random_moments_never_leave_a_lock_that_cannot_be_cleared(forest, tmp_path):
    """The adversarial run's finding, as a test: SIGKILL a writer at random moments around
    lock time; every lock left has its owner, so 'unlock --stale' clears it."""
    rng = random.Random(20261202)
    source = tmp_path / "events.jsonl"
    source.write_bytes(jsonl([event(1, event_id="random-kill")]))
    env = {key: value for key, value in os.environ.items() if key != testhooks.CRASH_ENV}
    args = [sys.executable, "-m", "memory_forest", "capture", str(forest), "--file", str(source),
            "--json"]
    started = time.monotonic()
    subprocess.run(args, env=env, capture_output=True, check=True, timeout=60)
    whole_run = time.monotonic() - started  # kills land in the second half of a run
    killed = 0
    for _ in range(10):
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=rng.uniform(0.5, 0.95) * whole_run)
        except subprocess.TimeoutExpired:
            proc.kill()
            killed += proc.wait() == -signal.SIGKILL
        found = lock.state(forest)
        assert "ownerless" not in found, found
        if found["state"] != "free":
            assert found["state"] == "stale" and found["owner"]["command"] == "capture"
            lock.unlock_stale(forest)
        operations.doctor(forest, repair=True)
    assert killed, "every run finished before its kill"
    assert lock.state(forest) == {"state": "free"}
    assert_whole(forest)

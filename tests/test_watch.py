"""The watcher and its warm service: real processes, a real socket, real file-system events.

Each test starts ``memory-forest watch`` on its own forest and talks to it the
way a host does: the gate and retrieve through ``python -m memory_forest``,
the socket through the same client the gate uses. Latency is the benchmark's
(scripts/bench_watch.py); here a deadline only says that something happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from forestkit import write_doc
from watching import COLD, Watching, cli, gate_paths, status, until

from memory_forest import __version__, lock, operations, service, warmsocket
from memory_forest.safety import write_private
from memory_forest.statefiles import socket_path, state_dir

# Another user cannot run this environment's interpreter when it lives under /root.
SYSTEM_PYTHON = "/usr/bin/python3"
NOTE = "04 stm/kitchen/fermentation/gochugaru.md"
QUERIES = ["How long does the kimchi ferment?", "kimchi fridge temperature",
           "tomato leaf spots", "zzzqqq", "drip irrigation pressure", "",
           "What did I book for the trip?"]


@pytest.fixture
def watched(example):
    with Watching(example) as watcher:
        watcher.wait_ready()
        yield watcher


def test_the_warm_and_cold_gate_and_retrieve_agree_on_every_query(watched, example):
    before = status(example)["answered"]
    lines = [(["gate", str(example)], query) for query in QUERIES]
    lines += [(["gate", str(example), "--format", fmt], json.dumps(
        {"hook_event_name": "UserPromptSubmit", "prompt": query, "session_id": "s"}))
        for fmt in ("claude-code", "codex") for query in QUERIES]
    lines += [(["retrieve", str(example), query, "--json"], "") for query in QUERIES if query]
    lines += [(["retrieve", str(example), "kimchi"], "")]  # the plain rendering, piped
    for args, stdin in lines:
        warm, cold = cli(*args, stdin=stdin), cli(*args, stdin=stdin, env=COLD)
        assert (warm.returncode, warm.stdout, warm.stderr) == \
            (cold.returncode, cold.stdout, cold.stderr), args
    # Not vacuous: the service answered every warm line, and none of the cold ones.
    assert status(example)["answered"] - before == len(lines)


def test_a_hand_written_note_is_found_edited_renamed_and_gone(watched, example):
    write_doc(example, NOTE, "Gochugaru supplier", "The zanzibarred flakes come from the stall.")
    until(lambda: NOTE in gate_paths(example, "zanzibarred"), "the new note was never found")
    write_doc(example, NOTE, "Gochugaru supplier", "Now the quixotical flakes come by post.")
    until(lambda: NOTE in gate_paths(example, "quixotical"), "the edit was never found")
    assert NOTE not in gate_paths(example, "zanzibarred")
    moved = NOTE.replace("gochugaru", "chili-flakes")
    os.rename(example / NOTE, example / moved)
    until(lambda: gate_paths(example, "quixotical") == [moved], "the rename was never seen")
    (example / moved).unlink()
    until(lambda: gate_paths(example, "quixotical") == [], "the deletion was never seen")
    # The cold path agrees: the index itself is current, not only the warm answers.
    assert gate_paths(example, "quixotical", **COLD) == []


def test_a_note_is_applied_at_once_and_the_forest_judged_once_quiet(watched, example):
    write_doc(example, NOTE, "Gochugaru supplier", "The zanzibarred flakes come from the stall.")
    until(lambda: NOTE in gate_paths(example, "zanzibarred"), "the new note was never found")
    settled = until(lambda: (status(example) or {}).get("settled") and watched.lines(),
                    "the forest was never judged after the edit")
    events = [(line["event"], line.get("reason")) for line in settled]
    applied = events.index(("applied", None))
    assert ("built", "settle") in events[applied:], events
    assert operations.index(example)["mode"] == "watched"


def test_a_folder_renamed_by_hand_goes_through_the_build(watched, example):
    branch = "04 stm/kitchen/fermentation"
    os.rename(example / branch, example / (branch + "-old"))
    moved = f"{branch}-old/kimchi-batch-7.md"
    until(lambda: moved in gate_paths(example, "kimchi fridge"), "the moved leaf was not found")
    assert ("built", "change") in [(line["event"], line.get("reason"))
                                   for line in watched.lines()]


def test_index_has_nothing_to_do_while_the_watcher_is_current(watched, example):
    done = operations.index(example)
    assert done["mode"] == "watched" and done["added"] == done["changed"] == 0
    assert done["documents"] == 12 and done["problems"] == []
    assert operations.index(example, full=True)["mode"] == "full"  # --full still rebuilds
    # From the command line the service answers it, and leaves a real build to the process.
    before = status(example)["answered"]
    assert json.loads(cli("index", str(example), "--json").stdout)["mode"] == "watched"
    assert json.loads(cli("index", str(example), "--full", "--json").stdout)["mode"] == "full"
    assert status(example)["answered"] == before + 1


def test_status_and_doctor_name_the_running_watcher(watched, example):
    watcher = operations.status(example)["watcher"]
    assert watcher["running"] and watcher["current"] and watcher["pid"] == watched.proc.pid
    assert operations.doctor(example)["watcher"]["pid"] == watched.proc.pid
    human = cli("status", str(example))
    assert f"pid {watched.proc.pid}, current" in human.stdout


def test_sigterm_stops_it_cleanly(example):
    watcher = Watching(example)
    watcher.wait_ready()
    done = watcher.stop(signal.SIGTERM)
    assert done["ok"] and done["stopped_by"] == "SIGTERM" and done["builds"] >= 1
    assert watcher.proc.returncode == 0
    assert not socket_path(example).exists()
    assert not (state_dir(example) / "watch.json").exists()
    assert lock.state(example)["state"] == "free"
    assert operations.status(example)["watcher"] == {"running": False}


def test_another_writers_stale_lock_is_reported_then_the_build_is_tried_again(example):
    """A killed writer's lock is not the watcher's to remove: it says so in status, turns
    run cold meanwhile, and once the lock is cleared the next try catches the forest up."""
    owner = lock.acquire(example, "remember")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    owner["pid"] = child.pid
    write_private(lock.lock_path(example) / lock.OWNER, json.dumps(owner).encode())
    write_doc(example, NOTE, "Gochugaru supplier", "The zanzibarred flakes come from the stall.")
    with Watching(example) as watcher:
        found = until(lambda: (status(example) or {}).get("error") and status(example),
                      "the failed build was never reported")
        assert found["error"] == "lock_stale" and not found["current"]
        assert operations.status(example)["watcher"]["error"] == "lock_stale"
        assert NOTE not in gate_paths(example, "zanzibarred")  # cold, and not indexed yet
        lock.unlock_stale(example)
        watcher.wait_ready()
        assert NOTE in gate_paths(example, "zanzibarred")
        assert any(line.get("reason") == "retry" for line in watcher.lines()), watcher.lines()


def test_a_second_watcher_is_refused(watched, example):
    done = cli("watch", str(example), "--json")
    error = json.loads(done.stdout)["error"]
    assert done.returncode != 0 and error["code"] == "watch_running"
    assert str(watched.proc.pid) in error["message"]
    assert status(example)["current"]  # the first one is untouched


def test_a_watcher_killed_mid_build_leaves_a_forest_the_next_run_completes(example):
    write_doc(example, NOTE, "Gochugaru supplier", "The zanzibarred flakes come from the stall.")
    killed = Watching(example, env={"MEMORY_FOREST_TEST_CRASH_AT": "indexing"})
    assert killed.proc.wait(timeout=60) == -signal.SIGKILL
    assert lock.state(example)["state"] == "stale"
    # The turn after: a leftover socket refuses, the gate answers cold, and flags nothing.
    assert cli("gate", str(example), stdin="kimchi").returncode == 0
    with Watching(example) as watcher:  # takes over the stale lock and the old socket
        watcher.wait_ready()
        assert NOTE in gate_paths(example, "zanzibarred")
    assert operations.index(example)["problems"] == []


def test_the_socket_is_private_and_refuses_other_users(watched, example):
    assert stat.S_IMODE(os.lstat(socket_path(example)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state_dir(example)).st_mode) == 0o700
    if os.getuid() != 0 or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"needs root and {SYSTEM_PYTHON} to run a client as another user")
    # Even with every mode on the way opened by mistake, another user gets no answer. The
    # forest moves to a folder of its own under /tmp, since pytest's base folder is private.
    watched.stop()
    public = Path(tempfile.mkdtemp(prefix="mf-peer-"))
    try:
        os.chmod(public, 0o755)
        root = Path(shutil.copytree(example, public / "forest", symlinks=True))
        with Watching(root) as watcher:
            watcher.wait_ready()
            for path in (root, state_dir(root)):
                os.chmod(path, 0o755)
            os.chmod(socket_path(root), 0o666)
            # Connected (the modes let it), then closed on without a byte of answer.
            probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
                     "s.connect(sys.argv[1])\ntry:\n    s.sendall(b'MF1 status 0\\n')\n"
                     "    s.shutdown(socket.SHUT_WR)\n    got = s.recv(100)\n"
                     "except OSError:\n    got = b''\nsys.stdout.write(repr(got))\n")
            done = subprocess.run([SYSTEM_PYTHON, "-c", probe, str(socket_path(root))],
                                  capture_output=True, text=True, timeout=30,
                                  user=65534, group=65534)
            assert done.returncode == 0 and done.stdout == "b''", done
            assert status(root)["current"]  # refused, and still serving its owner
    finally:
        shutil.rmtree(public)


def test_oversized_and_malformed_requests_are_refused_and_the_service_goes_on(watched,
                                                                              example):
    big = b"MF1 run 10\n" + b"x" * (service.MAX_REQUEST_BYTES + 1)
    assert _raw(example, big).startswith(b"refused request_too_large")
    assert _raw(example, b"hello\n").startswith(b"refused request_malformed")
    assert _raw(example, b"MF1 run 3\nabc").startswith(b"refused request_malformed")
    other = "\0".join(["/", "", "0.0.0", "/elsewhere", "gate", str(example)]).encode()
    assert _raw(example, b"MF1 run %d\n" % len(other) + other).startswith(
        b"refused other_package")
    assert status(example)["current"]


def test_a_line_for_another_forest_runs_in_its_own_process(watched, example, tmp_path):
    other = tmp_path / "other"
    operations.init(other, example=True)
    operations.index(other)
    before = status(example)["answered"]
    # The socket of the watched forest, a command line naming another one: refused.
    header = "\0".join([os.getcwd(), str(example), __version__, warmsocket.PACKAGE_DIR,
                        "gate", str(other)]).encode()
    assert _raw(example, b"MF1 run %d\n" % len(header) + header + b"kimchi").startswith(
        b"refused other_forest")
    assert gate_paths(other, "kimchi")  # answered cold
    assert status(example)["answered"] == before


def test_a_dead_socket_sends_the_whole_turn_to_the_cold_path(example):
    """A watcher killed with SIGKILL leaves its socket file with no one listening: the
    client has read the turn by then, and the gate here must still see every byte."""
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    warmsocket.reach(dead.bind, str(socket_path(example)))
    dead.close()
    done = cli("gate", str(example), "--format", "claude-code", stdin=json.dumps(
        {"hook_event_name": "UserPromptSubmit", "prompt": "kimchi fridge", "session_id": "s"}))
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "kimchi-batch-7" in context
    receipt = json.loads(cli("gate", str(example), stdin="kimchi fridge").stdout)
    assert receipt["turn_bytes"] == len("kimchi fridge") and receipt["status"] == "evidence_found"


def test_no_watcher_means_the_cold_path_as_before(example):
    assert operations.status(example)["watcher"] == {"running": False}
    assert operations.index(example)["mode"] == "incremental"
    assert gate_paths(example, "kimchi fridge")


def _raw(root, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        warmsocket.reach(sock.connect, str(socket_path(root)))
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it stopped reading at its bound and answered
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    return b"".join(chunks)



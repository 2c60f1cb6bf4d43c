"""Reading a forest's files on a pool of processes gives what reading them here gives.

The forests are real files in ``tmp_path``; the pool is a real one (forked
workers), forced on with ``pool=True`` however few files or cores there are.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from forestkit import skeleton, write_doc, write_file

from memory_forest import parsing
from memory_forest.config import DEFAULT_LIMITS, load_config
from memory_forest.forest import Forest
from memory_forest.parsing import Parsed, parse
from memory_forest.safety import Entry, walk
from memory_forest.snapshot import scan

LIMITS = {**DEFAULT_LIMITS, "max_file_bytes": 8192, "max_links_per_document": 5}


def _hostile_forest(parent: Path) -> tuple[Path, list[Entry]]:
    """A few hundred files with every way a file can fail to read or parse, and the entries a
    walk listed before some of them changed under it (a symlink swapped in, a FIFO, a file
    deleted)."""
    trees = {f"t{t}": {f"b{b}": {f"l{leaf}": f"body {t} {b} {leaf} [[02 ltm/t{t}_LTM]]"
                                 for leaf in range(12)} for b in range(4)} for t in range(5)}
    root = skeleton(parent, trees)
    write_file(root, "04 stm/t0/b0/frontmatter-bad.md", b"---\ntitle: [unclosed\n---\n# X\n")
    write_file(root, "04 stm/t0/b0/frontmatter-alias.md",
               b"---\na: &x 1\nb: *x\n---\n# Alias\n\nUp: [[03 mtm/t0/b0]]\n")
    write_file(root, "04 stm/t0/b0/frontmatter-fields.md",
               b"---\nid: []\nstatus: gone\ncreated: yesterday\ntags: 3\n---\n# F\n")
    write_file(root, "04 stm/t0/b0/latin1.md", "# caf\u00e9\n".encode("latin-1"))
    write_file(root, "04 stm/t0/b0/too-large.md", b"# big\n" + b"word " * 4000)
    write_file(root, "04 stm/t0/b0/many-links.md",
               ("# links\n" + "".join(f"[[03 mtm/t0/b{i}]]\n" for i in range(9))).encode())
    write_file(root, "04 stm/t0/b0/code.md",
               b"# code\n\n```\n[[not a link]]\n```\n\n> quote [[03 mtm/t0/b0]]\n")
    write_file(root, "04 stm/t0/b0/Bad Name .md", b"# bad name\n")
    write_file(root, "05 daily/2026-11-30.md", "## e1\n\ndaily \u00fcber text\n".encode())
    write_file(root, "06 istm/2026-11-30.jsonl",
               b'{"event_id":"e1","observed_at":"x","captured_at":"x","source":"s",'
               b'"kind":"k","payload":{"text":"payload words"}}\n\nnot json\n'
               b'{"event_id":"e1","event_id":"e2"}\n[1]\n')
    write_file(root, "notes.txt", b"at the root")
    write_file(root, "02 ltm/stray.txt", b"not markdown")
    write_doc(root, "04 stm/t0/b0/swapped.md", "Swapped", "soon a symlink")
    write_doc(root, "04 stm/t0/b0/fifo.md", "Fifo", "soon a FIFO")
    write_doc(root, "04 stm/t0/b0/deleted.md", "Deleted", "soon gone")
    entries = walk(root, LIMITS).files
    (root / "04 stm/t0/b0/swapped.md").unlink()
    os.symlink(root / "04 stm/t0/b0/l0.md", root / "04 stm/t0/b0/swapped.md")
    (root / "04 stm/t0/b0/fifo.md").unlink()
    os.mkfifo(root / "04 stm/t0/b0/fifo.md", 0o600)
    (root / "04 stm/t0/b0/deleted.md").unlink()
    return root, entries


def _started(records):
    """Take records until one was read (by the pool, which starts with the first read)."""
    while next(records).route is None:
        pass
    return records


def _records(root: Path, entries: list[Entry], keep_text: bool, pool: bool) -> list[Parsed]:
    return list(parse(root, entries, LIMITS, keep_text, pool=pool))


@pytest.mark.parametrize("keep_text", [True, False])
def test_a_pool_reads_exactly_what_this_process_reads(tmp_path: Path, keep_text: bool) -> None:
    root, entries = _hostile_forest(tmp_path)
    assert len(entries) > 250
    serial = _records(root, entries, keep_text, pool=False)
    pooled = _records(root, entries, keep_text, pool=True)
    assert pooled == serial
    assert [record.path for record in pooled] == [entry.path for entry in entries]
    by_path = {record.path: record for record in serial}
    codes = {path: {issue.code for issue in record.issues}
             | {issue.code for issue in (record.facts.issues if record.facts else [])}
             for path, record in by_path.items()}
    stm = "04 stm/t0/b0/"
    expected = {
        stm + "frontmatter-bad.md": "frontmatter_invalid",
        stm + "frontmatter-alias.md": "frontmatter_unsafe",
        stm + "frontmatter-fields.md": "frontmatter_bad_field",
        stm + "latin1.md": "not_utf8",
        stm + "too-large.md": "file_too_large",
        stm + "many-links.md": "limit_exceeded",
        stm + "Bad Name .md": "route_bad_segment",
        stm + "swapped.md": "symlink",
        stm + "fifo.md": "not_regular_file",
        stm + "deleted.md": "not_found",
        "06 istm/2026-11-30.jsonl": "istm_invalid_json",
        "notes.txt": "unexpected_entry",
    }
    for path, code in expected.items():
        assert code in codes[path], (path, codes[path])
    assert by_path[".memory-forest/forest.json"].route is None
    assert not by_path[".memory-forest/forest.json"].issues
    good = by_path["04 stm/t1/b1/l1.md"]
    assert good.facts is not None and good.facts.title == "L1"
    assert (good.text != "") is keep_text
    assert not multiprocessing.active_children()


def test_a_scan_of_many_files_uses_the_pool_and_matches_a_serial_read(tmp_path: Path) -> None:
    trees = {f"t{t}": {f"b{b}": {f"l{leaf}": f"leaf {t} {b} {leaf}" for leaf in range(50)}
                       for b in range(9)} for t in range(5)}
    root = skeleton(tmp_path, trees)
    entries = walk(root, DEFAULT_LIMITS).files
    assert len(entries) > parsing.POOL_THRESHOLD
    serial = list(parse(root, entries, load_config(root).limits, True, pool=False))
    snap = scan(Forest.open(root))
    assert snap.facts == {r.path: r.facts for r in serial if r.facts is not None}
    assert list(snap.facts) == [r.path for r in serial if r.facts is not None]
    assert not multiprocessing.active_children()


def test_the_pool_is_gone_when_the_caller_stops_early_or_fails(tmp_path: Path) -> None:
    root, entries = _hostile_forest(tmp_path)
    records = _started(parse(root, entries, LIMITS, True, pool=True))
    assert multiprocessing.active_children()  # the pool is running
    records.close()
    assert not multiprocessing.active_children()

    class Stop(Exception):
        pass

    with pytest.raises(Stop):
        for number, _ in enumerate(parse(root, entries, LIMITS, True, pool=True)):
            if number == 3:
                raise Stop
    assert not multiprocessing.active_children()


def test_an_error_in_a_worker_reaches_the_caller_and_stops_the_pool(tmp_path: Path) -> None:
    root, entries = _hostile_forest(tmp_path)
    broken = {**LIMITS, "max_links_per_document": None}  # no number to compare a count with
    with pytest.raises(TypeError):
        list(parse(root, entries, broken, True, pool=True))
    assert not multiprocessing.active_children()


_INTERRUPTED = textwrap.dedent("""
    import json, multiprocessing, os, signal, sys, time
    from pathlib import Path
    from memory_forest.config import DEFAULT_LIMITS
    from memory_forest.parsing import parse
    from memory_forest.safety import walk

    root = Path(sys.argv[1])
    entries = walk(root, DEFAULT_LIMITS).files * 20
    try:
        for number, _ in enumerate(parse(root, entries, DEFAULT_LIMITS, True, pool=True)):
            if number == 50:
                print(json.dumps([p.pid for p in multiprocessing.active_children()]), flush=True)
                os.killpg(0, signal.SIGINT)  # Ctrl-C: the whole process group
                time.sleep(5)
    except KeyboardInterrupt:
        print(json.dumps(len(multiprocessing.active_children())), flush=True)
        sys.exit(130)
    sys.exit(1)
""")


def test_ctrl_c_stops_the_caller_and_leaves_no_worker(tmp_path: Path) -> None:
    root, _ = _hostile_forest(tmp_path)
    done = subprocess.run([sys.executable, "-c", _INTERRUPTED, str(root)], capture_output=True,
                          text=True, timeout=120, start_new_session=True)
    assert done.returncode == 130, done.stderr
    workers_line, left_line = done.stdout.splitlines()
    workers = json.loads(workers_line)
    assert workers and json.loads(left_line) == 0
    assert "Traceback" not in done.stderr  # the workers ignored the signal, quietly
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_per_turn_commands_never_import_the_pool(tmp_path: Path) -> None:
    root = skeleton(tmp_path, {"garden": {"beds": {"kimchi": "kimchi in the fridge"}}})
    subprocess.run([sys.executable, "-m", "memory_forest", "index", str(root)], check=True,
                   capture_output=True, timeout=60)
    probe = ("import sys\nfrom memory_forest.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             "loaded = [m for m in ('memory_forest.parsing', 'multiprocessing', "
             "'concurrent.futures') if m in sys.modules]\nsys.stderr.write(repr(loaded))\n")
    for command in (["gate", str(root)], ["--json", "retrieve", str(root), "kimchi"]):
        done = subprocess.run([sys.executable, "-c", probe, *command], input=b"kimchi",
                              capture_output=True, timeout=60)
        assert b"kimchi" in done.stdout, (command, done.stdout, done.stderr)
        assert done.stderr.decode() == "[]", command


def test_a_process_with_threads_reads_its_files_itself(tmp_path: Path) -> None:
    import threading

    root, entries = _hostile_forest(tmp_path)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        records = _started(parse(root, entries, LIMITS, True, pool=True))
        assert not multiprocessing.active_children()
        records.close()
    finally:
        release.set()
        other.join()


def _exit_code(worker) -> int | None:
    """The worker's exit code once it has ended. The pool's own thread reaps a dead worker
    too; when it wins that race, ``join`` returns before the code is recorded, so ask again
    until it is."""
    import time

    deadline = time.monotonic() + 10
    worker.join(10)
    while worker.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return worker.exitcode


def _wait_until_started(pid: int) -> None:
    """Until the worker's start-up has run: it ignores SIGINT from then on (Linux's
    /proc says so), so a signal sent now meets the worker's handlers, not the caller's."""
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            ignored = next(line for line in status if line.startswith("SigIgn:"))
        if int(ignored.split()[1], 16) & (1 << (signal.SIGINT - 1)):
            return
        time.sleep(0.01)
    raise AssertionError("the worker never finished starting")


def test_interrupt_signals_in_workers_are_the_callers_business(tmp_path: Path) -> None:
    root, entries = _hostile_forest(tmp_path)
    previous = signal.getsignal(signal.SIGTERM)

    def refuse(signum, frame):  # what the lock installs while it is held
        raise RuntimeError("the caller's handler ran in a worker")

    signal.signal(signal.SIGTERM, refuse)
    try:
        # Many more files than the chunks in flight: work is left when the worker ends.
        records = _started(parse(root, entries * 20, LIMITS, True, pool=True))
        workers = multiprocessing.active_children()
        _wait_until_started(workers[0].pid)
        os.kill(workers[0].pid, signal.SIGTERM)  # the default action: the worker just ends
        assert _exit_code(workers[0]) == -signal.SIGTERM
        with pytest.raises(Exception, match="terminated abruptly"):
            list(records)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not multiprocessing.active_children()


_KILLED = textwrap.dedent("""
    import multiprocessing, os, sys
    from pathlib import Path
    from memory_forest.config import DEFAULT_LIMITS
    from memory_forest.parsing import parse
    from memory_forest.safety import walk

    root = Path(sys.argv[1])
    entries = walk(root, DEFAULT_LIMITS).files * 20
    for number, _ in enumerate(parse(root, entries, DEFAULT_LIMITS, True, pool=True)):
        if number == 50:
            pids = " ".join(str(p.pid) for p in multiprocessing.active_children())
            os.write(int(sys.argv[2]), pids.encode() + b"\\n")
            os.kill(os.getpid(), 9)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")
def test_workers_die_with_a_caller_killed_outright(tmp_path: Path) -> None:
    root, _ = _hostile_forest(tmp_path)
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run([sys.executable, "-c", _KILLED, str(root), str(write_end)],
                              pass_fds=(write_end,), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=120)
        os.close(write_end)
        write_end = -1
        assert done.returncode == -signal.SIGKILL
        workers = [int(pid) for pid in os.read(read_end, 4096).split()]
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
    assert workers
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)

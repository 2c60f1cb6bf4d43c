"""Durability, seen from the kernel: a real writer traced with strace.

Crash tests prove what recovery does with the files a kill leaves; they cannot
show a power loss, where only what was fsynced survives. This test watches the
system calls of a real ``remember`` (four files, one new directory) and checks
the order the journal's promise rests on:

- every file or directory renamed into place was fsynced before the rename
  (its bytes are on disk before the name points at them);
- the journal's own rename is durable before the first canonical file is
  replaced (a power loss must never find a changed file and no journal);
- every canonical rename's (and new directory's) parent is fsynced before the
  journal says ``written``, and every other one's before the process ends;
- each thing meant to be replaced atomically is renamed into place, not
  written there: every touched file, the journal, its ``written`` manifest
  and the receipt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_forest import operations

STRACE = shutil.which("strace")
STATE = f"{os.sep}.memory-forest"
FSYNC = re.compile(r"^\d+ +f(?:data)?sync\(\d+<(?P<path>.*)>\) += 0$")
MKDIR = re.compile(r'^\d+ +mkdir(?:at\([^,]*<(?P<dir>[^>]*)>, |\()"(?P<path>.*)", 0?[0-7]+\) += 0$')
RENAME = re.compile(r'^\d+ +rename\("(?P<src>.*)", "(?P<dst>.*)"\) += 0$')
RENAMEAT = re.compile(r'^\d+ +renameat2?\([^,]*<(?P<src_dir>[^>]*)>, "(?P<src>.*)", '
                      r'[^,]*<(?P<dst_dir>[^>]*)>, "(?P<dst>.*)"(?:, [^)]*)?\) += 0$')


def trace(tmp_path: Path, args: list[str]) -> tuple[subprocess.CompletedProcess, list[tuple]]:
    """Run the CLI under strace; return its result and the fsyncs and renames, in order."""
    log = tmp_path / "strace.log"
    command = [STRACE, "-f", "-qq", "-y", "-s", "4096", "-e", "signal=none",
               "-e", "trace=fsync,fdatasync,rename,renameat,renameat2,mkdir,mkdirat",
               "-o", str(log),
               sys.executable, "-m", "memory_forest", *args, "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if not log.exists() or "PTRACE" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()[:200]}")
    return done, parse(log.read_text())


def parse(text: str) -> list[tuple]:
    calls: list[tuple] = []
    for line in text.splitlines():
        if match := FSYNC.match(line):
            calls.append(("fsync", match["path"]))
        elif match := MKDIR.match(line):
            calls.append(("mkdir", os.path.join(match["dir"] or "", match["path"])))
        elif match := RENAME.match(line):
            calls.append(("rename", match["src"], match["dst"]))
        elif match := RENAMEAT.match(line):
            calls.append(("rename", os.path.join(match["src_dir"], match["src"]),
                          os.path.join(match["dst_dir"], match["dst"])))
    return calls


def check_order(calls: list[tuple], root: Path) -> dict[str, int]:
    """Apply the rules above to the trace; return where each destination was renamed to."""
    synced: set[str] = set()
    waiting: dict[str, int] = {}  # a directory whose new entry is not yet durable
    renamed: dict[str, int] = {}
    inside = f"{root}{os.sep}"
    for number, call in enumerate(calls):
        if call[0] == "fsync":
            synced.add(call[1])
            waiting.pop(call[1], None)
            continue
        if call[0] == "mkdir":  # a new directory is an entry of its parent, like a rename
            if call[1].startswith(inside):
                waiting.setdefault(os.path.dirname(call[1]), number)
            continue
        _, src, dst = call
        if not dst.startswith(inside):
            continue  # the lock lives beside the forest; it need not survive a power loss
        assert src in synced, f"{src} was renamed to {dst} without an fsync first"
        if STATE not in dst:
            journal = [d for d in waiting if STATE in d]
            assert not journal, f"{dst} replaced before the journal in {journal} was durable"
        synced = {dst + path[len(src):] if path == src or path.startswith(src + os.sep)
                  else path for path in synced}  # a directory's contents move with it
        renamed[dst] = number
        waiting.setdefault(os.path.dirname(dst), number)
        if dst.endswith(f"{os.sep}journal{os.sep}manifest.json"):
            canonical = [d for d in waiting if STATE not in d]
            assert not canonical, f"journal marked written before {canonical} were fsynced"
    assert not waiting, f"renames never made durable in {sorted(waiting)}"
    return renamed


@pytest.mark.skipif(STRACE is None, reason="strace is not installed (.ci/run installs it)")
def test_a_writer_fsyncs_before_every_rename_and_each_directory_after(tmp_path):
    root = tmp_path / "forest"
    operations.init(root, example=True)
    operations.index(root)
    done, calls = trace(tmp_path, ["remember", str(root), "--tree", "kitchen", "--branch",
                                   "pickles", "--leaf", "dill", "--title", "Dill pickles",
                                   "--content", "Brine at 5 percent."])
    assert done.returncode == 0, done.stdout + done.stderr
    receipt = json.loads(done.stdout)
    renamed = check_order(calls, root)
    state = root / ".memory-forest"
    expected = [*(str(root / item["path"]) for item in receipt["touched"]),
                str(state / "journal"), str(state / "journal" / "manifest.json"),
                str(state / "receipts" / f"{receipt['transaction_id']}.json")]
    assert len(receipt["touched"]) == 4
    missing = [path for path in expected if path not in renamed]
    assert not missing, f"written in place, not renamed into place: {missing}"
    journal_at = renamed[str(state / "journal")]
    assert all(renamed[str(root / item["path"])] > journal_at for item in receipt["touched"])


def test_the_trace_parser_reads_each_form_strace_prints():
    """The parser is what the test above trusts: each syscall form it must recognize."""
    text = "\n".join([
        '7 fsync(3</f/04 stm/a.md.tmp>) = 0',
        '7 fdatasync(4</f/db>) = 0',
        '7 rename("/f/04 stm/a.md.tmp", "/f/04 stm/a.md") = 0',
        '7 renameat2(AT_FDCWD</w>, "/f/x", AT_FDCWD</w>, "y", RENAME_NOREPLACE) = 0',
        '7 renameat(AT_FDCWD</w>, "a", AT_FDCWD</w>, "/f/b") = 0',
        '7 mkdir("/f/04 stm/new", 0700) = 0',
        '7 mkdirat(AT_FDCWD</w>, "d", 0700) = 0',
        '7 rename("/f/missing", "/f/z") = -1 ENOENT (No such file or directory)',
    ])
    assert parse(text) == [("fsync", "/f/04 stm/a.md.tmp"), ("fsync", "/f/db"),
                           ("rename", "/f/04 stm/a.md.tmp", "/f/04 stm/a.md"),
                           ("rename", "/f/x", "/w/y"), ("rename", "/w/a", "/f/b"),
                           ("mkdir", "/f/04 stm/new"), ("mkdir", "/w/d")]

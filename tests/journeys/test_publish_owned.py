"""Journey: a person drops files of every kind into their forest; only memory travels.

On machine A, a note written by hand sits beside what a person and their
programs leave in a folder: a symlink to ``/etc``, a symlink to a private file
elsewhere, a picture beside the note, a root ``.env``, a ``notes.txt``, a
random file. ``sync`` says in one line what it left on the machine; machine B
(a plain ``git clone`` whose first command is ``sync``) answers from the note
through the gate and holds none of the rest. Then the person opts one folder
of attachments in through ``forest.json``: it travels, the symlink in it never.
Everything runs through the real CLI against a bare remote in tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("hermetic_git")

NOTE = "04 stm/kitchen/fermentation/hot-sauce.md"
HAND_NOTE = """---
title: Hot sauce
---
# Hot sauce

Always wear habanero gloves when cutting the peppers for the hot sauce.
"""


def run(host: str, *args: str | Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMORY_FOREST_HOST=host, COLUMNS="200", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args)],
                          input=stdin, capture_output=True, text=True, env=env, timeout=120)


def on(host: str, *args: str | Path, stdin: str = "") -> dict:
    done = run(host, *args, "--json", stdin=stdin)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def published(remote: Path) -> set[str]:
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", "-z", "HEAD"], cwd=remote,
                            capture_output=True, text=True, check=True).stdout
    return set(listed.split("\0")) - {""}


def test_the_other_machine_gets_only_memory_then_an_attachment_opted_in(tmp_path: Path
                                                                        ) -> None:
    remote, a, b = tmp_path / "remote.git", tmp_path / "A", tmp_path / "B"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    on("alpha", "init", a, "--example")
    (a / NOTE).write_text(HAND_NOTE, encoding="utf-8")
    private = tmp_path / "diary.txt"
    private.write_text("not for any remote\n", encoding="utf-8")
    os.symlink("/etc", a / "04 stm" / "system")
    os.symlink(private, a / "03 mtm" / "diary.md")
    (a / "04 stm/kitchen/fermentation/peppers.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    (a / ".env").write_text("EDITOR=vim\n", encoding="utf-8")
    (a / "notes.txt").write_text("call the plumber\n", encoding="utf-8")
    (a / "random.bin").write_bytes(os.urandom(256))
    left = {"04 stm/system", "03 mtm/diary.md", "04 stm/kitchen/fermentation/peppers.png",
            ".env", "notes.txt", "random.bin"}

    shown = run("alpha", "sync", a, "--init", remote)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    line = next(text for text in shown.stdout.splitlines() if "left local" in text)
    assert line.startswith("6 path(s) left local") and "and 3 more" in line
    assert NOTE in published(remote) and not published(remote) & left

    subprocess.run(["git", "clone", "-q", str(remote), str(b)], check=True)
    first = on("beta", "sync", b)
    assert first["left_local"]["count"] == 0 and first["pulled"]["not_checked_out"] is None
    answer = on("beta", "gate", b, stdin="what do I wear when cutting the habaneros?")
    assert NOTE in [node["path"] for trail in answer["retrieve"]["trails"]
                    for node in trail["nodes"]], answer
    for path in left:
        assert not os.path.lexists(b / path), path
    assert on("beta", "validate", b)["ok"]

    # The person decides one folder of attachments should travel; a symlink in it still not.
    (a / "attachments").mkdir()
    (a / "attachments/pepper-chart.pdf").write_bytes(b"%PDF-1.4\n%\xe2\xe3\n")
    os.symlink("/etc/hostname", a / "attachments" / "host")
    config_path = a / ".memory-forest" / "forest.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config_path.write_text(json.dumps({**config, "sync": {"publish": ["attachments/**"]}}),
                           encoding="utf-8")
    dry = on("alpha", "sync", a, "--dry-run")
    assert "attachments/pepper-chart.pdf" in dry["would_commit"]
    assert {"path": "attachments/host", "reason": "symlink"} in dry["left_local"]["paths"]
    opted = on("alpha", "sync", a)
    assert opted["pushed"] and opted["left_local"]["count"] == len(left) + 1
    assert "attachments/pepper-chart.pdf" in published(remote)

    pulled = on("beta", "sync", b)
    assert pulled["pulled"]["not_checked_out"] is None, pulled
    assert (b / "attachments/pepper-chart.pdf").read_bytes() == b"%PDF-1.4\n%\xe2\xe3\n"
    assert not os.path.lexists(b / "attachments/host")
    again = on("beta", "gate", b, stdin="what do I wear when cutting the habaneros?")
    assert NOTE in [node["path"] for trail in again["retrieve"]["trails"]
                    for node in trail["nodes"]]

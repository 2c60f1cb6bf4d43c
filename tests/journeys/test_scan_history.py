"""Journey: a token committed by hand and then removed never reaches the remote.

A person keeps a forest in sync through the CLI. They paste a deploy token
into a note and commit it with plain ``git commit``; noticing, they remove it
from the note and commit again. The file no longer holds the token, but the
history a push would send does: sync refuses, names the commit, and names the
one git command that takes the local commits back while the files stay. They
run it, sync, and a second machine that clones the remote finds the note, with
the token nowhere in the remote's history.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitkit import git

pytestmark = pytest.mark.usefixtures("hermetic_git")

# Built from halves so this file holds no line the release audit would flag.
TOKEN = "glpat-" + "Hk3Vd9Qx2Lm7Wz4Rb8Tn"
AWS_KEY = "AKIA" + "Q7XZ2M4B9K3LP5RT"


def on(host: str, *args: str | Path) -> tuple[int, dict]:
    env = dict(os.environ, MEMORY_FOREST_HOST=host)
    proc = subprocess.run([sys.executable, "-m", "memory_forest", "--json",
                           *map(os.fspath, args)], capture_output=True, text=True, env=env,
                          timeout=120)
    for secret in (TOKEN, AWS_KEY):
        assert secret not in proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def ok(host: str, *args: str | Path) -> dict:
    code, out = on(host, *args)
    assert code == 0 and out["ok"], out
    return out


def test_a_token_removed_after_a_hand_commit_stays_on_the_machine(tmp_path: Path) -> None:
    remote, a, b = tmp_path / "remote.git", tmp_path / "A", tmp_path / "B"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    ok("alpha", "init", a)
    written = ok("alpha", "remember", a, "The staging deploy runs from the garage NAS.",
                 "--title", "Staging deploy")
    note = written["path"]
    assert ok("alpha", "sync", a, "--init", remote)["pushed"]
    published = git(remote, "rev-parse", "HEAD")

    path = a / note
    original = path.read_text(encoding="utf-8")
    path.write_text(original + f"\nToken for the runner: {TOKEN} (key {AWS_KEY})\n",
                    encoding="utf-8")
    git(a, "commit", "-q", "-am", "runner token")
    leaked = git(a, "rev-parse", "HEAD")
    path.write_text(original + "\nThe runner token lives in the password manager.\n",
                    encoding="utf-8")
    git(a, "commit", "-q", "-am", "move the token out")

    code, out = on("alpha", "sync", a)
    assert code != 0 and out["error"]["code"] == "secrets_found", out
    error = out["error"]
    assert {(f["path"], f["commit"]) for f in error["details"]["findings"]} == {(note, leaked)}
    assert {f["rule"] for f in error["details"]["findings"]} >= {"aws_access_key"}
    assert error["details"]["reset_to"] == published
    command = f"git -C ROOT reset --mixed {published}"
    assert command in error["message"]
    assert git(remote, "rev-parse", "HEAD") == published  # nothing left the machine

    git(a, "reset", "-q", "--mixed", error["details"]["reset_to"])  # the named command
    assert "password manager" in path.read_text(encoding="utf-8")  # the files stayed
    synced = ok("alpha", "sync", a)
    assert synced["pushed"] and synced["secrets"] == []

    history = git(remote, "log", "--all", "-p", "--format=%H %s")
    assert leaked not in history and TOKEN not in history and AWS_KEY not in history
    git(tmp_path, "clone", "-q", str(remote), str(b))
    ok("beta", "sync", b)
    assert "password manager" in (b / note).read_text(encoding="utf-8")
    found = ok("beta", "retrieve", b, "where does the staging deploy run")
    assert any(node["path"] == note for trail in found["trails"] for node in trail["nodes"])

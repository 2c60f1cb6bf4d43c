"""Journey: a hostile remote and a stale git lock never wedge a forest for good.

Machine B, a plain clone of the shared remote, pushes a commit whose tree
holds an entry named ``..`` (made with git's plumbing, as a tampered client
would). Machine A's next sync refuses it with ``sync_remote_unsafe``, its
forest and branch as they were; A keeps remembering and the gate finds what
it wrote; ``status`` and ``doctor`` name the commit and the way out. B resets
the remote branch, and A's next sync pushes what A wrote meanwhile. Then a
git process dies holding ``.git/index.lock`` on A: ``doctor`` names it,
``doctor --repair`` removes it and sync works again. All through the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitkit import canonical_files, git

FACT = "The rain barrel overflow pipe points at the cellar window."
QUESTION = "where does the rain barrel overflow pipe point?"


pytestmark = pytest.mark.usefixtures("hermetic_git")


def cli(host: str, *args: str | Path, stdin: str | None = None) -> tuple[int, dict]:
    """One CLI command as machine ``host``: its exit code and its one JSON object."""
    env = dict(os.environ, MEMORY_FOREST_HOST=host)
    proc = subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args),
                           "--json"], input=stdin or "", capture_output=True, text=True,
                          env=env, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def ok(host: str, *args: str | Path, stdin: str | None = None) -> dict:
    code, answer = cli(host, *args, stdin=stdin)
    assert code == 0, answer
    return answer


def test_a_hostile_push_and_a_stale_git_lock_heal(tmp_path: Path) -> None:
    remote, a, b = tmp_path / "remote.git", tmp_path / "A", tmp_path / "B"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    ok("alpha", "init", a, "--example")
    assert ok("alpha", "sync", a, "--init", remote)["pushed"] is True
    subprocess.run(["git", "clone", "-q", str(remote), str(b)], check=True)
    ok("beta", "sync", b)
    good = git(b, "rev-parse", "HEAD")
    branch = git(b, "branch", "--show-current")

    # B pushes a commit whose root holds a folder named "..".
    blob = git(b, "hash-object", "-w", "--stdin", stdin="escaped\n")
    holder = git(b, "mktree", stdin=f"100644 blob {blob}\tescaped.md\n")
    tree = git(b, "mktree", stdin=git(b, "ls-tree", "HEAD") + f"\n040000 tree {holder}\t..\n")
    hostile = git(b, "commit-tree", tree, "-p", "HEAD", "-m", "hostile")
    git(b, "push", "-q", "origin", f"{hostile}:refs/heads/{branch}")

    head, before = git(a, "rev-parse", "HEAD"), canonical_files(a)
    code, refused = cli("alpha", "sync", a)
    assert code == 1 and refused["error"]["code"] == "sync_remote_unsafe", refused
    assert refused["error"]["details"]["commit"] == hostile
    assert refused["error"]["details"]["paths"] == ["../escaped.md"]
    assert git(a, "rev-parse", "HEAD") == head and canonical_files(a) == before
    assert not (tmp_path / "escaped.md").exists()

    # A keeps working: a write, and the gate answers from it.
    ok("alpha", "remember", a, FACT, "--title", "Rain barrel overflow")
    answer = ok("alpha", "gate", a, stdin=QUESTION)
    assert answer["status"] == "evidence_found", answer
    assert any("rain-barrel" in node["path"] for trail in answer["retrieve"]["trails"]
               for node in trail["nodes"])

    status = ok("alpha", "status", a)
    (piece,) = status["git"]["damaged"]
    assert (piece["code"], piece["commit"]) == ("sync_remote_unsafe", hostile)
    assert "reset the remote branch" in status["next_step"]
    assert ok("alpha", "doctor", a)["git"]["damaged"][0]["commit"] == hostile

    # B resets the remote branch; A's next sync goes on and pushes what A wrote meanwhile.
    git(b, "push", "-q", "--force", "origin", f"{good}:refs/heads/{branch}")
    healed = ok("alpha", "sync", a)
    assert healed["pushed"] is True and healed["committed"]["files"] >= 1
    assert ok("alpha", "status", a)["git"]["damaged"] == []
    git(b, "reset", "-q", "--hard", good)
    ok("beta", "sync", b)
    assert ok("beta", "gate", b, stdin=QUESTION)["status"] == "evidence_found"

    # A git process died holding the index lock on A.
    (a / ".git" / "index.lock").write_bytes(b"")
    ok("alpha", "remember", a, "The cellar window latch is rusted shut.",
       "--title", "Cellar latch")
    code, locked = cli("alpha", "sync", a)
    assert code == 1 and locked["error"]["code"] == "git_index_locked", locked
    (piece,) = ok("alpha", "doctor", a)["git"]["damaged"]
    assert (piece["piece"], piece["stale"]) == (".git/index.lock", True)
    repaired = ok("alpha", "doctor", a, "--repair")
    assert repaired["repair"]["git"]["removed"] == ".git/index.lock"
    assert not (a / ".git" / "index.lock").exists()
    assert ok("alpha", "sync", a)["pushed"] is True

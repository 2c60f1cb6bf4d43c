"""Journey: one secret, two ways in: remember stores a marker, sync keeps the hand-written copy.

A person asks the agent to remember a deploy note holding a GitLab token
(``remember`` stores a marker and counts the rule), then pastes the same token
into a leaf by hand. ``sync`` refuses to push, naming the rule and the line,
never the token; the bare remote never holds it, in any commit. Everything
runs through the real CLI against a bare remote in tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("hermetic_git")

TOKEN = "glp" + "at-" + "x7Hq2Lm9Rt4Vz8Kp3Ws1"  # assembled, so this file holds none


def cli(*args: str | Path, ok: bool = True) -> dict:
    proc = subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert (proc.returncode == 0) is ok, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def remote_history(remote: Path) -> str:
    """Every blob of every commit the remote holds, as one text."""
    objects = subprocess.run(["git", "-C", str(remote), "rev-list", "--all", "--objects"],
                             capture_output=True, text=True, check=True).stdout.split()
    shas = [word for word in objects if len(word) == 40]
    blobs = subprocess.run(["git", "-C", str(remote), "cat-file", "--batch"],
                           input=("\n".join(shas) + "\n").encode(), capture_output=True,
                           check=True)
    return blobs.stdout.decode("utf-8", "replace")


def test_remember_redacts_it_and_sync_refuses_the_hand_written_copy(tmp_path: Path) -> None:
    remote, root = tmp_path / "remote.git", tmp_path / "forest"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    cli("init", root)
    assert cli("sync", root, "--init", remote)["pushed"] is True

    stored = cli("remember", root, f"Deploy with the GitLab token {TOKEN} on Fridays.",
                 "--title", "Deploy day")
    assert stored["redactions"] == {"gitlab_token": 1}
    leaf = root / stored["path"] if not Path(stored["path"]).is_absolute() \
        else Path(stored["path"])
    text = leaf.read_text(encoding="utf-8")
    assert TOKEN not in text and "[REDACTED:gitlab_token]" in text
    assert cli("sync", root)["pushed"] is True  # the marker is safe to publish

    leaf.write_text(text + f"\nPasted by hand: {TOKEN}\n", encoding="utf-8")
    refused = cli("sync", root, ok=False)
    assert refused["error"]["code"] == "secrets_found"
    rel = leaf.relative_to(root).as_posix()
    assert {(f["path"], f["rule"]) for f in refused["error"]["details"]["findings"]} == \
        {(rel, "gitlab_token")}
    assert TOKEN not in json.dumps(refused)
    history = remote_history(remote)
    assert "Deploy day" in history and TOKEN not in history

"""What sync settles after a commit or a merge: modes, the index and its problems, by change.

Real git, a bare remote in tmp_path, the CLI in a subprocess. Git under sync
runs with umask 077; a person's own ``git commit`` and ``git pull`` do not,
so those are run here by hand under umask 022, as a terminal would.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitkit import git

pytestmark = pytest.mark.usefixtures("hermetic_git")

LEAF = "04 stm/garden/beds/tomato-bed.md"
BROKEN = "04 stm/garden/beds/broken.md"


def cli(host: str, *args: str | Path) -> dict:
    env = dict(os.environ, MEMORY_FOREST_HOST=host)
    proc = subprocess.run([sys.executable, "-m", "memory_forest", "--json",
                           *map(os.fspath, args)], capture_output=True, text=True, env=env,
                          timeout=120)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["ok"], out
    return out


def by_hand(cwd: Path, *args: str) -> None:
    """git as a terminal runs it: the user's umask 022, not sync's 077."""
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True, umask=0o022)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    remote, a, b = tmp_path / "remote.git", tmp_path / "A", tmp_path / "B"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    cli("alpha", "init", a)
    cli("alpha", "remember", a, "The tomato bed gets morning sun.", "--tree", "garden",
        "--branch", "beds", "--leaf", "tomato-bed")
    cli("alpha", "sync", a, "--init", remote)
    git(tmp_path, "clone", "-q", str(remote), str(b))
    cli("beta", "sync", b)
    return remote, a, b


def test_a_hand_pull_under_umask_022_is_made_private_by_the_next_sync(pair) -> None:
    _, a, b = pair
    cli("beta", "remember", b, "Basil goes beside the tomatoes.", "--tree", "herbs",
        "--branch", "pots", "--leaf", "basil")
    cli("beta", "sync", b)
    by_hand(a, "pull", "-q", "--no-rebase", "origin", "HEAD")
    new_dir, new_leaf = a / "04 stm/herbs", a / "04 stm/herbs/pots/basil.md"
    assert mode(new_dir) == 0o755 and mode(new_leaf) == 0o644  # what the pull left

    cli("alpha", "remember", a, "The hose reel is by the door.")
    done = cli("alpha", "sync", a)
    assert mode(new_dir) == mode(new_dir / "pots") == 0o700 and mode(new_leaf) == 0o600
    assert "04 stm/herbs/pots/basil.md" in {change["path"] for change in done["modes"]["modes"]}
    assert done["modes"]["git_modes"] > 0  # the objects and refs the pull wrote
    for path in (a / ".git").rglob("*"):
        assert not mode(path) & 0o077, path


def test_a_hand_commit_is_settled_and_its_problems_reported(pair) -> None:
    _, a, b = pair
    (b / BROKEN).write_text("---\ntitle: [unclosed\n---\nbody\n", encoding="utf-8")
    by_hand(b, "add", "-A")
    by_hand(b, "commit", "-q", "-m", "a note by hand")
    pushed = cli("beta", "sync", b)
    assert BROKEN in {error["path"] for error in pushed["checks"]["errors"]}
    assert mode(b / BROKEN) == 0o600
    for path in (b / ".git" / "objects").rglob("*"):
        assert not mode(path) & 0o077, path

    pulled = cli("alpha", "sync", a)
    assert pulled["pulled"]["paths"] == [BROKEN]
    assert BROKEN in {error["path"] for error in pulled["checks"]["errors"]}
    assert pulled["checks"]["summary"]["errors"] >= 1


def test_only_what_git_wrote_is_walked_until_the_record_is_gone(pair) -> None:
    """A mode changed by hand on a file git did not write is doctor --repair's to fix;
    without the record of the last settle, sync walks the whole forest again."""
    _, a, _ = pair
    os.chmod(a / LEAF, 0o644)
    cli("alpha", "remember", a, "The rain barrel is full.")
    cli("alpha", "sync", a)
    assert mode(a / LEAF) == 0o644
    assert git(a, "config", "memory-forest.settled") == git(a, "rev-parse", "HEAD")

    git(a, "config", "--unset", "memory-forest.settled")
    cli("alpha", "remember", a, "The compost is turned.")
    done = cli("alpha", "sync", a)
    assert mode(a / LEAF) == 0o600
    assert LEAF in {change["path"] for change in done["modes"]["modes"]}

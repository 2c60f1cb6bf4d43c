"""A remote that git cannot merge safely, and a stale ``.git/index.lock``: real git, real forests.

A hostile commit is built with git's plumbing (``hash-object``, ``mktree``,
``commit-tree``), as a tampered remote or a broken client would push it, in
a scratch clone; then machine A syncs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gitkit import canonical_files, git

from memory_forest import operations, schemas
from memory_forest.sync import SYNC_FILES, sync
from memory_forest.syncsafety import unsafe_path
from memory_forest.writers.remember import remember
from tests.conftest import one_object, raises_code, run_cli

pytestmark = pytest.mark.usefixtures("hermetic_git")


def push_hostile(workdir: Path, remote: Path, name: str, folder: str = "") -> str:
    """Push a commit on top of the remote's branch adding a tree entry called ``name``
    (a folder holding one file, or a file when ``name`` holds a backslash), inside
    ``folder`` when given; its id."""
    scratch = workdir / f"scratch-{len(list(workdir.glob('scratch-*')))}"
    git(workdir, "clone", "-q", str(remote), str(scratch))
    blob = git(scratch, "hash-object", "-w", "--stdin", stdin="planted\n")
    if "\\" in name:
        entry = f"100644 blob {blob}\t{name}\n"
    else:
        holder = git(scratch, "mktree", stdin=f"100644 blob {blob}\tx.md\n")
        entry = f"040000 tree {holder}\t{name}\n"
    if folder:
        inner = git(scratch, "ls-tree", f"HEAD:{folder}") + "\n" + entry
        entry = f"040000 tree {git(scratch, 'mktree', stdin=inner)}\t{folder}\n"
    replaced = "\t" + (folder or name)
    top = [line for line in git(scratch, "ls-tree", "HEAD").splitlines()
           if not line.endswith(replaced)]
    tree = git(scratch, "mktree", stdin="\n".join(top) + "\n" + entry)
    commit = git(scratch, "commit-tree", tree, "-p", "HEAD", "-m", "hostile")
    branch = git(scratch, "branch", "--show-current")
    git(scratch, "push", "-q", "origin", f"{commit}:refs/heads/{branch}")
    return commit


@pytest.fixture
def shared(tmp_path: Path) -> tuple[Path, Path]:
    """A bare remote and forest A synced to it with one fact."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    a = tmp_path / "A"
    operations.init(a)
    remember(a, content="The greenhouse pump valve is painted blue.", title="Pump valve")
    assert sync(a, init=str(remote))["pushed"]
    return remote, a


@pytest.mark.parametrize("path", ["..", ".", ".git", ".GIT", ".git.", "git~1", "a/../b",
                                  "a\\b", "/abs", "a//b", "x/.Git/config"])
def test_unsafe_paths(path: str) -> None:
    assert unsafe_path(path)


@pytest.mark.parametrize("path", ["02 ltm/tree/pump.md", "..md", ".gitignore",
                                  ".gitattributes", "a..b/c", ".memory-forest/forest.json",
                                  "git~2"])
def test_safe_paths(path: str) -> None:
    assert not unsafe_path(path)


@pytest.mark.parametrize(("name", "folder"), [("..", ""), (".git", ""), (".GiT", ""),
                                              ("a\\b.md", ""), ("..", "02 ltm")])
def test_hostile_commit_is_refused_before_anything_changes(shared, tmp_path, name, folder
                                                           ) -> None:
    remote, a = shared
    hostile = push_hostile(tmp_path, remote, name, folder)
    remember(a, content="The north window sticks in cold weather.", title="North window")
    head, files = git(a, "rev-parse", "HEAD"), canonical_files(a)
    pending = git(a, "status", "--porcelain")

    error = raises_code(lambda: sync(a), "sync_remote_unsafe")
    assert error.details["commit"] == hostile
    assert error.details["paths"] and all(unsafe_path(path) for path in error.details["paths"])
    assert "--remote NAME" in error.message and "reset the remote branch" in error.message
    # Nothing committed, merged or checked out: the branch, the files and the pending changes.
    assert git(a, "rev-parse", "HEAD") == head
    assert canonical_files(a) == files
    assert git(a, "status", "--porcelain") == pending
    assert not (a / ".git" / "MERGE_HEAD").exists()
    assert not (tmp_path / "x.md").exists()
    assert git(remote, "rev-parse", "HEAD") == hostile  # nothing of A's was pushed

    damaged = operations.doctor(a)["git"]["damaged"]
    assert [(piece["code"], piece["commit"]) for piece in damaged] == [
        ("sync_remote_unsafe", hostile)]


def test_a_forest_with_no_commit_never_checks_out_a_hostile_remote(shared, tmp_path) -> None:
    """A new machine joining with ``sync --init``: the first checkout is refused too."""
    remote, _ = shared
    hostile = push_hostile(tmp_path, remote, "..")
    c = tmp_path / "C"
    operations.init(c)
    before = canonical_files(c)
    error = raises_code(lambda: sync(c, init=str(remote)), "sync_remote_unsafe")
    assert error.details["commit"] == hostile
    written = canonical_files(c)
    # sync's own two files are set up before the fetch; nothing of the remote is checked out
    assert {rel: data for rel, data in written.items() if rel not in SYNC_FILES} == before
    assert subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=c).returncode != 0
    assert not (tmp_path / "x.md").exists()


def test_cli_reports_one_json_object_and_status_names_the_commit(shared, tmp_path) -> None:
    remote, a = shared
    hostile = push_hostile(tmp_path, remote, "..")
    done = run_cli("sync", a, "--json")
    assert done.code == 1, done
    answer = done.json()
    assert answer["error"]["code"] == "sync_remote_unsafe", answer
    assert answer["error"]["details"]["commit"] == hostile
    assert "Traceback" not in done.stderr
    status = run_cli("status", a, "--json").json()
    schemas.validate("StatusResult", status)
    assert status["git"]["damaged"][0]["commit"] == hostile
    assert "reset the remote branch" in status["next_step"]


def test_stale_index_lock_is_reported_and_repaired(shared) -> None:
    _, a = shared
    (a / ".git" / "index.lock").write_bytes(b"")
    remember(a, content="The shed door hinge squeaks.", title="Shed hinge")

    error = raises_code(lambda: sync(a), "git_index_locked")
    assert error.details["stale"] is True and "doctor ROOT --repair" in error.message
    damaged = operations.status(a)["git"]["damaged"]
    assert [(piece["piece"], piece["code"], piece["stale"]) for piece in damaged] == [
        (".git/index.lock", "git_index_locked", True)]
    assert "--repair" in operations.status(a)["next_step"]
    for command in ("status", "doctor"):  # the piped text names the piece and its fix
        text = run_cli(command, a).stdout
        assert ".git/index.lock: git_index_locked; fix: memory-forest doctor ROOT --repair" \
            in text, text

    repaired_text = run_cli("doctor", a, "--repair")
    assert "removed stale .git/index.lock" in repaired_text.stdout, repaired_text
    assert not (a / ".git" / "index.lock").exists()
    (a / ".git" / "index.lock").write_bytes(b"")
    repaired = operations.doctor(a, repair=True)
    assert repaired["repair"]["git"]["removed"] == ".git/index.lock"
    assert repaired["git"]["damaged"] == []
    assert sync(a)["pushed"]


def test_a_lock_a_live_git_process_holds_is_left_alone(shared) -> None:
    """A git command working in the forest owns its lock: doctor --repair keeps it."""
    _, a = shared
    (a / ".git" / "index.lock").write_bytes(b"")
    # A git process that waits on its stdin, working in the forest.
    live = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=a, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL)
    try:
        if not os.path.isdir("/proc"):
            pytest.skip("processes cannot be listed here")
        repaired = operations.doctor(a, repair=True)
        assert repaired["repair"]["git"] is None
        assert repaired["git"]["damaged"][0]["stale"] is False
        assert (a / ".git" / "index.lock").exists()
        error = raises_code(lambda: sync(a), "git_index_locked")
        assert error.details["stale"] is False
    finally:
        live.communicate(b"", timeout=10)
    assert live.returncode == 0


def test_no_repository_and_no_fault_report_nothing(tmp_path) -> None:
    forest = tmp_path / "plain"
    operations.init(forest)
    assert operations.doctor(forest)["git"] == {"damaged": []}


# --- damaged derived state never stops sync ---------------------------------------------------

DAMAGED_PIECES = ("index.sqlite3", "vectors.sqlite3", "vectors.cache.json", "receipts",
                  "proposals")
DAMAGE = ("truncated", "random", "empty", "directory", "fifo", "symlink")


@pytest.fixture(scope="module")
def synced_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A forest with the example, its index and vectors, synced to a bare remote."""
    place = tmp_path_factory.mktemp("template")
    env = dict(os.environ, GIT_CONFIG_GLOBAL=str(place / "no-gitconfig"),
               GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", "init", "-q", "--bare", str(place / "remote.git")], check=True,
                   env=env)
    for args in (["init", place / "forest", "--example"],
                 ["sync", place / "forest", "--init", place / "remote.git"],
                 ["index", place / "forest", "--semantic"]):
        subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args),
                        "--json"], check=True, capture_output=True, env=env, timeout=120)
    return place


def damage(path: Path, kind: str) -> None:
    """Replace the state file (or folder) at ``path`` with ``kind``."""
    data = b""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists():
        data = path.read_bytes()
        path.unlink()
    if kind == "truncated":
        path.write_bytes(data[:len(data) // 2] or b"{")
    elif kind == "random":
        path.write_bytes(os.urandom(4096))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(path.parent.parent / "04 stm")


@pytest.mark.parametrize(("piece", "kind"),
                         [pytest.param(piece, kind, id=f"{piece}-{kind}")
                          for piece in DAMAGED_PIECES for kind in DAMAGE])
def test_sync_and_maintain_carry_on_over_damaged_derived_state(synced_template, tmp_path,
                                                                piece, kind) -> None:
    """A hand edit is committed and pushed whatever state the index or vectors are in, and
    maintain answers with one JSON object and a stable code, in a bounded time."""
    remote, forest = tmp_path / "remote.git", tmp_path / "forest"
    shutil.copytree(synced_template / "remote.git", remote, symlinks=True)
    shutil.copytree(synced_template / "forest", forest, symlinks=True)
    git(forest, "remote", "set-url", "origin", str(remote))
    note = next((forest / "04 stm").rglob("*.md"))
    note.write_text(note.read_text(encoding="utf-8") + "\nA line written by hand.\n",
                    encoding="utf-8")
    damage(forest / ".memory-forest" / piece, kind)
    before = canonical_files(forest)

    synced = run_bounded("sync", forest)
    assert synced["ok"] is True and synced["pushed"] is True, synced
    assert canonical_files(forest) == before
    rel = note.relative_to(forest).as_posix()
    assert git(remote, "show", f"HEAD:{rel}").endswith("A line written by hand.")

    maintained = run_bounded("maintain", forest)
    assert maintained.get("error", {}).get("code") != "internal_error", maintained
    assert canonical_files(forest) == before


def run_bounded(*args: str | Path) -> dict:
    """One CLI command, its one JSON object; a hang fails the test after 10 s."""
    done = subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args),
                           "--json"], capture_output=True, text=True, timeout=10)
    assert "Traceback" not in done.stderr, done.stderr
    return one_object(done.stdout)

"""``sync`` publishes only what the forest owns: real git, a bare remote, two machines.

Whatever else sits in the folder (symlinks, a root ``.env``, a ``notes.txt``,
a picture beside a leaf, a nested repository) stays on its machine and is
listed; a path git already tracks that the forest does not own stops being
tracked, its file kept; what another machine committed by hand of those
kinds is recorded by the merge but never written into this forest; an
attachment opted in through ``forest.json`` travels.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_forest import operations, schemas
from memory_forest.config import load_config
from memory_forest.publishing import allowed_attachment, opted_in, path_reason
from memory_forest.sync import sync
from memory_forest.writers.remember import remember
from tests.conftest import raises_code
from tests.forestkit import write_file
from tests.gitkit import git

pytestmark = pytest.mark.usefixtures("hermetic_git")

LEAF_FACT = "The rain barrel tap sits behind the lavender."


def cli(host: str, *args: str | Path) -> tuple[int, dict]:
    env = dict(os.environ, MEMORY_FOREST_HOST=host)
    done = subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args),
                           "--json"], capture_output=True, text=True, env=env, timeout=120)
    (line,) = done.stdout.splitlines()
    return done.returncode, json.loads(line)


def tree(repo: Path, ref: str = "HEAD") -> set[str]:
    return set(git(repo, "ls-tree", "-r", "--name-only", "-z", ref).split("\0")) - {""}


def reasons(found: dict | None) -> dict[str, str]:
    assert found is not None and found["count"] == len(found["paths"])
    return {entry["path"]: entry["reason"] for entry in found["paths"]}


def opt_in(root: Path, *globs: str) -> None:
    path = root / ".memory-forest" / "forest.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**config, "sync": {"publish": list(globs)}}), encoding="utf-8")


def drop_everything(root: Path, outside: Path) -> dict[str, str]:
    """What a user and other programs leave in a forest folder, by the reason it stays."""
    outside.write_text("a private file elsewhere\n", encoding="utf-8")
    os.symlink("/etc", root / "04 stm" / "etc")
    os.symlink(outside, root / "03 mtm" / "elsewhere.md")
    write_file(root, "random.bin", os.urandom(64))
    write_file(root, ".env", b"EDITOR=vim\n")
    write_file(root, "04 stm/notes.txt", b"shopping list\n")
    write_file(root, "04 stm/garden/photo.png", b"\x89PNG\r\n\x1a\n" + bytes(32))
    write_file(root, "06 istm/stray.md", b"# not an event log\n")
    nested = root / "04 stm" / "vendor"
    nested.mkdir()
    git(nested, "init", "-q")
    write_file(nested, "readme.md", b"someone else's repository\n")
    return {"04 stm/etc": "symlink", "03 mtm/elsewhere.md": "symlink",
            "random.bin": "outside_layers", ".env": "outside_layers",
            "04 stm/notes.txt": "extension", "04 stm/garden/photo.png": "extension",
            "06 istm/stray.md": "extension", "04 stm/vendor": "repository"}


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A bare remote; A (with a leaf) synced to it; B a plain clone, synced."""
    remote, a, b = tmp_path / "remote.git", tmp_path / "A", tmp_path / "B"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    operations.init(a)
    code, first = cli("alpha", "sync", a, "--init", remote)
    assert code == 0 and first["pushed"], first
    git(tmp_path, "clone", "-q", str(remote), str(b))
    code, cloned = cli("beta", "sync", b)
    assert code == 0, cloned
    return remote, a, b


def test_only_memory_leaves_the_machine(pair, tmp_path: Path) -> None:
    remote, a, b = pair
    remember(a, content=LEAF_FACT, title="Rain barrel tap")
    dropped = drop_everything(a, tmp_path / "outside.txt")

    code, shown = cli("alpha", "sync", a, "--dry-run")
    assert code == 0 and reasons(shown["left_local"]) == dropped
    assert not set(shown["would_commit"]) & set(dropped)
    assert any(path.startswith("04 stm/") and path.endswith(".md")
               for path in shown["would_commit"])

    code, synced = cli("alpha", "sync", a)
    assert code == 0 and synced["pushed"], synced
    schemas.validate("SyncResult", synced)
    assert reasons(synced["left_local"]) == dropped
    published = tree(remote)
    assert not published & set(dropped)
    assert not any(path.startswith("04 stm/vendor/") for path in published)
    assert set(shown["would_commit"]) <= published

    code, pulled = cli("beta", "sync", b)
    assert code == 0 and pulled["pulled"]["not_checked_out"] is None, pulled
    for path in dropped:
        assert not os.path.lexists(b / path), path
    assert LEAF_FACT in "".join(path.read_text(encoding="utf-8")
                                for path in (b / "04 stm").rglob("*.md"))
    # Everything stays where it was on A, and the next sync has nothing new to say.
    assert os.readlink(a / "04 stm" / "etc") == "/etc" and (a / ".env").exists()
    code, again = cli("alpha", "sync", a)
    assert code == 0 and again["nothing_to_do"] and again["committed"] is None


def test_a_forest_without_a_repository_lists_what_it_would_leave(tmp_path: Path) -> None:
    root = tmp_path / "forest"
    operations.init(root)
    dropped = drop_everything(root, tmp_path / "outside.txt")
    code, shown = cli("alpha", "sync", root, "--dry-run")
    assert code == 0 and shown["created"], shown
    assert reasons(shown["left_local"]) == dropped
    assert ".memory-forest/forest.json" in shown["would_commit"]
    assert not set(shown["would_commit"]) & set(dropped)


def test_an_opted_in_attachment_travels_and_a_symlink_never(pair) -> None:
    remote, a, b = pair
    opt_in(a, "04 stm/**/*.png", "attachments/**")
    write_file(a, "04 stm/garden/photo.png", b"\x89PNG\r\n\x1a\n" + bytes(32))
    write_file(a, "attachments/plan.pdf", b"%PDF-1.4\n")
    write_file(a, "attachments/notes.txt", b"bring gloves\n")
    os.symlink("/etc/hostname", a / "attachments" / "host")
    write_file(a, "04 stm/garden/photo.jpg", b"\xff\xd8\xff")

    code, synced = cli("alpha", "sync", a)
    assert code == 0, synced
    assert reasons(synced["left_local"]) == {"attachments/host": "symlink",
                                             "04 stm/garden/photo.jpg": "extension"}
    assert {"04 stm/garden/photo.png", "attachments/plan.pdf", "attachments/notes.txt",
            ".memory-forest/forest.json"} <= tree(remote)

    code, pulled = cli("beta", "sync", b)
    assert code == 0, pulled
    assert (b / "attachments/plan.pdf").read_bytes() == b"%PDF-1.4\n"
    assert (b / "04 stm/garden/photo.png").exists()
    assert not os.path.lexists(b / "attachments/host")
    assert load_config(b).publish == ("04 stm/**/*.png", "attachments/**")


def test_a_tracked_path_the_forest_does_not_own_stops_being_tracked(pair) -> None:
    """An older version's ``git add -A`` (or a hand commit) tracked them: the next sync takes
    them out of the index and pushes that; the files stay on this machine."""
    remote, a, _ = pair
    write_file(a, "notes.txt", b"kept here\n")
    os.symlink("/etc", a / "04 stm" / "etc")
    git(a, "add", "-f", "--", "notes.txt", "04 stm/etc")
    git(a, "commit", "-q", "-m", "by hand")

    code, dry = cli("alpha", "sync", a, "--dry-run")
    assert code == 0 and reasons(dry["stop_tracking"]) == {"notes.txt": "outside_layers",
                                                           "04 stm/etc": "symlink"}
    assert dry["would_commit"] == []
    schemas.validate("SyncResult", dry)
    code, synced = cli("alpha", "sync", a)
    assert code == 0 and synced["pushed"], synced
    assert reasons(synced["stopped_tracking"]) == {"notes.txt": "outside_layers",
                                                   "04 stm/etc": "symlink"}
    assert not {"notes.txt", "04 stm/etc"} & tree(remote)
    assert (a / "notes.txt").read_bytes() == b"kept here\n"
    assert os.readlink(a / "04 stm" / "etc") == "/etc"
    assert not {"notes.txt", "04 stm/etc"} & set(git(a, "ls-files").splitlines())
    code, again = cli("alpha", "sync", a)
    assert code == 0 and again["nothing_to_do"] and again.get("stopped_tracking") is None


def test_what_the_other_machine_committed_by_hand_is_not_checked_out(pair) -> None:
    """B commits a symlink, a root file and a picture by hand and pushes with git: A's merge
    records them but writes none, and A never pushes their deletion; B's own sync stops
    tracking them, and then A has nothing left out."""
    remote, a, b = pair
    os.symlink("/etc", b / "04 stm" / "etc")
    write_file(b, "loose notes.txt", b"beta's\n")
    write_file(b, "04 stm/p*c.png", b"\x89PNG\r\n\x1a\n")
    git(b, "add", "-f", "--", "04 stm/etc", "loose notes.txt", "04 stm/p*c.png")
    head = git(b, "rev-parse", "HEAD")
    git(b, "update-index", "--add", "--cacheinfo", f"160000,{head},03 mtm/sub.md")
    git(b, "commit", "-q", "-m", "by hand")
    git(b, "push", "-q", "origin", "HEAD")
    hand = ["04 stm/etc", "loose notes.txt", "04 stm/p*c.png", "03 mtm/sub.md"]
    expected = {"04 stm/etc": "symlink", "loose notes.txt": "outside_layers",
                "04 stm/p*c.png": "extension", "03 mtm/sub.md": "submodule"}

    code, dry = cli("alpha", "sync", a, "--dry-run")
    assert code == 0 and reasons(dry["incoming"]["not_checked_out"]) == expected
    code, merged = cli("alpha", "sync", a)
    assert code == 0 and merged["pulled"]["commits"] == 1, merged
    assert reasons(merged["pulled"]["not_checked_out"]) == expected
    schemas.validate("SyncResult", dry)
    schemas.validate("SyncResult", merged)
    for path in hand:
        assert not os.path.lexists(a / path), path

    remember(a, content=LEAF_FACT, title="Rain barrel tap")
    code, pushed = cli("alpha", "sync", a)
    assert code == 0 and pushed["pushed"] and pushed.get("stopped_tracking") is None, pushed
    assert set(hand) <= tree(remote)  # B's to take back, not A's to delete
    assert reasons(pushed["left_local"]) == {} and pushed["pulled"]["commits"] == 0
    for path in hand:
        assert not os.path.lexists(a / path), path

    code, taken_back = cli("beta", "sync", b)
    assert code == 0 and reasons(taken_back["stopped_tracking"]) == expected, taken_back
    assert os.readlink(b / "04 stm" / "etc") == "/etc"
    assert not set(hand) & tree(remote)
    code, settled = cli("alpha", "sync", a)
    assert code == 0 and settled["pulled"]["commits"] >= 1, settled
    assert settled["pulled"]["not_checked_out"] is None
    assert git(a, "ls-files", "-t").count("S ") == 0
    for path in hand:
        assert not os.path.lexists(a / path), path


def test_a_bad_publish_list_is_config_bad_sync(pair) -> None:
    _, a, _ = pair
    for bad in (["/etc/**"], [".git/config"], [".memory-forest/index.sqlite3"], ["**"],
                ["a/../b"], ["a**b/c"], "attachments/**", [7], {"attachments": True}):
        path = a / ".memory-forest" / "forest.json"
        config = json.loads(path.read_text(encoding="utf-8"))
        config["sync"] = bad if isinstance(bad, dict) else {"publish": bad}
        path.write_text(json.dumps(config), encoding="utf-8")
        code, failed = cli("alpha", "sync", a)
        assert code == 1 and failed["error"]["code"] == "config_bad_sync", (bad, failed)
        assert "forest.json" in failed["error"]["message"]


def test_the_rule_and_the_globs(tmp_path: Path) -> None:
    assert path_reason("04 stm/a/b.md") is None and path_reason("06 istm/d.jsonl") is None
    assert path_reason(".gitignore") is None and path_reason(".memory-forest/forest.json") is None
    assert path_reason("04 stm") == "outside_layers"  # a file named like a layer, at the root
    assert path_reason("04 stm/a.jsonl") == "extension"
    assert path_reason(".memory-forest/index.sqlite3", ("x/**",)) == "state"
    publish = ("04 stm/**/*.png", "attachments/**", "docs/?.pdf")
    assert opted_in(publish, "04 stm/x.png") and opted_in(publish, "04 stm/a/b/x.png")
    assert opted_in(publish, "attachments/a/b.c") and opted_in(publish, "docs/a.pdf")
    assert not opted_in(publish, "04 stm/x.png.txt") and not opted_in(publish, "attachments")
    assert not opted_in(publish, "docs/ab.pdf") and not opted_in(publish, "docs/a/b.pdf")
    assert not opted_in(("a.b",), "aXb")  # a dot is a dot
    root = tmp_path / "forest"
    operations.init(root)
    opt_in(root, "attachments/**")
    config = load_config(root)
    assert allowed_attachment(config, "attachments/x.bin")
    assert not allowed_attachment(config, "04 stm/x.md")


def test_a_bad_publish_list_stops_the_library_too(tmp_path: Path) -> None:
    root = tmp_path / "forest"
    operations.init(root)
    opt_in(root, "../outside")
    raises_code(lambda: sync(root), "config_bad_sync")


def test_a_file_of_yours_where_the_remote_brings_one_by_hand_stays_yours(pair) -> None:
    remote, a, b = pair
    write_file(b, "notes.txt", b"beta's\n")
    git(b, "add", "-f", "--", "notes.txt")
    git(b, "commit", "-q", "-m", "by hand")
    git(b, "push", "-q", "origin", "HEAD")
    write_file(a, "notes.txt", b"alpha's\n")

    code, merged = cli("alpha", "sync", a)
    assert code == 0, merged
    assert (a / "notes.txt").read_bytes() == b"alpha's\n"
    code, after = cli("alpha", "sync", a)
    assert code == 0 and (a / "notes.txt").read_bytes() == b"alpha's\n", after
    code, theirs = cli("beta", "sync", b)
    assert code == 0 and (b / "notes.txt").read_bytes() == b"beta's\n", theirs
    code, settled = cli("alpha", "sync", a)
    assert code == 0 and (a / "notes.txt").read_bytes() == b"alpha's\n", settled
    assert "notes.txt" not in tree(remote)
    assert "+beta's" in git(remote, "log", "-p", "--", "notes.txt")  # the history keeps it
    assert "alpha's" not in git(remote, "log", "-p", "--", "notes.txt")


def test_a_file_no_longer_published_but_changed_on_the_remote_is_never_written_over(pair
                                                                                 ) -> None:
    """A tracked ``notes.txt`` that this sync stops tracking while another machine (by hand,
    or an older version) changes it: git would leave the other version in its place, so
    nothing is merged and the local bytes stay."""
    remote, a, b = pair
    write_file(a, "notes.txt", b"v1\n")
    git(a, "add", "-f", "--", "notes.txt")
    git(a, "commit", "-q", "-m", "by hand")
    git(a, "push", "-q", "origin", "HEAD")
    git(b, "pull", "-q", "--no-rebase", "origin", "HEAD")
    write_file(b, "notes.txt", b"v2 from beta\n")
    git(b, "commit", "-q", "-am", "beta edits by hand")
    git(b, "push", "-q", "origin", "HEAD")
    write_file(a, "notes.txt", b"v1 edited on alpha\n")

    code, refused = cli("alpha", "sync", a)
    assert code == 1 and refused["error"]["code"] == "sync_conflict", refused
    assert refused["error"]["details"]["paths"] == ["notes.txt"]
    assert (a / "notes.txt").read_bytes() == b"v1 edited on alpha\n"
    assert not (a / ".git" / "MERGE_HEAD").exists()
    os.rename(a / "notes.txt", a / "notes-mine.txt")  # what the message asks
    code, merged = cli("alpha", "sync", a)
    assert code == 0, merged
    assert (a / "notes-mine.txt").read_bytes() == b"v1 edited on alpha\n"
    assert (a / "notes.txt").read_bytes() == b"v2 from beta\n"  # the changed side, kept


def test_a_scheduled_sync_counts_what_it_left_local(pair) -> None:
    from memory_forest.maintain import maintain

    remote, a, _ = pair
    write_file(a, "notes.txt", b"the plumber's number\n")
    remember(a, content=LEAF_FACT, title="Rain barrel tap")
    ran = maintain(a, sync=True)
    assert ran["ok"] and ran["steps"]["sync"]["left_local"] == 1, ran
    assert ran["steps"]["sync"]["pushed"] and "notes.txt" not in tree(remote)
    assert "notes" not in json.dumps(ran["steps"]["sync"])  # counts only, never a path

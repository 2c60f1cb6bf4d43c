"""Sync scans what a push would publish: every blob of every unpushed commit, whole.

Real git, a bare remote in tmp_path, the CLI in a subprocess. The contents a
file-by-file reader would miss (UTF-16 with and without a mark, a file over
8 MiB, text after a NUL, binary bytes) are each planted two ways: as a
working-tree change on a later push, and in a hand commit on the first push
(``sync --init``).
"""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_forest import operations
from memory_forest.gitrepo import Repo
from memory_forest.syncscan import decoded, scan
from tests.gitkit import git

pytestmark = pytest.mark.usefixtures("hermetic_git")

# Built from halves so this file holds no line the release audit would flag.
TOKEN = "ghp_" + "Zq8yT3nVb6Lm2Xc9Wd4Rf7Hk1Jp5Sg0Ea3Uo"
LEAF = "04 stm/notes.md"
LINE = f"deploy token {TOKEN}\n"
CONTENTS = {
    "utf16_with_mark": codecs.BOM_UTF16_LE + ("Notes\n" + LINE).encode("utf-16-le"),
    "utf16_without_mark": ("Notes\n" + LINE).encode("utf-16-be"),
    "over_8_mib": ("filler line\n" * (800 * 1024)).encode() + LINE.encode(),
    "after_a_nul": b"Notes\n\0\n" + LINE.encode(),
}
BINARY = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\xff\xfe\xc3\x28" * 64


def cli(*args: str | Path) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "memory_forest", "--json",
                           *map(os.fspath, args)], capture_output=True, text=True, timeout=120)
    assert TOKEN not in proc.stdout + proc.stderr  # a finding never carries the text
    return proc.returncode, json.loads(proc.stdout)


def refused(*args: str | Path) -> dict:
    code, out = cli(*args)
    assert code != 0 and out["error"]["code"] == "secrets_found", out
    return out["error"]


def remote_refs(remote: Path) -> str:
    return git(remote, "for-each-ref")


@pytest.fixture
def pushed(tmp_path: Path) -> tuple[Path, Path]:
    """A forest whose first sync reached a bare remote."""
    remote, root = tmp_path / "remote.git", tmp_path / "forest"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    operations.init(root)
    code, out = cli("sync", root, "--init", remote)
    assert code == 0 and out["pushed"], out
    return remote, root


@pytest.mark.parametrize("kind", sorted(CONTENTS))
def test_a_later_push_scans_the_whole_file_in_its_encoding(pushed, kind) -> None:
    remote, root = pushed
    before = remote_refs(remote)
    (root / LEAF).write_bytes(CONTENTS[kind])
    error = refused("sync", root)
    (finding,) = error["details"]["findings"]
    assert finding == {"path": LEAF, "line": finding["line"], "rule": "github_token"}
    assert finding["line"] >= 2
    assert remote_refs(remote) == before
    assert git(root, "status", "--porcelain")  # nothing was committed


@pytest.mark.parametrize("kind", sorted(CONTENTS))
def test_a_first_push_scans_hand_commits(tmp_path, kind) -> None:
    remote, root = tmp_path / "remote.git", tmp_path / "forest"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    operations.init(root)
    git(root, "init", "-q")
    (root / LEAF).write_bytes(CONTENTS[kind])
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "by hand")
    hand = git(root, "rev-parse", "HEAD")
    error = refused("sync", root, "--init", remote)
    assert {"path": LEAF, "rule": "github_token", "commit": hand} in [
        {key: found[key] for key in ("path", "rule", "commit")}
        for found in error["details"]["findings"]]
    assert error["details"]["reset_to"] is None
    assert "git -C ROOT update-ref -d HEAD" in error["message"]
    assert remote_refs(remote) == ""


def test_a_later_push_scans_a_hand_commit(pushed) -> None:
    """The working tree is clean: only the scan of unpushed commits can see the token."""
    remote, root = pushed
    before = remote_refs(remote)
    (root / LEAF).write_text(LINE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "by hand")
    hand = git(root, "rev-parse", "HEAD")
    error = refused("sync", root)
    assert [(f["path"], f["rule"], f["commit"]) for f in error["details"]["findings"]] == [
        (LEAF, "github_token", hand)]
    assert error["details"]["reset_to"] == git(remote, "rev-parse", "HEAD")
    assert remote_refs(remote) == before


def test_binary_content_is_refused_in_the_tree_and_in_a_commit(pushed) -> None:
    remote, root = pushed
    before = remote_refs(remote)
    (root / LEAF).write_bytes(BINARY)
    error = refused("sync", root)
    assert error["details"]["findings"] == [{"path": LEAF, "line": 0, "rule": "binary"}]
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a picture named .md")
    error = refused("sync", root)
    assert [(f["path"], f["rule"], f["commit"]) for f in error["details"]["findings"]] == [
        (LEAF, "binary", git(root, "rev-parse", "HEAD"))]
    assert remote_refs(remote) == before


def test_allow_secrets_publishes_and_still_reports(pushed) -> None:
    remote, root = pushed
    (root / LEAF).write_bytes(CONTENTS["utf16_with_mark"])
    code, out = cli("sync", root, "--allow-secrets")
    assert code == 0 and out["pushed"], out
    assert [finding["rule"] for finding in out["secrets"]] == ["github_token"]
    assert git(remote, "rev-parse", "HEAD") == git(root, "rev-parse", "HEAD")


def test_an_allowed_attachment_passes_and_a_text_one_is_still_read(tmp_path) -> None:
    """The predicate sync is given for attachments: binary allowed, text scanned anyway."""
    root = tmp_path / "forest"
    operations.init(root)
    git(root, "init", "-q")
    (root / "03 mtm" / "plan.png").write_bytes(BINARY)
    (root / "03 mtm" / "plan.md").write_bytes(BINARY)
    (root / "03 mtm" / "text.png").write_text(LINE)
    changes = ["03 mtm/plan.md", "03 mtm/plan.png", "03 mtm/text.png"]
    found = scan(Repo(root), None, changes, lambda path: path.endswith(".png"))
    assert [(f["path"], f["rule"]) for f in found] == [("03 mtm/plan.md", "binary"),
                                                        ("03 mtm/text.png", "github_token")]


def test_only_unpublished_commits_are_read(pushed) -> None:
    """A blob the remote already holds is not read again."""
    _, root = pushed
    repo = Repo(root)
    assert scan(repo, "origin", []) == []  # everything is on the remote
    (root / LEAF).write_text(LINE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    assert [f["rule"] for f in scan(repo, "origin", [])] == ["github_token"]
    assert scan(repo, None, []) == []  # no remote: nothing is published


def test_what_a_merge_wrote_itself_is_read(pushed) -> None:
    """A conflict resolved by hand puts a blob in the merge commit that neither side had."""
    _, root = pushed
    main = git(root, "symbolic-ref", "--short", "HEAD")
    git(root, "checkout", "-q", "-b", "side")
    (root / LEAF).write_text("side\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "side")
    git(root, "checkout", "-q", main)
    (root / LEAF).parent.mkdir(exist_ok=True)  # git took the emptied layer away
    (root / LEAF).write_text("main\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "main")
    merging = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q",
                              "side"], cwd=root, capture_output=True)
    assert merging.returncode != 0  # both added the file: a conflict to resolve by hand
    (root / LEAF).write_text(LINE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-edit")
    merge = git(root, "rev-parse", "HEAD")
    assert [(f["path"], f["rule"], f["commit"]) for f in scan(Repo(root), "origin", [])] == [
        (LEAF, "github_token", merge)]


@pytest.mark.parametrize(("data", "text"), [
    (codecs.BOM_UTF32_LE + "a\nb".encode("utf-32-le"), "a\nb"),
    (codecs.BOM_UTF32_BE + "a\nb".encode("utf-32-be"), "a\nb"),
    (codecs.BOM_UTF8 + "é".encode(), "é"),
    (codecs.BOM_UTF16_BE + "ü\n".encode("utf-16-be"), "ü\n"),
    ("plain é".encode("utf-16-le"), "plain é"),
    ("日本語".encode(), "日本語"),
    (b"", ""),
    (b"caf\xe9", None),  # Latin-1 is not text sync can read
    (b"\0\0\0\x01\xff", None),
])
def test_decoding(data: bytes, text: str | None) -> None:
    assert decoded(data) == text


def test_the_named_command_clears_a_first_push(tmp_path) -> None:
    """Before the first push there is no published commit to reset to: the branch itself
    is taken back, the files stay, and the next sync commits them as they are."""
    remote, root = tmp_path / "remote.git", tmp_path / "forest"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    operations.init(root)
    git(root, "init", "-q")
    (root / LEAF).write_text(LINE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "by hand")
    (root / LEAF).write_text("the token moved to the password manager\n")
    git(root, "commit", "-q", "-am", "token removed")
    error = refused("sync", root, "--init", remote)
    git(root, "update-ref", "-d", "HEAD")  # the command the message names
    code, out = cli("sync", root, "--init", remote)
    assert code == 0 and out["pushed"] and out["secrets"] == [], out
    assert TOKEN not in git(remote, "log", "--all", "-p")
    assert error["details"]["findings"][0]["commit"] not in git(remote, "log", "--all",
                                                                "--format=%H")

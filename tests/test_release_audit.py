"""``scripts/audit_public_release.py``: each rule proven with a planted sample.

Every credential-shaped sample is assembled at run time from harmless pieces,
so this file itself never contains one and needs no allow comment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "audit_public_release.py"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

# Planted samples, each built by concatenation.
PEM = "-----BEGIN " + "OPENSSH PRIVATE" + " KEY-----"
SK_KEY = "sk-" + "proj-" + "Q3v9Xk2LmP8sT4wZ7bN1cR6d"
GITHUB = "gh" + "p_" + "R7t2Yk9Lm3Qp8Zx4Vc6Bn1Hs5Jd0Wf2Ga7Ke"
SLACK = "xo" + "xb-" + "2741-99310-Zq8Rm3Tk5Wn"
AWS = "AK" + "IA" + "Q7ZX3K2M9P4R5T6V"
JWT = "ey" + "JhbGciOiJIUzI1NiJ9" + ".ey" + "JzdWIiOiI0MiJ9" + ".Xh3kP9qL2mR7vT4w"
HOME = "/" + "home" + "/" + "sam" + "/"
MAC_HOME = "/" + "Users" + "/" + "ann" + "/"
ROOT_HOME = "/" + "root" + "/"
WINDOWS_HOME = "C:" + "\\" + "Users" + "\\" + "ann" + "\\"


def run_audit(root: Path) -> tuple[int, dict, str]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout), done.stdout


def plant(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def git_repo(
    tmp_path: Path, files: dict[str, str], untracked: dict[str, str] | None = None
) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    plant(repo, {"README.md": "# clean\n", **files})
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    plant(repo, untracked or {})
    return repo


def rules(report: dict) -> set[tuple[str, str, int | None]]:
    return {(f["rule"], f["path"], f["line"]) for f in report["findings"]}


@needs_git
def test_clean_repository_passes(tmp_path: Path) -> None:
    repo = git_repo(tmp_path, {"src/app.py": "print('hello')\n"})
    code, report, _ = run_audit(repo)
    assert code == 0
    assert report == {"files": 2, "findings": [], "mode": "git", "ok": True}


@needs_git
@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("private_key", PEM),
        ("credential", f"OPENAI_KEY = '{SK_KEY}'"),
        ("credential", f"remote = 'https://{GITHUB}@example.org/x.git'"),
        ("credential", f"SLACK={SLACK}"),
        ("credential", f"aws_access_key_id = {AWS}"),
        ("credential", f"Authorization: Bearer {JWT}"),
        ("secret_assignment", "pass" + "word=Tr0ub4dor-and-3"),
        ("secret_assignment", "api_tok" + 'en: "k2J9x7Qm4Lp1"'),
        ("secret_assignment", "client_sec" + "ret = 'v8Nw3Rt6Yq2Z'"),
        ("home_path", f"open('{HOME}notes.md')"),
        ("home_path", f"see {MAC_HOME}Library/memory"),
        ("home_path", f"cd {ROOT_HOME}.config"),
        ("home_path", f"path = {WINDOWS_HOME}memory"),
    ],
)
def test_each_content_rule_finds_its_planted_sample(tmp_path: Path, rule: str, text: str) -> None:
    repo = git_repo(tmp_path, {"notes/sample.txt": f"first line\n{text}\nlast line\n"})
    code, report, stdout = run_audit(repo)
    assert code == 1 and report["ok"] is False
    assert rules(report) == {(rule, "notes/sample.txt", 2)}
    assert text not in stdout  # findings never echo what they found


@needs_git
@pytest.mark.parametrize(
    "path",
    [
        ".memory-forest/forest.json",
        "data/.memory-forest/index.sqlite3",
        "backup/index.sqlite3",
        "state/receipts/2026-11-28.json",
        "memory.maintenance.lock/owner.json",
        "memory.maintenance.jsonl",
    ],
)
def test_derived_forest_state_is_found(tmp_path: Path, path: str) -> None:
    repo = git_repo(tmp_path, {path: "{}\n"})
    code, report, _ = run_audit(repo)
    assert code == 1
    assert ("forest_state", path, None) in rules(report)


@needs_git
@pytest.mark.parametrize(
    "path", ["05 daily/2026-11-28.md", "06 istm/events.jsonl", "me/memory/06 istm/a.jsonl"]
)
def test_daily_and_istm_outside_examples_are_found(tmp_path: Path, path: str) -> None:
    repo = git_repo(tmp_path, {path: "synthetic\n"})
    code, report, _ = run_audit(repo)
    assert code == 1
    assert rules(report) == {("forest_private_layer", path, None)}


@needs_git
def test_synthetic_example_forests_may_hold_daily_and_istm(tmp_path: Path) -> None:
    repo = git_repo(
        tmp_path,
        {
            "examples/synthetic-forest/05 daily/2026-11-28.md": "synthetic\n",
            "examples/synthetic-forest/06 istm/2026-11-28.jsonl": "{}\n",
            "src/memory_forest/example/05 daily/2026-11-28.md": "synthetic\n",
        },
    )
    assert run_audit(repo)[0] == 0


@needs_git
def test_content_rules_apply_inside_examples_too(tmp_path: Path) -> None:
    repo = git_repo(tmp_path, {"src/memory_forest/example/05 daily/d.md": f"at {HOME}x\n"})
    code, report, _ = run_audit(repo)
    assert code == 1
    assert rules(report) == {("home_path", "src/memory_forest/example/05 daily/d.md", 1)}


@needs_git
def test_placeholders_and_code_are_not_findings(tmp_path: Path) -> None:
    lines = [
        "pass" + "word = 'changeme123'",
        "tok" + "en=self.token",
        "sec" + "ret = os.environ['APP_SECRET_2']",
        "if pass" + "word == 'abc12345': pass",
        "max_tokens=4096000",
        "api_key: <your-key-1>",
        "key = 'sk-" + "...'",
        "key = 'sk-" + "x" * 30 + "'",
        "/" + "home" + "/user/memory and /" + "Users" + "/you/memory",
        "~/memory and $HOME/memory",
        "https://example.org/" + "home/sam/page",
        "src/root/file and project/" + "root/x",
        "-----BEGIN " + "PUBLIC KEY-----",
    ]
    repo = git_repo(tmp_path, {"docs/notes.md": "\n".join(lines) + "\n"})
    code, report, _ = run_audit(repo)
    assert (code, report["findings"]) == (0, [])


@needs_git
def test_allow_comment_works_only_inside_tests(tmp_path: Path) -> None:
    line = f"fixture = '{HOME}x'  # release-audit: allow\n"
    repo = git_repo(
        tmp_path,
        {
            "tests/test_fixture.py": line + f"other = '{HOME}y'\n",
            "src/module.py": line,
        },
    )
    code, report, _ = run_audit(repo)
    assert code == 1
    assert rules(report) == {
        ("home_path", "tests/test_fixture.py", 2),
        ("home_path", "src/module.py", 1),
    }


@needs_git
def test_untracked_files_are_not_scanned(tmp_path: Path) -> None:
    repo = git_repo(
        tmp_path,
        {"src/app.py": "x = 1\n"},
        untracked={
            ".memory-forest/index.sqlite3": "",
            "06 istm/events.jsonl": "{}\n",
            "local.env": "pass" + "word=Tr0ub4dor-and-3\n",
        },
    )
    assert run_audit(repo)[0] == 0


def test_walks_every_file_when_not_a_git_repository(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    plant(
        root,
        {
            "a.txt": "clean\n",
            "b/c.py": f"k = '{GITHUB}'\n",
            ".memory-forest/forest.json": "{}\n",
            ".venv/lib/site.py": f"k = '{GITHUB}'\n",  # a local environment is not the release
        },
    )
    os.symlink(HOME + "memory", root / "link")
    code, report, _ = run_audit(root)
    assert code == 1 and report["mode"] == "walk"
    assert rules(report) == {
        ("credential", "b/c.py", 1),
        ("forest_state", ".memory-forest/forest.json", None),
        ("home_path", "link", 1),
    }


def test_binary_files_are_skipped_for_content(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "blob.bin").write_bytes(b"\0\1\2" + PEM.encode())
    assert run_audit(root)[0] == 0


def test_missing_root_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2


@needs_git
def test_this_repository_passes() -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    code, report, _ = run_audit(REPO)
    assert report["findings"] == [] and code == 0
    assert report["mode"] == "git"

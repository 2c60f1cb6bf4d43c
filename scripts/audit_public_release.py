#!/usr/bin/env python3
"""Refuse to publish what must stay private: run before every public release.

    python scripts/audit_public_release.py --root .

Scans the repository's git-tracked files (``git ls-files``; every file under
the root when it is not a git work tree) for:

- ``private_key``: PEM private key blocks;
- ``credential``: a credential by its shape (cloud and service keys and
  tokens, private keys, JWTs, Basic and Bearer auth, passwords in URLs...);
- ``secret_assignment``: a value given a secret's name (``password=``,
  ``"api_key": ...``, netrc and .pgpass lines, "my password is ...");

Both come from the one credential detector (``memory_forest.credentials``)
that the writers' redaction and ``sync`` use too: docs/security.md lists its
rules.
- ``home_path``: absolute home paths (Linux and macOS home directories,
  root's home, Windows user profiles), except obviously generic user names;
- ``forest_state``: a real forest's derived state (``.memory-forest/``,
  ``*.sqlite3``, ``receipts/``, the maintenance lock and run log);
- ``forest_private_layer``: Daily or ISTM files (``05 daily/``,
  ``06 istm/``) outside the synthetic example forests.

Prints one JSON object (``ok``, ``findings`` as rule/path/line, ``files``,
``mode``) and exits 1 when anything is found, 0 when clean, 2 on a usage
error. Findings never quote the matched text, so the report itself is safe to
publish in CI logs.

A line in a file under ``tests/`` that carries the comment
``release-audit: allow`` is skipped: that is how a deliberately fake fixture
says so. Nothing else can be allowed from inside a file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

try:  # the one credential detector, shared with the writers and 'memory-forest sync'
    from memory_forest.credentials import ASSIGNMENT_RULES, line_findings
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from memory_forest.credentials import ASSIGNMENT_RULES, line_findings

ALLOW_MARKER = "release-audit: allow"
ALLOW_MARKER_DIRS = ("tests/",)
# The synthetic forests shipped on purpose: Daily and ISTM files are allowed here.
SYNTHETIC_FOREST_DIRS = ("examples/", "src/memory_forest/example/")
# Directories never walked when the root is not a git work tree.
WALK_SKIP_DIRS = frozenset(
    {
        ".git",
        ".venv",
        "venv",
        "__pycache__",
        ".pytest_cache",
        ".ruff_cache",
        ".mypy_cache",
        ".hypothesis",
        "node_modules",
        "build",
        "dist",
    }
)
MAX_SCAN_BYTES = 8 * 1024 * 1024
GENERIC_USERS = frozenset(
    {
        "user",
        "username",
        "you",
        "yourname",
        "your-name",
        "your_name",
        "me",
        "someone",
        "example",
        "name",
        "runner",
    }
)
HOME_PATHS = (
    re.compile(r"(?<![A-Za-z0-9_.~$-])/(?:home)/([^/\s\"'`<>:;,()\[\]{}]+)/"),
    re.compile(r"(?<![A-Za-z0-9_.~$-])/(?:Users)/([^/\s\"'`<>:;,()\[\]{}]+)/"),
    re.compile(r"(?<![A-Za-z0-9_.~$-])/(?:root)/()"),
    re.compile(r"(?i)(?<![A-Za-z0-9])[A-Z]:\\\\?(?:Users)\\\\?([^\\\s\"'`<>]+)\\"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=".", help="repository root (default: .)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not root.is_dir():
        parser.error("--root is not a directory")
    paths, mode = tracked_files(root)
    findings = sorted(
        (f for rel in paths for f in scan_file(root, rel)),
        key=lambda f: (f["path"], f["line"] or 0, f["rule"]),
    )
    report = {"ok": not findings, "findings": findings, "files": len(paths), "mode": mode}
    sys.stdout.write(json.dumps(report, sort_keys=True, indent=2, ensure_ascii=False) + "\n")
    return 1 if findings else 0


# --- which files -----------------------------------------------------------------------------


def tracked_files(root: Path) -> tuple[list[str], str]:
    """The git-tracked files under ``root``, or every file when it is not a git work tree."""
    try:  # paths come out relative to --root, unquoted thanks to -z
        done = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached"],
            capture_output=True,
            check=False,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError):
        done = None
    if done is not None and done.returncode == 0:
        names = {os.fsdecode(name) for name in done.stdout.split(b"\0") if name}
        return sorted(names), "git"
    return sorted(walk_files(root)), "walk"


def walk_files(root: Path) -> Iterator[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in WALK_SKIP_DIRS and not d.endswith(".egg-info")
        )
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            yield rel.replace(os.sep, "/")
        # os.walk does not descend into symlinked directories; list them as files.
        for name in list(dirnames):
            if os.path.islink(os.path.join(dirpath, name)):
                yield (name if rel_dir == "." else f"{rel_dir}/{name}").replace(os.sep, "/")


# --- rules -----------------------------------------------------------------------------------


def scan_file(root: Path, rel: str) -> list[dict[str, object]]:
    found = [finding(rule, rel, None) for rule in path_rules(rel)]
    full = root / rel
    try:
        st = os.lstat(full)
    except OSError:
        return found  # tracked but deleted from the work tree: nothing to read
    if stat.S_ISLNK(st.st_mode):
        text = os.readlink(full)  # where a symlink points can leak a home path too
    elif stat.S_ISREG(st.st_mode):
        with open(full, "rb") as handle:
            data = handle.read(MAX_SCAN_BYTES)
        if b"\0" in data[:8192]:
            return found  # binary
        text = data.decode("utf-8", errors="replace")
    else:
        return found
    allow_marker = rel.startswith(ALLOW_MARKER_DIRS)
    for number, line in enumerate(text.splitlines(), start=1):
        if allow_marker and ALLOW_MARKER in line:
            continue
        found.extend(finding(rule, rel, number) for rule in line_rules(line))
    return found


def finding(rule: str, path: str, line: int | None) -> dict[str, object]:
    return {"rule": rule, "path": path, "line": line}


def path_rules(rel: str) -> list[str]:
    parts = rel.split("/")
    dirs, name = parts[:-1], parts[-1]
    rules = []
    if (
        ".memory-forest" in dirs
        or "receipts" in dirs
        or re.search(r"\.sqlite3(?:-wal|-shm|-journal)?$", name)
        or any(d.endswith(".maintenance.lock") for d in dirs)
        or re.search(r"\.maintenance\.jsonl(?:\.\d+)?$", name)
    ):
        rules.append("forest_state")
    if ("05 daily" in dirs or "06 istm" in dirs) and not rel.startswith(SYNTHETIC_FOREST_DIRS):
        rules.append("forest_private_layer")
    return rules


def line_rules(line: str) -> list[str]:
    rules = []
    for rule in line_findings(line):  # a secret by its name, or a credential by its shape
        if rule != "private_key":
            rule = "secret_assignment" if rule in ASSIGNMENT_RULES else "credential"
        if rule not in rules:
            rules.append(rule)
    for pattern in HOME_PATHS:
        if any(m.group(1).lower() not in GENERIC_USERS for m in pattern.finditer(line)):
            rules.append("home_path")
            break
    return rules


if __name__ == "__main__":
    sys.exit(main())

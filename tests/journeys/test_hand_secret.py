"""Journey: a credential written into a note by hand never leaves the machine.

A person adds a note in their editor about the greenhouse controller and
pastes the controller's database URL, password and all. Their agent asks
through the gate: the note is found, and the receipt (metadata only) never
holds the password. ``sync`` refuses, naming the note, the line and the rule,
and pushes nothing; the person deletes the line, and the next ``sync`` pushes
the note. The other machine clones the remote, syncs, and finds the note; the
password is in no file and no git object on either side of the wire.
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

NOTE = "04 stm/greenhouse/irrigation/controller-database.md"
BRANCH = "03 mtm/greenhouse/irrigation.md"
# Built from pieces so this file holds no line that looks like a credential.
PASSWORD = "Vq7" + "mN2xK9pLr4Ts"
CREDENTIAL_LINE = f"Its database: postgres://controller:{PASSWORD}@192.168.4.20:5432/telemetry"
NOTE_TEXT = f"""---
id: "stm-controller-database"
title: "Greenhouse controller database"
status: "active"
---
# Greenhouse controller database

Up: [[03 mtm/greenhouse/irrigation|Irrigation]]

The irrigation controller logs every valve opening to a small database on the shed's
mini PC; the humidity sensors write there too.
{CREDENTIAL_LINE}
Back it up before each firmware update.
"""
QUESTION = "where does the irrigation controller log the valve openings?"


def on(host: str, *args: str | Path, stdin: str = "") -> tuple[int, str, dict]:
    """One CLI command as machine ``host``: exit code, raw stdout, and its JSON object."""
    env = dict(os.environ, MEMORY_FOREST_HOST=host)
    done = subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args), "--json"],
                          input=stdin, capture_output=True, text=True, env=env, timeout=120)
    assert len(done.stdout.splitlines()) == 1, done.stdout + done.stderr
    return done.returncode, done.stdout + done.stderr, json.loads(done.stdout)


def ok(host: str, *args: str | Path, stdin: str = "") -> dict:
    code, raw, data = on(host, *args, stdin=stdin)
    assert code == 0, raw
    return data


def git_objects(repo: Path) -> str:
    """Every object git holds in ``repo`` (history, not just the tip), as text."""
    done = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo,
                          capture_output=True, check=True)
    return done.stdout.decode("utf-8", "replace")


def everything_in(root: Path) -> str:
    """Every file under ``root``, .git and derived state included, as one text."""
    return "\n".join(path.read_bytes().decode("utf-8", "replace")
                     for path in root.rglob("*") if path.is_file())


def write_by_hand(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)


def trail_paths(receipt: dict) -> list[list[str]]:
    return [[node["path"] for node in trail["nodes"]] for trail in receipt["retrieve"]["trails"]]


def test_a_password_pasted_into_a_note_stays_on_the_machine(tmp_path: Path) -> None:
    remote, a, b = tmp_path / "remote.git", tmp_path / "A", tmp_path / "B"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    ok("alpha", "init", a, "--example")
    assert ok("alpha", "sync", a, "--init", remote)["pushed"] is True
    pushed_head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=remote, capture_output=True,
                                 text=True, check=True).stdout

    # In the editor: the note, and its line in the branch's list of leaves.
    write_by_hand(a, NOTE, NOTE_TEXT)
    branch = (a / BRANCH).read_text(encoding="utf-8")
    write_by_hand(a, BRANCH, branch.rstrip("\n") + f"\n- [[{NOTE[:-3]}|Greenhouse controller "
                  "database]]\n")
    ok("alpha", "index", a)

    code, raw, receipt = on("alpha", "gate", a, stdin=QUESTION)
    assert code == 0 and receipt["status"] == "evidence_found", raw
    assert any(trail[-1] == NOTE for trail in trail_paths(receipt)), trail_paths(receipt)
    assert PASSWORD not in raw

    code, raw, refused = on("alpha", "sync", a)
    assert code != 0 and refused["error"]["code"] == "secrets_found", raw
    line = NOTE_TEXT.splitlines().index(CREDENTIAL_LINE) + 1
    found = refused["error"]["details"]["findings"]
    assert {(f["path"], f["line"]) for f in found} == {(NOTE, line)}, found
    assert all(isinstance(f["rule"], str) and f["rule"] for f in found)
    assert PASSWORD not in raw
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=remote, capture_output=True,
                          text=True, check=True).stdout == pushed_head

    write_by_hand(a, NOTE, NOTE_TEXT.replace(CREDENTIAL_LINE + "\n", ""))
    assert ok("alpha", "sync", a)["pushed"] is True

    subprocess.run(["git", "clone", "-q", str(remote), str(b)], check=True)
    ok("beta", "sync", b)
    assert (b / NOTE).read_text(encoding="utf-8") == (a / NOTE).read_text(encoding="utf-8")
    receipt = ok("beta", "gate", b, stdin=QUESTION)
    assert any(trail[-1] == NOTE for trail in trail_paths(receipt)), trail_paths(receipt)
    for place in (git_objects(remote), git_objects(b), everything_in(b)):
        assert PASSWORD not in place

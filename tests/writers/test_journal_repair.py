"""A way out of a journal that cannot be recovered, through the real CLI.

A corrupt manifest stops every writer with ``journal_corrupt``; ``doctor``
reports what the manifest still names; ``doctor --repair`` fails with the
same code, that report and the next step (``--restore-journal``, walked in
test_double_fault.py); ``doctor --repair --set-aside-journal`` moves the
journal to ``journal.set-aside-<stamp>/``, bytes intact, once the forest
passes audit, and writers go on.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from crashkit import REMEMBER, cli
from writerkit import assert_whole, state

from memory_forest import operations

MANIFEST = Path(".memory-forest/journal/manifest.json")




def corrupt_journal(root: Path, crash: str) -> tuple[list[str], bytes]:
    """A writer killed at ``crash``, its manifest cut short: the paths it named, the bytes."""
    code, _ = cli("remember", root, *REMEMBER, crash=crash)
    assert code == -9
    manifest = json.loads((root / MANIFEST).read_bytes())
    raw = (root / MANIFEST).read_bytes()[:-40]  # a torn write: not JSON any more
    (root / MANIFEST).write_bytes(raw)
    assert cli("unlock", root, "--stale")[0] == 0
    return sorted(entry["path"] for entry in manifest["entries"]), raw


@pytest.fixture
def forest(example_forest: Path) -> Path:
    operations.index(example_forest)
    return example_forest


def test_a_corrupt_journal_is_reported_set_aside_and_writers_go_on(forest):
    before = state(forest)
    named, raw = corrupt_journal(forest, "journaled")  # nothing canonical replaced yet
    images = {p.name: p.read_bytes() for p in (forest / MANIFEST).parent.iterdir()}

    code, failed = cli("remember", forest, *REMEMBER)
    assert (code, failed["error"]["code"]) == (1, "journal_corrupt")
    assert "doctor" in failed["error"]["message"]

    code, report = cli("doctor", forest)
    assert code == 0
    described = report["journal"]
    assert (described["state"], described["code"]) == ("corrupt", "journal_corrupt")
    assert described["paths"] == named
    assert described["operation"] == "remember"
    staged = {item["name"]: item for item in described["staged"]}
    assert set(staged) == set(images)
    assert {item["of"] for name, item in staged.items() if name.startswith("after-")} \
        == set(named)

    code, refused = cli("doctor", forest, "--repair")
    assert (code, refused["error"]["code"]) == (1, "journal_corrupt")
    assert refused["error"]["details"]["journal"]["paths"] == named
    # The one way out named is the restore; setting aside (below) stays the manual one.
    assert refused["error"]["details"]["next"] == \
        "memory-forest doctor ROOT --repair --restore-journal"
    assert state(forest) == before and (forest / MANIFEST).read_bytes() == raw
    said = subprocess.run([sys.executable, "-m", "memory_forest", "doctor", str(forest),
                           "--repair"], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, COLUMNS="200", NO_COLOR="1"))
    assert said.returncode == 1 and "--restore-journal" in said.stderr
    for path in named:  # a person sees what the journal names, without --json
        assert f"the journal names: {path}" in said.stderr

    code, repaired = cli("doctor", forest, "--repair", "--set-aside-journal")
    assert code == 0, repaired
    moved = repaired["repair"]["journal"]
    assert moved["action"] == "set_aside" and moved["paths"] == named
    assert re.fullmatch(r"\.memory-forest/journal\.set-aside-\d{8}T\d{6}Z", moved["set_aside"])
    aside = forest / moved["set_aside"]
    assert stat.S_IMODE(os.lstat(aside).st_mode) == 0o700
    assert {p.name: p.read_bytes() for p in aside.iterdir()} == images  # nothing lost
    assert repaired["journal"] == {"state": "clear", "set_aside": [moved["set_aside"]]}
    assert state(forest) == before

    code, written = cli("remember", forest, *REMEMBER)
    assert code == 0 and written["created"] is True
    assert aside.is_dir()
    assert_whole(forest)


def test_set_aside_is_refused_over_a_half_applied_write_until_it_is_undone(forest):
    before = state(forest)
    named, raw = corrupt_journal(forest, "writing")  # the first file is already replaced
    code, refused = cli("doctor", forest, "--repair", "--set-aside-journal")
    assert (code, refused["error"]["code"]) == (1, "journal_set_aside_refused")
    details = refused["error"]["details"]
    assert details["paths"] and set(details["paths"]) <= set(named)
    assert (forest / MANIFEST).read_bytes() == raw  # left in place

    # The documented way: put back the before-image the report points to, then set aside.
    for item in details["journal"]["staged"]:
        if item["name"].startswith("before-") and item["of"]:
            target = forest / item["of"]
            target.write_bytes((forest / MANIFEST).with_name(item["name"]).read_bytes())
            os.chmod(target, 0o600)
    code, repaired = cli("doctor", forest, "--repair", "--set-aside-journal")
    assert code == 0, repaired
    assert repaired["repair"]["journal"]["action"] == "set_aside"
    # Every file is back as it was; a directory the interrupted write created may stay
    # (empty, 0700): the manifest that would name it is the part that was lost.
    files = {path: data for path, (data, _, _) in state(forest).items() if not path.endswith("/")}
    assert files == {path: data for path, (data, _, _) in before.items()
                     if not path.endswith("/")}
    assert cli("remember", forest, *REMEMBER)[0] == 0
    assert_whole(forest)


def test_a_journal_that_recovers_is_recovered_not_set_aside(forest):
    before = state(forest)
    assert cli("remember", forest, *REMEMBER, crash="writing")[0] == -9
    assert cli("unlock", forest, "--stale")[0] == 0
    code, repaired = cli("doctor", forest, "--repair", "--set-aside-journal")
    assert code == 0
    assert repaired["repair"]["journal"]["action"] == "rolled_back"
    assert repaired["journal"] == {"state": "clear"}
    assert not list((forest / ".memory-forest").glob("journal.set-aside-*"))
    assert state(forest) == before


def test_set_aside_journal_needs_repair(forest):
    code, refused = cli("doctor", forest, "--set-aside-journal")
    assert (code, refused["error"]["code"]) == (2, "set_aside_requires_repair")


@pytest.mark.parametrize("manifest", [b'{"format":1}', b'{"format":1,"transaction_id":"t",'
                                      b'"operation":"remember","state":"prepared","dirs":[],'
                                      b'"draft":{},"entries":[{"path":7}]}', b"[]",
                                      b'{"format":1,"transaction_id":"t","operation":"x",'
                                      b'"state":"prepared","dirs":["../out"],"draft":{},'
                                      b'"entries":[]}'])
def test_json_that_is_not_a_manifest_is_corrupt_too(forest, manifest):
    corrupt_journal(forest, "journaled")
    (forest / MANIFEST).write_bytes(manifest)
    code, failed = cli("remember", forest, *REMEMBER)
    assert (code, failed["error"]["code"]) == (1, "journal_corrupt")
    assert cli("doctor", forest)[1]["journal"]["state"] == "corrupt"
    code, repaired = cli("doctor", forest, "--repair", "--set-aside-journal")
    assert code == 0 and repaired["repair"]["journal"]["action"] == "set_aside"
    assert (forest / repaired["repair"]["journal"]["set_aside"] / "manifest.json"
            ).read_bytes() == manifest
    assert cli("remember", forest, *REMEMBER)[0] == 0


def test_a_journal_that_is_a_symlink_is_set_aside_without_following_it(forest, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir(mode=0o755)
    (outside / "manifest.json").write_bytes(b'{"format":1}')
    os.chmod(outside, 0o755)
    os.symlink(outside, forest / MANIFEST.parent)
    code, failed = cli("remember", forest, *REMEMBER)
    assert (code, failed["error"]["code"]) == (1, "journal_corrupt")
    code, repaired = cli("doctor", forest, "--repair", "--set-aside-journal")
    assert code == 0, repaired
    aside = forest / repaired["repair"]["journal"]["set_aside"]
    assert aside.is_symlink() and stat.S_IMODE(os.lstat(outside).st_mode) == 0o755
    assert cli("remember", forest, *REMEMBER)[0] == 0

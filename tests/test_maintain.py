"""maintain: the scheduled job checks, indexes and verifies, and never repairs."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import time

import pytest

from memory_forest import maintain as maintenance
from memory_forest import operations
from memory_forest.statefiles import index_path


def test_summary_has_every_step_with_durations_and_counts(example):
    outcome = maintenance.maintain(example)
    assert outcome["ok"] and outcome["operation"] == "maintain"
    assert list(outcome["steps"]) == ["lock", "journal", "scan", "read", "validate", "audit",
                                      "index", "verify"]
    assert outcome["steps"]["journal"]["recovered"] == 0
    assert all(step["ok"] and step["duration_ms"] >= 0 for step in outcome["steps"].values())
    assert outcome["steps"]["verify"] == {**outcome["steps"]["verify"], "mode": "sample",
                                          "mismatched": 0}
    assert outcome["counts"]["04 stm"] == 4


def test_it_indexes_a_forest_without_an_index(tmp_path):
    root = tmp_path / "forest"
    operations.init(root, example=True)
    outcome = maintenance.maintain(root, verify_all=True)
    assert outcome["ok"] and outcome["steps"]["index"]["mode"] == "full"
    assert outcome["steps"]["verify"]["checked"] == 12


def test_verify_all_catches_an_index_that_disagrees_with_the_files(example):
    # Files older than the build, so the run trusts their stat and does not read them again.
    hour_ago = time.time_ns() - 3600 * 10**9
    for folder, _, names in os.walk(example):
        for name in names:
            os.utime(os.path.join(folder, name), ns=(hour_ago, hour_ago))
    assert maintenance.maintain(example)["ok"]
    with sqlite3.connect(index_path(example)) as con:
        con.execute("UPDATE docs SET sha256 = ? WHERE path = ?",
                    ("0" * 64, "04 stm/kitchen/fermentation/kimchi-batch-7.md"))
    outcome = maintenance.maintain(example, verify_all=True)
    assert not outcome["ok"] and outcome["error"]["code"] == "index_mismatch"
    assert outcome["steps"]["verify"]["mismatched"] == 1


ZAATAR = "04 stm/kitchen/fermentation/zaatar-blend.md"


def test_an_unreadable_leaf_is_left_out_and_the_run_still_indexes(example):
    leaf = example / ZAATAR
    text = leaf.read_text(encoding="utf-8")
    leaf.write_text("---\ntitle: [unclosed\n---\n" + text.split("---\n", 2)[-1],
                    encoding="utf-8")
    before = leaf.read_bytes()
    outcome = maintenance.maintain(example, verify_all=True)
    assert not outcome["ok"] and outcome["error"]["code"] == "maintain_problems"
    assert outcome["exit_code"] == maintenance.PROBLEMS_EXIT_CODE == 3
    assert outcome["error"]["details"] == {"errors": 1, "warnings": 0, "quarantined": 1}
    assert outcome["quarantined"] == 1
    assert {(p["path"], p["code"]) for p in outcome["problems"]} == {
        (ZAATAR, "frontmatter_invalid")}
    assert outcome["steps"]["index"]["ok"] and outcome["steps"]["verify"]["mismatched"] == 0
    with sqlite3.connect(index_path(example)) as con:
        indexed = {path for (path,) in con.execute("SELECT path FROM docs")}
    assert ZAATAR not in indexed and len(indexed) == 11
    assert leaf.read_bytes() == before  # reported, never repaired


def test_a_link_problem_is_a_warning_and_the_leaf_stays_indexed(example):
    leaf = example / ZAATAR
    leaf.write_text(leaf.read_text(encoding="utf-8").replace("Up: [[03 mtm", "Up: [[02 ltm"),
                    encoding="utf-8")
    before = leaf.read_bytes()
    outcome = maintenance.maintain(example, verify_all=True)
    assert outcome["ok"] and "exit_code" not in outcome and outcome["quarantined"] == 0
    assert {(p["path"], p["code"], p["level"]) for p in outcome["problems"]} == {
        (ZAATAR, "link_not_canonical", "warning"), (ZAATAR, "link_parent_missing", "warning")}
    assert outcome["steps"]["verify"]["mismatched"] == 0
    with sqlite3.connect(index_path(example)) as con:
        indexed = {path for (path,) in con.execute("SELECT path FROM docs")}
    assert ZAATAR in indexed and len(indexed) == 12
    assert leaf.read_bytes() == before  # reported, never repaired


def test_a_wide_mode_is_a_warning_and_the_run_is_clean(example):
    os.chmod(example / ZAATAR, 0o644)
    outcome = maintenance.maintain(example)
    assert outcome["ok"] and "exit_code" not in outcome and outcome["quarantined"] == 0
    assert [(p["code"], p["level"]) for p in outcome["problems"]] == [
        ("mode_file_not_private", "warning")]
    assert outcome["steps"]["validate"]["warnings"] == 1
    assert stat.S_IMODE(os.stat(example / ZAATAR).st_mode) == 0o644


def test_a_missing_layer_stops_the_run_before_the_index_step(example):
    shutil.rmtree(example / "00 life_archive")
    outcome = maintenance.maintain(example)
    assert not outcome["ok"] and outcome["error"]["code"] == "layer_missing"
    assert "exit_code" not in outcome and "index" not in outcome["steps"]


def test_run_log_is_private_bounded_and_free_of_paths(example, tmp_path):
    log = tmp_path / "runs.jsonl"
    log.write_bytes(b"x" * (maintenance.LOG_MAX_BYTES + 1))
    os.chmod(log, 0o600)
    maintenance.maintain(example, log=log)
    rotated = log.with_name("runs.jsonl.1")
    assert rotated.stat().st_size > maintenance.LOG_MAX_BYTES
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    record = json.loads(log.read_text(encoding="utf-8"))
    assert record["ok"] is True and record["code"] is None
    assert str(tmp_path) not in log.read_text(encoding="utf-8")


def test_a_symlinked_log_is_refused(example, tmp_path):
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("", encoding="utf-8")
    link = tmp_path / "runs.jsonl"
    link.symlink_to(target)
    outcome = maintenance.maintain(example, log=link)
    assert not outcome["ok"] and outcome["error"]["code"] == "log_unwritable"
    assert outcome["steps"]["verify"]["ok"]  # the run itself happened and is reported
    assert target.read_text(encoding="utf-8") == ""


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_log_path_that_is_no_regular_file_fails_at_once_and_names_the_fix(example, tmp_path,
                                                                            kind):
    import subprocess
    import sys

    log = tmp_path / "runs.jsonl"
    if kind == "fifo":
        os.mkfifo(log)
    else:
        log.mkdir()
    done = subprocess.run([sys.executable, "-m", "memory_forest", "maintain", str(example),
                           "--log", str(log), "--json"], capture_output=True, text=True,
                          timeout=30)  # a FIFO opened for writing would wait for a reader
    outcome = json.loads(done.stdout)
    assert done.returncode != 0 and outcome["error"]["code"] == "log_unwritable"
    assert "--log" in outcome["error"]["message"]
    assert outcome["steps"]["verify"]["ok"]


def test_an_interrupted_write_is_finished_before_the_checks(example, tmp_path):
    import signal
    import subprocess
    import sys

    from memory_forest import lock

    env = dict(os.environ, MEMORY_FOREST_TEST_CRASH_AT="writing")
    killed = subprocess.run([sys.executable, "-m", "memory_forest", "remember", str(example),
                             "--tree", "kitchen", "--branch", "fermentation", "--leaf", "miso",
                             "--title", "Miso", "--content", "Miso batch 1 started."],
                            capture_output=True, env=env, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    lock.unlock_stale(example)
    outcome = maintenance.maintain(example, verify_all=True)
    assert outcome["ok"], outcome.get("error")
    assert outcome["steps"]["journal"] == {**outcome["steps"]["journal"], "recovered": 1,
                                           "action": "rolled_back"}
    assert not (example / "04 stm/kitchen/fermentation/miso.md").exists()

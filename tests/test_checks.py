"""checks: one scan -> validate -> audit pipeline, which every command that judges a forest runs."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import raises_code

from memory_forest import checks, index, operations
from memory_forest import maintain as maintenance
from memory_forest.browse import browse
from memory_forest.errors import ForestError
from memory_forest.forest import Forest
from memory_forest.quarantine import for_indexing

ZAATAR = "04 stm/kitchen/fermentation/zaatar-blend.md"
KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"


def _break(root: Path) -> None:
    """One link error (audit only), one missing parent link (audit), one wide mode (validate)."""
    leaf = root / ZAATAR
    leaf.write_text(leaf.read_text(encoding="utf-8").replace("Up: [[03 mtm", "Up: [[02 ltm"),
                    encoding="utf-8")
    os.chmod(root / KIMCHI, 0o644)


def test_every_command_reports_what_the_one_check_found(example: Path, tmp_path: Path):
    _break(example)
    found = checks.check_forest(Forest.open(example)).issues
    strict = [issue.to_dict() for issue in found]
    graded = [issue.to_dict() for issue in for_indexing(found)]
    assert {issue["code"] for issue in strict} == {
        "link_not_canonical", "link_parent_missing", "mode_file_not_private"}
    assert operations.audit(example)["issues"] == strict
    assert operations.validate(example)["issues"] == [
        issue.to_dict()
        for issue in checks.check_forest(Forest.open(example), audit=False).issues] == [
        issue for issue in strict if not issue["code"].startswith("link_")]
    assert index.build(Forest.open(example))["problems"] == graded
    assert maintenance.maintain(example)["problems"] == graded
    shown = browse(example, tmp_path / "site")["issues"]
    assert shown == {"errors": 3, "warnings": 0}


def test_a_recorder_times_each_step_and_counts_as_indexing_grades(example: Path):
    _break(example)
    recorder = checks.Recorder()
    checked = checks.check_forest(Forest.open(example), recorder=recorder)
    assert list(recorder.steps) == ["scan", "validate", "audit"]
    assert all(step["ok"] and step["duration_ms"] >= 0 for step in recorder.steps.values())
    assert recorder.steps["scan"]["files"] == len(checked.snap.facts) == 12
    assert recorder.steps["validate"] == {**recorder.steps["validate"],
                                          "errors": 0, "warnings": 1}  # the wide mode
    # Link problems are indexed all the same: indexing grades them as warnings.
    assert recorder.steps["audit"] == {**recorder.steps["audit"], "errors": 0, "warnings": 2}
    assert recorder.counts == checked.snap.layer_counts()


def test_a_failed_step_is_recorded_as_not_ok_and_raised():
    recorder = checks.Recorder()

    def fails() -> None:
        raise ForestError("root_missing", "gone")

    raises_code(lambda: recorder.step("scan", fails), "root_missing")
    assert recorder.steps["scan"]["ok"] is False and set(recorder.steps["scan"]) == {
        "ok", "duration_ms"}


def test_triage_stops_at_a_forest_fault_after_the_check_has_counted(example: Path):
    shutil.rmtree(example / "00 life_archive")
    recorder = checks.Recorder()
    checked = checks.check_forest(Forest.open(example), recorder=recorder)
    raises_code(checked.triage, "layer_missing")
    assert recorder.counts["04 stm"] == 4  # reported even though the run stops here
    outcome = maintenance.maintain(example)
    assert outcome["error"]["code"] == "layer_missing" and outcome["counts"]["04 stm"] == 4


def test_an_incremental_refresh_rereads_only_what_changed(example_forest: Path):
    hour_ago = time.time_ns() - 3600 * 10**9  # outside the racy window of the next build
    for folder, _, names in os.walk(example_forest):
        for name in names:
            os.utime(Path(folder) / name, ns=(hour_ago, hour_ago))
    index.build(Forest.open(example_forest), full=True)
    (example_forest / KIMCHI).write_text(
        (example_forest / KIMCHI).read_text(encoding="utf-8") + "\nMore brine.\n",
        encoding="utf-8")
    recorder = checks.Recorder()
    done = index.refresh(Forest.open(example_forest), recorder=recorder)
    assert recorder.steps["read"]["read"] == 1
    assert done.written == {**done.written, "mode": "incremental", "changed": 1,
                            "unchanged": 11}
    assert recorder.steps["index"] == {**recorder.steps["index"], **done.written, "ok": True}
    assert not done.triage.quarantined


@pytest.mark.parametrize("audit", [True, False])
def test_validate_and_audit_take_a_forest_or_a_path(example_forest: Path, audit: bool):
    check = operations.audit if audit else operations.validate
    with Forest.open(example_forest) as forest:
        by_handle = check(forest)
    by_path = check(example_forest)
    assert by_handle["ok"] and by_handle == by_path

"""``validate``: the structural contract, one minimal bad forest per issue code."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ISSUE_CODES, check, issues_of, raises_code, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_forest import operations

GOOD_EVENT = ('{"event_id":"%s","observed_at":"2026-01-01T00:00:00Z",'
              '"captured_at":"2026-01-01T00:00:01Z","source":"s","kind":"k","payload":{}}')


def validate(root: Path) -> dict:
    return check(root, "validate")


def test_the_example_validates_with_zero_issues(example_forest: Path) -> None:
    outcome = validate(example_forest)
    assert outcome["ok"] is True
    assert outcome["issues"] == []
    assert outcome["summary"] == {"errors": 0, "warnings": 0}
    assert outcome["counts"] == {"00 life_archive": 1, "01 xltm": 1, "02 ltm": 2, "03 mtm": 2,
                                 "04 stm": 4, "05 daily": 1, "06 istm": 1}
    assert "error" not in outcome


def test_the_plain_reference_layout_validates(reference_forest: Path) -> None:
    outcome = validate(reference_forest)
    assert outcome["ok"] is True
    # It has no .memory-forest/forest.json: defaults apply, and that is only a warning.
    assert issues_of(outcome) == [(".memory-forest/forest.json", "config_missing")]
    assert outcome["issues"][0]["level"] == "warning"


def test_an_empty_forest_validates(empty_forest: Path) -> None:
    outcome = validate(empty_forest)
    assert outcome["ok"] is True and outcome["issues"] == []


def test_result_shape(example_forest: Path) -> None:
    outcome = validate(example_forest)
    assert {"ok", "operation", "schema_version", "issues", "summary", "counts"} <= set(outcome)
    assert outcome["operation"] == "validate" and outcome["schema_version"] == 1


# --- one minimal bad forest per code --------------------------------------------------------

STM_DIR = "04 stm/kitchen/fermentation"


def _chmod(rel: str, mode: int) -> Callable[[Path], None]:
    return lambda root: (root / rel).chmod(mode)


def _rmtree(rel: str) -> Callable[[Path], None]:
    return lambda root: shutil.rmtree(root / rel)


def _file(rel: str, data: str | bytes, mode: int = 0o600) -> Callable[[Path], None]:
    return lambda root: write(root, rel, data, mode)


def _symlink(rel: str, target: str) -> Callable[[Path], None]:
    return lambda root: os.symlink(target, root / rel)


def _mkdir(rel: str) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        (root / rel).mkdir()
        (root / rel).chmod(0o700)
    return make


CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    # (case id, how to break the example, expected code, expected path)
    ("unknown layer file", _file("07 extra/x.md", "# x\n"), "route_unknown_layer",
     "07 extra/x.md"),
    ("noncanonical layer dir", _file("05 Daily/2026-01-01.md", "# x\n"),
     "route_noncanonical_layer_dir", "05 Daily"),
    ("noncanonical layer file", _file("03_mtm/a/b.md", "# x\n"),
     "route_noncanonical_layer_dir", "03_mtm/a/b.md"),
    ("bad shape ltm", _file("02 ltm/pantry.md", "# x\n"), "route_bad_shape", "02 ltm/pantry.md"),
    ("bad shape daily", _file("05 daily/notes.md", "# x\n"), "route_bad_shape",
     "05 daily/notes.md"),
    ("bad shape istm", _file("06 istm/log.jsonl", ""), "route_bad_shape", "06 istm/log.jsonl"),
    ("folder too deep", _mkdir("03 mtm/kitchen/deeper"), "route_bad_shape",
     "03 mtm/kitchen/deeper"),
    ("bad segment", _file(f"{STM_DIR}/ leading-space.md", "# x\n"), "route_bad_segment",
     f"{STM_DIR}/ leading-space.md"),
    ("hidden file", _file(f"{STM_DIR}/.hidden.md", "# x\n"), "route_bad_segment",
     f"{STM_DIR}/.hidden.md"),
    ("extension case", _file("05 daily/2026-11-29.MD", "# x\n"), "route_extension_case",
     "05 daily/2026-11-29.MD"),
    ("case-only file collision", _file("02 ltm/Kitchen_LTM.md", "# K\n"),
     "route_casefold_collision", "02 ltm/kitchen_LTM.md"),
    ("case-only dir collision", _mkdir("03 mtm/Kitchen"), "route_casefold_collision",
     "03 mtm/kitchen"),
    ("layer missing", _rmtree("00 life_archive"), "layer_missing", "00 life_archive"),
    ("parent missing", _file("03 mtm/garage/tools.md", "# t\n"), "parent_missing",
     "03 mtm/garage/tools.md"),
    ("stm parent missing", _file("04 stm/kitchen/pickles/jar.md", "# j\n"), "parent_missing",
     "04 stm/kitchen/pickles/jar.md"),
    ("duplicate id", _file("05 daily/2026-11-29.md", "---\nid: ltm-kitchen\n---\n# d\n"),
     "duplicate_id", "05 daily/2026-11-29.md"),
    ("istm invalid json", _file("06 istm/events.jsonl", "{oops\n"), "istm_invalid_json",
     "06 istm/events.jsonl"),
    ("istm duplicate key", _file("06 istm/events.jsonl", '{"a":1,"a":2}\n'),
     "istm_duplicate_key", "06 istm/events.jsonl"),
    ("istm non finite", _file("06 istm/events.jsonl", '{"a":Infinity}\n'), "istm_non_finite",
     "06 istm/events.jsonl"),
    ("istm not object", _file("06 istm/events.jsonl", "[]\n"), "istm_not_object",
     "06 istm/events.jsonl"),
    ("istm missing key", _file("06 istm/events.jsonl", '{"event_id":"x"}\n'),
     "istm_missing_key", "06 istm/events.jsonl"),
    ("istm bad event id", _file("06 istm/events.jsonl", GOOD_EVENT.replace('"%s"', "1") + "\n"),
     "istm_bad_event_id", "06 istm/events.jsonl"),
    ("istm duplicate event id",
     _file("06 istm/events.jsonl", GOOD_EVENT % "evt-20261128-0001" + "\n"),
     "istm_duplicate_event_id", "06 istm/events.jsonl"),
    ("frontmatter invalid", _file(f"{STM_DIR}/x.md", "---\nid: [\n---\n# x\n"),
     "frontmatter_invalid", f"{STM_DIR}/x.md"),
    ("frontmatter bad field", _file(f"{STM_DIR}/x.md", "---\nstatus: gone\n---\n# x\n"),
     "frontmatter_bad_field", f"{STM_DIR}/x.md"),
    ("not utf8", _file("05 daily/2026-11-29.md", b"# \xc3\x28\n"), "not_utf8",
     "05 daily/2026-11-29.md"),
    ("dir mode", _chmod("03 mtm/kitchen", 0o755), "mode_dir_not_private", "03 mtm/kitchen"),
    ("root mode", lambda root: root.chmod(0o711), "mode_dir_not_private", "."),
    ("file mode", _chmod("01 xltm/XLTM.md", 0o644), "mode_file_not_private", "01 xltm/XLTM.md"),
    ("config mode", _chmod(".memory-forest/forest.json", 0o640), "mode_file_not_private",
     ".memory-forest/forest.json"),
    ("symlink file", _symlink("05 daily/2026-11-29.md", "/etc/hostname"), "symlink",
     "05 daily/2026-11-29.md"),
    ("symlink dir", _symlink("03 mtm/garden", "/tmp"), "symlink", "03 mtm/garden"),
    ("symlink layer", lambda root: (shutil.rmtree(root / "05 daily"),
                                    os.symlink(root / "04 stm", root / "05 daily")),
     "symlink", "05 daily"),
    ("special file", lambda root: os.mkfifo(root / "05 daily/2026-11-29.md", 0o600),
     "special_file", "05 daily/2026-11-29.md"),
    ("file too large", _file("05 daily/2026-11-29.md", "# d\n" + "x" * (4 * 1024 * 1024)),
     "file_too_large", "05 daily/2026-11-29.md"),
]


@pytest.mark.parametrize(("mutate", "code", "path"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_each_structural_problem_is_reported_at_its_path(
    example_forest: Path, mutate: Callable[[Path], None], code: str, path: str
) -> None:
    mutate(example_forest)
    outcome = validate(example_forest)
    assert (path, code) in issues_of(outcome, code), outcome["issues"]
    assert outcome["ok"] is False
    assert outcome["error"]["code"] == "validate_failed"
    assert outcome["summary"]["errors"] >= 1
    # audit always includes what validate finds
    assert (path, code) in issues_of(check(example_forest, "audit"), code)


def test_link_limit_from_forest_json_is_an_issue(example_forest: Path) -> None:
    config = example_forest / ".memory-forest/forest.json"
    data = json.loads(config.read_bytes())
    data["limits"] = {"max_links_per_document": 2}
    config.write_text(json.dumps(data))
    outcome = validate(example_forest)
    # XLTM and the LTMs have two links each (fine); each MTM has three.
    assert issues_of(outcome, "limit_exceeded") == [
        ("03 mtm/greenhouse/irrigation.md", "limit_exceeded"),
        ("03 mtm/kitchen/fermentation.md", "limit_exceeded"),
    ]


@pytest.mark.parametrize(
    ("limit", "value"),
    [("max_files", 12), ("max_depth", 2), ("max_total_bytes", 1000), ("max_dirs", 13)],
)
def test_walk_limits_from_forest_json_fail_closed(example_forest: Path, limit: str,
                                                  value: int) -> None:
    # The example has 13 files (with forest.json), 14 dirs, depth 3 and about 7 KB.
    config = example_forest / ".memory-forest/forest.json"
    data = json.loads(config.read_bytes())
    data["limits"] = {limit: value}
    config.write_text(json.dumps(data))
    error = raises_code(lambda: validate(example_forest), "limit_exceeded")
    assert error.details["limit"] == limit


def test_files_at_the_root_and_unknown_dirs_are_warnings(example_forest: Path) -> None:
    write(example_forest, "README.md", "# notes\n")
    (example_forest / "scratch").mkdir(mode=0o700)
    outcome = validate(example_forest)
    assert outcome["ok"] is True
    assert issues_of(outcome) == [("README.md", "unexpected_entry"),
                                  ("scratch", "route_unknown_layer")]
    assert {issue["level"] for issue in outcome["issues"]} == {"warning"}


@pytest.mark.parametrize("name", [".obsidian", ".git", ".trash"])
def test_tool_directories_at_the_root_are_ignored(example_forest: Path, name: str) -> None:
    tool = example_forest / name
    tool.mkdir()
    write(example_forest, f"{name}/workspace.json", "{}", mode=0o644)
    write(example_forest, f"{name}/04 stm/x.md", "[[nowhere]]", mode=0o666)
    os.symlink("/etc", tool / "etc-link")
    os.symlink(example_forest / "01 xltm/XLTM.md", tool / "xltm-link.md")
    tool.chmod(0o755)
    for operation in ("validate", "audit"):
        outcome = check(example_forest, operation)
        assert outcome["ok"] is True and outcome["issues"] == []


def test_validate_does_not_check_links(example_forest: Path) -> None:
    write(example_forest, f"{STM_DIR}/orphan.md", "# no parent link, [[04 stm/x/y/z]]\n")
    assert validate(example_forest)["issues"] == []
    assert check(example_forest, "audit")["ok"] is False


def test_a_missing_root_is_an_error_not_an_issue(tmp_path: Path) -> None:
    raises_code(lambda: validate(tmp_path / "nope"), "root_missing")


def test_a_symlinked_root_is_refused(example_forest: Path, tmp_path: Path) -> None:
    os.symlink(example_forest, tmp_path / "alias")
    raises_code(lambda: validate(tmp_path / "alias"), "root_symlink")


def test_issues_are_sorted_and_unique(example_forest: Path) -> None:
    for rel in ("01 xltm/XLTM.md", "02 ltm/kitchen_LTM.md", "03 mtm/kitchen"):
        (example_forest / rel).chmod(0o755)
    issues = validate(example_forest)["issues"]
    keys = [(i["path"], i["code"], i["message"], i["level"]) for i in issues]
    assert keys == sorted(set(keys)) and len(keys) == 3


# --- property: any file name and any frontmatter give a result, never a crash ---------------

names = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="/\x00"),
                min_size=1, max_size=40).filter(lambda s: s not in (".", "..")
                                                and len(s.encode()) <= 200)


@pytest.fixture(scope="module")
def fuzz_forest(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "forest"
    operations.init(root, example=True)
    return root


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=names)
def test_any_file_name_gives_a_result(fuzz_forest: Path, name: str) -> None:
    path = fuzz_forest / STM_DIR / name
    write(fuzz_forest, f"{STM_DIR}/{name}", "# fuzz\n")
    try:
        for operation in ("validate", "audit"):
            outcome = check(fuzz_forest, operation)
            assert isinstance(outcome["ok"], bool)
            assert {issue["code"] for issue in outcome["issues"]} <= ISSUE_CODES
            assert all(not issue["path"].startswith("/") for issue in outcome["issues"])
    finally:
        path.unlink()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml=st.text(st.characters(exclude_categories=("Cs",)), max_size=150),
       body=st.text(st.characters(exclude_categories=("Cs",)), max_size=150))
def test_any_frontmatter_in_a_document_gives_a_result(fuzz_forest: Path, yaml: str,
                                                      body: str) -> None:
    write(fuzz_forest, f"{STM_DIR}/fuzzed.md", f"---\n{yaml}\n---\n{body}")
    try:
        for operation in ("validate", "audit"):
            outcome = check(fuzz_forest, operation)
            assert isinstance(outcome["ok"], bool)
            assert {issue["code"] for issue in outcome["issues"]} <= ISSUE_CODES
    finally:
        (fuzz_forest / STM_DIR / "fuzzed.md").unlink()

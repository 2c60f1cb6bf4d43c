"""The ``memory-forest`` CLI, run in a subprocess exactly as a user or an agent runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli, tree_state, write

from memory_forest import __version__

COMMANDS = ("init", "validate", "audit", "doctor")


def compact(data: dict) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def assert_one_json_object(result, operation: str, ok: bool) -> dict:
    data = result.json()
    assert result.stdout == compact(data) + "\n"  # deterministic: sorted keys, compact
    assert data["ok"] is ok
    assert data["operation"] == operation
    assert data["schema_version"] == 1
    if not ok:
        assert set(data["error"]) == {"code", "message", "details"}
        assert data["error"]["code"] and data["error"]["message"]
    assert "Traceback" not in result.stderr
    return data


@pytest.fixture
def broken_forest(example_forest: Path) -> Path:
    """The example with one error (a leaf without its parent link) and one warning."""
    write(example_forest, "04 stm/kitchen/fermentation/orphan.md", "# Orphan\n")
    write(example_forest, "stray.txt", "not part of the forest")
    return example_forest


# --- entry points, version and help ---------------------------------------------------------


def test_version() -> None:
    result = run_cli("--version")
    assert (result.code, result.stdout) == (0, f"memory-forest {__version__}\n")


def test_console_script_is_installed_and_runs() -> None:
    script = Path(sys.executable).parent / "memory-forest"
    if not script.exists():
        script = shutil.which("memory-forest")
    assert script, "the memory-forest console script is not installed"
    proc = subprocess.run([os.fspath(script), "--version"], capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stdout) == (0, f"memory-forest {__version__}\n")


def test_help_lists_every_command() -> None:
    result = run_cli("--help")
    assert result.code == 0
    for command in COMMANDS:
        assert command in result.stdout
    assert "--json" in result.stdout and "--version" in result.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_help_has_an_example(command: str) -> None:
    result = run_cli(command, "--help")
    assert result.code == 0
    assert "Example:" in result.stdout
    assert f"memory-forest {command}" in result.stdout


# --- --json: exactly one object, success and failure, any position --------------------------


def test_init_json_then_validate_audit_doctor_json(tmp_path: Path) -> None:
    root = tmp_path / "forest"
    data = assert_one_json_object(run_cli("--json", "init", root, "--example"), "init", True)
    assert data["root"] == "forest" and len(data["files"]) == 12
    for command in ("validate", "audit", "doctor"):
        result = run_cli(command, root, "--json")
        assert result.code == 0
        data = assert_one_json_object(result, command, True)
        assert str(tmp_path) not in result.stdout  # paths are relative to the root


def test_json_position_does_not_change_the_output(example_forest: Path) -> None:
    before = run_cli("--json", "audit", example_forest)
    after = run_cli("audit", example_forest, "--json")
    assert before.stdout == after.stdout
    assert_one_json_object(before, "audit", True)


@pytest.mark.parametrize("command", ["validate", "audit"])
def test_failed_check_is_one_json_object_with_issues(broken_forest: Path, command: str) -> None:
    result = run_cli(command, broken_forest, "--json")
    if command == "validate":
        # validate ignores links: only the warning remains, and warnings do not fail
        assert result.code == 0
        data = assert_one_json_object(result, command, True)
        assert [(i["path"], i["code"]) for i in data["issues"]] == [
            ("stray.txt", "unexpected_entry")]
        return
    assert result.code == 1
    data = assert_one_json_object(result, command, False)
    assert data["error"]["code"] == "audit_failed"
    assert data["summary"] == {"errors": 1, "warnings": 1}
    for issue in data["issues"]:
        assert set(issue) == {"level", "code", "path", "message"}
    assert ("04 stm/kitchen/fermentation/orphan.md", "link_parent_missing", "error") in [
        (i["path"], i["code"], i["level"]) for i in data["issues"]]


@pytest.mark.parametrize(
    ("args", "operation", "code"),
    [
        (("validate", "{tmp}/missing"), "validate", "root_missing"),
        (("audit", "{tmp}/a-file"), "audit", "root_not_directory"),
        (("doctor", "{tmp}/missing"), "doctor", "root_missing"),
        (("init", "{tmp}/a-file"), "init", "init_target_exists"),
        (("init", "{tmp}/no/such/parent"), "init", "init_parent_missing"),
    ],
)
def test_handled_failures_are_one_json_object(tmp_path: Path, args, operation, code) -> None:
    write(tmp_path, "a-file", "x")
    result = run_cli(*(arg.format(tmp=tmp_path) for arg in args), "--json")
    assert result.code == 1
    data = assert_one_json_object(result, operation, False)
    assert data["error"]["code"] == code
    assert str(tmp_path) not in result.stdout


def test_limit_and_config_failures_carry_their_codes(example_forest: Path) -> None:
    config = example_forest / ".memory-forest/forest.json"
    data = json.loads(config.read_bytes())
    config.write_text(json.dumps(dict(data, limits={"max_files": 2})))
    result = run_cli("validate", example_forest, "--json")
    assert result.code == 1
    error = assert_one_json_object(result, "validate", False)["error"]
    assert error["code"] == "limit_exceeded" and error["details"]["limit"] == "max_files"

    config.write_text(json.dumps(dict(data, surprise=1)))
    result = run_cli("audit", example_forest, "--json")
    error = assert_one_json_object(result, "audit", False)["error"]
    assert error["code"] == "config_unknown_key"
    assert error["details"]["path"] == ".memory-forest/forest.json"


# --- usage errors exit 2 --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "operation"),
    [
        (("validate",), "validate"),
        (("audit", "a", "b"), "audit"),
        (("doctor", "--bogus", "x"), "doctor"),
        (("frobnicate",), "memory-forest"),
        ((), "memory-forest"),
    ],
)
def test_usage_errors_exit_2_and_are_json_under_json(args, operation: str) -> None:
    result = run_cli("--json", *args)
    assert result.code == 2
    data = assert_one_json_object(result, operation, False)
    assert data["error"]["code"] == "usage_error"


@pytest.mark.parametrize("args", [("validate",), ("frobnicate",), ()])
def test_human_usage_errors_exit_2_with_usage_on_stderr(args) -> None:
    human = run_cli(*args)
    assert human.code == 2
    assert human.stdout == ""
    assert "Usage" in human.stderr and "Traceback" not in human.stderr


def test_json_after_the_command_also_covers_usage_errors() -> None:
    result = run_cli("validate", "--json")
    assert result.code == 2
    assert assert_one_json_object(result, "validate", False)["error"]["code"] == "usage_error"


# --- human output ---------------------------------------------------------------------------


def test_human_output_of_a_clean_forest(tmp_path: Path) -> None:
    root = tmp_path / "forest"
    result = run_cli("init", root, "--example")
    assert result.code == 0 and "created forest 'forest' with 12 example files" in result.stdout
    result = run_cli("audit", root)
    assert result.code == 0
    assert "audit ok: 12 canonical files, 0 error(s), 0 warning(s)" in result.stdout
    result = run_cli("doctor", root)
    assert result.code == 0
    for word in ("versions", "fts5", "config", "04 stm", "index", "lock", "never required"):
        assert word in result.stdout


def test_human_output_of_a_broken_forest(broken_forest: Path) -> None:
    result = run_cli("audit", broken_forest)
    assert result.code == 1
    assert "link_parent_missing" in result.stdout
    assert "04 stm/kitchen/fermentation/orphan.md" in result.stdout
    assert "audit failed" in result.stdout


def test_human_error_goes_to_stderr(tmp_path: Path) -> None:
    result = run_cli("validate", tmp_path / "missing")
    assert result.code == 1
    assert result.stdout == ""
    assert "root_missing" in result.stderr and "Traceback" not in result.stderr


def test_control_characters_from_the_forest_never_reach_the_terminal(example_forest) -> None:
    name = "\x1b]0;owned\x07\x1b[2J.md"
    write(example_forest, f"05 daily/{name}", "# x\n")
    result = run_cli("validate", example_forest)
    assert result.code == 1
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b]0;owned\\x07\\x1b[2J.md" in result.stdout
    data = run_cli("validate", example_forest, "--json").json()
    assert f"05 daily/{name}" in [issue["path"] for issue in data["issues"]]


# --- read-only commands ---------------------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "audit", "doctor"])
@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["human", "json"])
def test_read_only_commands_change_nothing(tmp_path: Path, broken_forest: Path, command: str,
                                           json_flag: tuple[str, ...]) -> None:
    (broken_forest / "01 xltm/XLTM.md").chmod(0o644)  # a finding must not be "fixed" either
    before = tree_state(tmp_path)  # the forest and its parent (no lock, no stray files)
    result = run_cli(command, broken_forest, *json_flag)
    assert result.code in (0, 1)
    assert tree_state(tmp_path) == before


def test_doctor_reports_and_exits_0_on_a_broken_forest(example_forest: Path) -> None:
    (example_forest / ".memory-forest/forest.json").write_text("{")
    result = run_cli("doctor", example_forest, "--json")
    assert result.code == 0
    data = assert_one_json_object(result, "doctor", True)
    assert data["config"]["state"] == "invalid"
    assert data["config"]["error"]["code"] == "config_invalid_json"
    assert data["network_required"] is False
    assert data["index"] == {"state": "absent"}
    assert data["lock"] == {"state": "free"}
    assert set(data["sqlite_features"]) == {"fts5", "fts5_trigram"}
    assert data["versions"]["memory_forest"] == __version__


def test_doctor_counts_per_layer(example_forest: Path) -> None:
    data = run_cli("doctor", example_forest, "--json").json()
    assert data["config"]["state"] == "present"
    assert data["counts"] == {"00 life_archive": 1, "01 xltm": 1, "02 ltm": 2, "03 mtm": 2,
                              "04 stm": 4, "05 daily": 1, "06 istm": 1}


# --- no traceback, whatever the input -------------------------------------------------------


def _weird_roots(tmp_path: Path) -> dict[str, str]:
    write(tmp_path, "file.md", b"\xff\xfe binary")
    os.symlink(tmp_path / "file.md", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    garbage = tmp_path / "garbage"
    write(garbage, "02 LTM/x.md", b"\x00\x01")
    write(garbage, "06 istm/events.jsonl", b'{"a":NaN}\n[[[[\n\xff\n')
    write(garbage, "04 stm/a/b/c.md", "---\n: : :\n---\n[[../../../etc/passwd]]\n", 0o777)
    os.symlink("/", garbage / "03 mtm")
    paths = {"file": tmp_path / "file.md", "symlink": tmp_path / "link",
             "fifo": tmp_path / "fifo", "garbage": garbage, "too long": tmp_path / ("x" * 300)}
    # "" is the current directory to the parser; the tests run from tmp_path
    return {name: os.fspath(path) for name, path in {**paths, "empty": ""}.items()}


def test_no_traceback_for_any_bad_input(tmp_path: Path) -> None:
    roots = _weird_roots(tmp_path)
    runs = [("validate", root) for root in roots.values()]
    runs += [("audit", roots["garbage"]), ("doctor", roots["garbage"])]
    for command, root in runs:
        result = run_cli(command, root, "--json", cwd=tmp_path)
        assert "Traceback" not in result.stderr, (command, root, result.stderr)
        assert result.code in (0, 1), (command, root)
        assert result.json()["operation"] == command


def test_no_traceback_for_bad_init_targets(tmp_path: Path) -> None:
    roots = _weird_roots(tmp_path)
    for name in ("symlink", "fifo", "too long"):
        result = run_cli("init", roots[name], cwd=tmp_path)
        assert "Traceback" not in result.stderr, (name, result.stderr)
        assert result.code == 1, name
        assert "error" in result.stderr

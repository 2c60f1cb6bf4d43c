"""The ``memory-forest`` CLI, run in a subprocess exactly as a user or an agent runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import console_script, run_cli, tree_state, write

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
        (("init",), "init"),
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


@pytest.mark.parametrize(("args", "message", "hint"), [
    (("init",), "Missing argument 'ROOT'.", "memory-forest init"),
    (("validate", "x", "--bogus"), "No such option: --bogus", "memory-forest validate"),
    (("frobnicate",), "No such command 'frobnicate'.", "memory-forest"),
    (("retrieve", "x", "q", "--limit", "many"), "Invalid value for '--limit'",
     "memory-forest retrieve"),
])
def test_human_usage_errors_are_one_error_line_and_a_hint(args, message: str, hint: str) -> None:
    human = run_cli(*args)
    assert human.code == 2
    assert human.stdout == ""
    first, second = human.stderr.splitlines()
    assert first.startswith(f"error [usage_error] {message}")
    assert second == f"Try '{hint} --help' for help."


def test_bare_command_shows_the_help_on_stderr() -> None:
    human = run_cli()
    assert human.code == 2 and human.stdout == ""
    assert human.stderr.startswith("Usage: memory-forest") and "Commands" in human.stderr


def test_json_after_the_command_also_covers_usage_errors() -> None:
    result = run_cli("validate", "x", "--bogus", "--json")
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


# --- the default root -----------------------------------------------------------------------

KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
ROOT_COMMANDS = ("validate", "audit", "doctor", "index", "route", "search", "retrieve", "open",
                 "status", "capture", "remember", "apply-daily", "structured-context",
                 "apply-structured", "promote", "supersede", "gate", "serve", "maintain",
                 "unlock", "browse")


@pytest.fixture
def indexed(example_forest: Path) -> Path:
    assert run_cli("index", example_forest).code == 0
    return example_forest


def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | bytes) -> Path:
    """Write ``$XDG_CONFIG_HOME/memory-forest/config.toml`` under ``tmp_path``."""
    home = tmp_path / "xdg"
    write(home, "memory-forest/config.toml", text)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home / "memory-forest" / "config.toml"


def test_memory_forest_root_makes_root_optional(indexed: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_FOREST_ROOT", str(indexed))
    assert run_cli("validate").stdout.startswith("validate ok: 12 canonical files")
    routed = assert_one_json_object(run_cli("--json", "route", "kimchi"), "route", True)
    assert KIMCHI in [hit["path"] for hit in routed["results"]]
    # retrieve QUERY plainly and with a short option: the same answer
    lean = assert_one_json_object(run_cli("retrieve", "kimchi", "--json"), "retrieve", True)
    full = assert_one_json_object(run_cli("retrieve", "kimchi", "-n", "10", "--json"),
                                  "retrieve", True)
    assert lean["count"] == full["count"] >= 1
    opened = assert_one_json_object(run_cli("--json", "open", KIMCHI), "open", True)
    assert opened["path"] == KIMCHI
    event = json.dumps({"observed_at": "2026-11-29T08:00:00Z", "source": "test",
                        "kind": "note", "payload": {"text": "via the default root"}})
    captured = subprocess.run([sys.executable, "-m", "memory_forest", "--json", "capture", "-"],
                              input=event, capture_output=True, text=True, timeout=60)
    assert captured.returncode == 0 and json.loads(captured.stdout)["ok"], captured.stdout


def test_root_in_the_user_config_file(indexed: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    user_config(tmp_path, monkeypatch, f'# my forest\nroot = "{indexed}"\n')
    assert_one_json_object(run_cli("--json", "audit"), "audit", True)
    done = subprocess.run([sys.executable, "-m", "memory_forest", "gate"],
                          input=b"how cold should the kimchi fridge be?", capture_output=True,
                          timeout=60)
    receipt = json.loads(done.stdout)
    assert done.returncode == 0 and receipt["status"] == "evidence_found"


def test_the_environment_wins_over_the_config_file(indexed: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    user_config(tmp_path, monkeypatch, f'root = "{tmp_path / "elsewhere"}"\n')
    monkeypatch.setenv("MEMORY_FOREST_ROOT", str(indexed))
    assert_one_json_object(run_cli("--json", "validate"), "validate", True)


def test_an_explicit_root_always_wins(indexed: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_FOREST_ROOT", str(tmp_path / "missing"))
    user_config(tmp_path, monkeypatch, "root = [broken\n")  # never read when ROOT is given
    assert_one_json_object(run_cli("--json", "validate", indexed), "validate", True)
    assert_one_json_object(run_cli("--json", "retrieve", indexed, "kimchi"), "retrieve", True)
    routed = run_cli("--json", "route", indexed, "kimchi", "--limit", "3")
    assert KIMCHI in [hit["path"] for hit in assert_one_json_object(routed, "route", True)[
        "results"]]
    assert run_cli("--json", "validate").json()["error"]["code"] == "root_missing"


@pytest.mark.parametrize("args", [("validate",), ("retrieve", "kimchi"), ("gate",),
                                  ("browse", "--out", "site")])
def test_no_default_root_is_root_required(args) -> None:
    operation = args[0]
    data = assert_one_json_object(run_cli("--json", *args), operation, False)
    assert data["error"]["code"] == "root_required"
    human = run_cli(*args)
    assert human.code == 2 and human.stdout == ""
    assert human.stderr.startswith("error [root_required] no forest given: pass ROOT, set "
                                   "MEMORY_FOREST_ROOT")


def test_a_config_file_without_root_is_no_default(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    user_config(tmp_path, monkeypatch, "[other]\nkey = 1\n")
    result = run_cli("--json", "status")
    assert result.code == 2 and result.json()["error"]["code"] == "root_required"


@pytest.mark.parametrize("text", [b"root = 3\n", b'root = ""\n', b'root = "relative/forest"\n',
                                  b"root = [\n", b'root = "\xff"\n'])
def test_a_bad_user_config_is_user_config_invalid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  text: bytes) -> None:
    path = user_config(tmp_path, monkeypatch, text)
    result = run_cli("--json", "validate")
    assert result.code == 1
    error = assert_one_json_object(result, "validate", False)["error"]
    assert error["code"] == "user_config_invalid"
    assert error["details"] == {"path": str(path)} and error["message"].startswith(f"{path}: ")
    human = run_cli("retrieve", "kimchi")
    assert human.stderr.startswith(f"error [user_config_invalid] {path}: ")


def test_hooks_and_schedule_write_the_absolute_default_root(indexed: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.setenv("MEMORY_FOREST_ROOT", indexed.name)  # relative to the working directory
    settings = tmp_path / "settings.json"
    done = run_cli("--json", "hooks", "install", "--client", "claude-code", "--settings",
                   settings, cwd=indexed.parent)
    command = assert_one_json_object(done, "hooks_install", True)["command"]
    assert f"gate {indexed}" in command or f"gate '{indexed}'" in command, command
    entry = run_cli("--json", "schedule", "print", "--scheduler", "cron", "--bin",
                    console_script(), cwd=indexed.parent)
    text = assert_one_json_object(entry, "schedule_print", True)["entries"][0]["text"]
    assert str(indexed) in text


def test_the_gate_without_root_imports_no_heavy_library(indexed: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_FOREST_ROOT", str(indexed))
    probe = ("import sys\nfrom memory_forest.cli import main\n"
             "try:\n    main(['gate'])\nexcept SystemExit:\n    pass\n"
             "heavy = [m for m in ('typer', 'click', 'rich', 'pydantic', 'tomllib') "
             "if m in sys.modules]\nsys.stderr.write(repr(heavy))\n")
    done = subprocess.run([sys.executable, "-c", probe], input=b"kimchi", capture_output=True,
                          timeout=60)
    assert json.loads(done.stdout)["status"] == "evidence_found"
    assert done.stderr.decode() == "[]"


def test_every_root_command_documents_the_default_root() -> None:
    for command in ROOT_COMMANDS:
        done = run_cli(command, "--help")
        assert done.code == 0, (command, done.stderr)
        usage = done.stdout.splitlines()[0]
        assert f"memory-forest {command} [OPTIONS] [ROOT]" in usage, usage
        text = " ".join(done.stdout.split())
        assert "The forest's folder; optional when MEMORY_FOREST_ROOT" in text
        assert "Example:" in done.stdout, command


# --- broken YAML frontmatter ----------------------------------------------------------------


def test_broken_yaml_names_its_line_and_not_the_memory_text(example_forest: Path) -> None:
    secret = "the whole long private recipe " * 10
    write(example_forest, "04 stm/kitchen/fermentation/broken.md",
          f'---\nid: "stm-broken"\ntitle: "Broken"\nnote: {secret}: and more\n---\n'
          "Up: [[03 mtm/kitchen/fermentation]]\n")
    issues = run_cli("--json", "validate", example_forest).json()["issues"]
    [issue] = [i for i in issues if i["code"] == "frontmatter_invalid"]
    assert issue["path"] == "04 stm/kitchen/fermentation/broken.md"
    assert "(line 4: mapping values are not allowed" in issue["message"]
    assert "recipe" not in issue["message"]


def test_a_line_one_positional_short_takes_the_default_root(
        indexed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_FOREST_ROOT", str(indexed))
    assert run_cli("--json", "retrieve", "kimchi").json()["count"] >= 1
    assert run_cli("--json", "gate", "--limit", "3").code == 0
    other = run_cli("--json", "retrieve", tmp_path / "other", "kimchi")
    assert other.code == 1 and other.json()["error"]["code"] == "root_missing"
    missing = run_cli("--json", "retrieve")
    assert missing.code == 2 and "QUERY" in missing.json()["error"]["message"]
    monkeypatch.delenv("MEMORY_FOREST_ROOT")
    user_config(tmp_path, monkeypatch, "root = 3\n")
    bad = run_cli("--json", "gate")
    assert bad.code == 1 and bad.json()["error"]["code"] == "user_config_invalid"

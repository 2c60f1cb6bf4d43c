"""hooks install / uninstall: idempotent, keeps every other setting, backs up, refuses junk."""

from __future__ import annotations

import json
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import raises_code

from memory_forest import hooks

OTHER_SETTINGS = {
    "theme": "dark",
    "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "other-tool check",
                                         "timeout": 5}]}],
    },
    "env": {"ZED": "1", "ALPHA": "2"},  # key order is kept, not sorted
}


def write_settings(path: Path, data: object, mode: int = 0o644) -> bytes:
    raw = json.dumps(data, indent=4).encode()
    path.write_bytes(raw)
    path.chmod(mode)
    return raw


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.memory-forest-backup-*"))


def ours(data: dict, root: Path, client: str = "claude-code") -> list[dict]:
    return [h for group in data.get("hooks", {}).get("UserPromptSubmit", [])
            for h in group.get("hooks", []) if hooks._is_ours(h, hooks.CLIENTS[client], root)]


@pytest.fixture
def settings(tmp_path: Path) -> Path:
    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir()
    return path


def test_install_adds_one_entry_keeps_everything_else_and_backs_up_first(settings, example):
    original = write_settings(settings, OTHER_SETTINGS)
    outcome = hooks.install("claude-code", example, settings)
    assert outcome["ok"] and outcome["action"] == "added" and outcome["changed"] is True
    data = json.loads(settings.read_text())
    [entry] = ours(data, example)
    assert entry == {"type": "command", "command": outcome["command"], "timeout": 30}
    assert shlex.split(entry["command"]) == [sys.executable, "-P", "-m", "memory_forest",
                                             "gate", str(example), "--format", "claude-code"]
    # Everything else is exactly as it was, in the same order.
    client = hooks.CLIENTS["claude-code"]
    data["hooks"]["UserPromptSubmit"] = [
        group for group in data["hooks"]["UserPromptSubmit"]
        if not any(hooks._is_ours(h, client, example) for h in group["hooks"])]
    assert data == OTHER_SETTINGS and list(data) == list(OTHER_SETTINGS)
    assert list(data["env"]) == ["ZED", "ALPHA"]
    [backup] = backups(settings)
    assert backup.read_bytes() == original and stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert outcome["backup"] == str(backup)
    assert stat.S_IMODE(settings.stat().st_mode) == 0o644  # the operator's mode is kept


def test_install_twice_changes_nothing_the_second_time(settings, example):
    write_settings(settings, OTHER_SETTINGS)
    hooks.install("claude-code", example, settings)
    after_first = settings.read_bytes()
    outcome = hooks.install("claude-code", example, settings)
    assert outcome["action"] == "unchanged" and outcome["changed"] is False
    assert outcome["backup"] is None
    assert settings.read_bytes() == after_first and len(backups(settings)) == 1


def test_uninstall_removes_only_what_install_added(settings, example):
    write_settings(settings, OTHER_SETTINGS)
    hooks.install("claude-code", example, settings)
    outcome = hooks.uninstall("claude-code", example, settings)
    assert outcome["action"] == "removed" and outcome["removed"] == 1
    assert json.loads(settings.read_text()) == OTHER_SETTINGS
    again = hooks.uninstall("claude-code", example, settings)
    assert again["action"] == "absent" and again["changed"] is False and again["backup"] is None
    assert len(backups(settings)) == 2  # one per write: install, uninstall


def test_roundtrip_on_settings_without_hooks_restores_the_object(settings, example):
    write_settings(settings, {"theme": "light"})
    hooks.install("claude-code", example, settings)
    assert list(json.loads(settings.read_text())) == ["theme", "hooks"]
    hooks.uninstall("claude-code", None, settings)  # without --root: every gate hook of ours
    assert json.loads(settings.read_text()) == {"theme": "light"}


def test_uninstall_for_one_root_keeps_the_hook_of_another(settings, tmp_path, example):
    other = tmp_path / "other-forest"
    other.mkdir()
    hooks.install("claude-code", example, settings)
    hooks.install("claude-code", other, settings)
    hooks.uninstall("claude-code", example, settings)
    data = json.loads(settings.read_text())
    assert ours(data, example) == [] and len(ours(data, other)) == 1


def test_dry_run_reports_and_writes_nothing(settings, example):
    original = write_settings(settings, OTHER_SETTINGS)
    outcome = hooks.install("claude-code", example, settings, dry_run=True)
    assert outcome["action"] == "added" and outcome["dry_run"] is True
    assert outcome["backup"] is None
    assert settings.read_bytes() == original and backups(settings) == []
    hooks.install("claude-code", example, settings)
    outcome = hooks.uninstall("claude-code", example, settings, dry_run=True)
    assert outcome["action"] == "removed" and len(ours(json.loads(settings.read_text()),
                                                       example)) == 1


def test_a_changed_interpreter_path_is_updated_not_duplicated(settings, example):
    stale = shlex.join(["/old/venv/bin/python", "-P", "-m", "memory_forest", "gate",
                        str(example), "--format", "claude-code"])
    write_settings(settings, {"hooks": {"UserPromptSubmit": [
        {"hooks": [{"type": "command", "command": stale, "timeout": 99}]},
        {"hooks": [{"type": "command", "command": stale}]}]}})
    outcome = hooks.install("claude-code", example, settings)
    assert outcome["action"] == "updated"
    data = json.loads(settings.read_text())
    [entry] = ours(data, example)
    assert entry == {"type": "command", "command": outcome["command"], "timeout": 99}
    assert len(data["hooks"]["UserPromptSubmit"]) == 1


def test_commands_that_only_look_similar_are_not_ours(settings, example):
    lookalikes = [
        f"{sys.executable} -P -m memory_forest gate {example} --format codex",  # other client
        f"{sys.executable} -P -m memory_forest route {example} q",
        f"{sys.executable} -m memory_forest gate {example} --format claude-code",  # no -P
        f"echo {sys.executable} -P -m memory_forest gate {example} --format claude-code",
        f"{sys.executable} -P -m memory_forest gate {example} --format claude-code "
        "--context-bytes big",
        f"{sys.executable} -P -m memory_forest gate {example} --format claude-code "
        "--context-bytes 2048 --strict",
        "unbalanced 'quote",
    ]
    content = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": c}
                                                         for c in lookalikes]}]}}
    write_settings(settings, content)
    assert hooks.uninstall("claude-code", None, settings)["action"] == "absent"
    hooks.install("claude-code", example, settings)
    hooks.uninstall("claude-code", None, settings)
    assert json.loads(settings.read_text()) == content


def test_a_missing_settings_file_is_created_private(settings, example):
    outcome = hooks.install("claude-code", example, settings)
    assert outcome["action"] == "added" and outcome["backup"] is None
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert len(ours(json.loads(settings.read_text()), example)) == 1


@pytest.mark.parametrize("raw, code", [
    (b'{"theme": "dark",', "settings_invalid_json"),
    (b'{"a": 1, "a": 2}', "settings_invalid_json"),
    (b'{"a": NaN}', "settings_invalid_json"),
    (b"[1, 2]", "settings_not_object"),
    (b'{"hooks": []}', "settings_unexpected_shape"),
    (b'{"hooks": {"UserPromptSubmit": {}}}', "settings_unexpected_shape"),
    (b'{"hooks": {"UserPromptSubmit": ["x"]}}', "settings_unexpected_shape"),
    (b"\xff\xfe", "settings_invalid_json"),
])
def test_malformed_settings_are_refused_untouched(settings, example, raw, code):
    settings.write_bytes(raw)
    raises_code(lambda: hooks.install("claude-code", example, settings), code)
    raises_code(lambda: hooks.uninstall("claude-code", example, settings), code)
    assert settings.read_bytes() == raw and backups(settings) == []


def test_a_symlinked_settings_file_is_refused(settings, tmp_path, example):
    real = tmp_path / "real.json"
    real.write_text("{}")
    settings.symlink_to(real)
    raises_code(lambda: hooks.install("claude-code", example, settings), "settings_symlink")
    assert real.read_text() == "{}" and settings.is_symlink()


def test_a_missing_settings_directory_is_not_created(tmp_path, example):
    path = tmp_path / "nowhere" / "settings.json"
    raises_code(lambda: hooks.install("claude-code", example, path), "settings_parent_missing")
    assert not path.parent.exists()


def test_the_root_must_be_a_real_directory(settings, tmp_path, example):
    link = tmp_path / "link"
    link.symlink_to(example)
    raises_code(lambda: hooks.install("claude-code", link, settings), "root_symlink")
    raises_code(lambda: hooks.install("claude-code", tmp_path / "no", settings), "root_missing")
    raises_code(lambda: hooks.install("cursor", example, settings), "client_unknown")
    assert not settings.exists()


def test_a_forest_without_an_index_installs_with_a_warning(settings, empty_forest):
    outcome = hooks.install("claude-code", empty_forest, settings)
    assert outcome["action"] == "added" and "no index" in outcome["warnings"][0]


def test_codex_gets_its_own_format_and_default_file(tmp_path, example, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".codex").mkdir()
    outcome = hooks.install("codex", example)
    assert outcome["settings"] == str(tmp_path / ".codex" / "hooks.json")
    assert outcome["command"].endswith("--format codex")
    data = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    assert len(ours(data, example, "codex")) == 1 and ours(data, example) == []


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_the_installed_command_answers_a_hook_input(settings, example, client, tmp_path):
    command = hooks.install(client, example, settings)["command"]
    # A project that ships its own 'memory_forest' module must not be imported by the hook.
    project = tmp_path / "project"
    (project / "memory_forest").mkdir(parents=True)
    (project / "memory_forest" / "__init__.py").write_text("")
    (project / "memory_forest" / "__main__.py").write_text("print('hijacked')\n")
    hook_input = json.dumps({"session_id": "s", "cwd": str(example), "prompt": "kimchi fridge",
                             "hook_event_name": "UserPromptSubmit"})
    done = subprocess.run(command, shell=True, input=hook_input, capture_output=True,
                          text=True, timeout=60, cwd=project)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    prose, receipt = context.split("\n", 1)
    assert json.loads(receipt)["status"] == "evidence_found"
    assert "(status: evidence_found): 1 trail(s)" in prose and ".md" not in prose


def test_install_with_a_context_budget_writes_it_into_the_command(settings, example, tmp_path):
    outcome = hooks.install("claude-code", example, settings, context_bytes=1536)
    assert shlex.split(outcome["command"])[-4:] == ["--format", "claude-code",
                                                    "--context-bytes", "1536"]
    assert hooks.install("claude-code", example, settings,
                         context_bytes=1536)["action"] == "unchanged"
    hook_input = json.dumps({"prompt": "kimchi fridge", "hook_event_name": "UserPromptSubmit"})
    done = subprocess.run(outcome["command"], shell=True, input=hook_input,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert 0 < len(context.encode("utf-8")) <= 1536
    # Installing again without one goes back to the gate's default, in the same entry.
    again = hooks.install("claude-code", example, settings)
    assert again["action"] == "updated" and "--context-bytes" not in again["command"]
    assert len(ours(json.loads(settings.read_text()), example)) == 1
    hooks.install("claude-code", example, settings, context_bytes=4096)
    assert hooks.uninstall("claude-code", example, settings)["removed"] == 1


@pytest.mark.parametrize("value", ["1535", "65537", "0"])
def test_a_context_budget_out_of_range_is_refused_before_writing(settings, example, value):
    done = subprocess.run([sys.executable, "-m", "memory_forest", "--json", "hooks", "install",
                           "--client", "codex", "--root", str(example), "--settings",
                           str(settings), "--context-bytes", value],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "context_bytes_out_of_range"
    assert not settings.exists()


def test_cli_install_and_uninstall(settings, example):
    def cli(*args: str) -> dict:
        done = subprocess.run([sys.executable, "-m", "memory_forest", "--json", "hooks", *args,
                               "--client", "claude-code", "--settings", str(settings)],
                              capture_output=True, text=True, timeout=60)
        return json.loads(done.stdout)

    write_settings(settings, OTHER_SETTINGS)
    assert cli("install", "--root", str(example), "--dry-run")["action"] == "added"
    assert cli("install", "--root", str(example))["action"] == "added"
    assert cli("install", "--root", str(example))["action"] == "unchanged"
    assert cli("uninstall", "--root", str(example))["action"] == "removed"
    assert json.loads(settings.read_text()) == OTHER_SETTINGS
    settings.write_text("{oops")
    failed = cli("install", "--root", str(example))
    assert failed["ok"] is False and failed["error"]["code"] == "settings_invalid_json"

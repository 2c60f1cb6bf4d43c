"""Install and remove the per-turn gate in a host's hook settings (Claude Code, Codex).

Both hosts read the same shape of JSON: ``{"hooks": {"UserPromptSubmit":
[{"hooks": [{"type": "command", "command": ..., "timeout": ...}]}]}}``,
Claude Code inside its ``settings.json`` and Codex in its ``hooks.json``.

The entry this module adds is recognized by its command alone:
``<python> -P -m memory_forest gate <root> --format <client>``, optionally
followed by ``--context-bytes <n>``, parsed with shell quoting rules. That
is what lets ``uninstall`` remove exactly what ``install`` added (even after
the Python path changed) and nothing else.

Writes are careful with a file the operator owns: the settings are parsed
strictly and refused when malformed, every other key is kept (in order; the
file is re-indented with two spaces), a private backup of the old bytes is
written first, and the new file replaces the old one atomically with its
old mode. A symlinked settings file is refused rather than replaced.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .envelope import result
from .errors import ForestError, usage_error
from .forest import Forest, ForestLike
from .gate import MESSAGES
from .hookcontext import MAX_CONTEXT_BYTES, MIN_CONTEXT_BYTES
from .jsonio import StrictJSONError, loads_strict
from .safety import FILE_MODE, fsync_dir, write_new_private, write_private
from .statefiles import index_path
from .userconfig import resolve_root

EVENT = "UserPromptSubmit"
TIMEOUT_SECONDS = 30
MAX_SETTINGS_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Client:
    name: str
    settings: str  # default settings file, "~"-relative
    gate_format: str  # the gate's --format for this host


CLIENTS = {
    "claude-code": Client("claude-code", "~/.claude/settings.json", "claude-code"),
    "codex": Client("codex", "~/.codex/hooks.json", "codex"),
}


# ``-P``: hosts run hooks in the project's directory, and ``python -m`` would
# otherwise import a ``memory_forest`` module from there before the installed one.
_INTERPRETER_ARGS = ["-P", "-m", "memory_forest", "gate"]
_BUDGET_FLAG = "--context-bytes"


def gate_command(root: Path, client: Client, context_bytes: int | None = None) -> str:
    """The hook command: this interpreter runs the gate's lean path on ``root``."""
    budget = [_BUDGET_FLAG, str(context_bytes)] if context_bytes is not None else []
    return shlex.join([sys.executable, *_INTERPRETER_ARGS, str(root),
                       "--format", client.gate_format, *budget])


def install(client: str, root: ForestLike | None = None,
            settings: str | Path | None = None, dry_run: bool = False,
            context_bytes: int | None = None) -> dict[str, Any]:
    """Add the gate as a ``UserPromptSubmit`` hook; a no-op when it is already there.

    Without ``root`` the hook is for the default root (``userconfig``); without
    ``context_bytes`` the gate's default budget applies.
    """
    client = _client(client)
    if context_bytes is not None and not MIN_CONTEXT_BYTES <= context_bytes <= MAX_CONTEXT_BYTES:
        # Refused here rather than written: the installed hook would block every turn.
        raise usage_error("context_bytes_out_of_range", MESSAGES["context_bytes_out_of_range"])
    root = Forest.of(resolve_root(root)).root
    path = _settings_path(client, settings)
    old = _load(path)
    data = copy.deepcopy(old.data) if old is not None else {}
    command = gate_command(root, client, context_bytes)
    groups = _event_groups(data, create=True)
    found = [handler for group in groups for handler in group.get("hooks", [])
             if _is_ours(handler, client, root)]
    if len(found) == 1 and found[0].get("command") == command:
        action = "unchanged"
    elif found:
        # Ours already, with another interpreter path or duplicated: keep the first, current.
        found[0]["command"] = command
        _remove(data, client, root, keep=found[0])
        action = "updated"
    else:
        groups.append({"hooks": [{"type": "command", "command": command,
                                  "timeout": TIMEOUT_SECONDS}]})
        action = "added"
    warnings = []
    if not index_path(root).exists():
        warnings.append("the forest has no index yet: every prompt goes on without memory until "
                        "'memory-forest index ROOT' has run")
    backup = _save(path, old, data, dry_run) if action != "unchanged" else None
    return result("hooks_install", client=client.name, settings=str(path), event=EVENT,
                  action=action, changed=action != "unchanged", dry_run=dry_run,
                  backup=backup, command=command, warnings=warnings)


def uninstall(client: str, root: str | Path | None = None,
              settings: str | Path | None = None, dry_run: bool = False) -> dict[str, Any]:
    """Remove the gate hooks this module added (for one root, or for every root)."""
    client = _client(client)
    root = Path(os.path.abspath(os.fspath(root))) if root is not None else None
    path = _settings_path(client, settings)
    old = _load(path)
    data = copy.deepcopy(old.data) if old is not None else {}
    removed = _remove(data, client, root) if old is not None else 0
    backup = _save(path, old, data, dry_run) if removed else None
    return result("hooks_uninstall", client=client.name, settings=str(path), event=EVENT,
                  action="removed" if removed else "absent", removed=removed,
                  changed=bool(removed), dry_run=dry_run, backup=backup)


# --- recognizing our entry ------------------------------------------------------------------


def _is_ours(handler: Any, client: Client, root: Path | None) -> bool:
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    options = words[6:]
    budget = options[2:]
    return (len(words) >= 8 and words[1:5] == _INTERPRETER_ARGS
            and options[:2] == ["--format", client.gate_format]
            and (budget == [] or (len(budget) == 2 and budget[0] == _BUDGET_FLAG
                                  and budget[1].isdigit()))
            and (root is None or words[5] == str(root)))


def _remove(data: dict[str, Any], client: Client, root: Path | None,
            keep: dict[str, Any] | None = None) -> int:
    """Remove our handlers; prune the groups, list and object that became empty by it."""
    hooks = data.get("hooks")
    groups = _event_groups(data, create=False)
    removed = 0
    for group in list(groups):
        handlers = group.get("hooks", [])
        kept = [h for h in handlers if h is keep or not _is_ours(h, client, root)]
        if len(kept) == len(handlers):
            continue
        removed += len(handlers) - len(kept)
        if kept:
            group["hooks"] = kept
        else:
            groups.remove(group)
    if removed and not groups:
        del hooks[EVENT]
        if not hooks:
            del data["hooks"]
    return removed


def _event_groups(data: dict[str, Any], create: bool) -> list[dict[str, Any]]:
    """The ``hooks.UserPromptSubmit`` list, checked for the shape both hosts document."""
    hooks = data.setdefault("hooks", {}) if create else data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise _shape("'hooks' is not an object")
    groups = hooks.setdefault(EVENT, []) if create else hooks.get(EVENT, [])
    if not isinstance(groups, list):
        raise _shape(f"'hooks.{EVENT}' is not a list")
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
            raise _shape(f"an entry of 'hooks.{EVENT}' is not an object with a 'hooks' list")
    return groups


def _shape(message: str) -> ForestError:
    return ForestError("settings_unexpected_shape", f"the settings file is not as expected: "
                       f"{message}; nothing was changed")


# --- reading and writing the settings file --------------------------------------------------


def _client(name: str) -> Client:
    if name not in CLIENTS:
        raise usage_error("client_unknown", f"unknown client; use one of: {', '.join(CLIENTS)}")
    return CLIENTS[name]


def _settings_path(client: Client, settings: str | Path | None) -> Path:
    raw = os.fspath(settings) if settings is not None else client.settings
    return Path(os.path.abspath(os.path.expanduser(raw)))


@dataclass(frozen=True)
class _Settings:
    data: dict[str, Any]
    raw: bytes
    mode: int


def _load(path: Path) -> _Settings | None:
    """The settings file as read, or None when it does not exist yet."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise ForestError("settings_parent_missing", "the settings directory does not "
                              "exist; start the client once, or pass --settings") from None
        return None
    if stat.S_ISLNK(st.st_mode):
        raise ForestError("settings_symlink", "the settings file is a symlink; pass the real "
                          "file with --settings")
    if not stat.S_ISREG(st.st_mode):
        raise ForestError("settings_not_regular_file", "the settings path is not a file")
    if st.st_size > MAX_SETTINGS_BYTES:
        raise ForestError("settings_too_large", "the settings file is too large to edit safely")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            raw = os.read(fd, MAX_SETTINGS_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ForestError("settings_unreadable", f"cannot read the settings file "
                          f"({type(exc).__name__})") from None
    try:
        data = loads_strict(raw) if raw.strip() else {}
    except StrictJSONError as exc:
        raise ForestError("settings_invalid_json", f"the settings file is not valid JSON "
                          f"({exc}); fix it first, nothing was changed") from None
    if not isinstance(data, dict):
        raise ForestError("settings_not_object", "the settings file does not hold a JSON "
                          "object; nothing was changed")
    return _Settings(data, raw, stat.S_IMODE(st.st_mode))


def _save(path: Path, old: _Settings | None, new: dict[str, Any], dry_run: bool) -> str | None:
    """Back up the current file (if any), then replace it atomically; return the backup."""
    if dry_run:
        return None
    backup = _backup(path, old.raw) if old is not None else None
    write_private(path, (json.dumps(new, indent=2, ensure_ascii=False) + "\n").encode())
    if old is not None and old.mode != FILE_MODE:
        os.chmod(path, old.mode)  # keep the operator's mode; the new bytes were private first
    return backup


def _backup(path: Path, data: bytes) -> str:
    """Write the file's bytes as read to a new private sibling; never overwrite a backup."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for attempt in range(100):
        suffix = f"-{attempt}" if attempt else ""
        target = path.with_name(f"{path.name}.memory-forest-backup-{stamp}{suffix}")
        try:
            write_new_private(target, data)
        except FileExistsError:
            continue
        fsync_dir(path.parent)
        return str(target)
    raise ForestError("settings_backup_failed", "could not create a backup of the settings")

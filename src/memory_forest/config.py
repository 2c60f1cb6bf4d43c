"""``.memory-forest/forest.json``: strict load, defaults and limits.

Hand-parsed on purpose: this file is read on the per-turn path, where
importing pydantic would cost more than the whole lookup.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from .errors import ForestError
from .jsonio import StrictJSONError, loads_strict
from .layers import LAYERS
from .safety import read_regular
from .statefiles import CONFIG, STATE_DIR, state_rel

CONFIG_SCHEMA_VERSION = 1
_FOREST_ID = re.compile(r"[0-9a-f]{32}")
_KEYS = {"schema_version", "forest_id", "layers", "limits", "sync"}
MAX_PUBLISH_GLOBS = 100
MAX_GLOB_CHARS = 500
MAX_CONFIG_BYTES = 1024 * 1024  # a config is a few hundred bytes; anything huge is not one

DEFAULT_LIMITS: dict[str, int] = {
    "max_files": 500_000,  # 200,000 documents with room for years more, and state files
    "max_dirs": 100_000,
    "max_depth": 32,
    "max_file_bytes": 4 * 1024 * 1024,
    "max_total_bytes": 2 * 1024 * 1024 * 1024,
    "max_links_per_document": 10_000,
    "max_results": 1_000,
}


class Config(NamedTuple):  # read on the per-turn path: no dataclasses import
    forest_id: str | None
    limits: dict[str, int] = DEFAULT_LIMITS  # never mutated
    present: bool = True
    schema_version: int = CONFIG_SCHEMA_VERSION
    publish: tuple[str, ...] = ()  # sync's opt-in globs for attachments (publishing.py)


def new_config_bytes() -> bytes:
    import secrets

    data = {
        "schema_version": CONFIG_SCHEMA_VERSION,
        "forest_id": secrets.token_hex(16),
        "layers": [layer.dirname for layer in LAYERS],
    }
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def load_config(root: Path) -> Config:
    """Load the forest config; a forest without one uses the defaults.

    The config is read before the walk, so it goes through ``read_regular``:
    a symlinked state directory or ``forest.json`` is refused, never followed
    (it could carry limits from outside the forest), and a FIFO cannot hang
    the read.
    """
    rel = state_rel(CONFIG)
    try:
        raw = read_regular(root, rel, MAX_CONFIG_BYTES)
    except ForestError as exc:
        if exc.code == "not_found":
            return Config(forest_id=None, present=False)
        raise ForestError("config_unreadable", f"cannot read {rel} ({exc.code}): {_CONFIG_FIX}",
                          {"path": rel, "reason": exc.code}) from None
    except OSError as exc:
        raise ForestError("config_unreadable", f"cannot read {rel}: {_CONFIG_FIX}",
                          {"path": rel, "error": type(exc).__name__}) from None
    return parse_config(raw)


def parse_config(raw: bytes) -> Config:
    try:
        data = loads_strict(raw)
    except StrictJSONError as exc:
        code = "config_duplicate_key" if exc.kind == "duplicate_key" else "config_invalid_json"
        raise _bad(code, f"forest.json is not valid strict JSON: {exc}") from None
    if not isinstance(data, dict):
        raise _bad("config_invalid_json", "forest.json must hold one JSON object")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise _bad("config_unknown_key", f"unknown key(s) in forest.json: {', '.join(unknown)}")
    version = data.get("schema_version")
    if type(version) is not int:
        raise _bad("config_bad_schema_version", "schema_version must be an integer")
    if version != CONFIG_SCHEMA_VERSION:
        raise _bad("config_unsupported_schema_version",
                   f"forest.json schema_version {version} is not supported "
                   f"(this tool reads {CONFIG_SCHEMA_VERSION})")
    forest_id = data.get("forest_id")
    if not isinstance(forest_id, str) or not _FOREST_ID.fullmatch(forest_id):
        raise _bad("config_bad_forest_id", "forest_id must be 32 lowercase hex characters")
    if data.get("layers") != [layer.dirname for layer in LAYERS]:
        raise _bad("config_bad_layers", "layers must list the seven canonical layer directories")
    return Config(forest_id=forest_id, limits=_limits(data.get("limits", {})),
                  publish=_publish(data.get("sync", {})))


def _limits(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        raise _bad("config_bad_limits", "limits must be an object")
    limits = dict(DEFAULT_LIMITS)
    for key, value in raw.items():
        if key not in DEFAULT_LIMITS:
            raise _bad("config_bad_limits", f"unknown limit '{key}'")
        if type(value) is not int or value < 1:
            raise _bad("config_bad_limits", f"limit '{key}' must be a positive integer")
        limits[key] = value
    return limits


def _publish(raw: Any) -> tuple[str, ...]:
    """``"sync": {"publish": [glob, ...]}``: root-relative globs of attachments sync
    publishes on purpose; never inside ``.git`` or the state directory."""
    if not isinstance(raw, dict) or set(raw) - {"publish"}:
        raise _bad("config_bad_sync", 'sync must be an object whose only key is "publish"')
    globs = raw.get("publish", [])
    if not isinstance(globs, list) or len(globs) > MAX_PUBLISH_GLOBS:
        raise _bad("config_bad_sync", f"sync.publish must be a list of at most "
                   f"{MAX_PUBLISH_GLOBS} globs")
    for glob in globs:
        problem = _glob_problem(glob)
        if problem:
            shown = glob[:80] if isinstance(glob, str) else type(glob).__name__
            raise _bad("config_bad_sync", f"sync.publish glob {shown!r} {problem}")
    return tuple(globs)


def _glob_problem(glob: Any) -> str | None:
    if not isinstance(glob, str) or not glob or len(glob) > MAX_GLOB_CHARS:
        return f"must be a non-empty string of at most {MAX_GLOB_CHARS} characters"
    if glob.startswith("/") or "\\" in glob or any(ord(char) < 32 for char in glob):
        return "must be root-relative, '/'-separated, with no backslash or control character"
    segments = glob.split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        return "must not hold empty, '.' or '..' segments"
    if any("**" in segment and segment != "**" for segment in segments):
        return "may use '**' only as a whole segment"
    first = segments[0].rstrip(". ").lower()
    if first in (".git", "git~1", STATE_DIR) or "*" in first or "?" in first:
        return f"must start with a named folder or file, not .git, {STATE_DIR} or a wildcard"
    return None


# Every config failure ends with what to do: doctor shows the file's state once it is fixed.
_CONFIG_FIX = "fix .memory-forest/forest.json, then run memory-forest doctor ROOT"


def _bad(code: str, message: str) -> ForestError:
    return ForestError(code, f"{message}: {_CONFIG_FIX}", {"path": state_rel(CONFIG)})

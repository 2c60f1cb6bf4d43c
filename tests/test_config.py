"""``.memory-forest/forest.json``: strict parsing, limits, and how it is read."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest
from conftest import raises_code, write

from memory_forest import operations
from memory_forest.config import (
    DEFAULT_LIMITS,
    load_config,
    new_config_bytes,
    parse_config,
)
from memory_forest.layers import LAYERS
from memory_forest.statefiles import config_path

GOOD = {
    "schema_version": 1,
    "forest_id": "0123456789abcdef0123456789abcdef",
    "layers": [layer.dirname for layer in LAYERS],
}


def encoded(**changes) -> bytes:
    data = dict(GOOD, **changes)
    return json.dumps({k: v for k, v in data.items() if v is not ...}).encode()


def test_new_config_is_valid_with_a_random_forest_id() -> None:
    first, second = parse_config(new_config_bytes()), parse_config(new_config_bytes())
    assert re.fullmatch(r"[0-9a-f]{32}", first.forest_id)
    assert first.forest_id != second.forest_id
    assert first.limits == DEFAULT_LIMITS
    assert json.loads(new_config_bytes())["layers"] == GOOD["layers"]


def test_defaults_are_generous_enough_for_years_of_memory() -> None:
    assert DEFAULT_LIMITS["max_files"] >= 200_000
    assert DEFAULT_LIMITS["max_file_bytes"] >= 4 * 1024 * 1024
    assert DEFAULT_LIMITS["max_total_bytes"] >= 2 * 1024 ** 3
    assert DEFAULT_LIMITS["max_depth"] == 32


def test_limits_override_only_what_they_name() -> None:
    config = parse_config(encoded(limits={"max_files": 10, "max_depth": 4}))
    assert config.limits == dict(DEFAULT_LIMITS, max_files=10, max_depth=4)
    assert config.present and config.schema_version == 1


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{", "config_invalid_json"),
        (b"", "config_invalid_json"),
        (b"\xff\xfe", "config_invalid_json"),
        (b"[1]", "config_invalid_json"),
        (b'{"schema_version": NaN}', "config_invalid_json"),
        (b'{"schema_version": 1, "schema_version": 1}', "config_duplicate_key"),
        (encoded(extra=True), "config_unknown_key"),
        (encoded(schema_version="1"), "config_bad_schema_version"),
        (encoded(schema_version=1.0), "config_bad_schema_version"),
        (encoded(schema_version=True), "config_bad_schema_version"),
        (encoded(schema_version=...), "config_bad_schema_version"),
        (encoded(schema_version=2), "config_unsupported_schema_version"),
        (encoded(forest_id="0123456789ABCDEF0123456789ABCDEF"), "config_bad_forest_id"),
        (encoded(forest_id="abc"), "config_bad_forest_id"),
        (encoded(forest_id=...), "config_bad_forest_id"),
        (encoded(layers=GOOD["layers"][:-1]), "config_bad_layers"),
        (encoded(layers=list(reversed(GOOD["layers"]))), "config_bad_layers"),
        (encoded(layers=...), "config_bad_layers"),
        (encoded(limits=[]), "config_bad_limits"),
        (encoded(limits={"max_widgets": 3}), "config_bad_limits"),
        (encoded(limits={"max_files": 0}), "config_bad_limits"),
        (encoded(limits={"max_files": -1}), "config_bad_limits"),
        (encoded(limits={"max_files": True}), "config_bad_limits"),
        (encoded(limits={"max_files": 1.5}), "config_bad_limits"),
        (encoded(limits={"max_files": "10"}), "config_bad_limits"),
        (encoded(sync=[]), "config_bad_sync"),
        (encoded(sync={"publish": ["a/**"], "push": True}), "config_bad_sync"),
        (encoded(sync={"publish": "a/**"}), "config_bad_sync"),
        (encoded(sync={"publish": ["a/**"] * 101}), "config_bad_sync"),
        (encoded(sync={"publish": [""]}), "config_bad_sync"),
        (encoded(sync={"publish": ["a" * 501]}), "config_bad_sync"),
        (encoded(sync={"publish": ["/a"]}), "config_bad_sync"),
        (encoded(sync={"publish": ["a\\b"]}), "config_bad_sync"),
        (encoded(sync={"publish": ["a\nb"]}), "config_bad_sync"),
        (encoded(sync={"publish": ["a//b"]}), "config_bad_sync"),
        (encoded(sync={"publish": ["a/./b"]}), "config_bad_sync"),
        (encoded(sync={"publish": ["a/x**"]}), "config_bad_sync"),
        (encoded(sync={"publish": ["*.png"]}), "config_bad_sync"),
        (encoded(sync={"publish": ["?/x"]}), "config_bad_sync"),
        (encoded(sync={"publish": [".GIT./hooks/x"]}), "config_bad_sync"),
        (encoded(sync={"publish": [".memory-forest/index.sqlite3"]}), "config_bad_sync"),
    ],
)
def test_each_config_problem_has_its_code(raw: bytes, code: str) -> None:
    error = raises_code(lambda: parse_config(raw), code)
    assert error.details == {"path": ".memory-forest/forest.json"}


def test_a_publish_list_is_kept_in_order() -> None:
    config = parse_config(encoded(sync={"publish": ["04 stm/**/*.png", "attachments/**"]}))
    assert config.publish == ("04 stm/**/*.png", "attachments/**")
    assert parse_config(encoded(sync={})).publish == ()
    assert parse_config(encoded()).publish == ()


# --- loading from a forest ------------------------------------------------------------------


def test_missing_config_means_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert not config.present and config.forest_id is None
    assert config.limits == DEFAULT_LIMITS


def test_load_config_reads_the_forest_config(empty_forest: Path) -> None:
    expected = json.loads(config_path(empty_forest).read_bytes())["forest_id"]
    assert load_config(empty_forest).forest_id == expected


def test_a_symlinked_config_file_is_refused_not_followed(empty_forest: Path,
                                                         tmp_path: Path) -> None:
    elsewhere = write(tmp_path, "elsewhere/forest.json", encoded(limits={"max_files": 1}))
    config_path(empty_forest).unlink()
    os.symlink(elsewhere, config_path(empty_forest))
    error = raises_code(lambda: load_config(empty_forest), "config_unreadable")
    assert error.details["reason"] == "symlink"


def test_a_symlinked_state_directory_is_refused_not_followed(empty_forest: Path,
                                                             tmp_path: Path) -> None:
    write(tmp_path, "elsewhere/forest.json", encoded(limits={"max_files": 1}))
    state = empty_forest / ".memory-forest"
    (state / "forest.json").unlink()
    state.rmdir()
    os.symlink(tmp_path / "elsewhere", state)
    raises_code(lambda: load_config(empty_forest), "config_unreadable")


def test_a_config_that_is_a_directory_is_unreadable(empty_forest: Path) -> None:
    config_path(empty_forest).unlink()
    config_path(empty_forest).mkdir(mode=0o700)
    error = raises_code(lambda: load_config(empty_forest), "config_unreadable")
    assert error.details["path"] == ".memory-forest/forest.json"


def test_a_fifo_config_fails_instead_of_hanging(empty_forest: Path) -> None:
    config_path(empty_forest).unlink()
    os.mkfifo(config_path(empty_forest), 0o600)
    outcome: list[str] = []

    def attempt() -> None:
        try:
            load_config(empty_forest)
        except Exception as exc:  # recorded and asserted below
            outcome.append(getattr(exc, "code", type(exc).__name__))

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=5)
    if worker.is_alive():
        with open(config_path(empty_forest), "wb"):
            pass
        pytest.fail("load_config blocked on a FIFO")
    assert outcome == ["config_unreadable"]


def test_validate_uses_the_forest_limits(example_forest: Path) -> None:
    path = config_path(example_forest)
    data = json.loads(path.read_bytes())
    data["limits"] = {"max_files": 3}
    path.write_text(json.dumps(data))
    error = raises_code(lambda: operations.validate(example_forest), "limit_exceeded")
    assert error.details == {"limit": "max_files", "value": 3}


def test_a_bad_config_fails_validate_with_its_code(example_forest: Path) -> None:
    config_path(example_forest).write_text('{"schema_version": 1, "schema_version": 1}')
    error = raises_code(lambda: operations.audit(example_forest), "config_duplicate_key")
    assert error.details["path"] == ".memory-forest/forest.json"

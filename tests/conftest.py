"""Shared fixtures: real forests on the real filesystem, and the real CLI.

Nothing here mocks the library. Forests are built either by ``init`` (the
packaged synthetic example) or by hand (the plain reference layout), and the
CLI runs in a subprocess exactly as a user or an agent would run it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memory_forest import operations
from memory_forest.errors import ForestError

REPO = Path(__file__).resolve().parents[1]

# Every code validate/audit can put in an issue; used to check that fuzzed
# input only ever produces known, stable codes.
ISSUE_CODES = frozenset({
    "route_unknown_layer", "route_noncanonical_layer_dir", "route_bad_shape",
    "route_bad_segment", "route_escape", "route_extension_case", "route_casefold_collision",
    "layer_missing", "parent_missing", "duplicate_id", "unexpected_entry", "config_missing",
    "istm_blank_line", "istm_invalid_json", "istm_duplicate_key", "istm_non_finite",
    "istm_not_object", "istm_missing_key", "istm_bad_event_id", "istm_duplicate_event_id",
    "frontmatter_invalid", "frontmatter_unsafe", "frontmatter_bad_field", "not_utf8",
    "mode_dir_not_private", "mode_file_not_private", "symlink", "special_file", "limit_exceeded",
    "file_too_large",
    "not_regular_file", "not_found", "os_error", "unreadable_directory",
    "link_parent_missing", "link_unresolved", "link_lateral", "link_nonadjacent",
    "link_in_source_layer", "link_not_canonical",
    "istm_chain_broken", "istm_sha256_mismatch", "provenance_missing",
})

# The plain reference layout: no frontmatter, "# Title" headings, "- up - [[...|...]]"
# parent lines, one events.jsonl. Hand-written forests like this must stay valid.
REFERENCE_FILES: dict[str, str] = {
    "00 life_archive/2024-move.md": (
        "# The 2024 move\n\n- up - [[01 xltm/XLTM|XLTM]]\n\nWe moved the workshop in May 2024.\n"
    ),
    "01 xltm/XLTM.md": (
        "# XLTM\n\n- down - [[02 ltm/workshop_LTM|workshop]]\n"
        "- down - [[02 ltm/reading_LTM|reading]]\n"
    ),
    "02 ltm/workshop_LTM.md": (
        "# workshop\n\n- up - [[01 xltm/XLTM|XLTM]]\n- down - [[03 mtm/workshop/tools|tools]]\n"
    ),
    "02 ltm/reading_LTM.md": (
        "# reading\n\n- up - [[01 xltm/XLTM|XLTM]]\n- down - [[03 mtm/reading/novels|novels]]\n"
    ),
    "03 mtm/workshop/tools.md": (
        "# tools\n\n- up - [[02 ltm/workshop_LTM|workshop]]\n"
        "- down - [[04 stm/workshop/tools/chisel-sharpening|chisel sharpening]]\n"
    ),
    "03 mtm/reading/novels.md": "# novels\n\n- up - [[02 ltm/reading_LTM|reading]]\n",
    "04 stm/workshop/tools/chisel-sharpening.md": (
        "# chisel sharpening\n\n- up - [[03 mtm/workshop/tools|tools]]\n\n"
        "Source: `05 daily/2026-01-02.md` and `06 istm/events.jsonl#e1`.\n"
    ),
    "05 daily/2026-01-02.md": (
        "# 2026-01-02\n\n## e1\n\nSharpened the chisels. Source: `06 istm/events.jsonl#e1`\n"
    ),
    "06 istm/events.jsonl": (
        '{"event_id":"e1","observed_at":"2026-01-02T10:00:00Z",'
        '"captured_at":"2026-01-02T10:00:01Z","source":"hand","kind":"note",'
        '"payload":{"text":"sharpened chisels [[not a link]]"}}\n'
    ),
}


def write(root: Path, rel: str, data: str | bytes, mode: int = 0o600) -> Path:
    """Write one file under ``root``, creating missing folders as 0700."""
    path = root / rel
    missing = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        directory.mkdir()
        directory.chmod(0o700)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    path.chmod(mode)
    return path


def build_reference_forest(root: Path) -> Path:
    root.mkdir()
    root.chmod(0o700)
    from memory_forest.layers import LAYERS

    for layer in LAYERS:
        (root / layer.dirname).mkdir()
        (root / layer.dirname).chmod(0o700)
    for rel, text in REFERENCE_FILES.items():
        write(root, rel, text)
    return root


def check(root: Path, operation: str = "audit") -> dict[str, Any]:
    """Run validate or audit in-process and return the result dict."""
    return getattr(operations, operation)(root)


def issues_of(outcome: dict[str, Any], code: str | None = None) -> list[tuple[str, str]]:
    """(path, code) pairs of a result's issues, optionally only those with ``code``."""
    return [(i["path"], i["code"]) for i in outcome["issues"] if code in (None, i["code"])]


def tree_state(root: Path) -> dict[str, tuple[int, int, bytes | None]]:
    """Every path under ``root`` (root included) -> (mode, mtime_ns, bytes or None)."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [".", *dirnames, *filenames]:
            path = Path(dirpath) / name if name != "." else Path(dirpath)
            st = os.lstat(path)
            data = path.read_bytes() if stat.S_ISREG(st.st_mode) else None
            state[os.path.relpath(path, root)] = (st.st_mode, st.st_mtime_ns, data)
    return state


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        """The single JSON object on stdout (fails the test if there is anything else)."""
        return one_object(self.stdout)


def one_object(stdout: str) -> dict[str, Any]:
    """The one JSON object a ``--json`` call printed, alone on one line; fails otherwise."""
    lines = stdout.splitlines()
    assert len(lines) == 1, f"expected one line of JSON, got {stdout[:500]!r}"
    data = json.loads(lines[0])
    assert isinstance(data, dict)
    return data


def run_cli(*args: str | os.PathLike[str], cwd: Path | None = None) -> CliResult:
    """Run ``python -m memory_forest ARGS`` in a subprocess, like a user would."""
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1", PYTHONIOENCODING="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "memory_forest", *map(os.fspath, args)],
        capture_output=True, text=True, encoding="utf-8", errors="replace",
        cwd=cwd, env=env, timeout=60,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(autouse=True)
def _no_default_root(monkeypatch: pytest.MonkeyPatch,
                     tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test sees the developer's default root: no MEMORY_FOREST_ROOT, no user config file.

    Set in ``os.environ``, so the CLI subprocesses of ``run_cli`` inherit it too.
    """
    monkeypatch.delenv("MEMORY_FOREST_ROOT", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.getbasetemp() / "no-user-config"))


@pytest.fixture
def hermetic_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user or system git config: the fallback identity and the default branch apply."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture(scope="session")
def _forest_templates(tmp_path_factory) -> dict[str, Path]:
    """One forest per kind, made by the real ``init`` once per test session."""
    base = tmp_path_factory.mktemp("templates")
    operations.init(base / "example", example=True)
    operations.init(base / "empty")
    shutil.copytree(base / "example", base / "indexed", symlinks=True)
    operations.index(base / "indexed")
    return {"example": base / "example", "empty": base / "empty", "indexed": base / "indexed"}


def _fresh_copy(template: Path, target: Path) -> Path:
    # copytree keeps modes and mtimes (copy2, then copystat on every directory),
    # so the copy is what init made, without paying init's fsyncs in every test.
    shutil.copytree(template, target, symlinks=True)
    return target


@pytest.fixture
def example_forest(tmp_path: Path, _forest_templates: dict[str, Path]) -> Path:
    """A fresh private copy of the synthetic example created by ``init(example=True)``."""
    return _fresh_copy(_forest_templates["example"], tmp_path / "forest")


@pytest.fixture
def empty_forest(tmp_path: Path, _forest_templates: dict[str, Path]) -> Path:
    """A fresh forest from ``init``: seven layers and a config, no documents."""
    return _fresh_copy(_forest_templates["empty"], tmp_path / "forest")


@pytest.fixture
def reference_forest(tmp_path: Path) -> Path:
    """A hand-written forest in the plain reference layout (no frontmatter, no config)."""
    return build_reference_forest(tmp_path / "reference")


def console_script() -> Path:
    """The memory-forest console script of the environment running the tests."""
    beside = Path(sys.executable).with_name("memory-forest")
    if beside.is_file():
        return beside
    found = shutil.which("memory-forest")
    assert found, "memory-forest is not installed in this environment"
    return Path(os.path.abspath(found))


@pytest.fixture
def umask_zero():
    """Run with umask 0, so only explicit modes can make anything private."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def raises_code(call, code: str) -> ForestError:
    """Call ``call()`` and assert it raises ForestError with ``code``; return the error."""
    with pytest.raises(ForestError) as info:
        call()
    assert info.value.code == code, info.value.to_dict()
    return info.value


@pytest.fixture
def example(tmp_path: Path, _forest_templates: dict[str, Path]) -> Path:
    """A fresh, indexed copy of the packaged example forest (safe to modify)."""
    return _fresh_copy(_forest_templates["indexed"], tmp_path / "example")


@pytest.fixture(scope="module")
def shared_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One indexed example forest per module, for tests that only read it."""
    root = tmp_path_factory.mktemp("shared") / "example"
    operations.init(root, example=True)
    operations.index(root)
    return root

"""``examples/automation/run-maintenance.sh``, run with ``sh`` against the real CLI.

The wrapper's own checks (root, binary) come first; then what it must pass
through from ``memory-forest maintain``: status, summary, lock handling, run log.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import console_script

from memory_forest import lock, operations
from memory_forest.safety import write_private

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "automation" / "run-maintenance.sh"
MINIMAL_PATH = "/usr/bin:/bin"


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_FOREST_BIN"}
    env.update(extra)
    return env


def wrapper(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env if env is not None else base_env(MEMORY_FOREST_BIN=str(console_script())),
    )


def direct(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(console_script()), *args], capture_output=True, text=True,
                          check=False)


def outcome_of(done: subprocess.CompletedProcess[str]) -> dict:
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout + done.stderr
    return json.loads(lines[0])


def canonical_hashes(root: Path) -> dict[str, str]:
    hashes = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".memory-forest/"):
            hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def forest(example_forest: Path) -> Path:
    return example_forest  # conftest's copy of the packaged example


BROKEN_LEAF = "04 stm/kitchen/fermentation/zaatar-blend.md"


@pytest.fixture
def broken_forest(forest: Path) -> Path:
    """A forest with one broken document: a leaf whose frontmatter does not parse (a link
    problem alone would be indexed with a warning, and maintain would pass)."""
    leaf = forest / BROKEN_LEAF
    leaf.write_text("---\ntitle: [unclosed\n---\n" + leaf.read_text(encoding="utf-8"),
                    encoding="utf-8")
    assert not operations.validate(forest)["ok"]
    return forest


# --- the wrapper's own checks (no maintain needed) ------------------------------------------


def test_script_is_posix_sh_with_set_eu() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/sh\n")
    assert re.search(r"^set -eu$", text, re.MULTILINE)
    assert SCRIPT.stat().st_mode & stat.S_IXUSR


def test_no_argument_is_a_usage_error() -> None:
    done = wrapper()
    assert done.returncode == 2 and "usage" in done.stderr
    assert done.stdout == ""


def test_relative_root_is_refused(forest: Path) -> None:
    done = wrapper("memory", cwd=forest.parent)  # exists, but relative
    assert done.returncode == 2 and "absolute" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("suffix", ["", "/", "//"])
def test_symlink_root_is_refused(forest: Path, suffix: str) -> None:
    link = forest.with_name("link")
    link.symlink_to(forest)
    done = wrapper(str(link) + suffix)
    assert done.returncode == 2 and "symlink" in done.stderr
    assert done.stdout == ""


def test_missing_root_is_refused(tmp_path: Path) -> None:
    done = wrapper(str(tmp_path / "absent"))
    assert done.returncode == 2 and "not an existing directory" in done.stderr


def test_file_root_is_refused(forest: Path) -> None:
    done = wrapper(str(forest / "01 xltm" / "XLTM.md"))
    assert done.returncode == 2 and "not an existing directory" in done.stderr


@pytest.mark.parametrize("root", ["/", "{parent}/./memory", "{parent}/x/../memory"])
def test_unnormalized_root_is_refused(forest: Path, root: str) -> None:
    done = wrapper(root.format(parent=forest.parent))
    assert done.returncode == 2 and "plain absolute path" in done.stderr


def test_relative_memory_forest_bin_is_refused(forest: Path) -> None:
    done = wrapper(str(forest), env=base_env(MEMORY_FOREST_BIN="memory-forest"))
    assert done.returncode == 2 and "MEMORY_FOREST_BIN" in done.stderr


def test_memory_forest_bin_must_be_executable(forest: Path) -> None:
    done = wrapper(str(forest), env=base_env(MEMORY_FOREST_BIN=str(forest.parent)))
    assert done.returncode == 127 and "not an executable file" in done.stderr


def test_missing_binary_on_path_exits_127(forest: Path) -> None:
    if shutil.which("memory-forest", path=MINIMAL_PATH):
        pytest.skip("memory-forest is installed system-wide")
    done = wrapper(str(forest), env=base_env(PATH=MINIMAL_PATH))
    assert done.returncode == 127 and "not found on PATH" in done.stderr


def test_binary_is_found_on_the_callers_path(forest: Path) -> None:
    env = base_env(PATH=f"{console_script().parent}:{MINIMAL_PATH}")
    via_path = wrapper(str(forest), env=env)
    expected = direct("maintain", str(forest), "--json")
    assert via_path.returncode == expected.returncode
    assert outcome_of(via_path)["ok"] == outcome_of(expected)["ok"]


@pytest.mark.parametrize("case", ["healthy", "broken"])
def test_exit_status_and_output_are_maintains(request: pytest.FixtureRequest, case: str) -> None:
    """Whatever ``maintain ROOT --json`` does, the wrapper does: same status, same object."""
    root = request.getfixturevalue("forest" if case == "healthy" else "broken_forest")
    via_wrapper = wrapper(str(root) + "/", "--verify-all")  # a trailing slash is fine
    expected = direct("maintain", str(root), "--json", "--verify-all")
    assert via_wrapper.returncode == expected.returncode
    got, want = outcome_of(via_wrapper), outcome_of(expected)
    assert (got["ok"], got["operation"], got.get("error", {}).get("code")) == (
        want["ok"],
        want["operation"],
        want.get("error", {}).get("code"),
    )
    if case == "broken":
        assert via_wrapper.returncode != 0


# --- with maintain ---------------------------------------------------------------------------


def test_maintain_succeeds_on_a_healthy_forest(forest: Path) -> None:
    before = canonical_hashes(forest)
    done = wrapper(str(forest))
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = outcome_of(done)
    assert outcome["ok"] is True and outcome["operation"] == "maintain"
    assert canonical_hashes(forest) == before
    assert not os.path.lexists(lock.lock_path(forest))


def test_maintain_passes_on_the_problems_status(broken_forest: Path) -> None:
    before = canonical_hashes(broken_forest)
    done = wrapper(str(broken_forest))
    assert done.returncode == 3
    outcome = outcome_of(done)
    assert outcome["ok"] is False and outcome["error"]["code"] == "maintain_problems"
    assert {p["path"] for p in outcome["problems"]} == {BROKEN_LEAF}
    assert outcome["quarantined"] == 1 and outcome["steps"]["index"]["ok"]
    assert canonical_hashes(broken_forest) == before  # never repairs


def test_maintain_with_wait_0_exits_at_once_on_a_held_lock(forest: Path) -> None:
    owner = lock.acquire(forest, "remember")  # this test process: alive
    try:
        done = wrapper(str(forest), "--wait", "0")
        assert done.returncode == 1
        assert outcome_of(done)["error"]["code"] == "lock_held"
        assert lock.read_owner(lock.lock_path(forest))["token"] == owner["token"]
    finally:
        lock.release(forest, owner)


def test_maintain_reports_a_stale_lock_and_leaves_it(forest: Path) -> None:
    owner = lock.acquire(forest, "maintain")
    owner["pid"] = dead_pid()
    write_private(lock.lock_path(forest) / lock.OWNER, json.dumps(owner).encode())
    done = wrapper(str(forest))
    assert done.returncode == 1
    error = outcome_of(done)["error"]
    assert error["code"] == "lock_stale" and error["details"]["pid"] == owner["pid"]
    assert os.path.isdir(lock.lock_path(forest))  # removed only by unlock --stale


def test_maintain_writes_a_private_run_log(forest: Path) -> None:
    log = forest.with_name("memory.maintenance.jsonl")
    for _ in range(2):
        assert wrapper(str(forest), "--log", str(log)).returncode == 0
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    assert all(json.loads(line) for line in lines)
    assert str(forest) not in log.read_text(encoding="utf-8")

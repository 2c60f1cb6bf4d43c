"""The README's commands, run as written: a reader who copies them line by line succeeds.

Every ``memory-forest ...`` line of the "A short tour" and "Agents" blocks
runs in a real shell with HOME set to a temporary folder, so ``~/memory``
is a fresh path and the hook lands in a throwaway ``~/.claude``. ``watch`` runs in
the background while the rest of the tour runs, and is stopped at its end. Only lines
that install packages or need a host program (``claude``) are left out.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from conftest import REPO, console_script

from memory_forest import warmsocket

README = REPO / "README.md"
# What a copied line may need that a test machine does not have: an index, a host program.
SKIPPED = ("pip ", "pipx ", "claude ")
# What runs until it is stopped: started in the background, stopped at the end of the tour.
LONG_RUNNING = ("memory-forest watch ",)


def sh_block(text: str, heading: str) -> list[str]:
    """The commands of the first ```sh block under ``heading``: continuations joined,
    comments cut (a ``#`` outside quotes that starts a word)."""
    section = text.split(f"\n{heading}\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    joined = re.sub(r"\\\n\s*", "", block)
    return [command for line in joined.splitlines() if (command := _uncommented(line))]


def _uncommented(line: str) -> str:
    quote = None
    for number, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (number == 0 or line[number - 1].isspace()):
            return line[:number].strip()
    return line.strip()


def test_the_blocks_are_found_and_hold_the_commands_a_reader_needs():
    text = README.read_text(encoding="utf-8")
    tour = sh_block(text, "## A short tour")
    agents = sh_block(text, "## Agents")
    assert tour[0] == "memory-forest init ~/memory --example"
    assert any(line.startswith("memory-forest retrieve") for line in tour)
    assert any("| memory-forest gate ~/memory" in line for line in agents)
    # Comments never reach the shell: no line keeps a "  # ..." tail.
    assert not [line for line in tour + agents if re.search(r"\s#\s", line)]


def test_install_lines_work_from_a_clone():
    """The package is not on an index: every install line installs the clone's folder."""
    text = README.read_text(encoding="utf-8")
    installs = re.findall(r"^(pipx? install .*?)(?:\s+#.*)?$", text, flags=re.MULTILINE)
    assert "pip install -e '.[mcp]'" in installs
    assert "pipx install '.[mcp,semantic]'" in installs
    assert all(" '." in line for line in installs), installs
    assert "clone's folder" in text


def test_every_readme_command_runs_against_a_fresh_forest(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)  # what Claude Code leaves once it has started
    env = dict(os.environ, HOME=str(home), NO_COLOR="1", COLUMNS="200",
               PATH=f"{console_script().parent}{os.pathsep}{os.environ['PATH']}",
               XDG_CONFIG_HOME=str(home / ".config"))
    env.pop("MEMORY_FOREST_ROOT", None)
    text = README.read_text(encoding="utf-8")
    commands = sh_block(text, "## A short tour") + sh_block(text, "## Agents")
    ran, watchers = [], []
    for command in commands:
        if command.startswith(SKIPPED):
            continue
        if command.startswith(LONG_RUNNING):  # runs until stopped: the rest of the tour runs
            watchers.append(_started(command, env, home / "memory", tmp_path))  # beside it
            ran.append(command)
            continue
        if re.search(r"\bID\b", command):  # the tour's placeholder for the proposal made above
            command = re.sub(r"\bID\b", _latest_proposal(env), command)
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr, command
        ran.append(command)
    assert len(ran) >= 20, ran
    for watcher in watchers:  # stopped as a service manager stops it
        watcher.send_signal(signal.SIGTERM)
        out, _ = watcher.communicate(timeout=60)
        assert watcher.returncode == 0 and json.loads(out)["stopped_by"] == "SIGTERM", out
    # What the tour promised happened: the hook is installed, the site written.
    settings = json.loads((home / ".claude/settings.json").read_text(encoding="utf-8"))
    assert "UserPromptSubmit" in json.dumps(settings)
    assert (home / "memory-site").is_dir()


def _started(command: str, env: dict[str, str], forest: Path, cwd: Path
             ) -> subprocess.Popen:
    """A long-running command in the background, once its forest's watcher is current."""
    proc = subprocess.Popen(["bash", "-c", f"exec {command} --json"], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        answer = warmsocket.request(str(forest), "status", b"")
        if answer and answer.startswith(b"ok ") and \
                json.loads(answer.partition(b"\n")[2]).get("current"):
            return proc
        assert proc.poll() is None, (command, proc.stdout.read() if proc.stdout else "")
        time.sleep(0.1)
    raise AssertionError(f"{command} never became current")


def _latest_proposal(env: dict[str, str]) -> str:
    forest = Path(env["HOME"]) / "memory"
    done = subprocess.run(["memory-forest", "proposals", "list", str(forest), "--json"],
                          capture_output=True, text=True, env=env, timeout=60)
    proposals = json.loads(done.stdout)["proposals"]
    assert proposals, done.stdout
    return proposals[-1]["proposal_id"]


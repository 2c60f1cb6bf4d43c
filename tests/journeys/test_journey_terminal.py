"""A person at the terminal (or a script reading its pipe): what the human output says.

Each journey runs the real CLI in a subprocess over a real forest: notes
written and broken by hand, then the checks piped as a script would pipe
them, the advice they print followed, the counts compared across commands,
the help read, and completion asked for in a real bash.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ISSUE_CODES, console_script, run_cli, tree_state, write

import memory_forest
from memory_forest.issues import FIXES

LONG = "04 stm/kitchen/fermentation/hot-sauce-with-habanero-and-smoked-garlic-batch.md"
LEAF = """---
title: Hot sauce
---
# Hot sauce

Up: [[03 mtm/kitchen/fermentation|Fermentation]]

Habanero mash, 3% salt, 21 days.
"""


def broken(forest: Path) -> Path:
    """A forest with several kinds of broken files, as hand edits and editors leave them."""
    write(forest, LONG, LEAF, mode=0o644)  # an editor's umask: a warning to index
    write(forest, "04 stm/kitchen/fermentation/bad-yaml.md", "---\ntitle: [oops\n---\n# Bad\n")
    write(forest, "04 stm/kitchen/fermentation/latin1.md", "# caf\xe9\n".encode("latin-1"))
    write(forest, "04 stm/kitchen/fermentation/sideways.md",
          LEAF.replace("Habanero", "See [[04 stm/kitchen/fermentation/kimchi-batch-7]]"))
    os.symlink("/etc/hostname", forest / "04 stm/kitchen/fermentation/linked.md")
    write(forest, "stray.md", "# at the root\n")
    return forest


# --- piped output: one line per problem, never wrapped -----------------------------------------


@pytest.mark.parametrize("command", ["validate", "audit", "index", "maintain"])
def test_piped_checks_print_one_whole_line_per_problem(example_forest, command):
    forest = broken(example_forest)
    as_json = run_cli("--json", command, forest).json()
    problems = as_json.get("issues") or as_json.get("problems")
    done = run_cli(command, forest)  # stdout is a pipe here, as under grep or a log file
    lines = done.stdout.splitlines()
    stripped = {line.strip() for line in lines}
    assert problems
    for problem in problems:
        expected = (f"{problem['level']}  {problem['path']}  {problem['code']}  "
                    f"{problem['message']}")
        assert expected in stripped, (expected, done.stdout)
    assert any(LONG in line for line in lines)  # the long path is never cut in two
    assert not any(line.startswith("n/hot-sauce") or "\u2502" in line for line in lines)


def test_piped_status_stats_and_doctor_are_name_value_lines(example_forest):
    forest = broken(example_forest)
    run_cli("index", forest)
    status = run_cli("status", forest).stdout.splitlines()
    assert status[0] == "ready: yes"
    # Left out: bad YAML, Latin-1 and the symlink; the sideways link is indexed with a warning.
    assert "next step: 3 document(s) are left out of the index; run 'memory-forest index " \
        "ROOT' to list them" in status
    stats = run_cli("stats", forest).stdout.splitlines()
    assert "04 stm: 9 file(s), 6 indexed" in stats, stats
    doctor = run_cli("doctor", forest).stdout.splitlines()
    assert "network: never required" in doctor


# --- every finding names the command that fixes it ---------------------------------------------


def issue_literals() -> set[str]:
    """The codes spelled as literals in ``Issue(path, "code", ...)`` anywhere in the package."""
    codes = set()
    for path in Path(memory_forest.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Issue" \
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                codes.add(node.args[1].value)
    return codes


def test_every_issue_code_has_a_fix_that_names_a_memory_forest_command():
    literals = issue_literals()
    assert {"layer_missing", "symlink", "istm_chain_broken"} <= literals  # the scan works
    known = ISSUE_CODES | literals
    assert sorted(known - FIXES.keys()) == []
    for code, fix in FIXES.items():
        assert "memory-forest " in fix, code


def test_provoked_findings_each_end_with_their_fix(example_forest):
    forest = broken(example_forest)
    seen = set()
    for command in ("validate", "audit", "index"):
        outcome = run_cli("--json", command, forest).json()
        for issue in outcome.get("issues") or outcome.get("problems"):
            assert issue["message"].endswith(FIXES[issue["code"]]), issue
            seen.add(issue["code"])
    assert {"mode_file_not_private", "frontmatter_invalid", "not_utf8", "link_lateral",
            "symlink", "unexpected_entry"} <= seen


def test_following_the_advice_for_a_wide_mode_clears_it(example_forest):
    """Hand-saved 0644 note -> validate names doctor --repair -> run it -> validate passes."""
    write(example_forest, LONG, LEAF, mode=0o644)
    first = run_cli("validate", example_forest)
    assert first.code == 1
    line = next(line for line in first.stdout.splitlines() if LONG in line)
    assert line.endswith("mode is 0644, must be 0600: run memory-forest doctor ROOT --repair")
    advice = line.rsplit("run ", 1)[1].split()
    repaired = subprocess.run([str(console_script()), *advice[1:2], str(example_forest),
                               *advice[3:]], capture_output=True, text=True, timeout=60)
    assert repaired.returncode == 0, repaired.stderr
    assert run_cli("validate", example_forest).code == 0
    assert (example_forest / LONG).stat().st_mode & 0o777 == 0o600


def test_doctor_says_what_fixes_a_stale_lock_and_a_broken_config(example_forest):
    from memory_forest import lock
    from memory_forest.safety import write_private

    owner = lock.acquire(example_forest, "maintain")  # a real lock, then its owner gone
    owner["pid"] = _dead_pid()
    write_private(lock.lock_path(example_forest) / lock.OWNER, json.dumps(owner).encode())
    doctor = run_cli("doctor", example_forest).stdout.splitlines()
    assert "lock: state: stale" in doctor
    assert "fix: run memory-forest doctor ROOT --repair" in doctor
    assert run_cli("doctor", example_forest, "--repair").code == 0
    assert not any(line.startswith("fix:") for line in
                   run_cli("doctor", example_forest).stdout.splitlines())
    (example_forest / ".memory-forest/forest.json").write_text("{", encoding="utf-8")
    config = next(line for line in run_cli("doctor", example_forest).stdout.splitlines()
                  if line.startswith("config: "))
    assert config.startswith("config: invalid (config_invalid_json: ")
    assert config.endswith("fix .memory-forest/forest.json, then run memory-forest doctor ROOT)")
    status = run_cli("--json", "status", example_forest).json()
    assert status["next_step"] == ("fix .memory-forest/forest.json; 'memory-forest doctor ROOT' "
                                   "shows what is wrong")


def _dead_pid() -> int:
    """The pid of a process of ours that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# --- one count of what the index leaves out -----------------------------------------------------


def test_stats_status_index_and_maintain_agree_on_what_is_left_out(example_forest):
    forest = broken(example_forest)
    indexed = run_cli("--json", "index", forest).json()
    maintained = run_cli("--json", "maintain", forest).json()
    stats = run_cli("--json", "stats", forest).json()
    status = run_cli("--json", "status", forest).json()
    # bad-yaml, latin1 and the symlink; never the root file, and never sideways (a lateral
    # link is a warning: the note is indexed all the same).
    assert indexed["quarantined"] == maintained["quarantined"] == stats["problems"] \
        == status["index"]["quarantined"] == 3
    # On disk, a layer's files are its indexed documents plus the ones left out.
    assert stats["files"] - stats["indexed"] == stats["problems"]
    assert status["documents"] == stats["files"] == sum(run_cli(
        "--json", "validate", forest).json()["counts"].values())
    human = run_cli("stats", forest).stdout
    assert "3 file(s) left out" in human
    assert "3 document(s) left out" in run_cli("maintain", forest).stdout
    assert "3 document(s) are left out" in status["next_step"]


# --- human results in rank order ----------------------------------------------------------------


def test_human_results_are_listed_in_the_json_rank_order(example_forest, tmp_path):
    newer = tmp_path / "kimchi-batch-7b.md"
    newer.write_text("---\ntitle: Kimchi batch 7b\n---\n# Kimchi batch 7b\n\n"
                     "Up: [[03 mtm/kitchen/fermentation|Fermentation]]\n\nKimchi, less salt.\n",
                     encoding="utf-8")
    done = run_cli("supersede", example_forest, "--id", "stm-kimchi-batch-7", "--file", newer)
    assert done.code == 0, done.stderr
    for command in ("route", "search", "retrieve"):
        outcome = run_cli("--json", command, example_forest, "kimchi").json()
        items = outcome.get("results") or outcome["trails"]
        ranked = [item.get("path") or item["nodes"][-1]["path"] for item in items]
        assert any(item["status"] == "superseded" for item in items), command
        human = run_cli(command, example_forest, "kimchi").stdout
        positions = [human.index(f"  {path}  ") for path in ranked]
        assert positions == sorted(positions), (command, ranked, human)


# --- a folder that is not a forest -------------------------------------------------------------


@pytest.mark.parametrize("command", ["index", "validate", "audit", "maintain", "stats",
                                     "status"])
def test_a_folder_that_is_no_forest_says_so_once_and_names_init(tmp_path, command):
    folder = tmp_path / "not-yet"
    folder.mkdir()
    before = tree_state(tmp_path)
    outcome = run_cli("--json", command, folder)
    assert outcome.code == 1
    error = outcome.json()["error"]
    assert error["code"] == "not_a_forest" and "memory-forest init" in error["message"]
    human = run_cli(command, folder)
    assert human.code == 1 and "layer_missing" not in human.stdout + human.stderr
    assert human.stderr.startswith("error [not_a_forest]") and len(human.stderr.splitlines()) == 1
    assert tree_state(tmp_path) == before  # nothing written, not even a lock


def test_a_forest_missing_one_layer_still_names_that_layer(example_forest):
    shutil.rmtree(example_forest / "00 life_archive")
    error = run_cli("--json", "index", example_forest).json()["error"]
    assert error["code"] == "layer_missing" and "00 life_archive" in error["message"]


# --- help ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("group", ["hooks", "schedule", "proposals"])
def test_every_group_help_has_an_example_that_runs_as_a_command(group):
    done = run_cli(group, "--help")
    assert done.code == 0
    example = next(line for line in done.stdout.splitlines() if "Example:" in line)
    words = example.split("Example:", 1)[1].split()
    assert words[:2] == ["memory-forest", group]
    assert run_cli(*words[1:3], "--help").code == 0  # it names a real subcommand


def test_root_help_is_plain_english():
    text = " ".join(run_cli("retrieve", "--help").stdout.split())
    assert ("[ROOT] The forest's folder; optional when MEMORY_FOREST_ROOT or root in "
            "~/.config/memory-forest/config.toml names one.") in text


# --- shell completion ---------------------------------------------------------------------------


def bash_complete(script: Path, *words: str) -> list[str]:
    """COMPREPLY of the generated function for a command line ending in ``words[-1]``."""
    probe = ('source "$1"; shift; COMP_WORDS=(memory-forest "$@"); '
             'COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); _memory_forest; '
             'printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "-c", probe, "_", str(script), *words],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completion_completes_commands_subcommands_options_and_values(tmp_path):
    script = tmp_path / "memory-forest.bash"
    done = run_cli("completion", "bash")
    assert done.code == 0 and done.stdout.startswith("# memory-forest completion for bash")
    script.write_text(done.stdout, encoding="utf-8")
    assert {"retrieve", "remember"} <= set(bash_complete(script, "re"))
    assert bash_complete(script, "comp") == ["completion"]
    assert {"install", "uninstall"} <= set(bash_complete(script, "hooks", ""))
    assert bash_complete(script, "hooks", "install", "--client", "") == ["claude-code", "codex"]
    assert bash_complete(script, "schedule", "print", "--scheduler", "sys") == ["systemd"]
    assert set(bash_complete(script, "retrieve", "--l")) == {"--limit", "--lexical"}
    assert "--layer" in bash_complete(script, "--json", "search", "kimchi", "--")
    assert bash_complete(script, "search", "x", "--layer", "st") == ["stm"]
    assert bash_complete(script, "completion", "") == ["bash", "zsh", "fish"]


def test_completion_follows_the_catalog_for_every_command(tmp_path):
    from memory_forest import catalog

    script = tmp_path / "memory-forest.bash"
    script.write_text(run_cli("completion", "bash").stdout, encoding="utf-8")
    offered = set(bash_complete(script, ""))
    assert {operation.command[0] for operation in catalog.operations()} <= offered
    for operation in catalog.operations():
        flags = {flag for param in operation.params if param.cli
                 for flag in (*param.flags, *param.file_flags)}
        assert flags <= set(bash_complete(script, *operation.command, "-")), operation.words


@pytest.mark.parametrize("shell,check", [("zsh", ["zsh", "-n"]), ("fish", ["fish", "-n"])])
def test_zsh_and_fish_scripts_are_valid_syntax(tmp_path, shell, check):
    if shutil.which(check[0]) is None:
        pytest.skip(f"{shell} is not installed on this machine")
    script = tmp_path / f"memory-forest.{shell}"
    script.write_text(run_cli("completion", shell).stdout, encoding="utf-8")
    done = subprocess.run([*check, str(script)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_fish_really_completes_when_fish_is_there(tmp_path):
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed on this machine")
    script = tmp_path / "memory-forest.fish"
    script.write_text(run_cli("completion", "fish").stdout, encoding="utf-8")
    done = subprocess.run(["fish", "-c", f"source {script}; complete -C 'memory-forest hooks "
                           "install --client '"], capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["claude-code", "codex"], done.stderr


def test_an_unknown_shell_is_a_usage_error_with_the_choices():
    done = run_cli("--json", "completion", "tcsh")
    assert done.code == 2
    error = done.json()["error"]
    assert error["code"] == "shell_unknown" and "bash, zsh, fish" in error["message"]
    assert json.loads(run_cli("--json", "completion", "fish").stdout)["shell"] == "fish"

"""``schedule print``: cron, launchd and systemd entries with absolute paths, installing nothing."""

from __future__ import annotations

import configparser
import json
import os
import plistlib
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import console_script, raises_code

from memory_forest import cli, operations, schedule
from memory_forest.errors import ForestError

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
# A root that needs escaping in every format: space, quotes, %, $, &, <, backslash.
AWKWARD_NAME = "my forest & <notes> 100% $HOME 'q' \"d\" back\\slash"


@pytest.fixture
def forest(example_forest: Path) -> Path:
    return example_forest  # conftest's copy of the packaged example


@pytest.fixture
def awkward_forest(tmp_path: Path) -> Path:
    operations.init(tmp_path / AWKWARD_NAME)
    return tmp_path / AWKWARD_NAME


def entry_text(outcome: dict, name: str) -> str:
    (entry,) = [e for e in outcome["entries"] if e["name"] == name]
    return entry["text"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        cli.main(args)
    out, err = capsys.readouterr()
    return exited.value.code, out, err


# --- cron -----------------------------------------------------------------------------------


def cron_lines(text: str) -> list[list[str]]:
    """Non-comment crontab lines, split as cron then /bin/sh would (cron unescapes \\%)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return [shlex.split(line.replace("\\%", "%")) for line in lines]


def test_cron_line_has_five_time_fields_and_absolute_paths(forest: Path) -> None:
    outcome = schedule.print_entry("cron", forest, console_script())
    assert outcome["ok"] and outcome["operation"] == "schedule_print"
    (fields,) = cron_lines(entry_text(outcome, "crontab.example"))
    minute, hour, day, month, weekday = fields[:5]
    assert re.fullmatch(r"\d+", minute) and re.fullmatch(r"\d+", hour)
    assert (day, month, weekday) == ("*", "*", "*")
    program, command, root, *rest = fields[5:]
    assert program == str(console_script()) and os.path.isabs(program)
    assert command == "maintain"
    assert root == str(forest) and os.path.isabs(root)
    log = rest[rest.index("--log") + 1]
    assert os.path.isabs(log) and log == str(forest) + ".maintenance.jsonl"
    assert "--json" in rest


def test_cron_quotes_an_awkward_root(awkward_forest: Path) -> None:
    entry = schedule.print_entry("cron", awkward_forest, console_script())
    text = entry_text(entry, "crontab.example")
    (fields,) = cron_lines(text)
    assert fields[7] == str(awkward_forest)
    command_line = [line for line in text.splitlines() if not line.startswith("#")][0]
    assert "%" not in command_line.replace("\\%", "")  # every % escaped for cron


# --- launchd --------------------------------------------------------------------------------


def test_launchd_plist_parses_with_absolute_program_arguments(forest: Path) -> None:
    outcome = schedule.print_entry("launchd", forest, console_script())
    plist = plistlib.loads(
        entry_text(outcome, "org.memory-forest.maintenance.plist.example").encode()
    )
    assert plist["Label"] == "org.memory-forest.maintenance"
    args = plist["ProgramArguments"]
    assert args == outcome["command"]
    assert args[:3] == [str(console_script()), "maintain", str(forest)]
    assert all(os.path.isabs(arg) for arg in (args[0], args[2], args[args.index("--log") + 1]))
    assert "--json" in args
    assert set(plist["StartCalendarInterval"]) == {"Hour", "Minute"}
    assert plist["Umask"] == 0o077
    assert plist["RunAtLoad"] is False


def test_launchd_escapes_an_awkward_root(awkward_forest: Path) -> None:
    outcome = schedule.print_entry("launchd", awkward_forest, console_script())
    plist = plistlib.loads(
        entry_text(outcome, "org.memory-forest.maintenance.plist.example").encode()
    )
    assert plist["ProgramArguments"][2] == str(awkward_forest)


# --- systemd --------------------------------------------------------------------------------


def parse_unit(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # unit keys are case-sensitive
    parser.read_string(text)
    return parser


def systemd_split(command_line: str) -> list[str]:
    """Split ExecStart like systemd: double quotes with \\ escapes, then %% and $$."""
    return [word.replace("%%", "%").replace("$$", "$") for word in shlex.split(command_line)]


def test_systemd_units_parse_with_expected_keys(forest: Path) -> None:
    outcome = schedule.print_entry("systemd", forest, console_script())
    assert [e["name"] for e in outcome["entries"]] == [
        "memory-forest-maintenance.service",
        "memory-forest-maintenance.timer",
    ]
    service = parse_unit(entry_text(outcome, "memory-forest-maintenance.service"))
    assert service["Service"]["Type"] == "oneshot"
    assert service["Service"]["UMask"] == "0077"
    command = systemd_split(service["Service"]["ExecStart"])
    assert command == outcome["command"]
    assert command[:3] == [str(console_script()), "maintain", str(forest)]
    assert all(os.path.isabs(arg) for arg in (command[0], command[2]))

    timer = parse_unit(entry_text(outcome, "memory-forest-maintenance.timer"))
    assert timer["Timer"]["OnCalendar"]
    assert timer["Timer"]["Persistent"] == "true"
    assert timer["Install"]["WantedBy"] == "timers.target"


@pytest.mark.parametrize("steps", [(), ("consolidate",), ("sync",), ("consolidate", "sync")])
def test_a_scheduled_run_can_also_consolidate_and_sync(forest: Path, steps: tuple) -> None:
    """Each format carries the same command, the asked-for step flags last and nowhere
    otherwise, and still parses as its scheduler reads it."""
    flags = [f"--{step}" for step in ("consolidate", "sync") if step in steps]
    runs = {}
    for scheduler in schedule.SCHEDULERS:
        outcome = schedule.print_entry(scheduler, forest, console_script(),
                                       **{step: True for step in steps})
        assert outcome["command"][len(outcome["command"]) - len(flags):] == flags
        runs[scheduler] = outcome
    (cron,) = cron_lines(entry_text(runs["cron"], "crontab.example"))
    plist = plistlib.loads(
        entry_text(runs["launchd"], "org.memory-forest.maintenance.plist.example").encode())
    service = parse_unit(entry_text(runs["systemd"], "memory-forest-maintenance.service"))
    command = runs["cron"]["command"]
    assert cron[5:5 + len(command)] == command
    assert plist["ProgramArguments"] == command
    assert systemd_split(service["Service"]["ExecStart"]) == command
    for outcome in runs.values():
        for entry in outcome["entries"]:
            if not entry["name"].endswith(".timer"):  # the timer only starts the service
                for step in ("consolidate", "sync"):
                    assert (f"--{step}" in entry["text"]) is (step in steps), entry["name"]


def test_systemd_escapes_an_awkward_root(awkward_forest: Path) -> None:
    outcome = schedule.print_entry("systemd", awkward_forest, console_script())
    service = parse_unit(entry_text(outcome, "memory-forest-maintenance.service"))
    assert systemd_split(service["Service"]["ExecStart"])[2] == str(awkward_forest)


# --- inputs ---------------------------------------------------------------------------------


def test_relative_root_is_made_absolute(forest: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(forest.parent)
    outcome = schedule.print_entry("cron", forest.name, console_script())
    assert outcome["root"] == str(forest)


def test_symlink_root_is_refused(forest: Path) -> None:
    link = forest.with_name("link")
    link.symlink_to(forest)
    with pytest.raises(ForestError) as refused:
        schedule.print_entry("launchd", link, console_script())
    assert refused.value.code == "root_symlink"


def test_missing_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ForestError) as refused:
        schedule.print_entry("cron", tmp_path / "absent", console_script())
    assert refused.value.code == "root_missing"


def test_unknown_scheduler_is_a_usage_error(forest: Path) -> None:
    with pytest.raises(ForestError) as refused:
        schedule.print_entry("at", forest, console_script())
    assert refused.value.code == "scheduler_unknown" and refused.value.exit_code == 2


def test_bin_must_be_an_executable_file(forest: Path) -> None:
    with pytest.raises(ForestError) as refused:
        schedule.print_entry("cron", forest, forest / "01 xltm" / "XLTM.md")
    assert refused.value.code == "binary_not_found"


def test_log_path_is_absolute_and_outside_the_layers(
    forest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(forest.parent)
    assert schedule.print_entry("cron", forest, console_script(), "runs.jsonl")["log"] == str(
        forest.parent / "runs.jsonl"
    )
    private = forest / ".memory-forest" / "maintenance.jsonl"
    assert schedule.print_entry("cron", forest, console_script(), private)["log"] == str(private)
    with pytest.raises(ForestError) as refused:
        schedule.print_entry("cron", forest, console_script(), forest / "02 ltm" / "runs.jsonl")
    assert refused.value.code == "log_inside_forest"


def test_control_characters_are_refused(forest: Path) -> None:
    with pytest.raises(ForestError) as refused:
        schedule.print_entry("systemd", forest, console_script(), forest.parent / "bad\nname.jsonl")
    assert refused.value.code == "schedule_path_unsafe"


def test_print_entry_installs_and_writes_nothing(forest: Path) -> None:
    before = sorted(os.listdir(forest.parent))
    for scheduler in schedule.SCHEDULERS:
        schedule.print_entry(scheduler, forest, console_script())
    assert sorted(os.listdir(forest.parent)) == before


# --- one source of truth for the templates --------------------------------------------------


def test_the_templates_are_kept_only_as_package_data() -> None:
    # schedule print fills in the packaged templates; a copy under examples/ would drift.
    names = set(schedule.template_names())
    copies = [path for path in EXAMPLES.rglob("*") if path.name in names]
    assert copies == [], "examples/ holds copies of src/memory_forest/automation_templates/"


def test_templates_use_only_known_placeholders_and_all_are_filled(forest: Path) -> None:
    for name in schedule.template_names():
        used = set(re.findall(r"@([A-Z_]+)@", schedule.template_text(name)))
        assert used <= set(schedule.PLACEHOLDERS), name
    for scheduler in schedule.SCHEDULERS:
        for entry in schedule.print_entry(scheduler, forest, console_script())["entries"]:
            assert not re.search(r"@[A-Z_]+@", entry["text"]), entry["name"]


def test_the_example_plist_parses_before_it_is_filled_in() -> None:
    template = schedule.template_text("org.memory-forest.maintenance.plist.example")
    plist = plistlib.loads(template.encode("utf-8"))
    assert plist["ProgramArguments"][0] == "@MEMORY_FOREST_BIN@"


# --- the command line -----------------------------------------------------------------------


def test_cli_schedule_print_json(forest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        [
            "schedule",
            "print",
            "--scheduler",
            "systemd",
            "--root",
            str(forest),
            "--bin",
            str(console_script()),
            "--json",
        ],
        capsys,
    )
    assert code == 0
    assert out.endswith("\n") and out.count("\n") == 1
    outcome = json.loads(out)
    assert outcome["ok"] is True
    assert outcome["operation"] == "schedule_print"
    assert outcome["schema_version"] == 1
    assert outcome["scheduler"] == "systemd" and len(outcome["entries"]) == 2


def test_cli_human_output_is_the_entry_alone(
    forest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(
        [
            "schedule",
            "print",
            "--scheduler",
            "launchd",
            "--root",
            str(forest),
            "--bin",
            str(console_script()),
        ],
        capsys,
    )
    assert code == 0
    assert out == entry_text(
        schedule.print_entry("launchd", forest, console_script()),
        "org.memory-forest.maintenance.plist.example",
    )
    assert plistlib.loads(out.encode())["ProgramArguments"][2] == str(forest)
    assert "launchctl bootstrap" in err


def test_cli_usage_errors_exit_2(forest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["schedule", "print", "--root", str(forest), "--json"], capsys)
    assert code == 2 and json.loads(out)["error"]["code"] == "usage_error"
    code, out, _ = run_cli(
        ["schedule", "print", "--scheduler", "anacron", "--root", str(forest), "--json"], capsys
    )
    assert code == 2 and json.loads(out)["error"]["code"] == "scheduler_unknown"


def test_console_script_defaults_to_its_own_absolute_path(forest: Path) -> None:
    program = console_script()
    done = subprocess.run(
        [str(program), "schedule", "print", "--scheduler", "cron", "--root", str(forest), "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=forest.parent,
        env={**os.environ, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["bin"] == str(program)
    assert outcome["command"][0] == str(program)


def test_a_scheduled_run_can_embed_within_a_budget(forest: Path) -> None:
    """The budget travels to every format as maintain's own option, after the others."""
    for scheduler in schedule.SCHEDULERS:
        outcome = schedule.print_entry(scheduler, forest, console_script(),
                                       semantic_budget="2m")
        assert outcome["command"][-2:] == ["--semantic-budget", "2m"]
        service_texts = [entry["text"] for entry in outcome["entries"]
                         if not entry["name"].endswith(".timer")]
        assert all("--semantic-budget" in text for text in service_texts)


def test_a_bad_budget_never_reaches_the_scheduler(forest: Path) -> None:
    raises_code(lambda: schedule.print_entry("cron", forest, console_script(),
                                             semantic_budget="forever"),
                "semantic_budget_invalid")


def test_every_scheduled_step_is_an_option_of_maintain_and_keeps_its_spelling(forest: Path):
    """A step ``schedule print`` offers reaches the scheduled line as the flag ``maintain``
    declares, so adding one is one parameter on each entry and no table in between."""
    from memory_forest.catalog import by_name

    operations = by_name()
    maintain = {param.name: param for param in operations["maintain"].params}
    steps = [param for param in operations["schedule_print"].params
             if param.name not in ("scheduler", "root", "bin_path", "log", "watch")]
    assert steps
    for step in steps:
        assert step.name in maintain and maintain[step.name].kind == step.kind, step.name
        value = True if step.kind == "flag" else "2m"
        outcome = schedule.print_entry("cron", forest, console_script(), **{step.name: value})
        tail = [maintain[step.name].flags[0], *([] if value is True else ["2m"])]
        assert outcome["command"][-len(tail):] == tail


# --- the watcher ----------------------------------------------------------------------------


def test_watch_systemd_unit_keeps_the_watcher_alive(awkward_forest: Path) -> None:
    outcome = schedule.print_entry("systemd", awkward_forest, console_script(), watch=True)
    (entry,) = outcome["entries"]
    assert entry["install_as"].endswith("/systemd/user/memory-forest-watch.service")
    unit = parse_unit(entry["text"])
    command = systemd_split(unit["Service"]["ExecStart"])
    assert command == outcome["command"] == [str(console_script()), "watch",
                                             str(awkward_forest), "--json"]
    assert unit["Service"]["Type"] == "simple" and unit["Service"]["Restart"] == "on-failure"
    assert unit["Service"]["UMask"] == "0077" and unit["Install"]["WantedBy"] == "default.target"
    assert any("enable --now memory-forest-watch.service" in step for step in outcome["install"])


def test_watch_launchd_agent_restarts_after_a_failure(awkward_forest: Path) -> None:
    outcome = schedule.print_entry("launchd", awkward_forest, console_script(), watch=True)
    (entry,) = outcome["entries"]
    plist = plistlib.loads(entry["text"].encode())
    assert plist["Label"] == "org.memory-forest.watch"
    assert plist["ProgramArguments"] == outcome["command"]
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["StandardErrorPath"] == outcome["log"] == str(awkward_forest) + ".watch.log"
    assert plist["Umask"] == 0o077
    template = plistlib.loads(schedule.template_text(entry["name"]).encode())
    assert template["ProgramArguments"][0] == "@MEMORY_FOREST_BIN@"


def test_watch_refuses_cron_and_maintain_options(forest: Path) -> None:
    raises_code(lambda: schedule.print_entry("cron", forest, console_script(), watch=True),
                "scheduler_cannot_watch")
    raises_code(lambda: schedule.print_entry("systemd", forest, console_script(), sync=True,
                                             watch=True), "watch_options_conflict")
    for scheduler in schedule.WATCHERS:
        text = schedule.print_entry(scheduler, forest, console_script(), watch=True)
        assert not re.search(r"@[A-Z_]+@", text["entries"][0]["text"])

"""Scheduler entries for unattended maintenance: cron, launchd and systemd.

``print_entry`` fills the packaged templates in ``automation_templates/``
(the only copy: nothing under ``examples/`` repeats them) with absolute paths and returns
them; it installs nothing and writes nothing. Every entry runs
``memory-forest maintain ROOT --json --log LOG``, the one command a scheduler
needs.

Each format quotes differently, so each placeholder value is escaped for the
format it lands in, and a value no format can carry safely (control
characters, text that is not UTF-8) is refused instead of guessed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from .catalog import PROG, by_name
from .envelope import result
from .errors import ForestError, usage_error
from .forest import Forest
from .maintain import parse_budget
from .statefiles import STATE_DIR
from .userconfig import resolve_root

TEMPLATE_PACKAGE_DIR = "automation_templates"
PLACEHOLDERS = ("MEMORY_FOREST_BIN", "FOREST_ROOT", "RUN_LOG", "MAINTAIN_OPTIONS")
_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")
LOG_SUFFIX = ".maintenance.jsonl"


@dataclass(frozen=True)
class Template:
    name: str  # file name in automation_templates/
    install_as: str  # where the operator saves it ("~" is the home directory)


_AGENT = "~/Library/LaunchAgents/org.memory-forest.maintenance.plist"
SCHEDULERS: dict[str, tuple[Template, ...]] = {
    "cron": (Template("crontab.example", "crontab -e"),),
    "launchd": (Template("org.memory-forest.maintenance.plist.example", _AGENT),),
    "systemd": (
        Template(
            "memory-forest-maintenance.service",
            "~/.config/systemd/user/memory-forest-maintenance.service",
        ),
        Template(
            "memory-forest-maintenance.timer",
            "~/.config/systemd/user/memory-forest-maintenance.timer",
        ),
    ),
}

# The watcher is one long-lived process per forest: a service manager keeps it alive and
# starts it again after a failure. cron only starts jobs, so it has no entry for it.
_WATCH_AGENT = "~/Library/LaunchAgents/org.memory-forest.watch.plist"
WATCHERS: dict[str, tuple[Template, ...]] = {
    "launchd": (Template("org.memory-forest.watch.plist.example", _WATCH_AGENT),),
    "systemd": (Template("memory-forest-watch.service",
                         "~/.config/systemd/user/memory-forest-watch.service"),),
}
WATCH_LOG_SUFFIX = ".watch.log"

INSTALL_STEPS: dict[str, tuple[str, ...]] = {
    "cron": (
        "crontab -e, then append the line above (keep one line per forest)",
        "cron skips runs missed while the machine sleeps; see docs/automation.md",
    ),
    "launchd": (
        "mkdir -p ~/Library/LaunchAgents",
        f"save the plist as {_AGENT}",
        f"launchctl bootstrap gui/$(id -u) {_AGENT}",
    ),
    "systemd": (
        "mkdir -p ~/.config/systemd/user",
        "save both units in ~/.config/systemd/user/",
        "systemctl --user daemon-reload",
        "systemctl --user enable --now memory-forest-maintenance.timer",
        "optional, to run while logged out: loginctl enable-linger $USER",
    ),
}


WATCH_INSTALL_STEPS: dict[str, tuple[str, ...]] = {
    "launchd": (
        "mkdir -p ~/Library/LaunchAgents",
        f"save the plist as {_WATCH_AGENT}",
        f"launchctl bootstrap gui/$(id -u) {_WATCH_AGENT}",
    ),
    "systemd": (
        "mkdir -p ~/.config/systemd/user",
        "save the unit in ~/.config/systemd/user/",
        "systemctl --user daemon-reload",
        "systemctl --user enable --now memory-forest-watch.service",
        "optional, to run while logged out: loginctl enable-linger $USER",
    ),
}


def template_names() -> list[str]:
    return [t.name for kind in (SCHEDULERS, WATCHERS) for templates in kind.values()
            for t in templates]


def template_text(name: str) -> str:
    """The packaged template, placeholders and all."""
    if name not in template_names():
        raise ForestError("template_unknown", "no such automation template", {"name": name})
    try:
        return (files("memory_forest") / TEMPLATE_PACKAGE_DIR / name).read_text(encoding="utf-8")
    except OSError:
        raise ForestError(
            "template_missing",
            "the packaged automation templates are missing; reinstall memory-forest",
            {"name": name},
        ) from None


def print_entry(
    scheduler: str,
    root: str | os.PathLike[str] | None = None,
    bin_path: str | os.PathLike[str] | None = None,
    log: str | os.PathLike[str] | None = None,
    consolidate: bool = False,
    sync: bool = False,
    semantic_budget: str | None = None,
    watch: bool = False,
) -> dict[str, Any]:
    """Return a ready-to-install entry for ``scheduler`` with absolute paths filled in.

    With ``watch`` the entry runs the watcher instead (``watch``, kept alive and
    started again after a failure): a systemd user unit or a launchd agent; its
    log is ``<ROOT>.watch.log`` for launchd (the journal holds it under systemd).

    ``consolidate``, ``sync`` and ``semantic_budget`` are options of ``maintain`` under
    their catalog names, written into the scheduled ``maintain`` line as that entry
    spells them (``maintain_options``): ``consolidate=True`` adds ``--consolidate``
    (each run makes a consolidation proposal for review, never accepting one),
    ``sync=True`` adds ``--sync`` (each run ends with a sync through git),
    ``semantic_budget="2m"`` adds ``--semantic-budget 2m`` (each run embeds what has no
    vectors yet for that long; checked here, so a bad budget never reaches the scheduler).

    ``root`` (default: the default root, see ``userconfig``) is made absolute
    and must be a real directory (a symlink root is refused). ``bin_path``
    defaults to the running ``memory-forest`` console script, else the one on
    PATH. ``log`` defaults to
    ``<ROOT>.maintenance.jsonl``, next to the forest like its lock.
    """
    if scheduler not in SCHEDULERS:
        raise usage_error(
            "scheduler_unknown",
            f"unknown scheduler; choose one of {', '.join(SCHEDULERS)}",
            scheduler=str(scheduler)[:40],
        )
    if watch:
        _check_watch(scheduler, consolidate, sync, semantic_budget)
    forest = Forest.of(resolve_root(root)).root
    program = _program(bin_path)
    run_log = _log(forest, log, WATCH_LOG_SUFFIX if watch else LOG_SUFFIX)
    values = {"MEMORY_FOREST_BIN": str(program), "FOREST_ROOT": str(forest),
              "RUN_LOG": str(run_log)}
    for name, value in values.items():
        _check_value(name, value)
    if semantic_budget is not None:
        parse_budget(semantic_budget)
    options = maintain_options({"consolidate": consolidate, "sync": sync,
                                "semantic_budget": semantic_budget})
    entries = [
        {
            "name": template.name,
            "install_as": template.install_as,
            "text": render_template(scheduler, template_text(template.name), values, options),
        }
        for template in (WATCHERS if watch else SCHEDULERS)[scheduler]
    ]
    command = [str(program), "watch", str(forest), "--json"] if watch else \
        [str(program), "maintain", str(forest), "--json", "--log", str(run_log), *options]
    return result(
        "schedule_print",
        scheduler=scheduler,
        root=str(forest),
        bin=str(program),
        log=str(run_log),
        command=command,
        entries=entries,
        install=list((WATCH_INSTALL_STEPS if watch else INSTALL_STEPS)[scheduler]),
    )


def _check_watch(scheduler: str, consolidate: bool, sync: bool,
                 semantic_budget: str | None) -> None:
    """The watcher needs a service manager, and takes none of maintain's options."""
    if scheduler not in WATCHERS:
        raise usage_error("scheduler_cannot_watch", f"{scheduler} starts jobs but keeps none "
                          f"alive; use --scheduler {' or '.join(WATCHERS)} with --watch",
                          scheduler=scheduler)
    if consolidate or sync or semantic_budget is not None:
        raise usage_error("watch_options_conflict", "--consolidate, --sync and "
                          "--semantic-budget are options of the scheduled maintain; print "
                          "the watcher's entry without them")


def maintain_options(steps: dict[str, Any]) -> list[str]:
    """The arguments a scheduled ``maintain`` line adds for ``steps``, spelled with the flags
    the ``maintain`` entry of the catalog declares: a flag for a true switch, a flag and its
    value for a given value, nothing for an option left out."""
    declared = {param.name: param for param in by_name()["maintain"].params}
    options: list[str] = []
    for name, value in steps.items():
        flag = declared[name].flags[0]
        if value is True:
            options.append(flag)
        elif value is not None and value is not False:
            options += [flag, str(value).strip()]
    return options


def render_template(scheduler: str, text: str, values: dict[str, str],
                    options: list[str] | None = None) -> str:
    """Substitute ``@NAME@`` placeholders, escaping each value for the scheduler's format.

    ``@MAINTAIN_OPTIONS@`` stands where extra ``maintain`` arguments go: after the
    others on the command line (cron, systemd), or on a line of its own in the plist's
    argument array, which disappears when there are none.
    """
    escape = _ESCAPES[scheduler]
    if scheduler == "launchd":
        arguments = "".join(f"\t\t<string>{escape(option)}</string>\n" for option in options or [])
        text = text.replace("@MAINTAIN_OPTIONS@\n", arguments)
    else:
        text = text.replace("@MAINTAIN_OPTIONS@",
                            "".join(f" {_quoted(scheduler, option)}" for option in options or []))

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise ForestError(
                "template_placeholder_unknown",
                "unknown template placeholder",
                {"placeholder": name},
            )
        return escape(values[name])

    return _PLACEHOLDER.sub(substitute, text)


# --- the values -----------------------------------------------------------------------------


def _program(bin_path: str | os.PathLike[str] | None) -> Path:
    if bin_path is not None:
        candidate = Path(os.path.abspath(os.fspath(bin_path)))
        if not _is_executable(candidate):
            raise ForestError("binary_not_found", "the --bin path is not an executable file")
        return candidate
    running = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if running is not None and running.name == PROG:
        candidate = Path(os.path.abspath(running))
        if _is_executable(candidate):
            return candidate
    found = shutil.which(PROG)
    if found:
        return Path(os.path.abspath(found))
    raise ForestError(
        "binary_not_found",
        f"cannot find the {PROG} executable; pass --bin with its absolute path",
    )


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _log(root: Path, log_path: str | os.PathLike[str] | None, suffix: str) -> Path:
    if log_path is None:
        return root.with_name(root.name + suffix)
    log = Path(os.path.abspath(os.fspath(log_path)))

    inside = log == root or root in log.parents
    if inside and (root / STATE_DIR) not in log.parents:
        raise usage_error(
            "log_inside_forest", "the run log must live outside the canonical layers of the forest"
        )
    return log


def _check_value(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ForestError(
            "schedule_path_unsafe", "a path is not valid UTF-8", {"placeholder": name}
        ) from None
    if _UNSAFE.search(value):
        raise ForestError(
            "schedule_path_unsafe",
            "a path holds control characters a scheduler cannot carry",
            {"placeholder": name},
        )


# --- escaping, one function per format ------------------------------------------------------


def _cron(value: str) -> str:
    # The crontab command field goes to /bin/sh; cron itself turns an unescaped % into a newline.
    return shlex.quote(value).replace("%", "\\%")


def _launchd(value: str) -> str:
    return escape(value)


def _systemd(value: str) -> str:
    # The template puts each value inside double quotes: C-style escapes apply there, and
    # systemd expands %-specifiers and $-variables regardless of quoting.
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")


_ESCAPES = {"cron": _cron, "launchd": _launchd, "systemd": _systemd}


def _quoted(scheduler: str, option: str) -> str:
    """One extra argument as the command line of ``scheduler`` takes it."""
    return _cron(option) if scheduler == "cron" else f'"{_systemd(option)}"'


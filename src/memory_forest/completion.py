"""``completion``: shell completion scripts for bash, zsh and fish, written from the catalog.

Commands, group subcommands, each command's options, which options take a
value and the values some of them allow all come from the operation
declarations, so a new command or option completes without anyone editing
a script. Positionals (ROOT, a file) are left to the shell's own filename
completion. zsh runs the bash function through ``bashcompinit``: one
completion logic, tested once, for both.
"""

from __future__ import annotations

import shlex
from typing import Any

from . import catalog
from .catalog import DOCUMENT, FLAG, PATH, PROG, Operation, Param
from .catalog.keeping import SHELLS
from .envelope import result
from .errors import usage_error

_GLOBAL = ("--json", "--help")  # every command takes these
_TOP = ("--help", "--version", "--json")  # what the bare program takes before a command


def completion(shell: str) -> dict[str, Any]:
    """The script for ``shell``, in a result like any other: the human rendering prints the
    script alone (for ``source <(...)``), ``--json`` carries it as ``script``."""
    if shell not in SHELLS:
        raise usage_error("shell_unknown", f"no completion for '{shell[:40]}'; use one of: "
                          f"{', '.join(SHELLS)} (memory-forest completion bash)")
    return result("completion", shell=shell, script=_WRITERS[shell]())


def choices(param: Param) -> tuple[str, ...]:
    """The values an option allows: its declared ``choices`` (a tuple, or a ``module:NAME``
    constant whose keys or items they are), else its schema's ``enum``."""
    found = param.choices
    if isinstance(found, str):
        found = catalog.resolve(found)
    return tuple(found or param.schema.get("enum") or ())


# What an option's value is: nothing (a flag), a file name, or anything else.
FLAG_VALUE, FILE_VALUE, TEXT_VALUE = None, "file", "text"


def _options(operation: Operation) -> list[tuple[Param, tuple[str, ...], str | None]]:
    """Each option of a command as (param, its flags, what its value is)."""
    found = []
    for param in operation.params:
        if not param.cli:
            continue
        if param.flags:
            value = (FLAG_VALUE if param.kind == FLAG else
                     FILE_VALUE if param.kind in (PATH, DOCUMENT) else TEXT_VALUE)
            found.append((param, param.flags, value))
        if param.file_flags:
            found.append((param, param.file_flags, FILE_VALUE))
    return found


def _commands() -> tuple[list[str], dict[str, list[str]]]:
    """The first words in catalog order, and each group's subcommands."""
    words: list[str] = []
    groups: dict[str, list[str]] = {}
    for operation in catalog.operations():
        head = operation.command[0]
        if head not in words:
            words.append(head)
        if len(operation.command) > 1:
            groups.setdefault(head, []).append(operation.command[1])
    return words, groups


def _words(items: list[str] | tuple[str, ...]) -> str:
    return shlex.quote(" ".join(items))


# --- bash (and zsh) ---------------------------------------------------------------------------


def _bash_function() -> str:
    words, groups = _commands()
    option_cases, value_cases = [], []
    for operation in catalog.operations():
        options = _options(operation)
        flags = [flag for _, names, _ in options for flag in names] + list(_GLOBAL)
        # A positional with choices (completion's SHELL) is offered like an option's values.
        listed = [value for param in operation.params if param.positional
                  for value in choices(param)]
        option_cases.append(f"        {shlex.quote(operation.words)}) opts={_words(flags)}"
                            + (f"; values={_words(listed)}" if listed else "") + " ;;")
        for param, names, value in options:
            if value is FLAG_VALUE:
                continue
            pattern = "|".join(shlex.quote(f"{operation.words} {name}") for name in names)
            allowed = choices(param)
            if allowed:
                action = f'COMPREPLY=($(compgen -W {_words(allowed)} -- "$cur"))'
            elif value == FILE_VALUE:
                action = 'COMPREPLY=($(compgen -f -- "$cur"))'
            else:
                action = "COMPREPLY=()"
            value_cases.append(f"        {pattern}) {action}; return ;;")
    group_cases = [f"                {shlex.quote(group)}) subs={_words(subs)} ;;"
                   for group, subs in groups.items()]
    return "\n".join([
        "_memory_forest() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="" cmd="" subs="" opts="" values=""',
        "    local i word",
        '    (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"',
        "    COMPREPLY=()",
        "    # The command is the first word that is not an option; a group takes one more.",
        "    for (( i = 1; i < COMP_CWORD; i++ )); do",
        '        word="${COMP_WORDS[i]}"',
        '        [[ "$word" == -* ]] && continue',
        '        if [[ -z "$cmd" ]]; then',
        '            cmd="$word"',
        '            case "$cmd" in',
        *group_cases,
        "            esac",
        '            [[ -z "$subs" ]] && break',
        "        else",
        '            cmd="$cmd $word"',
        "            break",
        "        fi",
        "    done",
        '    if [[ -z "$cmd" ]]; then',
        f'        COMPREPLY=($(compgen -W {_words([*words, *_TOP])} -- "$cur"))',
        "        return",
        "    fi",
        '    if [[ -n "$subs" && "$cmd" != *" "* ]]; then',
        '        COMPREPLY=($(compgen -W "$subs --help" -- "$cur"))',
        "        return",
        "    fi",
        '    case "$cmd $prev" in',
        *value_cases,
        "    esac",
        '    case "$cmd" in',
        *option_cases,
        "    esac",
        '    if [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        '    elif [[ -n "$values" ]]; then',
        '        COMPREPLY=($(compgen -W "$values" -- "$cur"))',
        "    fi",
        "    # Otherwise a positional (ROOT, a file): the shell's own filename completion.",
        "}",
    ])


def _bash() -> str:
    return "\n".join([f"# {PROG} completion for bash, written from the command catalog.",
                      f"# Load it with: source <({PROG} completion bash)",
                      _bash_function(), f"complete -o default -F _memory_forest {PROG}", ""])


def _zsh() -> str:
    return "\n".join([f"# {PROG} completion for zsh, written from the command catalog.",
                      f"# Load it with: source <({PROG} completion zsh)",
                      "autoload -U +X compinit && compinit",
                      "autoload -U +X bashcompinit && bashcompinit",
                      _bash_function(), f"complete -o default -F _memory_forest {PROG}", ""])


# --- fish -------------------------------------------------------------------------------------


def _fish() -> str:
    words, groups = _commands()
    lines = [f"# {PROG} completion for fish, written from the command catalog.",
             f"# Load it with: {PROG} completion fish | source",
             f"complete -c {PROG} -f",
             f"complete -c {PROG} -n __fish_use_subcommand -a {_words(words)}",
             f"complete -c {PROG} -n __fish_use_subcommand -l version"]
    for group, subs in groups.items():
        condition = (f"__fish_seen_subcommand_from {group}; and not "
                     f"__fish_seen_subcommand_from {' '.join(subs)}")
        lines.append(f"complete -c {PROG} -n {shlex.quote(condition)} -a {_words(subs)}")
    for operation in catalog.operations():
        condition = "; and ".join(f"__fish_seen_subcommand_from {word}"
                                  for word in operation.command)
        if operation.forest or any(param.kind == PATH and param.positional
                                   for param in operation.params):
            lines.append(f"complete -c {PROG} -n {shlex.quote(condition)} -F")
        for param in operation.params:
            if param.positional and choices(param):
                lines.append(f"complete -c {PROG} -n {shlex.quote(condition)} -a "
                             f"{_words(choices(param))}")
        for param, names, value in _options(operation):
            spec = " ".join(f"-l {name[2:]}" if name.startswith("--") else f"-s {name[1:]}"
                            for name in names)
            allowed = choices(param)
            if allowed:
                spec += f" -x -a {_words(allowed)}"
            elif value is not FLAG_VALUE:
                spec += " -r" + (" -F" if value == FILE_VALUE else "")
            lines.append(f"complete -c {PROG} -n {shlex.quote(condition)} {spec}")
        lines.append(f"complete -c {PROG} -n {shlex.quote(condition)} -l json")
    return "\n".join(lines) + "\n"


_WRITERS = {"bash": _bash, "zsh": _zsh, "fish": _fish}

"""The ``memory-forest`` command line, generated from the catalog.

Every command is an ``Operation`` of ``catalog``: its words, positionals,
options, defaults and help come from the declaration, and running it is
the same four steps for all of them (parse, read any input files, call the
function over the forest, print through ``edge``). ``argparse`` does the
splitting of options and positionals; the messages and the help text are
ours, so a usage error reads the same for every command and the help is the
text ``docs/cli.md`` is generated from (``reference``).

A hook starts this on every agent turn, so nothing heavy is imported until
a command needs it: loading the catalog and parsing cost a few milliseconds,
and ``retrieve`` and ``gate`` import only the retrieval path.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import __version__, catalog
from .catalog import DOCUMENT, FLAG, FLOAT, INT, PATH, PROG, TEXTS, Operation, Param, positionals
from .edge import emit, present, refuse_undecodable
from .envelope import failure
from .errors import ForestError, usage_error
from .forest import Forest
from .safety import read_caller_file
from .statefiles import config_path
from .userconfig import resolve_root

HELP_FLAGS = ("-h", "--help")
# Stands for a ROOT the command line left out, until the default root is looked up.
# No real argument can hold a NUL byte.
_LEFT_OUT = "\0default-root"


class UsageError(Exception):
    """A command line that cannot be run: exit 2, with a hint at the help."""

    def __init__(self, message: str, operation: Operation | None = None,
                 words: str = "") -> None:
        super().__init__(message)
        self.message, self.operation = message, operation
        self.words = words or (operation.words if operation else "")


def main(argv: list[str] | None = None) -> None:
    sys.exit(run(list(sys.argv[1:] if argv is None else argv)))


def run(args: list[str]) -> int:
    """Run one command line; the exit code."""
    refused = refuse_undecodable(args)
    if refused is not None:
        return refused
    json_mode, args = _hoist_json(args)
    try:
        return _dispatch(args, json_mode)
    except UsageError as exc:
        return _usage_failure(exc, json_mode)


def warm_line(args: list[str], root: str) -> int | str:
    """Run a command line the warm service of ``root`` was handed: its exit code, or why it
    ran nothing (the client then runs it itself). The service answers only lines whose
    forest, as this parser reads the line, is its own, and leaves a real build (``index
    --full`` or ``--semantic``) to a process of its own, with its own progress bar."""
    operation, rest = _find(_hoist_json(args)[1])
    if operation is None or not operation.forest:
        return "not_served"
    try:
        values = _parse(operation, rest)
        named = _root(values["root"])
    except (UsageError, ForestError):
        return "other_forest"  # not a line the service can vouch for: run it cold
    if os.path.realpath(named) != root:
        return "other_forest"
    if operation.name == "index" and (values["full"] or values["semantic"]):
        return "not_served"
    return run(args)


def _hoist_json(args: list[str]) -> tuple[bool, list[str]]:
    """``--json`` may appear anywhere before ``--``; take it out of the line."""
    end = args.index("--") if "--" in args else len(args)
    if "--json" not in args[:end]:
        return False, args
    return True, [arg for arg in args[:end] if arg != "--json"] + args[end:]


def _dispatch(args: list[str], json_mode: bool) -> int:
    if not args:
        if json_mode:
            raise UsageError("Missing command.")
        from .helptext import top_help

        sys.stderr.write(top_help())
        return 2
    if args[0] == "--version":
        print(f"{PROG} {__version__}")
        return 0
    if args[0] in HELP_FLAGS:
        from .helptext import top_help

        sys.stdout.write(top_help())
        return 0
    if args[0].startswith("-"):
        raise UsageError(f"No such option: {args[0]}")
    operation, rest = _find(args)
    if operation is None:
        group = args[0]
        if group not in _groups():
            raise UsageError(f"No such command '{group}'.")
        if not rest[1:] or rest[1] in HELP_FLAGS:
            from .helptext import group_help

            (sys.stdout if rest[1:] else sys.stderr).write(group_help(group))
            return 0 if rest[1:] else 2
        raise UsageError(f"No such command '{rest[1]}'.", words=group)
    if any(arg in HELP_FLAGS for arg in _before_double_dash(rest)):
        from .helptext import command_help

        sys.stdout.write(command_help(operation))
        return 0
    return _run(operation, _parse(operation, rest), json_mode)


def _find(args: list[str]) -> tuple[Operation | None, list[str]]:
    """The operation the leading words name, and the words after them."""
    for operation in catalog.operations():
        size = len(operation.command)
        if tuple(args[:size]) == operation.command:
            return operation, args[size:]
    return None, args


def _groups() -> set[str]:
    return {operation.command[0] for operation in catalog.operations()
            if len(operation.command) > 1}


def _before_double_dash(args: list[str]) -> list[str]:
    return args[:args.index("--")] if "--" in args else args


# --- parsing --------------------------------------------------------------------------------


def _parse(operation: Operation, args: list[str]) -> dict[str, Any]:
    """The command line's values, one per parameter (and ``root``), converted to their kinds."""
    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # argparse would print and exit
            raise UsageError(_sentence(message), operation)

    # argparse asks a formatter to check each argument's metavar; with a width given it does
    # not import shutil (and its compression modules) to measure the terminal.
    parser = Parser(prog=f"{PROG} {operation.words}", add_help=False, allow_abbrev=False,
                    formatter_class=lambda prog: argparse.HelpFormatter(prog, width=100))
    wanted = positionals(operation)
    for param in wanted:
        parser.add_argument(param.name, nargs="?")
    for param in operation.params:
        if param.cli and not param.positional:
            _add_option(parser, param)
    args = _with_root(operation, args, wanted)
    # Optional positionals on both sides of an option (``ROOT --dry-run "fact"``) need the
    # intermixed parse: the plain one fills every optional positional at the first word.
    intermixed = any(param.positional_value for param in operation.params)
    namespace = vars(parser.parse_intermixed_args(args) if intermixed
                     else parser.parse_args(args))
    for param in wanted:
        if namespace[param.name] is None:
            raise UsageError(f"Missing argument '{param.metavar}'.", operation)
    for param in operation.params:
        if param.required and param.flags and not param.file_flags and param.cli \
                and namespace[param.name] is None:
            raise UsageError(f"Missing option '{param.flags[0]}'.", operation)
    return {name: _converted(operation, name, value) for name, value in namespace.items()}


def _add_option(parser: Any, param: Param) -> None:
    if param.positional_value:
        parser.add_argument(f"{param.name}_positional", nargs="?", metavar=param.metavar)
    if param.stdin_mark:
        parser.add_argument(f"{param.name}_stdin", nargs="?", metavar="-")
    if param.file_flags:
        parser.add_argument(*param.file_flags, dest=f"{param.name}_file")
    if not param.flags:
        return
    if param.kind == FLAG:
        parser.add_argument(*param.flags, dest=param.name, action="store_true")
    elif param.kind == TEXTS:
        parser.add_argument(*param.flags, dest=param.name, action="append")
    else:
        parser.add_argument(*param.flags, dest=param.name)


def _with_root(operation: Operation, args: list[str], wanted: list[Param]) -> list[str]:
    """``args`` with a placeholder for ROOT when the line leaves it out.

    The rule for every command whose first positional is ROOT: a line with
    one positional fewer than the command needs has left ROOT out (so
    ``retrieve QUERY`` means ``retrieve DEFAULT_ROOT QUERY``), and so has a
    lone ``-`` for an optional stdin mark (``capture -``). A value that may be
    positional counts as needed unless the line gives it by an option
    (``remember "fact"`` leaves ROOT out, ``remember ROOT --content "fact"``
    does not), except when the one word is an existing forest's root: then the
    value is what is missing, and the command says so.
    """
    if not operation.forest:
        return args
    given = _positional_words(operation, args)
    stdin_mark = any(param.stdin_mark for param in operation.params)
    optional = [param for param in operation.params if param.positional_value
                and not _given_as_option(param, args)]
    needed = len(wanted) + len(optional)
    if optional and len(given) == len(wanted) and _is_forest(given[0]):
        return args  # ``remember ~/memory`` forgot the fact; it does not remember a path
    if len(given) < needed or (stdin_mark and given == ["-"]):
        return [_LEFT_OUT, *args]
    return args


def _is_forest(word: str) -> bool:
    """Whether a word names an existing forest root (it holds a forest config)."""
    return os.path.isfile(config_path(Path(os.path.expanduser(word))))


def _given_as_option(param: Param, args: list[str]) -> bool:
    flags = (*param.flags, *param.file_flags)
    return any(arg in flags or arg.split("=", 1)[0] in flags
               for arg in _before_double_dash(args))


def _positional_words(operation: Operation, args: list[str]) -> list[str]:
    """The words of ``args`` that are positionals (options and their values skipped)."""
    takes_value = {flag for param in operation.params if param.cli
                   for flag in (*param.file_flags, *(param.flags if param.kind != FLAG else ()))}
    words, rest = [], iter(args)
    for arg in rest:
        if arg == "--":
            words.extend(rest)
        elif arg.startswith("-") and arg != "-":
            if "=" not in arg and arg in takes_value:
                next(rest, None)
        else:
            words.append(arg)
    return words


def _converted(operation: Operation, name: str, value: Any) -> Any:
    param = _param(operation, name)
    if value is None or param is None or name == "root":
        return value
    flag = param.flags[0] if param.flags else param.metavar
    if param.kind == INT:
        return _number(int, value, flag, "an integer", operation)
    if param.kind == FLOAT:
        return _number(float, value, flag, "a number", operation)
    if param.kind == PATH:
        return Path(value)
    return value


def _param(operation: Operation, name: str) -> Param | None:
    return next((param for param in operation.params if param.name == name), None)


def _number(kind: type, value: str, flag: str, what: str, operation: Operation) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise UsageError(f"Invalid value for '{flag}': '{value[:40]}' is not {what}.",
                         operation) from None


def _sentence(message: str) -> str:
    """argparse's message as the first line of an error: capitalized, with a full stop."""
    if message.startswith("unrecognized arguments: "):
        extra = message.split(": ", 1)[1]
        what = "option" if extra.startswith("-") else "argument"
        return f"No such {what}: {extra}."
    if message.startswith("argument ") and "expected one argument" in message:
        return f"Option '{message.split()[1].split('/')[0]}' requires a value."
    return message[:1].upper() + message[1:] + ("" if message.endswith(".") else ".")


# --- running --------------------------------------------------------------------------------


def _run(operation: Operation, values: dict[str, Any], json_mode: bool) -> int:
    if operation.direct:
        return _run_direct(operation, values, json_mode)
    with _Progress(operation.progress, json_mode) as progress:
        def call() -> Any:
            # The default root is looked up first: without one, nothing else is worth reading.
            if operation.forest and values["root"] == _LEFT_OUT:
                _refuse_root_as_argument(operation, values)
            root = _root(values["root"]) if operation.forest else None
            arguments = _arguments(operation, values)
            if progress is not None:
                arguments["progress"] = progress
            function = function_of(operation)
            if not operation.forest:
                return function(**arguments)
            with _open_forest(root) as forest:
                return function(forest, **arguments)

        return present(operation.name, call, json_mode, operation.render)


def _serve() -> Callable[..., Any]:
    from .mcp_server import serve

    return serve


def _watch() -> Callable[..., Any]:
    from .watcher import watch

    # The watcher's service runs the lines it is handed through this parser and ``run``.
    return functools.partial(watch, run_line=warm_line)


def _completion() -> Callable[..., Any]:
    from .completion import completion

    return completion


# The commands that are surfaces themselves: the catalog, below every surface, declares them
# with no call, and the command line imports their module only when one is run.
SURFACE_COMMANDS: dict[str, Callable[[], Callable[..., Any]]] = {
    "serve": _serve, "watch": _watch, "completion": _completion}


def function_of(operation: Operation) -> Callable[..., Any]:
    """The function that runs ``operation``: the catalog's, or the surface's own."""
    if operation.call is None:
        return SURFACE_COMMANDS[operation.name]()
    return operation.function()


def _run_direct(operation: Operation, values: dict[str, Any], json_mode: bool) -> int:
    """An operation that prints its own answer (the gate), given the root as a string."""
    root = values["root"]
    if root == _LEFT_OUT:
        try:
            root = resolve_root(None)
        except ForestError as exc:  # no default root: said like any failure, exit 2
            emit(failure(operation.name, exc.to_dict()), json_mode)
            return exc.exit_code
    return operation.function()(root, **_arguments(operation, values))


def _refuse_root_as_argument(operation: Operation, values: dict[str, Any]) -> None:
    """Refuse a line whose one word, taken for the argument after a left-out ROOT, is an
    existing directory: ``retrieve ~/memory`` forgot its question, and searching the
    default root for the words of a path would answer with noise."""
    after = positionals(operation)[1:]
    word = values.get(after[0].name) if len(after) == 1 else None
    if isinstance(word, str) and word.strip() and os.path.isdir(os.path.expanduser(word)):
        metavar = after[0].metavar
        raise usage_error("argument_missing", f"'{word[:80]}' is a directory, so it is taken "
                          f"as ROOT and {metavar} is missing; run "
                          f"'{PROG} {operation.words} ROOT {metavar}' with both",
                          argument=metavar)


def _root(root: str) -> str:
    return resolve_root(None if root == _LEFT_OUT else root)


def _open_forest(root: str) -> Any:
    return Forest.open(root)


def _arguments(operation: Operation, values: dict[str, Any]) -> dict[str, Any]:
    """The function's keywords: each CLI parameter's value, input read from files or stdin."""
    arguments = {}
    for param in operation.params:
        if not param.cli:
            continue
        if param.file_flags or param.stdin_mark or param.kind == DOCUMENT:
            arguments[param.name] = _input(operation, param, values)
        else:
            value = values.get(param.name)
            arguments[param.name] = param.default if value is None else value
    return arguments


def _input(operation: Operation, param: Param, values: dict[str, Any]) -> Any:
    """A parameter given inline, from a file, or from stdin (``-``): exactly one of them."""
    inline = values.get(param.name) if param.kind != DOCUMENT else None
    source = values.get(param.name) if param.kind == DOCUMENT else None
    mark = values.get(f"{param.name}_stdin")
    if mark is not None and mark != "-":
        raise usage_error(f"{param.input_code}_invalid", "the only positional input is - "
                          "(stdin); use --file for a file")
    if inline is None:
        inline = values.get(f"{param.name}_positional")
    elif values.get(f"{param.name}_positional") is not None:
        raise usage_error(f"{param.input_code}_required", f"give exactly one of {_forms(param)}")
    given = [value for value in (inline, source, mark, values.get(f"{param.name}_file"))
             if value is not None]
    if len(given) > 1 or (param.required and not given):
        raise usage_error(f"{param.input_code}_required",
                          f"give exactly one of {_forms(param)}")
    if not given:
        return param.default
    if given[0] is inline:
        return inline

    raw = read_caller_file(given[0], _constant(param.max_bytes), param.input_code)
    return catalog.resolve(param.reader)(raw)


def _forms(param: Param) -> str:
    forms = [param.metavar] if param.positional_value else []
    forms += [param.flags[0]] if param.flags else []
    forms += ["- (stdin)"] if param.stdin_mark else []
    forms += [param.file_flags[0]] if param.file_flags else []
    return " or ".join(forms)


def _constant(value: int | str | None) -> Any:
    return catalog.resolve(value) if isinstance(value, str) else value


class _Progress:
    """A rich progress bar on stderr for long human-mode work; nothing under --json."""

    def __init__(self, label: str | None, json_mode: bool) -> None:
        self.label, self.quiet, self.bar = label, json_mode or not sys.stderr.isatty(), None

    def __enter__(self) -> Any:
        if self.label is None or self.quiet:
            return None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                            TimeRemainingColumn(), transient=True,
                            console=Console(stderr=True))
        self.bar.start()
        tasks: dict[str, Any] = {}

        def update(done: int, total: int, label: str | None = None) -> None:
            # A later phase (embedding after indexing) gets a bar of its own.
            name = label or self.label
            if name not in tasks:
                tasks[name] = self.bar.add_task(name, total=None, rate="")
            task = tasks[name]
            self.bar.update(task, completed=done, total=total)
            speed = self.bar.tasks[task].speed
            self.bar.update(task, rate=f"{speed:.1f}/s" if speed else "")

        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _usage_failure(exc: UsageError, json_mode: bool) -> int:
    """A parse error as every other failure: one JSON object, or ``error [usage_error] ...``
    followed by the hint at the command's help."""
    name = exc.operation.name if exc.operation else (exc.words or PROG)
    emit(failure(name, {"code": "usage_error", "message": exc.message, "details": {}}),
         json_mode)
    if not json_mode:
        words = f"{PROG} {exc.words}" if exc.words else PROG
        sys.stderr.write(f"Try '{words} --help' for help.\n")
    return 2

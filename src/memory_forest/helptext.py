"""Help text for the command line, written from the catalog.

``--help`` prints it and ``docs/cli.md`` embeds it (``reference``), so what a
user reads in the terminal and in the docs is one text.
"""

from __future__ import annotations

import textwrap

from . import catalog
from .catalog import FLAG, ROOT, Operation, Param, positionals
from .catalog.keeping import GROUPS

WIDTH = 100
JSON_HELP = "Print one compact JSON object (any position)."
SUMMARY = ("A verifiable local memory for AI agents: canonical files, a derived index, "
           "route-first retrieval.")


def top_help() -> str:
    rows, seen = [], set()
    for operation in catalog.operations():
        word = operation.command[0]
        if word in seen:
            continue
        seen.add(word)
        rows.append((word, GROUPS[word][0] if word in GROUPS else operation.summary))
    return _join([
        "Usage: memory-forest [OPTIONS] COMMAND [ARGS]...", _paragraph(SUMMARY),
        "Options:\n" + _table([("--json", JSON_HELP), ("--version", "Show the version."),
                              ("-h, --help", "Show this message and exit.")]),
        "Commands:\n" + _table(rows)])


def group_help(group: str) -> str:
    rows = [(operation.command[1], operation.summary) for operation in catalog.operations()
            if operation.command[0] == group and len(operation.command) > 1]
    summary, example = GROUPS[group]
    return _join([f"Usage: memory-forest {group} [OPTIONS] COMMAND [ARGS]...",
                  _paragraph(summary), f"  Example: {example}", "Commands:\n" + _table(rows)])


def command_help(operation: Operation) -> str:
    wanted = positionals(operation)
    usage = " ".join(f"[{param.metavar}]" if param is ROOT else param.metavar
                     for param in wanted)
    if any(param.stdin_mark for param in operation.params):
        usage += " [-]"
    usage += "".join(f" [{param.metavar}]" for param in operation.params
                     if param.positional_value)
    parts = [f"Usage: memory-forest {operation.words} [OPTIONS] {usage}".rstrip(),
             _paragraph(operation.summary)]
    if operation.help:
        parts.append(_paragraph(operation.help))
    parts.append(f"  Example: {operation.example}")  # whole, so it can be copied
    arguments = [(f"[{param.metavar}]" if param is ROOT else param.metavar, param.help)
                 for param in wanted]
    if any(param.stdin_mark for param in operation.params):
        arguments.append(("[-]", "- to read the input from stdin."))
    arguments += [(f"[{param.metavar}]", f"{param.help} Or give it with {param.flags[0]}.")
                  for param in operation.params if param.positional_value]
    if arguments:
        parts.append("Arguments:\n" + _table(arguments))
    options = [_option_row(param) for param in operation.params
               if param.cli and not param.positional]
    options = [row for pair in options for row in pair]
    options += [("--json", JSON_HELP), ("-h, --help", "Show this message and exit.")]
    parts.append("Options:\n" + _table(options))
    return _join(parts)


def _option_row(param: Param) -> list[tuple[str, str]]:
    rows = []
    if param.flags:
        value = "" if param.kind == FLAG else f" {param.metavar}"
        flags = ", ".join(sorted(param.flags, key=len))
        text = param.help
        if param.required and not param.file_flags:
            text += "  [required]"
        elif param.default not in (None, False, [], ""):
            text += f"  [default: {param.default}]"
        rows.append((flags + value, text))
    if param.file_flags:
        flags = ", ".join(sorted(param.file_flags, key=len))
        what = "the input" if not param.flags else "the value"
        rows.append((f"{flags} FILE", f"Read {what} from a file (- for stdin)."
                     if param.flags or param.stdin_mark else param.help))
    return rows


def _table(rows: list[tuple[str, str]]) -> str:
    width = min(max(len(left) for left, _ in rows) + 2, 30)
    lines = []
    for left, right in rows:
        text = textwrap.wrap(right, WIDTH - width - 4, break_on_hyphens=False) or [""]
        if len(left) + 2 > width:
            lines.append(f"  {left}")
            lines.extend(f"  {'':{width}}{line}" for line in text)
        else:
            lines.append(f"  {left:{width}}{text[0]}".rstrip())
            lines.extend(f"  {'':{width}}{line}" for line in text[1:])
    return "\n".join(lines)


def _paragraph(text: str) -> str:
    return "\n".join(textwrap.wrap(text, WIDTH - 2, initial_indent="  ",
                                   subsequent_indent="  ", break_on_hyphens=False,
                                   break_long_words=False))


def _join(parts: list[str]) -> str:
    return "\n\n".join(parts) + "\n"

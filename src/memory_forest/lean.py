"""Plain command lines the per-turn path runs without the full CLI parser.

``entry.main`` hands a command line here first. Importing typer costs more
than a whole lookup, so the commands an agent host runs on every turn
(``gate``, ``retrieve``) are recognized by this small parser when they are
plain and complete. Each command's option table is its one definition: the
typer command takes its defaults from the same table, and a test holds the
two surfaces equal. Anything unusual returns None and goes to typer, which
parses it and reports any error.
"""

from __future__ import annotations

from typing import Any

Options = dict[str, tuple[type, Any]]  # option name (without "--") -> (type, default)


def parse(args: list[str], command: str, positionals: tuple[str, ...],
          options: Options) -> dict[str, Any] | None:
    """Arguments for ``command`` when ``args`` is a plain, complete command line.

    Accepts the positionals in order (a leading ``root`` may be left out
    when a default root is set: see ``userconfig``), each option of ``options`` as
    ``--name value`` or ``--name=value`` (at most once), an option whose
    type is ``bool`` as a bare ``--name`` flag (true when given), and
    ``--json`` anywhere. ``--help``, an unknown or repeated option, a short option, a
    missing or ill-typed value, ``--`` or an empty positional return None.
    Option names come back with ``-`` turned into ``_``.
    """
    args = [arg for arg in args if arg != "--json"]
    if not args or args[0] != command:
        return None
    values: dict[str, Any] = {}
    given: list[str] = []
    rest = iter(args[1:])
    for arg in rest:
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            if name not in options or name in values:
                return None
            if options[name][0] is bool:
                if has_value:
                    return None  # a flag takes no value; typer explains that
                values[name] = True
                continue
            if not has_value:
                value = next(rest, None)
                if value is None:
                    return None
            try:
                values[name] = options[name][0](value)
            except ValueError:
                return None
        elif arg.startswith("-") or not arg or len(given) == len(positionals):
            return None
        else:
            given.append(arg)
    if len(given) == len(positionals) - 1 and positionals[0] == "root":
        root = _default_root()
        if root is None:
            return None
        given.insert(0, root)
    if len(given) != len(positionals):
        return None
    parsed = dict(zip(positionals, given, strict=True))
    for name, (_, default) in options.items():
        parsed[name.replace("-", "_")] = values.get(name, default)
    return parsed


def _default_root() -> str | None:
    """The default root, or None (typer then reports ``root_required`` or the bad config)."""
    from .errors import ForestError
    from .userconfig import default_root

    try:
        return default_root()
    except ForestError:
        return None


def gate_args(args: list[str]) -> dict[str, Any] | None:
    """Options for ``gate.run_process`` when ``args`` is a plain, complete gate command line."""
    from .gate import OPTIONS

    return parse(args, "gate", ("root",), OPTIONS)


def retrieve_args(args: list[str]) -> dict[str, Any] | None:
    """Arguments for ``retrieve.retrieve_command`` when ``args`` is a plain retrieve line."""
    from .retrieve import CLI_OPTIONS

    return parse(args, "retrieve", ("root", "query"), CLI_OPTIONS)

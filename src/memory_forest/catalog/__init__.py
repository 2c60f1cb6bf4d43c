"""The catalog: every operation declared once, and projected onto every surface.

An ``Operation`` names the function that does the work, the parameters it
takes, whether it writes, and how its result is shown to a person. The CLI
(``cli``), the MCP tools (``mcp_server``), the gate's options and the
command reference in ``docs/cli.md`` (``reference``) are all generated from
these declarations, so an operation's name, flags, defaults and help exist in
exactly one place.

Loading the catalog is cheap on purpose: a new process parses every agent
turn's command line from it. Functions, renderers and schema constants are
named as ``"module:attribute"`` strings and imported only when used, so
``retrieve`` and ``gate`` pay for the code they run and nothing else.

Adding an operation is one ``Operation`` in the declaration module of its
family (``reading``, ``writing``, ``keeping``, ``reviewing``) and one function over a
``Forest``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Parameter kinds and what each surface does with them.
PROG = "memory-forest"  # the command every surface, help text and unit file names

TEXT = "text"  # a string
INT = "int"
FLOAT = "float"
FLAG = "flag"  # a bool: a bare --flag on the CLI
TEXTS = "texts"  # a list of strings: a repeatable option on the CLI
PATH = "path"  # a path on this machine: CLI only, never a tool argument
DOCUMENT = "document"  # a JSON value: inline for a tool, a file or - (stdin) on the CLI
KINDS = (TEXT, INT, FLOAT, FLAG, TEXTS, PATH, DOCUMENT)


class Param:
    """One parameter of an operation, as every surface takes it.

    ``name`` is the keyword the operation's function receives and the tool
    argument's name. ``flags`` are its CLI forms (``("--limit", "-n")``); a
    parameter without flags is positional on the CLI, shown as ``metavar``.
    ``cli`` and ``tool`` say on which surfaces it exists at all. ``schema``
    adds JSON Schema keywords to the tool's argument (bounds the library
    checks itself, for the same error codes on every surface); a value
    written ``"module:NAME"`` is that constant. ``tool_max`` is the one bound
    a tool call enforces beyond the library's (a server thread must not wait
    long). Text that may come from a file on the CLI names its ``file_flags``
    (``--file``, or a lone ``-`` positional with ``stdin_mark``); ``reader``
    turns those bytes into the value, and ``parser`` does the same for a
    tool's inline value. An option with ``positional_value`` may also be
    given as the command's last positional word (``remember ROOT "fact"``).
    ``choices`` are the values shell completion offers: a tuple, or a
    ``"module:NAME"`` constant whose keys (or items) they are.
    """

    __slots__ = ("choices", "cli", "default", "doc", "file_flags", "flags", "help", "input_code",
                 "kind", "max_bytes", "metavar", "name", "parser", "positional_value", "reader",
                 "required", "schema", "stdin_mark", "tool", "tool_max", "tool_type")

    def __init__(self, name: str, kind: str = TEXT, help: str = "", *,
                 flags: tuple[str, ...] = (), default: Any = None, required: bool = False,
                 metavar: str | None = None, doc: str | None = None, cli: bool = True,
                 tool: bool = True, schema: dict[str, Any] | None = None,
                 tool_max: float | None = None, file_flags: tuple[str, ...] = (),
                 stdin_mark: bool = False, reader: str | None = None,
                 parser: str | None = None, tool_type: str | None = None,
                 max_bytes: int | str | None = None, input_code: str | None = None,
                 positional_value: bool = False,
                 choices: tuple[str, ...] | str | None = None) -> None:
        if kind == FLAG:
            default = False  # a flag is given or not: its default is never anything else
        elif kind == TEXTS and default is None:
            default = []
        self.name, self.kind, self.help, self.flags, self.default = name, kind, help, flags, default
        self.required, self.cli, self.tool = required, cli, tool and kind != PATH
        self.metavar = metavar or (name.upper() if not flags else _value_name(kind, name))
        self.doc = doc or help
        self.schema, self.tool_max, self.tool_type = schema or {}, tool_max, tool_type
        self.file_flags, self.stdin_mark = file_flags, stdin_mark
        self.positional_value = positional_value
        self.reader, self.parser, self.max_bytes = reader, parser, max_bytes
        self.input_code = input_code or name
        self.choices = choices

    @property
    def positional(self) -> bool:
        return not self.flags and not self.file_flags and not self.stdin_mark

    def replace(self, **changes: Any) -> Param:
        """This parameter with some attributes changed (a shared one adapted to one operation)."""
        copy = Param.__new__(Param)
        for slot in Param.__slots__:
            setattr(copy, slot, changes.get(slot, getattr(self, slot)))
        return copy


def _value_name(kind: str, name: str) -> str:
    return {INT: "N", FLOAT: "SECONDS" if name == "wait" else "NUMBER",
            PATH: "PATH", DOCUMENT: "FILE"}.get(kind, name.upper().replace("_", "-"))


class Operation:
    """One operation: what it is called, what it takes, what it does and how it is shown.

    ``call`` is ``"module:function"``; the function receives the forest (when
    ``forest`` is true: a ``Forest``, from the ROOT positional or the default
    root) and one keyword per parameter. It names a module of the catalog's
    layer or below, never a surface: a command that is a surface itself
    (``serve`` is the MCP server) has no ``call``, and the command line runs
    it (``cli.SURFACE_COMMANDS``). ``render`` names the function of
    ``render`` that shows a result to a person. ``tool`` is the description an
    agent reads (an operation without one is not an MCP tool); ``result`` is
    the name of its result's shape in ``results`` (``schemas`` for the two
    that embed a stored proposal). ``direct`` operations print their own
    output and return the exit code (the gate answers a host, not a person).
    """

    __slots__ = ("call", "command", "destructive", "direct", "example", "forest", "help",
                 "name", "params", "progress", "render", "result", "summary", "title", "tool",
                 "writes")

    def __init__(self, name: str, call: str | None, summary: str, example: str, *,
                 params: tuple[Param, ...] = (), help: str = "", forest: bool = True,
                 writes: bool = False, destructive: bool = True, render: str = "generic",
                 tool: str | None = None, title: str | None = None, result: str | None = None,
                 command: tuple[str, ...] | None = None, progress: str | None = None,
                 direct: bool = False) -> None:
        self.name, self.call, self.summary, self.example = name, call, summary, example
        self.params, self.help, self.forest = params, help, forest
        self.writes, self.destructive, self.render = writes, destructive, render
        self.tool, self.title, self.result = tool, title or summary, result
        self.command = command or (name.replace("_", "-"),)
        self.progress, self.direct = progress, direct

    @property
    def words(self) -> str:
        return " ".join(self.command)

    def function(self) -> Any:
        if self.call is None:
            raise LookupError(f"{self.name} is run by a surface, see cli.SURFACE_COMMANDS")
        return resolve(self.call)


# The first positional of every operation over a forest; see ``cli._with_root`` for the rule.
ROOT = Param(
    "root", PATH, "The forest's folder; optional when MEMORY_FOREST_ROOT or root in "
    "~/.config/memory-forest/config.toml names one.", metavar="ROOT", required=True)


def positionals(operation: Operation) -> list[Param]:
    """The command's positionals, ROOT first when it takes a forest."""
    listed = [param for param in operation.params if param.cli and param.positional]
    return [ROOT, *listed] if operation.forest else listed


def resolve(reference: str) -> Any:
    """The attribute a ``"module:attribute"`` reference names, imported now."""
    module, _, attribute = reference.partition(":")
    return getattr(import_module(module), attribute)


def operations() -> tuple[Operation, ...]:
    """Every operation, in the order the help and the reference list them."""
    # Here, not at the top: each family module imports Param and Operation from this package.
    from . import keeping, reading, reviewing, writing

    return (*keeping.OPERATIONS, *reading.OPERATIONS, *writing.OPERATIONS, *reviewing.OPERATIONS)


def by_name() -> dict[str, Operation]:
    return {operation.name: operation for operation in operations()}


def tools() -> tuple[Operation, ...]:
    """The operations an agent can call over MCP."""
    return tuple(operation for operation in operations() if operation.tool is not None)

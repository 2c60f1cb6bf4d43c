"""The ``memory-forest`` command line: parse arguments, call the library, render.

Each command is a few lines: it calls one library operation and hands the
result to ``_emit``. Errors become one clean message (or one JSON object
under ``--json``) here, at the edge, and nowhere else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from . import __version__


class _ForestGroup(typer.core.TyperGroup):
    """The top-level command group; it fills in the default root when ROOT is left out.

    The rule, the same for every command whose first positional is ROOT: a
    command line with one positional fewer than the command needs has left
    ROOT out (so ``retrieve QUERY`` means ``retrieve DEFAULT_ROOT QUERY``), and
    so has a lone ``-`` for an optional stdin mark (``capture -``). The default
    is looked up only then, and is inserted as the first argument, where typer
    parses it like a typed ROOT. ROOT is therefore optional on the command line
    (and shown as such in help) while every command function still receives one.
    """

    def get_command(self, ctx: Any, name: str) -> Any:
        command = super().get_command(ctx, name)
        for param in getattr(command, "params", ()):
            if isinstance(param, typer.core.TyperArgument) and param.name == "root":
                param.required = False
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[Any, Any, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None and _root_left_out(ctx, command, name, rest):
            rest = [_default_root(name), *rest]
        return name, command, rest


app = typer.Typer(
    cls=_ForestGroup,
    name="memory-forest",
    help="A verifiable local memory for AI agents: canonical files, a derived index, "
    "route-first retrieval.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_state = {"json": False}

Root = Annotated[
    Path, typer.Argument(help="Forest root directory. Leave it out to use the default root "
                         "(MEMORY_FOREST_ROOT, else root in ~/.config/memory-forest/config.toml): "
                         "a command line one positional short has left ROOT out.",
                         show_default=False, metavar="ROOT")
]


def _root_left_out(ctx: Any, command: Any, name: str, args: list[str]) -> bool:
    """Whether ``args`` leave out the command's leading ROOT positional (see ``_ForestGroup``)."""
    arguments = [param for param in command.params
                 if isinstance(param, typer.core.TyperArgument)]
    if not arguments or arguments[0].name != "root":
        return False
    if any(arg in ctx.help_option_names for arg in args):
        return False  # help needs no forest, and must work with a broken config file
    try:  # the parser only sorts the words into options and arguments; it converts nothing
        values, extra, _ = command.make_parser(
            typer.Context(command, info_name=name, parent=ctx)).parse_args(args=list(args))
    except typer.TyperException:
        return False  # the real parse reports it
    given = [values[argument.name] for argument in arguments
             if values.get(argument.name) is not None] + extra
    needed = sum(1 for argument in arguments if argument.required or argument.name == "root")
    if len(given) < needed:
        return True
    return given == ["-"] and len(arguments) > needed


def _default_root(name: str) -> str:
    """The default root for a command line that left ROOT out, or a clean failure and exit."""
    from .errors import ForestError
    from .userconfig import resolve_root

    try:
        root = resolve_root(None)
    except ForestError as exc:
        _print(_failure(name.replace("-", "_"), exc.to_dict()))
        raise typer.Exit(exc.exit_code) from None
    # A root that looks like an option would be parsed as one.
    return f"./{root}" if root.startswith("-") else root


def _given_or_default_root(root: Path | None) -> Path:
    """An explicit --root, else the default root (``hooks install``, ``schedule print``)."""
    from .userconfig import resolve_root

    return Path(resolve_root(root))


def _version(value: bool) -> None:
    if value:
        print(f"memory-forest {__version__}")
        raise typer.Exit()


@app.callback()
def _global(
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one compact JSON object (any position).")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    _state["json"] = _state["json"] or json_output


def _emit(operation: str, call: Callable[[], dict[str, Any]]) -> None:
    """Run one library call through the edge; exit 0 when ok, else 1 (2 for usage)."""
    from .edge import run

    raise typer.Exit(run(operation, call, _state["json"]))


def _failure(operation: str, error: dict[str, Any]) -> dict[str, Any]:
    from .envelope import failure

    return failure(operation, error)


def _print(outcome: dict[str, Any]) -> None:
    from .edge import emit

    emit(outcome, _state["json"])


# --- forest core ----------------------------------------------------------------------------


@app.command()
def init(
    target: Annotated[  # not "root": a new forest is always named, never the default root
        Path, typer.Argument(help="Path of the new forest (must not exist).", metavar="ROOT")
    ],
    example: Annotated[bool, typer.Option(help="Fill it with the synthetic example.")] = False,
) -> None:
    """Create a new private forest (0700/0600) at a path that does not exist.

    Example: memory-forest init ~/memory --example
    """
    from . import operations

    _emit("init", lambda: operations.init(target, example=example))


@app.command()
def validate(root: Root) -> None:
    """Check the structural contract: layers, names, parents, modes, symlinks, UTF-8, ISTM.

    Example: memory-forest validate ~/memory --json
    """
    from . import operations

    _emit("validate", lambda: operations.validate(root))


@app.command()
def audit(root: Root) -> None:
    """Validate, then check the link contract (parent links, adjacent layers only).

    Example: memory-forest audit ~/memory
    """
    from . import operations

    _emit("audit", lambda: operations.audit(root))


@app.command()
def doctor(
    root: Root,
    repair: Annotated[bool, typer.Option(
        "--repair", help="Clear a stale lock, finish or roll back an interrupted write, restore "
        "0700/0600 modes (takes the lock).")] = False,
    wait: Annotated[float, typer.Option(
        help="With --repair: seconds (0-3600) to wait for the lock.")] = 0.0,
    set_aside_journal: Annotated[bool, typer.Option(
        "--set-aside-journal", help="With --repair: when the journal cannot be recovered, move "
        "it to .memory-forest/journal.set-aside-<UTC stamp>/ (never deleted), if the forest "
        "passes audit.")] = False,
) -> None:
    """Report versions, SQLite features, config, counts, index, lock and journal state.

    Example: memory-forest doctor ~/memory --repair
    """
    from . import operations

    _emit("doctor", lambda: operations.doctor(root, repair=repair, wait=wait,
                                              set_aside_journal=set_aside_journal))


# --- index and retrieval (issue 3) ---------------------------------------------------------

Query = Annotated[str, typer.Argument(help="Literal text; punctuation and operators are data.",
                                      metavar="QUERY")]
Limit = Annotated[int, typer.Option("--limit", "-n", help="At most this many results (1-100).")]
_STRICT = "Fail closed (index_stale) when a file changed since indexing, instead of flagging it."
Layers = Annotated[
    list[str] | None,
    typer.Option("--layer", "-l", help="Layer to search (key, number or directory); repeatable. "
                 "Default: 01-04."),
]


@app.command()
def index(
    root: Root,
    full: Annotated[bool, typer.Option("--full", help="Rebuild from scratch, atomically.")] = False,
    wait: Annotated[float, typer.Option(help="Seconds (0-3600) to wait for the lock.")] = 0.0,
) -> None:
    """Bring the derived index up to date (incremental by default).

    Documents with errors are left out and listed; exit 0 whenever the index was built.

    Example: memory-forest index ~/memory --full
    """
    from . import operations

    with _progress("indexing") as progress:
        _emit("index", lambda: operations.index(root, full=full, progress=progress, wait=wait))


@app.command()
def route(root: Root, query: Query, limit: Limit = 10, layer: Layers = None) -> None:
    """Find where to look: documents whose path or title matches. Metadata only.

    Example: memory-forest route ~/memory "kimchi fermentation" --json
    """
    from . import retrieve

    _emit("route", lambda: retrieve.route(root, query, limit=limit, layers=layer))


@app.command()
def search(
    root: Root,
    query: Query,
    limit: Limit = 10,
    layer: Layers = None,
    include_body: Annotated[
        bool, typer.Option("--include-body", help="Add the files' current bodies.")
    ] = False,
    strict: Annotated[bool, typer.Option("--strict", help=_STRICT)] = False,
) -> None:
    """Full-text search over bodies. Metadata only unless --include-body.

    Example: memory-forest search ~/memory "drip pressure" --layer stm --layer daily
    """
    from . import retrieve

    _emit("search", lambda: retrieve.search(root, query, limit=limit, layers=layer,
                                            include_body=include_body, strict=strict))


# The retrieve command's option table, shared with the lean parser of ``entry.main``.
from .retrieve import CLI_OPTIONS as _RETRIEVE  # noqa: E402


@app.command()
def retrieve(
    root: Root,
    query: Query,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="At most this many trails (1-100).")
    ] = _RETRIEVE["limit"][1],
    query_plan: Annotated[
        str | None, typer.Option("--query-plan", help="QueryPlan JSON file, or - for stdin.")
    ] = _RETRIEVE["query-plan"][1],
    strict: Annotated[bool, typer.Option("--strict", help=_STRICT)] = _RETRIEVE["strict"][1],
) -> None:
    """Root-first trails XLTM -> LTM -> MTM -> STM, re-hashed against the files.

    Example: memory-forest retrieve ~/memory "김치 숙성 온도" --json
    """
    from . import retrieve as retrieval

    _emit("retrieve", lambda: retrieval.retrieve_command(root, query, limit, query_plan,
                                                         strict))


class _progress:
    """A rich progress bar on stderr for long human-mode builds; nothing under --json."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Any = None

    def __enter__(self) -> Callable[[int, int], None] | None:
        if _state["json"] or not sys.stderr.isatty():
            return None
        from rich.progress import Progress

        self.bar = Progress(transient=True, console=_stderr_console())
        self.bar.start()
        task = self.bar.add_task(self.label, total=None)
        return lambda done, total: self.bar.update(task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)



# --- writers (issue 4) ----------------------------------------------------------------------

Wait = Annotated[float, typer.Option("--wait",
                                     help="Seconds (0-3600) to wait for the forest lock.")]
TransactionId = Annotated[
    str | None,
    typer.Option("--transaction-id", help="Id for an idempotent retry (default: a new one)."),
]
PlanSource = Annotated[str, typer.Argument(help="Plan JSON file, or - for stdin.", metavar="PLAN")]


StdinMark = Annotated[str | None, typer.Argument(help="- to read from stdin.", metavar="[-]")]
EventsFile = Annotated[str | None, typer.Option(
    "--file", "-f", help="JSON object or JSONL file of events.")]


@app.command()
def capture(
    root: Root,
    source: StdinMark = None,
    file: EventsFile = None,
    transaction_id: TransactionId = None,
    wait: Wait = 0.0,
) -> None:
    """Append raw events (one JSON object, or JSONL) to today's ISTM shard, redacting secrets.

    Example: memory-forest capture ~/memory --file events.jsonl
    """
    from .writers import capture as capturing

    def call() -> dict[str, Any]:
        return capturing.capture(root, _one_input(source, file, "capture"),
                                 transaction_id=transaction_id, wait=wait)

    _emit("capture", call)


# Named option types keep typer's per-process command building cheap: a name is
# looked up, an inline Annotated[...] string would be compiled and evaluated anew.
Tree = Annotated[str, typer.Option(help="Tree (domain) name.", show_default=False)]
Branch = Annotated[str, typer.Option(help="Branch name inside the tree.", show_default=False)]
Leaf = Annotated[str, typer.Option(help="Leaf (STM record) name.", show_default=False)]
LeafTitle = Annotated[str | None, typer.Option(
    "--title", help="Title of the leaf when it is new (default: from its name); an existing "
    "leaf keeps its own.", show_default=False)]
Content = Annotated[str | None, typer.Option(help="The fact to remember.")]
ContentFile = Annotated[str | None, typer.Option(
    "--file", "-f", help="Read the content from a file (- for stdin).")]
EventSource = Annotated[str, typer.Option("--source", help="Who remembers: the ISTM event's "
                                          "source.")]
TreeTitle = Annotated[str | None, typer.Option(help="Title of the tree if it is new.")]
BranchTitle = Annotated[str | None, typer.Option(help="Title of the branch if it is new.")]
Tags = Annotated[list[str] | None, typer.Option("--tag", help="Tag of a new leaf; repeatable.")]
OldId = Annotated[str, typer.Option("--id", help="Id of the record to supersede.",
                                    show_default=False)]
NewRecord = Annotated[str, typer.Option("--file", "-f", help="The new record (NAME.md).",
                                        show_default=False)]


@app.command()
def remember(
    root: Root,
    tree: Tree,
    branch: Branch,
    leaf: Leaf,
    title: LeafTitle = None,
    content: Content = None,
    file: ContentFile = None,
    source: EventSource = "memory-forest",
    tree_title: TreeTitle = None,
    branch_title: BranchTitle = None,
    tag: Tags = None,
    transaction_id: TransactionId = None,
    wait: Wait = 0.0,
) -> None:
    """Capture one fact as an ISTM event and file it in an STM leaf, in one transaction.

    Example: memory-forest remember ~/memory --tree kitchen --branch pickles --leaf dill
    --title "Dill pickles" --content "Brine at 5 percent."
    """
    from .writers import remember as remembering

    _emit("remember", lambda: remembering.remember_command(
        root, tree, branch, leaf, title, content, file, source=source, tree_title=tree_title,
        branch_title=branch_title, tags=tag, transaction_id=transaction_id, wait=wait))


@app.command("apply-daily")
def apply_daily(root: Root, plan: PlanSource, wait: Wait = 0.0) -> None:
    """Apply a Daily Plan: add entries (with stable ## anchors) to 05 daily/YYYY-MM-DD.md.

    Example: memory-forest apply-daily ~/memory daily-plan.json
    """
    from .writers import daily

    _emit("apply_daily", lambda: daily.apply_daily(root, plan, wait=wait))


@app.command("structured-context")
def structured_context(root: Root, query: Query, limit: Limit = 10) -> None:
    """Current bodies of the XLTM/LTM/MTM/STM documents for a query, and the snapshot hash.

    Example: memory-forest structured-context ~/memory "kimchi" --json > context.json
    """
    from .writers import structured

    _emit("structured_context", lambda: structured.structured_context(root, query, limit=limit))


@app.command("apply-structured")
def apply_structured(root: Root, plan: PlanSource, wait: Wait = 0.0) -> None:
    """Apply a Structured Sweep Plan bound to a structured-context snapshot.

    Example: memory-forest apply-structured ~/memory sweep-plan.json
    """
    from .writers import structured

    _emit("apply_structured", lambda: structured.apply_structured(root, plan, wait=wait))


@app.command()
def promote(root: Root, plan: PlanSource, wait: Wait = 0.0) -> None:
    """Promote Daily entries into one STM leaf (a Promotion Plan), creating missing parents.

    Example: memory-forest promote ~/memory promotion-plan.json
    """
    from .writers import promote as promoting

    _emit("promote", lambda: promoting.promote(root, plan, wait=wait))


@app.command()
def supersede(
    root: Root,
    old_id: OldId,
    file: NewRecord,
    transaction_id: TransactionId = None,
    wait: Wait = 0.0,
) -> None:
    """Create a new record beside an old one and mark the old one superseded.

    Example: memory-forest supersede ~/memory --id stm-kimchi-batch-7 --file kimchi-batch-7b.md
    """
    from .writers import supersede as superseding

    _emit("supersede", lambda: superseding.supersede(root, old_id, file,
                                                     transaction_id=transaction_id, wait=wait))


def _one_input(source: str | None, file: str | None, prefix: str) -> str:
    from .errors import usage_error

    if source is not None and source != "-":
        raise usage_error(f"{prefix}_input_invalid", "the only positional input is - (stdin); "
                          "use --file for a file")
    if (source is None) == (file is None):
        raise usage_error(f"{prefix}_input_required", "give exactly one of - (stdin) or --file")
    return file if file is not None else "-"


# --- agent integration (issue 5) ------------------------------------------------------------

# The gate's option table, shared with the lean parser of ``entry.main``.
from .gate import OPTIONS as _GATE  # noqa: E402


@app.command()
def gate(
    root: Root,
    format: Annotated[
        str, typer.Option("--format", help="receipt (the JSON receipt), or claude-code / codex "
                          "(a UserPromptSubmit hook answer).")
    ] = _GATE["format"][1],
    limit: Annotated[
        int, typer.Option("--limit", help="At most this many route results and trails (1-10).")
    ] = _GATE["limit"][1],
    strict: Annotated[
        bool, typer.Option("--strict", help=_STRICT)
    ] = _GATE["strict"][1],
) -> None:
    """Consult memory for one user turn read on stdin: route, then retrieve; print a receipt.

    Always prints one JSON object. Run on every turn by a host hook
    (memory-forest hooks install); never writes and never returns bodies.

    Example: echo "how cold should the kimchi fridge be?" | memory-forest gate ~/memory
    """
    from .gate import run_process

    raise typer.Exit(run_process(str(root), format=format, limit=limit, strict=strict))


@app.command("open")
def open_command(
    root: Root,
    path: Annotated[
        str, typer.Argument(help="Root-relative path as route and retrieve print it, the same "
                            "without its extension (the wikilink form), or a document id.")
    ],
    allow_source_layers: Annotated[
        bool, typer.Option("--allow-source-layers", help="Allow a Daily or ISTM source file.")
    ] = False,
) -> None:
    """Print the current body of one document, flagged when it differs from the index.

    Example: memory-forest open ~/memory "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    """
    from .retrieve import open_document

    _emit("open", lambda: open_document(root, path, allow_source_layers=allow_source_layers))


@app.command("status")
def status_command(root: Root) -> None:
    """Say whether memory can be consulted now: index state, counts, lock, next step.

    Example: memory-forest status ~/memory --json
    """
    from . import operations

    _emit("status", lambda: operations.status(root))


@app.command()
def serve(root: Root) -> None:
    """Run the MCP server for this forest over stdio (needs memory-forest[mcp]).

    Example: memory-forest serve ~/memory
    """
    from . import mcp_server
    from .errors import ForestError

    try:
        mcp_server.serve(root)  # prints nothing itself: stdout belongs to the protocol
    except ForestError as exc:  # before the protocol starts: the root or the SDK
        _print(_failure("serve", exc.to_dict()))
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:  # the edge: never a traceback, only the class name
        _print(_failure("serve", {"code": "internal_error",
                                  "message": f"unexpected {type(exc).__name__}",
                                  "details": {"class": type(exc).__name__}}))
        raise typer.Exit(1) from None


hooks_app = typer.Typer(
    name="hooks",
    help="Install or remove the per-turn gate as a UserPromptSubmit hook (Claude Code, Codex).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(hooks_app, name="hooks")

HookClient = Annotated[
    str, typer.Option("--client", help="claude-code or codex.", show_default=False)
]
HookSettings = Annotated[
    Path | None,
    typer.Option("--settings", help="Settings file (default: ~/.claude/settings.json for "
                 "claude-code, ~/.codex/hooks.json for codex).", show_default=False),
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Report the change; write nothing.")]


@hooks_app.command("install")
def hooks_install(
    client: HookClient,
    root: Annotated[Path | None, typer.Option(
        "--root", help="Forest root directory (default: the default root); the hook always "
        "names it by its absolute path.", show_default=False)] = None,
    settings: HookSettings = None,
    dry_run: DryRun = False,
) -> None:
    """Add the gate hook to the client's settings; keeps every other setting, backs up first.

    Example: memory-forest hooks install --client claude-code --root ~/memory
    """
    from . import hooks

    _emit("hooks_install", lambda: hooks.install(client, _given_or_default_root(root), settings,
                                                 dry_run=dry_run))


@hooks_app.command("uninstall")
def hooks_uninstall(
    client: HookClient,
    root: Annotated[Path | None, typer.Option("--root", help="Only the hook for this forest "
                                              "(default: every gate hook this tool added).",
                                              show_default=False)] = None,
    settings: HookSettings = None,
    dry_run: DryRun = False,
) -> None:
    """Remove the gate hooks that 'hooks install' added, and nothing else.

    Example: memory-forest hooks uninstall --client claude-code --root ~/memory
    """
    from . import hooks

    _emit("hooks_uninstall", lambda: hooks.uninstall(client, root, settings, dry_run=dry_run))




# --- maintenance (issue 6) ------------------------------------------------------------------


@app.command()
def maintain(
    root: Root,
    verify_all: Annotated[
        bool, typer.Option("--verify-all", help="Re-hash every file, not a sample.")
    ] = False,
    log: Annotated[
        Path | None, typer.Option(help="Append a one-line JSON run record to this file (0600).")
    ] = None,
) -> None:
    """The scheduled job: lock, validate, audit, index, verify; never repairs anything.

    Exits 0 when clean, 3 when it indexed with quarantined documents, 1 when it failed.

    Example: memory-forest maintain ~/memory --json --log ~/memory.maintenance.jsonl
    """
    from . import maintain as maintenance

    _emit("maintain", lambda: maintenance.maintain(root, verify_all=verify_all, log=log))


schedule_app = typer.Typer(
    name="schedule",
    help="Print scheduler entries for unattended maintenance (installs nothing).",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(schedule_app, name="schedule")


@schedule_app.command("print")
def schedule_print(
    scheduler: Annotated[str, typer.Option(help="cron, launchd or systemd.", show_default=False)],
    root: Annotated[Path | None, typer.Option(
        help="Forest root directory (default: the default root); the entry always names it "
        "by its absolute path.", show_default=False)] = None,
    bin_path: Annotated[
        Path | None,
        typer.Option("--bin", help="memory-forest executable (default: this one).",
                      show_default=False),
    ] = None,
    log: Annotated[
        Path | None,
        typer.Option(help="JSONL run log (default: ROOT.maintenance.jsonl next to the forest).",
                     show_default=False),
    ] = None,
) -> None:
    """Print a ready-to-install cron line, launchd plist or systemd units; installs nothing.

    Example: memory-forest schedule print --scheduler systemd --root ~/memory
    """
    from . import schedule

    _emit("schedule_print", lambda: schedule.print_entry(scheduler, _given_or_default_root(root),
                                                         bin_path, log))


@app.command()
def unlock(
    root: Root,
    stale: Annotated[
        bool, typer.Option("--stale", help="Remove a lock whose owner process is gone.")
    ] = False,
) -> None:
    """Remove a stale forest lock after re-checking that its owner process is gone.

    Example: memory-forest unlock ~/memory --stale
    """
    from . import operations

    _emit("unlock", lambda: operations.unlock(root, stale=stale))


# --- browsing (issue 7) ---------------------------------------------------------------------


@app.command()
def browse(
    root: Root,
    out: Annotated[
        Path,
        typer.Option("--out", help="New or empty directory for the site, outside the forest."),
    ],
) -> None:
    """Write a private static site (0700/0600, works from file://) to read the forest.

    Example: memory-forest browse ~/memory --out ~/memory-site
    """
    from .browse import browse as run_browse

    _emit("browse", lambda: run_browse(root, out))


# --- entry point ----------------------------------------------------------------------------


def _hoist_json(argv: list[str]) -> list[str]:
    """Let ``--json`` appear anywhere before ``--``: move it to the global position."""
    end = argv.index("--") if "--" in argv else len(argv)
    if "--json" not in argv[:end]:
        return argv
    rest = [arg for arg in argv[:end] if arg != "--json"]
    return ["--json", *rest, *argv[end:]]


def main(argv: list[str] | None = None) -> None:
    args = _hoist_json(list(sys.argv[1:] if argv is None else argv))
    _state["json"] = bool(args) and args[0] == "--json"
    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="memory-forest", standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.TyperException as exc:  # usage errors: unknown option, missing argument, ...
        _usage_failure(exc)
        code = 2
    except typer.Abort:
        code = 130
    sys.exit(code or 0)


def _usage_failure(exc: Any) -> None:
    """A parse error as every other failure: one JSON object, or ``error [usage_error] ...``.

    In human mode the failure line is followed by the parser's hint (``Try
    'memory-forest retrieve --help' for help.``). A bare ``memory-forest`` (or a
    bare command group) is not a mistake worth a code: it shows its help.
    """
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError" and not _state["json"]:
        exc.show()
        return
    operation = getattr(ctx, "info_name", None) or "memory-forest"
    _print(_failure(operation, {"code": "usage_error", "message": exc.format_message(),
                                "details": {}}))
    if not _state["json"] and ctx is not None:
        sys.stderr.write(f"Try '{ctx.command_path} --help' for help.\n")

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

app = typer.Typer(
    name="memory-forest",
    help="A verifiable local memory for AI agents: canonical files, a derived index, "
    "route-first retrieval.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_state = {"json": False}

Root = Annotated[Path, typer.Argument(help="Forest root directory.", show_default=False)]


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
    """Run one library call and print its result; exit 0 when ok, else 1 (2 for usage)."""
    from .errors import ForestError

    try:
        outcome = call()
    except ForestError as exc:
        outcome = _failure(operation, exc.to_dict())
        code = exc.exit_code
    except KeyboardInterrupt:
        outcome = _failure(operation, {"code": "interrupted", "message": "interrupted",
                                       "details": {}})
        code = 130
    except Exception as exc:  # the edge: never a traceback, only the class name
        outcome = _failure(operation, {"code": "internal_error",
                                       "message": f"unexpected {type(exc).__name__}",
                                       "details": {"class": type(exc).__name__}})
        code = 1
    else:
        code = 0 if outcome.get("ok") else 1
    _print(outcome)
    raise typer.Exit(code)


def _failure(operation: str, error: dict[str, Any]) -> dict[str, Any]:
    from .operations import result

    return result(operation, ok=False, error=error)


def _print(outcome: dict[str, Any]) -> None:
    if _state["json"]:
        from .jsonio import dumps

        sys.stdout.write(dumps(outcome) + "\n")
    else:
        from .render import render

        render(outcome)


# --- forest core ----------------------------------------------------------------------------


@app.command()
def init(
    root: Annotated[Path, typer.Argument(help="Path of the new forest (must not exist).")],
    example: Annotated[bool, typer.Option(help="Fill it with the synthetic example.")] = False,
) -> None:
    """Create a new private forest (0700/0600) at a path that does not exist.

    Example: memory-forest init ~/memory --example
    """
    from . import operations

    _emit("init", lambda: operations.init(root, example=example))


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
def doctor(root: Root) -> None:
    """Report versions, SQLite features, config, counts, index and lock state.

    Example: memory-forest doctor ~/memory
    """
    from . import operations

    _emit("doctor", lambda: operations.doctor(root))


# --- index and retrieval (issue 3) ---------------------------------------------------------



# --- writers (issue 4) ----------------------------------------------------------------------



# --- agent integration (issue 5) ------------------------------------------------------------



# --- maintenance (issue 6) ------------------------------------------------------------------



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
    import click

    args = _hoist_json(list(sys.argv[1:] if argv is None else argv))
    _state["json"] = bool(args) and args[0] == "--json"
    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="memory-forest", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        _usage_failure(exc)
        code = 2
    except click.exceptions.Abort:
        code = 130
    sys.exit(code or 0)


def _usage_failure(exc: Any) -> None:
    message = exc.format_message()
    if _state["json"]:
        operation = getattr(getattr(exc, "ctx", None), "info_name", None) or "memory-forest"
        _print(_failure(operation, {"code": "usage_error", "message": message, "details": {}}))
    else:
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:
            sys.stderr.write(ctx.get_usage() + "\n")
        sys.stderr.write(f"error: {message}\n")

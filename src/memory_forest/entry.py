"""The process entry point: the per-turn gate on a lean path, everything else through the CLI.

A hook starts ``memory-forest gate`` on every agent turn, so its start-up
time is paid on every turn. Importing ``cli`` imports typer (and click), which
alone costs more than the whole lookup; this module recognizes plain gate and
retrieve command lines (``lean.gate_args`` and ``lean.retrieve_args``) and
runs them without that import. Any other command line, and any such line the
lean parser does not fully understand (``--help``, a typo, a missing value),
goes to ``cli.main`` unchanged, where typer parses it and reports errors.
An argument that is not valid UTF-8 is refused before either parser sees it.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    from .edge import refuse_undecodable

    refused = refuse_undecodable(args)
    if refused is not None:
        sys.exit(refused)
    if "gate" in args[:2]:
        from . import gate, lean

        options = lean.gate_args(args)
        if options is not None:
            sys.exit(gate.run_process(**options))
    if "retrieve" in args[:2]:
        from . import lean, retrieve

        options = lean.retrieve_args(args)
        if options is not None:
            from .edge import run

            sys.exit(run("retrieve", lambda: retrieve.retrieve_command(**options),
                         json_mode="--json" in args))
    from .cli import main as cli_main

    cli_main(args)

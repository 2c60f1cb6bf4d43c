"""Where human output goes, and its two shapes: tables on a terminal, lines anywhere else.

A table is for eyes: rich fits it to the terminal's width and wraps its
cells. Piped into ``grep``, a file or another program, the same wrapping
cuts a path in the middle of a word, so off a terminal every row is one
line that is never wrapped. Untrusted text (paths and messages can carry
memory text) is made inert here before rich or the terminal sees it.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Enough of a failure's issues to act on; the full list is always in --json.
MAX_LISTED_ISSUES = 20


def escape(text: Any) -> str:
    """Make untrusted text inert: rich markup escaped, control characters visible.

    Paths and messages can carry memory text (file names, link targets); an
    escape sequence in them must be shown, never sent to the terminal.
    """
    from rich.markup import escape as markup_escape

    visible = CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", str(text))
    return markup_escape(visible)


def body_text(body: str) -> str:
    """A body as terminal text: its line breaks and tabs kept, other control characters
    shown inert (an escape sequence in memory must never reach the terminal)."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}",
                  body)


def problem_line(issue: dict[str, Any], level: bool = True) -> str:
    """One problem as one line (level, path, code, message), escaped; the same shape for
    validate, audit, index, maintain and a failure's list, so one grep reads them all."""
    text = (f"{escape(issue.get('path', '?'))}  {escape(issue.get('code', '?'))}  "
            f"{escape(issue.get('message', ''))}")
    if not level:
        return text
    style = "red" if issue.get("level") == "error" else "yellow"
    return f"[{style}]{escape(issue.get('level', 'error'))}[/]  {text}"


def grid(rows: list[list[str]], header: list[str] | None = None,
         right: tuple[int, ...] = ()) -> None:
    """Rows of already escaped cells: a table on a terminal, else one line per row.

    ``header`` names the columns (a table shows it, lines leave it out: each
    line reads on its own); ``right`` are the column numbers to right-align.
    """
    if not out.is_terminal:
        for row in rows:
            out.print("  ".join(cell for cell in row if cell))
        return
    from rich.table import Table

    table = Table(show_header=header is not None, header_style="bold", box=None,
                  pad_edge=False)
    for number in range(len(rows[0]) if rows else len(header or ())):
        table.add_column(header[number] if header else None, overflow="fold",
                         justify="right" if number in right else "left",
                         style="bold" if header is None and number == 0 else None)
    for row in rows:
        table.add_row(*row)
    out.print(table)


def pairs(rows: list[tuple[str, str]]) -> None:
    """Named values (``ready yes``): aligned on a terminal, ``name: value`` lines else."""
    if out.is_terminal:
        grid([[name, value] for name, value in rows])
        return
    for name, value in rows:
        out.print(f"{name.strip()}: {value}" if name.strip() else value)

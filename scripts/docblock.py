"""How a benchmark writes its figures into a doc: between its two markers, nowhere else.

Each script owns one block of ``docs/benchmarks.md`` (or another doc); the
prose around it is written by hand and never touched. A block not there yet is
added at the end under its heading when the script names one; otherwise the
script stops, so a renamed marker cannot silently write nothing.
"""

from __future__ import annotations

import datetime as dt
import platform
import shlex
import sys
import textwrap
from pathlib import Path


def write_block(doc: Path, begin: str, end: str, block: str, heading: str | None = None) -> None:
    """Replace the text from ``begin`` through ``end`` in ``doc`` with ``block`` (which
    holds both markers)."""
    text = doc.read_text(encoding="utf-8")
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    elif heading is not None:
        text = text.rstrip("\n") + f"\n\n## {heading}\n\n" + block + "\n"
    else:
        sys.exit(f"{doc} has no {begin} ... {end} markers to write between")
    doc.write_text(text, encoding="utf-8")


def measured_block(begin: str, end: str, report: dict, how: str, script: str, argv: list[str],
                   rows: list[str]) -> str:
    """A block that says where and how it was measured, how to run it again, then ``rows``.

    ``report`` holds the machine's ``cpus``, ``python`` and ``load_average_1m``; ``how``
    finishes the sentence that starts with the machine (what was run, how many times).
    """
    note = textwrap.fill(
        f"Measured {dt.date.today().isoformat()} on {report['cpus']} vCPUs "
        f"({platform.machine()}, {platform.system()}) of a shared VM, Python "
        f"{report['python']}, 1-minute load average {report['load_average_1m']} at the start"
        f"{how}", width=78)
    command = shlex.join([".venv/bin/python", f"scripts/{script}", *argv])
    return "\n".join([begin, note, "", "```console", f"$ {command}", "```", "", *rows, end])

"""The per-turn client of the warm service: a gate, ``retrieve`` or ``index`` answered by a
running watcher.

Every host turn starts a process, and most of its time is spent importing
and opening what a long-lived process already has open. When ``watch`` runs
on a forest, it answers the same command lines over a private Unix socket in
the forest's state directory (``service``): this client hands it the command
line, the working directory and stdin, and prints what came back, byte for
byte. The service runs the command with the same code the cold path would
(``cli.run``), so the answer is the same; only the time differs.

The client steps aside, and the command runs in this process as before,
whenever anything could make the two differ or the service cannot answer:
no ROOT it can see without reading the user's config file, a terminal on
stdout (the human renderings follow its width), a ``MEMORY_FOREST_*``
variable other than the root (test hooks), no socket, a socket not owned by
this user, another installed copy of the package, a watcher still applying
a change, or no answer within ``ANSWER_SECONDS``. So a watcher that is not
running, stuck or gone costs at most that wait, and never a wrong answer.

This module is the console entry and runs before anything else of ours is
imported: with ``warmsocket`` it loads only ``os``, ``sys``, ``stat`` and
``_socket`` (about 1 ms), and imports the CLI only when the service did not
answer.
"""

from __future__ import annotations

import io
import os
import sys

from . import __version__
from .warmsocket import PACKAGE_DIR, ROOT_ENV, SERVED, SOCKET_NAME, STATE_DIR, request


def main() -> None:
    """The ``memory-forest`` command: the warm service's answer, else the CLI."""
    argv = sys.argv[1:]
    root = _served_root(argv)
    if root is not None:
        stdin = code = None
        try:  # the gate reads its turn from stdin, retrieve only a QueryPlan given as '-'
            stdin = sys.stdin.buffer.read() if argv[0] == "gate" or "-" in argv else None
            code = forward(root, argv, stdin or b"")
        except (OSError, ValueError, AttributeError):
            pass  # no stdin, no working directory, a garbled answer: it runs here instead
        if code is not None:
            sys.exit(code)
        if stdin is not None:  # read for the service: the command here reads it again
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding=sys.stdin.encoding,
                                         errors=sys.stdin.errors)
    from .cli import main as cold

    cold()


def forward(root: str, argv: list[str], stdin: bytes) -> int | None:
    """Run ``argv`` through the warm service of ``root``; its exit code, or None when the
    command must run here (see the module docstring)."""
    header = "\0".join([os.getcwd(), os.environ.get(ROOT_ENV, ""), __version__, PACKAGE_DIR,
                        *argv])
    answer = request(root, "run", header.encode("utf-8", "surrogateescape"), stdin)
    if answer is None:
        return None
    status, _, rest = answer.partition(b"\n")
    fields = status.split(b" ")
    if len(fields) != 3 or fields[0] != b"ok" or not fields[2].isdigit():
        return None
    code, size = int(fields[1]), int(fields[2])
    sys.stdout.buffer.write(rest[:size])
    sys.stdout.flush()
    sys.stderr.buffer.write(rest[size:])
    sys.stderr.flush()
    return code


def _served_root(argv: list[str]) -> str | None:
    """The forest whose service may answer ``argv`` (see the module docstring).

    Which word is ROOT is the CLI's to say, and parsing here would mean a
    second copy of every command's options; so the first word that names a
    folder with a service socket is taken, else the root the environment
    names, and the service, which parses the line with the CLI's own
    parser, refuses a line whose forest is not its own.
    """
    if not argv or argv[0] not in SERVED or "--help" in argv or "-h" in argv:
        return None
    if any(name.startswith("MEMORY_FOREST_") and name != ROOT_ENV for name in os.environ):
        return None
    try:
        if os.isatty(1):
            return None
    except OSError:
        return None
    for word in argv[1:]:
        if word == "--":
            break
        if not word.startswith("-") and os.path.lexists(
                os.path.join(word, STATE_DIR, SOCKET_NAME)):
            return word
    return os.path.expanduser(os.environ.get(ROOT_ENV, "")) or None

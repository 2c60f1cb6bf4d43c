"""The warm service: a running watcher answers gate and retrieve command lines over a socket.

The socket is ``service.sock`` in the forest's state directory (0700), made
0600 from its first moment. The service answers one request at a time, each
with one answer, and then closes the connection:

- a peer of another user is refused before a byte is read (``SO_PEERCRED``
  where the system has it; the modes keep everyone else out in any case);
- a request is read for at most ``READ_SECONDS`` and ``MAX_REQUEST_BYTES``;
  one longer or slower is refused and the service goes on;
- a command line runs only when its forest, parsed by the CLI's own parser
  from the client's working directory, is this service's forest (``run_line``
  says), the client is the same installed package, and the watcher is current (it
  holds ``current`` while it applies a change; the service waits at most
  ``CURRENT_WAIT`` for it). Otherwise the answer says so and the client
  runs the command itself (``warm``).

A command runs through the CLI's own parser and ``run`` (handed in as
``run_line``: the CLI starts the watcher), the cold path's own code, with
the client's stdin, working directory and root variable, so the bytes it
prints are the cold path's. Requests are serialized, and the watcher writes its own
log lines to file descriptor 2, never through ``sys.stderr``, so swapping the
standard streams for one request captures that request's output only.
"""

from __future__ import annotations

import io
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import __version__, warmsocket
from .gate import MAX_HOOK_BYTES
from .jsonio import dumps
from .statefiles import socket_path

HEADER_BYTES = 64 * 1024  # the command line, working directory and package stamp
MAX_REQUEST_BYTES = MAX_HOOK_BYTES + HEADER_BYTES
READ_SECONDS = 2.0
CURRENT_WAIT = 1.0
ACCEPT_SECONDS = 0.25  # how often the accept loop looks whether it was asked to stop


class Service:
    """The socket and the thread that answers it, for one forest."""

    def __init__(self, root: Path, current: threading.Lock,
                 status: Callable[[], dict[str, Any]],
                 run_line: Callable[[list[str], str], int | str]) -> None:
        self.root = root
        self.current = current
        self.status = status
        self.run_line = run_line  # the CLI's: an exit code, or why it ran nothing
        self.path = socket_path(root)
        self.answered = 0
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind the socket (a leftover one of a dead watcher is replaced) and start answering."""
        if self.path.is_socket():
            self.path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o177)  # the socket file is 0600 from the moment it exists
        try:
            warmsocket.reach(sock.bind, os.fspath(self.path))
        finally:
            os.umask(previous)
        os.chmod(self.path, 0o600)
        sock.listen(16)
        sock.settimeout(ACCEPT_SECONDS)
        self._sock = sock
        self._thread = threading.Thread(target=self._loop, name="memory-forest-service",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop answering, close the socket and remove its file."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._sock is not None:
            self._sock.close()
        if self.path.is_socket():
            self.path.unlink()

    def _loop(self) -> None:
        assert self._sock is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                continue
            with conn:
                try:
                    answer = self._answer(conn)
                except Exception as exc:  # noqa: BLE001 - a fault answers one request, never
                    # ends the service: the client runs the command itself
                    log({"event": "service_fault", "error": type(exc).__name__,
                         "message": str(exc)[:200]})
                    answer = refusal("service_fault")
                try:
                    if answer is not None:
                        conn.sendall(answer)
                except OSError:
                    pass  # the client went away: it runs the command itself

    def _answer(self, conn: socket.socket) -> bytes | None:
        if not _same_user(conn):
            return None
        conn.settimeout(READ_SECONDS)
        request = _read(conn)
        if request is None:
            return refusal("request_too_large")
        head, _, rest = request.partition(b"\n")
        fields = head.split(b" ")
        if len(fields) != 3 or fields[0] != warmsocket.MAGIC or not fields[2].isdigit():
            return refusal("request_malformed")
        size = int(fields[2])
        header, body = rest[:size], rest[size:]
        if fields[1] == b"status":
            return b"ok 0 0\n" + dumps(self.status()).encode("utf-8")
        if fields[1] != b"run":
            return refusal("request_malformed")
        return self._run(header.decode("utf-8", "surrogateescape").split("\0"), body)

    def _run(self, fields: list[str], stdin: bytes) -> bytes:
        if len(fields) < 5:
            return refusal("request_malformed")
        cwd, env_root, version, package, *argv = fields
        if (version, package) != (__version__, warmsocket.PACKAGE_DIR):
            return refusal("other_package")
        if argv[0] not in warmsocket.SERVED:
            return refusal("not_served")
        if not self.current.acquire(timeout=CURRENT_WAIT):
            return refusal("busy")
        self.current.release()  # current now: a build that starts meanwhile is one a cold
        # run would race as well, and the index is consistent for both (one transaction)
        try:
            with _as_client(cwd, env_root, stdin) as streams:
                try:
                    outcome = self.run_line(argv, os.fspath(self.root))
                except SystemExit as exc:  # nothing below should exit, but never die of it
                    outcome = exc.code if isinstance(exc.code, int) else 1
            if isinstance(outcome, str):
                return refusal(outcome)
            code = outcome
            self.answered += 1
            out, err = streams.printed()
            return b"ok %d %d\n" % (code, len(out)) + out + err
        except OSError:
            return refusal("client_unreachable")  # its working directory is gone


def log(record: dict[str, Any]) -> None:
    """One JSON line on file descriptor 2 (the journal under a service manager): the
    watcher's and the service's log. Never through ``sys.stderr``, which the service swaps
    while it answers a request."""
    line = dumps({"at": round(time.time(), 3), **record}) + "\n"
    try:
        os.write(2, line.encode("utf-8"))
    except OSError:
        pass


def refusal(code: str) -> bytes:
    """An answer that is not one: the client runs the command itself."""
    return f"refused {code}\n".encode("ascii")


class _as_client:
    """The client's working directory, root variable and stdin for one request, and buffers
    for what it prints; everything is put back on exit."""

    def __init__(self, cwd: str, env_root: str, stdin: bytes) -> None:
        self.cwd, self.env_root, self.stdin = cwd, env_root, stdin

    def __enter__(self) -> _as_client:
        self.saved = (os.open(".", os.O_RDONLY), os.environ.get(warmsocket.ROOT_ENV),
                      sys.stdin, sys.stdout, sys.stderr)
        self.out, self.err = out, err = io.BytesIO(), io.BytesIO()
        try:
            os.chdir(self.cwd)
        except OSError:
            os.close(self.saved[0])
            raise
        if self.env_root:
            os.environ[warmsocket.ROOT_ENV] = self.env_root
        else:
            os.environ.pop(warmsocket.ROOT_ENV, None)
        sys.stdin = io.TextIOWrapper(io.BytesIO(self.stdin), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
        sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
        return self

    def printed(self) -> tuple[bytes, bytes]:
        """What the command wrote to stdout and stderr."""
        return self.out.getvalue(), self.err.getvalue()

    def __exit__(self, *exc: object) -> None:
        here, env_root, stdin, stdout, stderr = self.saved
        sys.stdout.flush()
        sys.stderr.flush()
        for stream in (sys.stdin, sys.stdout, sys.stderr):
            stream.detach()  # a wrapper closes its buffer when collected; ours are read after
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        if env_root is None:
            os.environ.pop(warmsocket.ROOT_ENV, None)
        else:
            os.environ[warmsocket.ROOT_ENV] = env_root
        os.fchdir(here)
        os.close(here)


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this user (where the system says; else the 0600 socket in
    the 0700 state directory is the whole check)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option,
                                                    struct.calcsize("3i")))
    return uid == os.getuid()


def _read(conn: socket.socket) -> bytes | None:
    """The whole request, up to the client's end of writing; None when it is too large."""
    chunks, total = [], 0
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > MAX_REQUEST_BYTES:
            return None
        chunks.append(chunk)

"""The warm service's socket: where it is, how to reach it, and one request to it.

Below everything that uses it (the per-turn client ``warm``, the service,
and ``watchstate``, which asks a running watcher about the index), and free
of our other modules: the client loads this before anything else, so it
imports only ``os``, ``stat`` and ``_socket``, not even ``pathlib``. The
state directory's name and the root variable are defined here for the same
reason, and ``statefiles`` and ``userconfig`` take them from here.
"""

from __future__ import annotations

import _socket
import os
import stat

TYPE_CHECKING = False  # typing itself costs 10 ms, more than this whole path
if TYPE_CHECKING:
    from collections.abc import Callable

STATE_DIR = ".memory-forest"
ROOT_ENV = "MEMORY_FOREST_ROOT"
SOCKET_NAME = "service.sock"
MAGIC = b"MF1"
# How long a turn waits for the service before it runs the command itself: the service
# answers one request at a time, each in milliseconds; past this it is stuck, not busy.
ANSWER_SECONDS = 3.0
MAX_ANSWER_BYTES = 16 * 1024 * 1024
# The commands the service answers: the per-turn readers, and a plain ``index``, which has
# nothing to do while the watcher is current.
SERVED = ("gate", "retrieve", "index")
# Which installed copy of the package a client or the service is: they talk only to their own.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# Unix socket addresses are at most 108 bytes; a longer path is reached from its directory.
MAX_ADDRESS = 100


def request(root: str, kind: str, header: bytes, body: bytes = b"") -> bytes | None:
    """One request to the service of ``root``, and its whole answer; None when there is no
    service, it is not this user's, or it did not answer in time."""
    path = os.path.join(root, STATE_DIR, SOCKET_NAME)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(ANSWER_SECONDS)
        reach(sock.connect, path)
        sock.sendall(b"%s %s %d\n" % (MAGIC, kind.encode("ascii"), len(header)) + header + body)
        sock.shutdown(_socket.SHUT_WR)
        chunks, total = [], 0
        while total <= MAX_ANSWER_BYTES:
            chunk = sock.recv(1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
        return None
    except OSError:  # refused, gone, timed out: the command runs here instead
        return None
    finally:
        sock.close()


def reach(action: Callable[[str], None], path: str) -> None:
    """``action`` (a socket's connect, or the service's bind) on ``path``, even when it is
    longer than an address holds: then from its directory, and the working directory is
    put back."""
    if len(os.fsencode(path)) <= MAX_ADDRESS:
        action(path)
        return
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir(os.path.dirname(path))
        action(os.path.basename(path))
    finally:
        os.fchdir(here)
        os.close(here)

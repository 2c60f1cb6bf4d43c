"""Read and parse the files a scan lists: in this process, or on every core for a large forest.

``parse`` turns walk entries into one ``Parsed`` record each, in the order
given: the file's route (or ``None`` with the issue that says why it is not
a canonical file), its ``Facts``, searchable text and fragments (the events and
entries of a source file; or ``None`` with the read's issue). A file's own
problems (UTF-8, frontmatter, ISTM lines) stay inside its facts, as
``documents.read_facts`` puts them.

Reading and parsing cost about 0.3 ms a file, most of it YAML; SQLite's
inserts and the whole-forest checks cannot move to another process, this can.
Above ``POOL_THRESHOLD`` files, on a machine with more than one core, the
files are read by a pool of worker processes:

- Routes are decided here, in the calling process (cheap, and the route cache
  they warm is the one audit reads); a worker gets only paths, sizes and
  mtimes, and sends back facts, text (only when asked for) and a read issue.
  The root and the limits are handed to the workers when they start: a worker
  never reads ``forest.json`` or anything else but the files it is given.
- Work goes out in chunks of ``CHUNK`` files, so pickling is paid per chunk,
  and at most a few chunks per worker are out at a time: results come back in
  order, and a caller that consumes slowly (inserting into SQLite) holds only
  a bounded number of parsed files in memory.
- Workers are forked (``fork``, not ``spawn`` or ``forkserver``): those two
  re-import the caller's ``__main__`` in every worker, which runs any script
  that imports this package without a ``__main__`` guard, and pay an
  interpreter start and the parsers' imports per worker. A fork is safe here
  because a worker touches nothing it inherits but this module's code: it
  never uses an inherited SQLite connection (the scan holds none; one a caller
  holds is never closed or read by the child, which leaves by ``os._exit``),
  POSIX locks are not inherited, and the lock's signal handlers are reset
  first thing. A process running other threads (the MCP server) is never
  forked: a thread may hold a lock that the child would find held forever, so
  such a process reads its files itself, even when ``pool=True``.
- Workers ignore SIGINT (a Ctrl-C reaches the caller, which stops them) and
  take SIGTERM and SIGHUP with the default action. However ``parse`` ends (its
  records all consumed, an exception, ``KeyboardInterrupt``, the caller
  dropping the iterator), the pool is shut down and its processes are joined
  before control returns: no worker outlives the call.

Both paths run the same function on each file, so their records are equal;
a test holds them equal on a forest with every kind of problem.

Nothing here is imported on the per-turn path (``retrieve``, ``gate``), and
``multiprocessing`` is imported only when a pool is used.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from .documents import read_document
from .errors import ForestError
from .facts import Facts
from .issues import WARNING, Issue
from .routes import Route, parse_route
from .safety import read_regular
from .statefiles import STATE_DIR

if TYPE_CHECKING:
    from .facts import Facts, Fragment
    from .safety import Entry

# Fewer files than this are read in this process: starting the pool (a server process
# that imports the parsers, then one fork per worker) costs about as much as parsing
# this many files on one core (see the module docstring; measured on a 2-core VM).
POOL_THRESHOLD = 2_000
CHUNK = 128  # files per task: big enough to amortise pickling, small enough to balance
IN_FLIGHT_PER_WORKER = 4  # chunks out per worker; bounds what waits in memory


class Parsed(NamedTuple):
    """One walk entry, read: what the snapshot and the index keep of it."""

    path: str
    route: Route | None  # None: not a canonical file (``issues`` may say why)
    facts: Facts | None  # None: not read (not canonical, or the read failed)
    text: str  # searchable text; "" unless asked for
    issues: tuple[Issue, ...]  # the route's or the read's problem; the file's own are in facts
    fragments: tuple[Fragment, ...] = ()  # a source file's events or entries; with the text


def parse(root: Path, entries: Iterable[Entry], limits: dict[str, int],
          keep_text: bool = False, *, pool: bool | None = None
          ) -> Generator[Parsed, None, None]:
    """One ``Parsed`` per entry, in the order of ``entries``.

    ``pool`` forces the choice (``True``: a pool even for a few files and one
    core; ``False``: this process); ``None`` uses a pool above
    ``POOL_THRESHOLD`` files when there is more than one core.
    """
    routed: list[tuple[Entry, Route | None, tuple[Issue, ...]]] = []
    reads: list[Entry] = []
    for entry in entries:
        found: list[Issue] = []
        route = route_or_issue(entry.path, found)
        routed.append((entry, route, tuple(found)))
        if route is not None:
            reads.append(entry)
    workers = _workers(len(reads), pool)
    if workers:
        return _merge(routed, _pooled(root, reads, limits, keep_text, workers))
    return _merge(routed, (read_one(root, entry, limits, keep_text) for entry in reads))


# What reading one routed file gives: facts, text, fragments, and the read's issue.
Read = tuple["Facts | None", str, "tuple[Fragment, ...]", "Issue | None"]


def read_one(root: Path, entry: Entry, limits: dict[str, int], keep_text: bool) -> Read:
    """Read and parse one routed file: (facts, text, fragments, None), or (None, "", (), the
    read's issue). Fragments are text: like the text, only when asked for."""
    try:
        raw = read_regular(root, entry.path, limits["max_file_bytes"])
    except ForestError as exc:
        return None, "", (), Issue(entry.path, exc.code, exc.message)
    facts, text, fragments = read_document(parse_route(entry.path), raw, entry.mtime_ns,
                                           limits["max_links_per_document"])
    if not keep_text:
        return facts, "", (), None
    return facts, text, tuple(fragments), None


def _merge(routed: list[tuple[Entry, Route | None, tuple[Issue, ...]]],
           reads: Iterator[Read]) -> Generator[Parsed, None, None]:
    try:
        for entry, route, issues in routed:
            if route is None:
                yield Parsed(entry.path, None, None, "", issues)
                continue
            facts, text, fragments, issue = next(reads)
            yield Parsed(entry.path, route, facts, text, issues if issue is None else (issue,),
                         fragments)
    finally:
        close = getattr(reads, "close", None)
        if close is not None:
            close()  # a pool's generator shuts its pool down here


def route_or_issue(path: str, issues: list[Issue]) -> Route | None:
    """The route of a canonical path, or None (with an issue when the file is misplaced)."""
    first = path.split("/", 1)[0]
    if first == STATE_DIR:
        return None  # derived state: modes were checked by the walk, content is not canonical
    if "/" not in path:
        issues.append(Issue(path, "unexpected_entry",
                            "files at the root are not part of the forest", WARNING))
        return None
    try:
        return parse_route(path)
    except ForestError as exc:
        issues.append(Issue(path, exc.code, exc.message))
        return None


def routable(path: str) -> bool:
    try:
        parse_route(path)
    except ForestError:
        return False
    return True


# --- the pool -------------------------------------------------------------------------------


def _workers(count: int, pool: bool | None) -> int:
    """How many worker processes to read ``count`` files with; 0 for this process."""
    cores = os.cpu_count() or 1
    if pool is None:
        pool = count >= POOL_THRESHOLD and cores > 1
    # Forking a process that runs other threads can copy a lock some thread holds (and
    # leave it held forever in the child): such a process reads its files itself.
    if not pool or count == 0 or threading.active_count() > 1:
        return 0
    return max(1, min(cores, -(-count // CHUNK)))


def _pooled(root: Path, reads: list[Entry], limits: dict[str, int], keep_text: bool,
            workers: int) -> Iterator[Read]:
    """``read_one`` over ``reads`` on ``workers`` processes, in order, a bounded window ahead."""
    # The pool costs its import only to a build large enough to fork workers.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                                   initargs=(os.fspath(root), dict(limits), keep_text,
                                             os.getpid()))
    try:
        chunks = (reads[start:start + CHUNK] for start in range(0, len(reads), CHUNK))
        pending: deque = deque()
        window = workers * IN_FLIGHT_PER_WORKER
        for chunk in chunks:
            pending.append(_submit(executor, chunk))
            if len(pending) >= window:
                yield from _unpacked(pending.popleft().result())
        while pending:
            yield from _unpacked(pending.popleft().result())
    finally:
        # Whatever ends the iteration (done, an error, Ctrl-C, the caller letting go):
        # drop the chunks not started, let the running ones finish (milliseconds), and
        # join every worker before returning.
        executor.shutdown(wait=True, cancel_futures=True)


# The stop signals are held while the pool forks and is fed: a signal that landed inside a
# fork or an executor's bookkeeping could leave a worker running the caller's handler, or
# the pool half started. Held, it lands a moment later, between two chunks.
_HELD = ("SIGTERM", "SIGHUP", "SIGINT")


def _submit(executor, chunk: list[Entry]):
    held = {getattr(signal, name) for name in _HELD}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        return executor.submit(_read_chunk, chunk)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


_worker_args: tuple[Path, dict[str, int], bool] | None = None


def _start_worker(root: str, limits: dict[str, int], keep_text: bool, caller: int) -> None:
    global _worker_args
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller handles Ctrl-C and stops us
    for name in ("SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    _end_with(caller)
    _worker_args = (Path(root), limits, keep_text)
    # Forked while the caller held the stop signals: take them now that our handlers are set.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {getattr(signal, name) for name in _HELD})


def _end_with(caller: int) -> None:
    """Die with the caller even when it is killed outright (SIGKILL runs no cleanup).

    A forked worker holds both ends of the pool's pipes, so it would never see
    them close and would wait for work forever. Linux can send it SIGKILL when
    its parent dies; elsewhere the pool's own shutdown is all there is.
    """
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != caller:  # the caller died before the request was made
        os._exit(1)


def _read_chunk(chunk: list[Entry]) -> list[tuple]:
    """A worker's task: ``read_one`` over a chunk, the facts packed as plain tuples."""
    assert _worker_args is not None, "a pool task ran outside a started worker"
    root, limits, keep_text = _worker_args
    packed = []
    for entry in chunk:
        facts, text, fragments, issue = read_one(root, entry, limits, keep_text)
        packed.append((None if facts is None else _pack(facts), text, fragments, issue))
    return packed


# Facts cross the pipe as tuples of their fields: a dataclass unpickles through its
# ``__dict__``, about four times slower, and the caller's core is the one in short supply.
def _pack(facts: Facts) -> tuple:
    return tuple(vars(facts).values())  # the dataclass's fields, in their order


def _unpacked(packed: list[tuple]) -> Iterator[Read]:
    for fields, text, fragments, issue in packed:
        yield (None if fields is None else Facts(*fields)), text, fragments, issue

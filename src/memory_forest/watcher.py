"""``watch``: keep the derived index current while files change, and answer turns warm.

The watcher is one long-lived process per forest:

- It listens for file-system events under the layers and the forest's
  config (``watchfiles``, which batches them: a batch ends after
  ``STEP_MS`` of quiet, or ``DEBOUNCE_MS`` after its first event). The
  documents a batch names are re-described as a writer's own are after
  its write (``index.update_paths``: no walk, so milliseconds at any
  size), and once the files have been quiet for ``SETTLE_SECONDS`` the
  incremental build, the same ``index`` path a person or the scheduler
  runs, judges the forest (problems, links, ids) and catches anything an
  event did not name. A batch only a walk can read (a directory, the
  config, a file that cannot be read as a document) goes to the build at
  once. Both hold the writer lock only while they apply.
- A build also runs at start (so changes made while no watcher ran are
  caught), every ``rescan`` seconds, and after the event source fails; a
  lost event costs at most one rescan period, never a wrong index.
- With semantic ranking on, a child ``index --semantic`` at low priority
  embeds whatever has no vectors (while the watcher is current, that run
  builds nothing and takes no lock); it commits batch by batch, so a stop
  loses nothing it finished.
- The warm service (``service``) answers gate and retrieve requests on a
  socket in the state directory while the watcher runs.

SIGTERM or SIGINT stops it between steps; one landing inside a build rolls
the build back and releases the lock (``lock.held``). A SIGKILL leaves at
worst a stale lock and a dead socket: a turn then runs cold, and the next
watcher clears both.
One watcher per forest: the second is refused while the first holds
``watch.lock``; a started watcher removes the stale writer lock a killed
one left. ``status`` and ``doctor`` read ``watch.json`` and ask the
service how far behind it is (``report``).
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import watchfiles

from . import index, lock, semantic
from .envelope import result
from .errors import ForestError, usage_error
from .forest import Forest, ForestLike, opened
from .ignore import is_debris
from .jsonio import dumps
from .layers import LAYERS
from .safety import FILE_MODE, mkdir_private, write_private
from .service import Service, log
from .snapshot import refuse_non_forest
from .statefiles import CONFIG, STATE_DIR, state_dir
from .watchstate import LOCK_FILE, STATE_FILE, answer_locally, read_state

STEP_MS = 50
DEBOUNCE_MS = 1600
RESCAN_SECONDS = 600.0
TICK_MS = 1000  # how often the loop wakes with no event, to settle, retry or rescan
LOCK_WAIT = 30.0  # a writer holds the lock for well under a second; a build waits that long
# A build judges the whole forest (problems, links, ids); after a burst of edits, once
# the files have been quiet this long.
SETTLE_SECONDS = 2.0
RETRY_SECONDS = 5.0  # after a failed build (a held or stale lock), how soon to try again
EMBED_NICE = 10
_LAYER_DIRS = frozenset(layer.dirname for layer in LAYERS)


def watch(forest: ForestLike, rescan: float = RESCAN_SECONDS, progress: Any = None, *,
          run_line: Callable[[list[str], str], int | str]) -> dict[str, Any]:
    """Keep the index current and answer turns warm until a stop signal (SIGTERM, SIGINT).

    ``run_line`` runs a command line the service is handed (``cli.warm_line``)."""
    with opened(forest) as forest:
        refuse_non_forest(forest.root)
        if not rescan > 0:
            raise usage_error("rescan_out_of_range", "--rescan takes a positive number of "
                              "seconds", rescan=str(rescan))
        return result("watch", **Watcher(forest, run_line, rescan, progress).run())


class Watcher:
    """One forest's watcher: its builds, its service, its embedder and what it reports."""

    def __init__(self, forest: Forest, run_line: Callable[[list[str], str], int | str],
                 rescan: float = RESCAN_SECONDS, progress: Any = None) -> None:
        self.forest = forest
        self.root = Path(os.path.realpath(forest.root))
        self.rescan = rescan
        self.progress = progress
        self.stop = threading.Event()
        self.current = threading.Lock()  # held while a build applies; the service waits
        self.started_at = time.time()
        self.builds = 0
        self.last: dict[str, Any] = {}
        self.last_built_at = self.tried_at = 0.0
        self.settle_at: float | None = None  # when the events' files get their build
        self.behind_since: float | None = None  # the first event not applied yet
        self.error: str | None = None
        self.embedder: subprocess.Popen[bytes] | None = None
        self.embed_wanted = threading.Event()
        self.embedding_thread = threading.Thread(target=self._embedding,
                                                 name="memory-forest-embedding", daemon=True)
        self.stopped_by = ""
        self.service = Service(self.root, self.current, self.status, run_line)
        answer_locally(self.root, self.status)

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Watch until a stop signal; the counts of what was done."""
        guard = self._claim()
        previous = {signum: signal.signal(signum, self._on_signal)
                    for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            self._clear_own_stale_lock()
            self.embedding_thread.start()
            self.build("start", self.progress)
            self.service.start()
            self._save()
            self._watch()
        except lock.Interrupted as exc:  # a signal inside a build, which it rolled back
            self.stopped_by = signal.Signals(exc.signum).name
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self.service.stop()
            self._stop_embedder()
            (state_dir(self.root) / STATE_FILE).unlink(missing_ok=True)
            os.close(guard)
        return {"stopped_by": self.stopped_by, "builds": self.builds,
                "answered": self.service.answered,
                "seconds": round(time.time() - self.started_at, 1)}

    def _watch(self) -> None:
        polling = None
        while not self.stop.is_set():
            try:
                for changes in watchfiles.watch(
                        *self._watched(), watch_filter=self._relevant, debounce=DEBOUNCE_MS,
                        step=STEP_MS, stop_event=self.stop, rust_timeout=TICK_MS,
                        yield_on_timeout=True, force_polling=polling, raise_interrupt=False):
                    if changes:
                        self.behind_since = self.behind_since or time.time()
                        self.apply(changes)
                    elif self.settle_at and time.time() >= self.settle_at:
                        self.build("settle")
                    elif self.error and time.time() - self.tried_at >= RETRY_SECONDS:
                        self.build("retry")
                    elif time.time() - self.tried_at >= self.rescan:
                        self.build("rescan")
                    if self.stop.is_set():
                        return
            except (OSError, RuntimeError) as exc:
                # The event source failed (a watch limit, an overflow it could not recover):
                # rebuild from a walk, then watch again by polling the files' stats.
                log({"event": "watch_failed", "error": type(exc).__name__})
                polling = True
                self.build("restart")

    def _watched(self) -> list[Path]:
        """The layers and the config, never the whole root: the index, vectors and their
        cache are written under it, and their events (hundreds of megabytes of cache at
        100,000 documents) would hold every batch open until its longest wait."""
        config = state_dir(self.root) / CONFIG
        paths = [self.root / name for name in sorted(_LAYER_DIRS) if (self.root / name).is_dir()]
        return paths + ([config] if config.is_file() else [])

    def _relevant(self, change: watchfiles.Change, path: str) -> bool:
        """An event the index can depend on: under a layer, or the forest's config."""
        rel = os.path.relpath(path, self.root)
        first = rel.split(os.sep, 1)[0]
        return first in _LAYER_DIRS or rel == os.path.join(STATE_DIR, CONFIG)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.stopped_by = signal.Signals(signum).name
        self.stop.set()

    # --- building ---------------------------------------------------------------------------

    def apply(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
        """Re-describe the documents a batch of events names, as a writer does after its
        write (``index.update_paths``: no walk, milliseconds at any size), then judge the
        forest with a build once the events have been quiet for ``SETTLE_SECONDS``. A
        batch only a walk can read (a directory, the config, a file that is no document
        or cannot be read as one) goes through the build at once."""
        paths = self._documents(changes)
        if paths is None:
            self.build("change")
            return
        if not paths:  # editor debris only: nothing the index holds changed
            self.behind_since = None
            return
        with self.current:
            self.tried_at = time.time()
            try:
                with lock.held(self.root, "watch", wait=LOCK_WAIT):
                    done = index.update_paths(self.forest, paths)
                self.forest.forget_index()
            except ForestError:
                done = None  # not readable as a document: the build judges it
            if done is not None:
                self.behind_since, self.settle_at = None, time.time() + SETTLE_SECONDS
        if done is None:
            self.build("change")
            return
        log({"event": "applied", **{key: done[key] for key in (
            "added", "changed", "deleted", "seconds")}})
        self._embed()

    def _documents(self, changes: set[tuple[watchfiles.Change, str]]) -> set[str] | None:
        """The documents the events name (editor and tool debris left out), or None when
        a walk must say what changed."""
        paths = set()
        for _, path in changes:
            rel = os.path.relpath(path, self.root).replace(os.sep, "/")
            name = rel.rsplit("/", 1)[-1]
            if is_debris(name):
                continue
            if "/" not in rel or not rel.endswith((".md", ".jsonl")) or \
                    os.path.isdir(path):
                return None
            paths.add(rel)
        return paths

    def build(self, reason: str, progress: Any = None) -> None:
        """One incremental build under the writer lock; the service waits for it."""
        with self.current:
            self.tried_at = time.time()
            try:
                with lock.held(self.root, "watch", wait=LOCK_WAIT):
                    summary = index.build(self.forest, progress=progress)
                self.forest.forget_index()
            except ForestError as exc:
                # A held lock or a forest-level fault: the next event or rescan tries again,
                # and status says what is wrong until then.
                self.error = exc.code
                log({"event": "build_failed", "reason": reason, "code": exc.code})
                return
            self.error, self.last, self.last_built_at = None, summary, time.time()
            self.builds += 1
            self.behind_since = self.settle_at = None
        log({"event": "built", "reason": reason, "mode": summary.get("mode"),
              **{key: summary.get(key, 0) for key in ("added", "changed", "deleted")},
              "seconds": summary.get("seconds")})
        self._save()
        self._embed()

    def status(self) -> dict[str, Any]:
        """What the service reports: who runs, whether the index is current, the last build."""
        applying = self.current.locked()
        behind = self.behind_since
        return {"pid": os.getpid(), "root": os.fspath(self.root), "started_at": self.started_at,
                "current": not applying and behind is None and self.error is None,
                "settled": self.settle_at is None,
                "applying": applying, "error": self.error,
                "behind_seconds": 0.0 if behind is None else round(time.time() - behind, 3),
                "last_built_at": self.last_built_at, "builds": self.builds,
                "answered": self.service.answered, "last": self.last,
                "embedding": self.embedder is not None}

    # --- semantic embedding -----------------------------------------------------------------

    def _embed(self) -> None:
        """Ask the embedding thread to look for documents without vectors. The look costs a
        count over the whole index (most of a second at 100,000 documents), so it never
        runs on the thread that takes the next batch of events."""
        self.embed_wanted.set()

    def _embedding(self) -> None:
        """The embedding thread: when asked, and semantic ranking is on and some indexed
        document has no vectors, run the low-priority embedder and wait for it. A writer's
        own index update leaves the watcher nothing to count as added, so the vectors, not
        a build's counts, say what is missing."""
        while not self.stop.is_set():
            if not self.embed_wanted.wait(TICK_MS / 1000):
                continue
            self.embed_wanted.clear()
            try:
                missing = semantic.enabled(self.root) and \
                    semantic.coverage(Forest.open(self.root))["state"] == "partial"
            except ForestError:
                missing = False  # an index being replaced: the next build asks again
            if missing and not self.stop.is_set():
                self._run_embedder()

    def _run_embedder(self) -> None:
        command = [sys.executable, "-m", "memory_forest", "index", os.fspath(self.root),
                   "--semantic", "--wait", str(int(LOCK_WAIT)), "--json"]
        embedder = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        # Lowered from here: a function run in the child before exec is unsafe beside threads.
        try:
            os.setpriority(os.PRIO_PROCESS, embedder.pid, EMBED_NICE)
        except OSError:
            pass  # it has already finished
        self.embedder = embedder
        if self.stop.is_set():  # stopped while it started: ``_stop_embedder`` missed it
            embedder.terminate()
        embedder.wait()
        self.embedder = None

    def _stop_embedder(self) -> None:
        self.stop.set()
        embedder = self.embedder
        if embedder is not None:
            embedder.terminate()  # it stops between batches and keeps what it committed
        if self.embedding_thread.is_alive():
            self.embedding_thread.join()

    # --- one watcher per forest --------------------------------------------------------------

    def _claim(self) -> int:
        """Hold ``watch.lock`` for the watcher's life; refuse when another watcher does."""
        directory = state_dir(self.root)
        if not directory.exists():
            mkdir_private(directory)
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            running = read_state(self.root)
            raise ForestError("watch_running", "a watcher already runs on this forest"
                              + (f" (pid {running['pid']})" if running else "")
                              + "; stop it before starting another",
                              {"pid": running.get("pid") if running else None}) from None
        return fd

    def _clear_own_stale_lock(self) -> None:
        """Remove a stale lock a killed watcher left (a writer never takes one over).

        Holding ``watch.lock`` proves no other watcher runs, so a lock whose
        dead owner was ``watch`` is this watcher's own: its build was one
        transaction, which SQLite rolled back. A restart by a service manager
        then carries on instead of failing on ``lock_stale`` forever. A stale
        lock of any other command is left to ``unlock --stale``.
        """
        found = lock.state(self.root)
        if found["state"] == "stale" and found["owner"].get("command") == "watch":
            lock.unlock_stale(self.root)
            log({"event": "stale_lock_removed", "pid": found["owner"].get("pid")})

    def _save(self) -> None:
        state = {"pid": os.getpid(), "started_at": self.started_at,
                 "socket": os.fspath(self.service.path)}
        write_private(state_dir(self.root) / STATE_FILE, dumps(state).encode("utf-8"))

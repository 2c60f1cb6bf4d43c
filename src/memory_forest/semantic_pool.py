"""Embedding on every core: worker processes, each with its own model on one thread.

The engine embeds one passage at a time, and its own threads split the work
inside a passage, where a short passage has little to split: on the 2-core
test VM two threads embed barely faster than one. Two processes, each with
one thread and a batch of its own, keep both cores busy (docs/benchmarks.md,
"Embedding throughput").

Workers are spawned, never forked: the engine's thread pool does not survive
a fork. Each loads the model the writer already checked, trusting its stat
as a reader does, so the 72 MB file is not hashed again. The writer reads
the files and writes the vectors; the workers only embed. At most two
batches per worker are in flight, so memory holds a few batches of text
whatever the forest's size, and an interrupted run loses no more than that.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from .semantic_model import model

# Fewer batches than this are embedded in the writer's own process: a worker costs about a
# second to start (numpy, the engine, the model), more than a few batches take.
MIN_POOLED_BATCHES = 4
IN_FLIGHT_PER_WORKER = 2

_loaded: list[Any] = []


def workers() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def embedded(batches: Iterable[tuple[Any, list[str]]], embed: Callable[[list[str]], Any],
             stamp: str, count: int) -> Iterator[tuple[Any, Any]]:
    """Each batch's key and its passages' vectors (None for no passages), in order.

    ``count`` workers embed the batches; with one, ``embed`` does, here. Batches
    are drawn from ``batches`` only as workers free up, so a caller that stops
    drawing (a budget spent) reads no more files.
    """
    if count <= 1:
        for key, texts in batches:
            yield key, embed(texts) if texts else None
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(count, mp_context=context, initializer=_load,
                             initargs=(stamp,)) as pool:
        pending: deque[tuple[Any, Future | None]] = deque()
        try:
            for key, texts in batches:
                pending.append((key, pool.submit(_passages, texts) if texts else None))
                if len(pending) >= IN_FLIGHT_PER_WORKER * count:
                    yield _finished(pending.popleft())
            while pending:
                yield _finished(pending.popleft())
        except BaseException:  # a stop signal or a closed generator: drop what is queued
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _finished(entry: tuple[Any, Future | None]) -> tuple[Any, Any]:
    key, future = entry
    return key, None if future is None else future.result()


def _load(stamp: str) -> None:
    # Ctrl-C reaches the whole process group: the writer stops them, and says so once.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _loaded.append(model(trusted_stamp=stamp, threads=1))


def _passages(texts: list[str]) -> Any:
    return _loaded[0].passages(texts)

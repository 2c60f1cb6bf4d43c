"""Fail-fast benchmark: how long a refusal takes when the answer is "not now".

Usage: python scripts/bench_fail_fast.py [--runs N]

The tests check *that* a writer meets a held lock with ``lock_held`` and
leaves everything as it was; how *fast* it says so is a wall-clock claim a
busy machine can break, so it is measured here instead, ``--runs`` times each
(default 20), in process:

- ``remember`` with ``wait=0`` while another owner holds the lock (target: under 1 s);
- ``index`` with ``wait=0`` while an ownerless lock directory is in place (target: under 1 s).

Prints JSON with p50, max and whether each target is met; exits 1 when one
is not.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memory_forest import lock, operations
from memory_forest.errors import ForestError
from memory_forest.writers.remember import remember

TARGET_SECONDS = 1.0


def refusal_seconds(action: Callable[[], object]) -> float:
    """Seconds until ``action`` is refused with ``lock_held``; anything else is a bug."""
    started = time.perf_counter()
    try:
        action()
    except ForestError as exc:
        if exc.code != "lock_held":
            raise
        return time.perf_counter() - started
    raise AssertionError("the action was not refused")


def summary(samples: list[float]) -> dict[str, object]:
    worst = max(samples)
    return {"runs": len(samples), "p50_ms": round(statistics.median(samples) * 1000, 2),
            "max_ms": round(worst * 1000, 2), "target_ms": TARGET_SECONDS * 1000,
            "met": worst < TARGET_SECONDS}


def remember_while_held(root: Path, runs: int) -> list[float]:
    owner = lock.acquire(root, "bench_fail_fast")
    try:
        return [refusal_seconds(lambda: remember(root, "kitchen", "fermentation", "miso",
                                                 "Miso", "fact", wait=0)) for _ in range(runs)]
    finally:
        lock.release(root, owner)


def index_while_ownerless(root: Path, runs: int) -> list[float]:
    held = lock.lock_path(root)
    held.mkdir(mode=0o700)
    try:
        return [refusal_seconds(lambda: operations.index(root, wait=0)) for _ in range(runs)]
    finally:
        held.rmdir()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "forest"
        operations.init(root, example=True)
        operations.index(root)
        report = {"remember_lock_held": summary(remember_while_held(root, args.runs)),
                  "index_lock_held": summary(index_while_ownerless(root, args.runs))}
    print(json.dumps(report, indent=2))
    return 0 if all(item["met"] for item in report.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

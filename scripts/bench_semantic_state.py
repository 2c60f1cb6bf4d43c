"""What checking semantic state costs: the reader's checks on every turn, and the whole-file
checks of status, doctor and the writers, over a synthetic vectors file.

Usage: python scripts/bench_semantic_state.py [--docs N] [--chunks 3] [--runs 15]

Builds ``.memory-forest/vectors.sqlite3`` with ``--docs`` documents of ``--chunks``
random chunk vectors each (no model needed) and its matrix cache, then times, ``--runs``
times each, in process, and prints the medians as JSON:

- ``present``: the reader's non-blocking open and fstat of the vectors file and its
  journal/WAL names (``semantic_state.vectors_present``);
- ``cache_read``: loading the matrix cache with its keys' shape and the matrix header
  checked (``semantic_cache.read``; memory-mapped, so the vectors are not read), beside
  ``keys_json``: reading and parsing the keys alone, which the reader did before the checks;
- ``misshapen_scan``: the row check ``status``/``stats`` run (``vectorfile.misshapen_vectors``);
- ``doctor_check``: what ``doctor`` runs (``semantic_state.damaged``: quick check, rows,
  cache);
- ``heal_intact``: what a writer runs first on an intact file (``semantic_state.heal``).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memory_forest import semantic_cache, semantic_state
from memory_forest.statefiles import state_dir, vectors_path
from memory_forest.store import vectorfile


def build(root: Path, docs: int, chunks: int) -> str:
    """The vectors file and its matrix cache; the generation they share."""
    os.makedirs(state_dir(root), mode=0o700)
    con = semantic_state.create(vectors_path(root))
    generation = "0123456789abcdef"
    with con:
        vectorfile.set_vectors_meta(con, "enabled", "1")
        vectorfile.set_vectors_meta(con, "generation", generation)
        for number in range(docs):
            vectorfile.put_vectors(con, f"{number:064x}",
                              [os.urandom(semantic_state.VECTOR_BYTES) for _ in range(chunks)])
    semantic_cache.write(root, con, generation)
    con.close()
    return generation


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--chunks", type=int, default=3)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        generation = build(root, args.docs, args.chunks)

        def scan() -> None:
            con = sqlite3.connect(vectors_path(root))
            vectorfile.misshapen_vectors(con, semantic_state.VECTOR_BYTES)
            con.close()

        assert semantic_cache.read(root, generation) is not None
        assert semantic_state.damaged(root) == []
        figures = {
            "docs": args.docs, "chunks": args.docs * args.chunks, "runs": args.runs,
            "present_ms": median_ms(lambda: semantic_state.vectors_present(root), args.runs),
            "keys_json_ms": median_ms(lambda: json.loads(
                (state_dir(root) / semantic_state.CACHE_KEYS).read_bytes()), args.runs),
            "cache_read_ms": median_ms(lambda: semantic_cache.read(root, generation), args.runs),
            "misshapen_scan_ms": median_ms(scan, args.runs),
            "doctor_check_ms": median_ms(lambda: semantic_state.damaged(root), args.runs),
            "heal_intact_ms": median_ms(lambda: semantic_state.heal(root), args.runs),
        }
    json.dump(figures, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

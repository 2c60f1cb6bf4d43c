"""Embedding throughput: the writer alone against one worker process per core, in one run.

Usage: python scripts/bench_embed.py [--sample 64] [--runs 3] [--write-docs]

A SAMPLE-document forest from bench_scale.py's generator (the paragraph
lengths of the scale forests, so the chunks bench_semantic.py measured at
4.4 chunks/s) is indexed once; then, on fresh copies, ``semantic.embed``
embeds every document the shipped way before (``workers=1``: the writer's
process, the engine's default threads) and with the pool
(``workers=semantic_pool.workers()``), the two alternating, --runs times
each. Chunks per second come from each run's own counts and seconds; the
figure is the median. Prints JSON; ``--write-docs`` writes the table into
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench_scale import prepared_forest
from docblock import measured_block, write_block

from memory_forest import operations, semantic, semantic_pool
from memory_forest.forest import Forest

DOCS_FILE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_embed: begin -->", "<!-- bench_embed: end -->"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    report = {"cpus": os.cpu_count(), "python": platform.python_version(),
              "load_average_1m": round(os.getloadavg()[0], 2),
              "workers": semantic_pool.workers(), "runs": {"writer": [], "pool": []}}
    work = Path(tempfile.mkdtemp(prefix="mf-embed-"))
    try:
        source, _ = prepared_forest(work / "sample", args.sample)
        indexed = work / "indexed"
        shutil.copytree(source, indexed, symlinks=True)
        operations.index(indexed)
        ways = [("writer", 1), ("pool", report["workers"])]
        for number in range(args.runs):
            for name, workers in ways if number % 2 == 0 else ways[::-1]:
                root = work / f"{name}-{number}"
                shutil.copytree(indexed, root, symlinks=True)
                done = semantic.embed(Forest.open(root), enable=True, workers=workers)
                assert done["remaining"] == 0, done
                report["runs"][name].append({"chunks": done["chunks"],
                                             "seconds": done["seconds"]})
                print(f"{name} run {number + 1}/{args.runs}: {done['chunks']} chunks in "
                      f"{done['seconds']:.1f} s", file=sys.stderr, flush=True)
                shutil.rmtree(root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, runs in report["runs"].items():
        report[f"{name}_chunks_per_s"] = round(statistics.median(
            run["chunks"] / run["seconds"] for run in runs), 2)
    report["speedup"] = round(report["pool_chunks_per_s"] / report["writer_chunks_per_s"], 2)
    print(json.dumps(report, indent=2))
    if args.write_docs:
        rows = ["| embedding | chunks/s (median) | runs, s |", "|---|---:|---|",
                *[f"| {label} | {report[f'{name}_chunks_per_s']} | "
                  f"{', '.join(str(run['seconds']) for run in report['runs'][name])} |"
                  for name, label in (("writer", "the writer's process, engine threads (before)"),
                                      ("pool", f"{report['workers']} worker processes, one "
                                               "thread each"))],
                "", f"Speed-up: {report['speedup']}x."]
        how = (f", {args.sample} documents ({report['runs']['writer'][0]['chunks']} chunks) "
               f"embedded {args.runs} times each way, alternating")
        write_block(DOCS_FILE, BEGIN, END, measured_block(BEGIN, END, report, how,
                                                          "bench_embed.py", sys.argv[1:], rows))


if __name__ == "__main__":
    main()

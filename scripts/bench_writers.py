"""Writer benchmarks: capture throughput and remember latency.

Usage: python scripts/bench_writers.py [--docs N] [--events N] [--calls N] [--remembers N]

Measures, with the real CLI in fresh processes (what an agent pays) and
in-process (the library alone):

- one batch capture of ``--events`` events (default 10,000): events/s;
- ``--calls`` single-event ``capture`` calls in a row (default 200): events/s
  and per-call wall p50/p95;
- ``remember`` on a generated forest of ``--docs`` documents (default 10,000),
  alternating a new leaf in an existing branch, an append to an existing
  leaf and a new leaf in a new branch: wall p50/p95 per call.

Prints JSON. Targets (issue 4): batch >= 5,000 events/s; one remember on a
10,000-document forest <= 300 ms wall.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import Zipf, backdate, plan_trees, vocabulary  # noqa: E402
from forestgen import write_forest  # noqa: E402

from memory_forest import operations  # noqa: E402
from memory_forest.writers import capture, remember  # noqa: E402

# Processes run as in a normal install, where Python caches bytecode: a sandbox that sets
# PYTHONDONTWRITEBYTECODE would otherwise recompile the package in every process.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def cli(*args: str, stdin: str | None = None) -> tuple[float, dict]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "memory_forest", *args, "--json"],
                          input=stdin, capture_output=True, text=True, check=False, env=ENV)
    wall = time.perf_counter() - started
    out = json.loads(proc.stdout)
    if not out.get("ok"):
        sys.exit(f"memory-forest {args[0]} failed: {out.get('error')}")
    return wall, out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def ms(value: float) -> float:
    return round(value * 1000, 1)


def events(count: int, start: int = 0) -> str:
    return "".join(json.dumps({
        "observed_at": "2026-11-30T09:00:00Z", "source": "bench", "kind": "note",
        "payload": {"text": f"event {n}: watered bed C at 1.2 bar, basil looks fine", "n": n},
    }) + "\n" for n in range(start, start + count))


def bench_capture(workdir: Path, count: int, calls: int) -> dict:
    source = workdir / "batch.jsonl"
    source.write_text(events(count), encoding="utf-8")
    results = {}
    root = workdir / "capture-cli"
    operations.init(root)
    operations.index(root)
    wall, out = cli("capture", str(root), "--file", str(source))
    assert out["captured"] == count
    results["batch_events"] = count
    results["batch_cli_wall_s"] = round(wall, 3)
    results["batch_cli_events_per_s"] = round(count / wall)
    root = workdir / "capture-lib"
    operations.init(root)
    operations.index(root)
    started = time.perf_counter()
    capture.capture_events(root, capture.parse_input(source.read_bytes()))
    seconds = time.perf_counter() - started
    results["batch_in_process_s"] = round(seconds, 3)
    results["batch_in_process_events_per_s"] = round(count / seconds)

    root = workdir / "capture-single"
    operations.init(root)
    operations.index(root)
    walls = []
    for n in range(calls):
        walls.append(cli("capture", str(root), "-", stdin=events(1, n))[0])
    results["single_calls"] = calls
    results["single_total_s"] = round(sum(walls), 2)
    results["single_events_per_s"] = round(calls / sum(walls), 1)
    results["single_wall_ms_p50"] = ms(statistics.median(walls))
    results["single_wall_ms_p95"] = ms(percentile(walls, 0.95))
    return results


def bench_remember(workdir: Path, docs: int, count: int) -> dict:
    rng = random.Random(20261130)
    zipf = Zipf(vocabulary(20_000, rng), rng)
    root = workdir / "forest"
    trees = plan_trees(docs, zipf, rng)
    written = write_forest(root, trees)
    backdate(root, 3600)
    operations.index(root, full=True)
    tree_names = sorted(trees)
    walls, kinds, lib = [], {"new_leaf": [], "append": [], "new_branch": []}, []
    for n in range(count):
        tree = tree_names[n % len(tree_names)]
        kind = ("new_leaf", "append", "new_branch")[n % 3]
        branch = f"branch-new-{n}" if kind == "new_branch" else "branch-03"
        leaf = "leaf-000" if kind == "append" else f"bench-{n}"
        args = ["remember", str(root), "--tree", tree, "--branch", branch, "--leaf", leaf,
                "--title", f"Bench {n}", "--content", zipf.text(60)]
        wall, _ = cli(*args)
        walls.append(wall)
        kinds[kind].append(wall)
    for n in range(count):  # the library alone, without process start-up
        started = time.perf_counter()
        remember.remember(root, tree_names[0], "branch-05", f"lib-{n}", f"Lib {n}",
                          zipf.text(60))
        lib.append(time.perf_counter() - started)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memory_forest", "--version"], capture_output=True,
                   check=True, env=ENV)
    startup = time.perf_counter() - started
    return {
        "documents": written,
        "remember_calls": count,
        "remember_wall_ms_p50": ms(statistics.median(walls)),
        "remember_wall_ms_p95": ms(percentile(walls, 0.95)),
        "remember_wall_ms_max": ms(max(walls)),
        **{f"remember_{kind}_wall_ms_p50": ms(statistics.median(values))
           for kind, values in kinds.items() if values},
        "remember_in_process_ms_p50": ms(statistics.median(lib)),
        "cli_startup_version_ms": ms(startup),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--remembers", type=int, default=30)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="mf-bench-writers-"))
    warm = workdir / "warm-up"
    operations.init(warm)
    cli("remember", str(warm), "--tree", "t", "--branch", "b", "--leaf", "l", "--title", "T",
        "--content", "warm-up: every module compiled and cached once")
    try:
        report = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                  "load_average_1m": round(os.getloadavg()[0], 2)}
        report.update(bench_capture(workdir, args.events, args.calls))
        report.update(bench_remember(workdir, args.docs, args.remembers))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

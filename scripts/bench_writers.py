"""Writer benchmarks: capture throughput and remember latency.

Usage: python scripts/bench_writers.py [--docs N] [--events N] [--calls N] [--remembers N]
                                      [--runs N] [--previous-mb N] [--capture-only]
       python scripts/bench_writers.py --concurrent [--writers N...] [--runs N] [--write]

Measures, with the real CLI in fresh processes (what an agent pays) and
in-process (the library alone):

- one batch capture of ``--events`` events (default 10,000): events/s, the median of
  ``--runs`` runs (default 5), each into a fresh forest whose ISTM layer already holds an
  earlier shard of ``--previous-mb`` MB (default 3.5, near the 4 MiB file limit): the
  new shard's first line chains to that shard's last line, which capture must find
  without reading the shard whole;
- ``--calls`` single-event ``capture`` calls in a row (default 200): events/s
  and per-call wall p50/p95;
- ``remember`` on a generated forest of ``--docs`` documents (default 10,000),
  alternating a new leaf in an existing branch, an append to an existing
  leaf and a new leaf in a new branch: wall p50/p95 per call.

Prints JSON. Targets (issue 4): batch >= 5,000 events/s; one remember on a
10,000-document forest <= 300 ms wall.

``--concurrent`` measures writers started together instead: for N = 2, 6
and 12 (``--writers``), N ``remember`` processes and then N one-event
``capture`` processes, each crowd on a fresh ``init --example`` forest,
``--runs`` times; with default flags (they wait their turn) and, side by
side in the same run, with ``--wait 0`` (fail at once, the old default).
It reports how many writes were acknowledged (ok results) and events/s
(acknowledged writes over the wall from the first start to the last exit),
medians of the runs; ``--write`` puts the table into docs/benchmarks.md
between its ``bench_writers_concurrent`` markers.
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
from docblock import measured_block, write_block
from forestgen import write_forest  # noqa: E402

from memory_forest import operations  # noqa: E402
from memory_forest.digest import sha256_hex  # noqa: E402
from memory_forest.jsonio import dumps  # noqa: E402
from memory_forest.writers import capture, remember  # noqa: E402

# Processes run as in a normal install, where Python caches bytecode: a sandbox that sets
# PYTHONDONTWRITEBYTECODE would otherwise recompile the package in every process.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN = "<!-- bench_writers_concurrent:begin -->"
END = "<!-- bench_writers_concurrent:end -->"


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


def earlier_shard(megabytes: float) -> bytes:
    """An ISTM shard of about ``megabytes`` MB, as capture writes them, for a day long past."""
    lines, size, n = [], 0, 0
    while size < megabytes * 1_000_000:
        payload = {"text": f"old event {n}: the boiler was serviced, pressure 1.5 bar", "n": n}
        line = dumps({"captured_at": "2026-01-01T08:00:00Z", "event_id": f"old-{n:07d}",
                      "kind": "note", "observed_at": "2026-01-01T08:00:00Z",
                      "payload": payload, "sha256": sha256_hex(dumps(payload).encode()),
                      "source": "bench"}) + "\n"
        lines.append(line)
        size += len(line)
        n += 1
    return "".join(lines).encode()


def fresh_forest(root: Path, previous: bytes) -> Path:
    operations.init(root)
    if previous:
        shard = root / "06 istm" / "2026-01-01.jsonl"
        shard.write_bytes(previous)
        shard.chmod(0o600)
    operations.index(root)
    return root


def bench_capture(workdir: Path, count: int, calls: int, runs: int, previous_mb: float) -> dict:
    source = workdir / "batch.jsonl"
    source.write_text(events(count), encoding="utf-8")
    previous = earlier_shard(previous_mb) if previous_mb > 0 else b""
    results = {"batch_events": count, "batch_runs": runs,
               "earlier_shard_bytes": len(previous)}
    walls, seconds = [], []
    for run in range(runs):
        root = fresh_forest(workdir / f"capture-cli-{run}", previous)
        wall, out = cli("capture", str(root), "--file", str(source))
        assert out["captured"] == count
        walls.append(wall)
        root = fresh_forest(workdir / f"capture-lib-{run}", previous)
        started = time.perf_counter()
        capture.capture_events(root, capture.parse_input(source.read_bytes()))
        seconds.append(time.perf_counter() - started)
    wall, second = statistics.median(walls), statistics.median(seconds)
    results["batch_cli_wall_s"] = round(wall, 3)
    results["batch_cli_events_per_s"] = round(count / wall)
    results["batch_cli_events_per_s_runs"] = [round(count / w) for w in walls]
    results["batch_in_process_s"] = round(second, 3)
    results["batch_in_process_events_per_s"] = round(count / second)
    results["batch_in_process_events_per_s_runs"] = [round(count / s) for s in seconds]

    if not calls:
        return results
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


def crowd(workdir: Path, root: Path, command: str, count: int,
          wait: str | None) -> tuple[int, float]:
    """Start ``count`` writers together; (acknowledged, seconds from first start to last exit)."""
    argvs = []
    for n in range(count):
        if command == "remember":
            args = ["remember", str(root), "--tree", "bench", "--branch", "crowd", "--leaf",
                    f"fact-{n}", "--title", f"Fact {n}", "--content",
                    f"crowd fact {n}: the west bed was watered at 1.2 bar"]
        else:
            source = workdir / f"event-{n}.jsonl"
            source.write_text(events(1, n), encoding="utf-8")
            args = ["capture", str(root), "--file", str(source)]
        argvs.append(args + (["--wait", wait] if wait is not None else []))
    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "memory_forest", *args, "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=ENV) for args in argvs]
    outs = [proc.communicate()[0] for proc in procs]
    wall = time.perf_counter() - started
    return sum(json.loads(out or "{}").get("ok") is True for out in outs), wall


def bench_concurrent(workdir: Path, sizes: list[int], runs: int) -> dict:
    results: dict = {"writers": sizes, "runs": runs, "crowds": {}}
    for count in sizes:
        for command in ("remember", "capture"):
            for mode, wait in (("default", None), ("wait_0", "0")):
                acked, walls = [], []
                for run in range(runs):
                    root = workdir / f"crowd-{command}-{count}-{mode}-{run}"
                    cli("init", str(root), "--example")
                    cli("index", str(root))
                    ok, wall = crowd(workdir, root, command, count, wait)
                    acked.append(ok)
                    walls.append(wall)
                    shutil.rmtree(root, ignore_errors=True)
                per_s = [ok / wall for ok, wall in zip(acked, walls, strict=True)]
                results["crowds"][f"{command}-{count}-{mode}"] = {
                    "acknowledged_runs": acked, "acknowledged_min": min(acked),
                    "acknowledged_median": statistics.median(acked),
                    "wall_s_median": round(statistics.median(walls), 2),
                    "events_per_s_median": round(statistics.median(per_s), 1)}
                print(f"{command} x{count} {mode}: {acked}", file=sys.stderr)
    return results


def concurrent_table(report: dict) -> list[str]:
    rows = ["| writers started together | `remember`: acknowledged, events/s, wall "
            "| `remember --wait 0`: acknowledged | `capture`: acknowledged, events/s, wall "
            "| `capture --wait 0`: acknowledged |", "|---|---|---|---|---|"]
    for count in report["writers"]:
        cells = []
        for command in ("remember", "capture"):
            waited = report["crowds"][f"{command}-{count}-default"]
            fast = report["crowds"][f"{command}-{count}-wait_0"]
            cells.append(f"{waited['acknowledged_min']}/{count} in every run, "
                         f"{waited['events_per_s_median']:g}/s, {waited['wall_s_median']:g} s")
            cells.append(f"{fast['acknowledged_median']:g}/{count} (median)")
        rows.append(f"| {count} | " + " | ".join(cells) + " |")
    return rows


def write_concurrent(report: dict, argv: list[str]) -> None:
    block = measured_block(
        BEGIN, END, report, f": each cell is {report['runs']} crowds, each on a fresh "
        "`init --example` forest; events/s is acknowledged writes over the wall from the first "
        "start to the last exit, and it and the wall are medians of the runs.",
        "bench_writers.py", argv, concurrent_table(report))
    write_block(DOCS, BEGIN, END, block)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--remembers", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5, help="batch captures to take the "
                        "median of")
    parser.add_argument("--previous-mb", type=float, default=3.5, help="size of the earlier "
                        "ISTM shard each batch capture chains to (0: none)")
    parser.add_argument("--capture-only", action="store_true", help="skip the remember "
                        "benchmark")
    parser.add_argument("--concurrent", action="store_true", help="measure N writers "
                        "started together instead (see above)")
    parser.add_argument("--writers", type=int, nargs="+", default=[2, 6, 12],
                        help="with --concurrent: the crowd sizes")
    parser.add_argument("--write", action="store_true", help="with --concurrent: write the "
                        "table into docs/benchmarks.md")
    argv = sys.argv[1:]
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="mf-bench-writers-"))
    warm = workdir / "warm-up"
    operations.init(warm)
    cli("remember", str(warm), "--tree", "t", "--branch", "b", "--leaf", "l", "--title", "T",
        "--content", "warm-up: every module compiled and cached once")
    try:
        report = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                  "load_average_1m": round(os.getloadavg()[0], 2)}
        if args.concurrent:
            report.update(bench_concurrent(workdir, args.writers, args.runs))
        else:
            report.update(bench_capture(workdir, args.events, args.calls, args.runs,
                                        args.previous_mb))
            if not args.capture_only:
                report.update(bench_remember(workdir, args.docs, args.remembers))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report, indent=2))
    if args.concurrent and args.write:
        write_concurrent(report, argv)


if __name__ == "__main__":
    main()

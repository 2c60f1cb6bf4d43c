"""A live forest: the gate warm and cold, edit-to-findable latency, and the idle watcher.

Usage: python scripts/bench_watch.py [--docs 10000 100000] [--forest-base DIR]
                                     [--rounds 5] [--queries 8] [--edits 20]
                                     [--semantic] [--write-docs]

For each forest size (bench_scale.py's generator; ``--forest-base DIR`` reuses
``DIR-<N>`` generated earlier), on a fresh indexed copy:

- the per-turn wall, in one interleaved run while ``memory-forest watch``
  runs: a bare ``python -c pass``; the gate exactly as ``hooks install``
  writes it (``python -P -m memory_forest gate ROOT``), answered by the
  watcher's warm service; and the same command run cold (in process, with
  ``MEMORY_FOREST_WARM=off``). Each round asks every query once in each way,
  the order rotating; p50 and p95 over all turns. With ``--semantic`` every
  document gets random unit vectors through the engine's own write path (as
  bench_semantic.py does: a query's cost depends on the vectors' number,
  not their values), and the gate is timed fused and ``--lexical``;
- edit-to-findable: a new note with a word no other file holds, or an edit
  of an existing leaf to such a word, written while the watcher runs; the
  time from the write until a warm gate names it (polled back to back);
- ``index`` while the watcher is current, and after it stopped (the walk);
- the idle watcher's CPU time over ``IDLE_SECONDS`` and its resident memory;
- with ``--semantic``, on the first size only: ``remember`` through the CLI
  until the vectors cover the new leaf (the watcher's low-priority embedder,
  the real model).

Children run with bytecode caches written (``PYTHONDONTWRITEBYTECODE`` removed).
Prints JSON; ``--write-docs`` writes the table into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_scale import CLI_ENV, fixed_queries, prepared_forest
from bench_semantic import fill_vectors
from docblock import measured_block, write_block
from forestgen import write_document

from memory_forest import operations, semantic, warmsocket
from memory_forest.forest import Forest

DOCS_FILE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_watch: begin -->", "<!-- bench_watch: end -->"
IDLE_SECONDS = 20.0
COLD_ENV = {**CLI_ENV, "MEMORY_FOREST_WARM": "off"}
GATE = [sys.executable, "-P", "-m", "memory_forest", "gate"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--forest-base", type=Path,
                        help="Generate (or reuse) the forest of N documents at BASE-N.")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=8)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--semantic", action="store_true")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    report = {"cpus": os.cpu_count(), "python": platform.python_version(),
              "load_average_1m": round(os.getloadavg()[0], 2), "sizes": []}
    work = Path(tempfile.mkdtemp(prefix="mf-watch-"))
    try:
        for number, docs in enumerate(args.docs):
            base = args.forest_base and Path(f"{args.forest_base}-{docs}")
            source, stamp = prepared_forest(base or work / f"generated-{docs}", docs)
            report["sizes"].append(one_size(args, source, stamp["documents"], work,
                                            embed_one=args.semantic and number == 0))
            progress(json.dumps(report["sizes"][-1]))  # a later size's failure keeps this one
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))
    if args.write_docs:
        write_block(DOCS_FILE, BEGIN, END, render(report, sys.argv[1:]))


def one_size(args: argparse.Namespace, source: Path, documents: int, work: Path,
             embed_one: bool) -> dict:
    root = work / f"forest-{documents}"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(source, root, symlinks=True)
    operations.index(root, full=True)
    if args.semantic:
        fill_vectors(root)
    progress(f"{documents} documents indexed{' with vectors' if args.semantic else ''}")
    queries = fixed_queries(args.queries)
    figures: dict = {"documents": documents}
    watcher = start_watcher(root, work)
    try:
        figures["turn_ms"] = turns(root, queries, args.rounds, args.semantic)
        figures["edit_to_findable_ms"] = edits(root, args.edits)
        quiet(root)  # the edits judged, their vectors made: index and idle are measured after
        figures["index_watched_ms"] = index_wall(root)
        figures["idle"] = idle(watcher.pid)
        if embed_one:
            figures["remember_to_embedded_s"] = remember_embedded(root)
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=120)
    figures["index_cold_ms"] = index_wall(root)
    shutil.rmtree(root)
    return figures


def start_watcher(root: Path, work: Path) -> subprocess.Popen:
    log = (work / f"watch-{root.name}.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "memory_forest", "watch", str(root),
                             "--json"], stdout=subprocess.DEVNULL, stderr=log, env=CLI_ENV)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        answer = warmsocket.request(str(root), "status", b"")
        if answer and answer.startswith(b"ok ") and \
                json.loads(answer.partition(b"\n")[2]).get("current"):
            return proc
        time.sleep(0.2)
    raise SystemExit(f"the watcher of {root} never became current")


def quiet(root: Path) -> None:
    """Wait until the watcher has judged every edit and its embedder has finished."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        answer = warmsocket.request(str(root), "status", b"")
        status = json.loads(answer.partition(b"\n")[2]) if answer and \
            answer.startswith(b"ok ") else {}
        if status.get("current") and status.get("settled") and not status.get("embedding"):
            return
        time.sleep(0.5)
    raise SystemExit(f"the watcher of {root} never settled")


def turns(root: Path, queries: list[str], rounds: int, fused: bool) -> dict:
    ways = {"python": ([sys.executable, "-c", "pass"], CLI_ENV),
            "warm": ([*GATE, str(root)], CLI_ENV), "cold": ([*GATE, str(root)], COLD_ENV)}
    if fused:
        ways |= {"warm_lexical": ([*GATE, str(root), "--lexical"], CLI_ENV),
                 "cold_lexical": ([*GATE, str(root), "--lexical"], COLD_ENV)}
    for command, env in ways.values():  # bytecode, page cache, the service's model
        run(command, env, queries[0])
    walls: dict[str, list[float]] = {name: [] for name in ways}
    names = list(ways)
    for number in range(rounds):
        for position, query in enumerate(queries):
            shift = (number + position) % len(names)
            for name in names[shift:] + names[:shift]:
                command, env = ways[name]
                walls[name].append(run(command, env, query))
        progress(f"turn round {number + 1}/{rounds}: " + ", ".join(
            f"{name} {statistics.median(values):.0f}" for name, values in walls.items()))
    return {name: {"p50": round(statistics.median(values), 1),
                   "p95": round(percentile(values, 95), 1)} for name, values in walls.items()}


def run(command: list[str], env: dict, stdin: str) -> float:
    started = time.perf_counter()
    subprocess.run(command, input=stdin.encode(), stdout=subprocess.DEVNULL, env=env,
                   check=True)
    return (time.perf_counter() - started) * 1000


def edits(root: Path, count: int) -> dict:
    """Write a new note or edit one, each with a fresh word; time until a warm gate names it."""
    leaves = sorted(path.relative_to(root).as_posix() for path in (root / "04 stm").rglob("*.md"))
    walls = []
    for number in range(count):
        word = f"qzxlive{number}w{os.getpid()}"
        if number % 2 == 0:
            rel = leaves[number % len(leaves)].replace(".md", f"-live-{number}.md")
        else:
            rel = leaves[(number * 7) % len(leaves)]
        started = time.perf_counter()
        write_document(root, rel, f"Live note {number}", f"live-{number}-{os.getpid()}",
                       f"The {word} was written just now.")
        while rel not in gate_paths(root, word):
            if time.perf_counter() - started > 60:
                raise SystemExit(f"{rel} was not findable after 60 s")
        walls.append((time.perf_counter() - started) * 1000)
    return {"p50": round(statistics.median(walls), 1), "p95": round(percentile(walls, 95), 1),
            "max": round(max(walls), 1), "edits": count}


def gate_paths(root: Path, turn: str) -> list[str]:
    done = subprocess.run([*GATE, str(root)], input=turn.encode(), capture_output=True,
                          env=CLI_ENV, check=True)
    return [trail["nodes"][-1]["path"] for trail in json.loads(done.stdout)["retrieve"]["trails"]]


def index_wall(root: Path) -> dict:
    walls = []
    for _ in range(5):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "memory_forest", "index", str(root),
                               "--json"], capture_output=True, env=CLI_ENV, check=True)
        walls.append((time.perf_counter() - started) * 1000)
    return {"p50": round(statistics.median(walls), 1),
            "mode": json.loads(done.stdout)["mode"]}


def idle(pid: int) -> dict:
    """CPU seconds the idle watcher used over IDLE_SECONDS, and its resident memory."""
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    before = cpu()
    time.sleep(IDLE_SECONDS)
    used = cpu() - before
    rss = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text()
               .splitlines() if line.startswith("VmRSS:"))
    return {"cpu_percent": round(100 * used / IDLE_SECONDS, 2), "rss_mib": round(rss / 1024, 1)}


def remember_embedded(root: Path) -> float:
    forest = Forest.open(root)
    before = semantic.coverage(forest)["embeddable"]
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memory_forest", "remember", str(root),
                    "The spare bike lights are in the hall drawer.", "--tree", "livebench",
                    "--branch", "gear", "--leaf", "spare-lights", "--json"],
                   capture_output=True, env=CLI_ENV, check=True)
    while True:
        found = semantic.coverage(Forest.open(root))
        if found["embeddable"] > before and found["state"] == "ready":
            return round(time.perf_counter() - started, 2)
        if time.perf_counter() - started > 300:
            raise SystemExit("the remembered fact was not embedded after 300 s")
        time.sleep(0.2)


def percentile(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def render(report: dict, argv: list[str]) -> str:
    rows = ["| documents | ranking | `python -c pass` p50 | gate warm p50 / p95 | "
            "gate cold p50 / p95 | warm over `pass` |", "|---:|---|---:|---:|---:|---:|"]
    for size in report["sizes"]:
        walls = size["turn_ms"]
        kinds = [("lexical", "warm_lexical", "cold_lexical"), ("fused", "warm", "cold")] \
            if "warm_lexical" in walls else [("lexical", "warm", "cold")]
        for label, warm, cold in kinds:
            rows.append(
                f"| {size['documents']:,} | {label} | {walls['python']['p50']:.0f} ms | "
                f"{walls[warm]['p50']:.0f} / {walls[warm]['p95']:.0f} ms | "
                f"{walls[cold]['p50']:.0f} / {walls[cold]['p95']:.0f} ms | "
                f"+{walls[warm]['p50'] - walls['python']['p50']:.0f} ms |")
    rows += ["", "| documents | edit to findable p50 / p95 / max | `index` watched / cold "
             "p50 | idle watcher CPU, RSS |", "|---:|---:|---:|---:|"]
    for size in report["sizes"]:
        latency, idle_figures = size["edit_to_findable_ms"], size["idle"]
        rows.append(
            f"| {size['documents']:,} | {latency['p50']:.0f} / {latency['p95']:.0f} / "
            f"{latency['max']:.0f} ms ({latency['edits']} writes) | "
            f"{size['index_watched_ms']['p50']:.0f} / {size['index_cold_ms']['p50']:.0f} ms | "
            f"{idle_figures['cpu_percent']} % over {IDLE_SECONDS:.0f} s, "
            f"{idle_figures['rss_mib']} MiB |")
    embedded = [size["remember_to_embedded_s"] for size in report["sizes"]
                if "remember_to_embedded_s" in size]
    if embedded:
        rows += ["", f"`remember` to vectors covering the new leaf, watcher running, real "
                 f"model: {embedded[0]} s."]
    how = (", one interleaved run per size (every query each way per round, the order "
           "rotating)")
    return measured_block(BEGIN, END, report, how, "bench_watch.py", argv, rows)


if __name__ == "__main__":
    main()

"""What a long input costs per turn: the gate on a pasted turn and retrieve on a long query.

Usage: python scripts/bench_long_input.py [--runs 5] [--turn-bytes 61440]
                                          [--query-chars 20000] [--write-docs]

Builds the multilingual benchmark forest (scripts/bench_multilingual.py: the
example forest plus 25 leaves in four languages), indexes it with
``index --semantic`` (real embeddings), then times, as processes the way a
host hook and a user run them, alternating the two modes run by run:

- ``gate --json`` on a pasted turn of --turn-bytes bytes (a log of words,
  some of them the forest's, and a question at the end), with and without
  ``--lexical``;
- ``retrieve --json`` on a query of --query-chars characters made the same
  way, with and without ``--lexical``.

Each figure is the median wall of --runs runs; the fused runs also check
that the receipt ranked ``fused``. Prints JSON; ``--write-docs`` puts the
table into docs/benchmarks.md between its markers. Every figure moves with
the machine's load, which is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_multilingual import build
from docblock import write_block

from memory_forest import operations

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_long_input:begin -->", "<!-- bench_long_input:end -->"
QUESTION = "After all that, how did I change the watering after the tomato leaf spots?"
# The log's words: mostly ones memory does not hold, with a few it does, as in a real paste.
WORDS = ("error warning request timeout retry handler worker queue socket payload "
         "config module thread buffer commit branch deploy cache latency tomato drip "
         "pressure kimchi sesame chain tyre boiler").split()


def pasted(size: int, seed: int = 7) -> str:
    """A deterministic paste of about ``size`` UTF-8 bytes ending with QUESTION."""
    rng = random.Random(seed)
    lines: list[str] = []
    used = len(QUESTION) + 1
    number = 0
    while used < size:
        number += 1
        line = f"{number:05d} " + " ".join(rng.choice(WORDS) for _ in range(12))
        lines.append(line)
        used += len(line) + 1
    text = "\n".join(lines)[: max(0, size - len(QUESTION) - 1)]
    return f"{text}\n{QUESTION}"


def timed(args: list[str], stdin: str | None = None) -> tuple[float, dict]:
    env = dict(os.environ, NO_COLOR="1", PYTHONIOENCODING="utf-8")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memory_forest", *args], input=stdin,
                          capture_output=True, text=True, encoding="utf-8", env=env,
                          timeout=300)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed: {done.stdout[-500:]} {done.stderr[-500:]}")
    return wall, json.loads(done.stdout)


def run(runs: int, turn_bytes: int, query_chars: int) -> dict:
    turn = pasted(turn_bytes)
    query = pasted(query_chars * 2)[-query_chars:]
    walls: dict[str, list[float]] = {key: [] for key in
                                     ("gate_lexical", "gate_fused", "retrieve_lexical",
                                      "retrieve_fused")}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "forest"
        build(root)
        operations.index(root, semantic=True)
        for _ in range(runs):
            for mode in ("lexical", "fused"):
                extra = ["--lexical"] if mode == "lexical" else []
                wall, receipt = timed(["gate", str(root), "--json", *extra], stdin=turn)
                assert receipt["retrieve"]["ranking"] == mode, receipt["retrieve"]
                walls[f"gate_{mode}"].append(wall)
                wall, found = timed(["retrieve", str(root), query, "--json", *extra])
                assert found["ranking"] == mode, found["ranking_reason"]
                walls[f"retrieve_{mode}"].append(wall)
    return {"turn_bytes": len(turn.encode("utf-8")), "query_chars": len(query), "runs": runs,
            "load_average": [round(value, 1) for value in os.getloadavg()],
            "median_s": {key: round(statistics.median(values), 3)
                         for key, values in walls.items()}}


def markdown(report: dict) -> str:
    median = report["median_s"]
    load = " / ".join(str(value) for value in report["load_average"])
    return "\n".join([
        BEGIN,
        "```console",
        "$ .venv/bin/python scripts/bench_long_input.py --write-docs",
        "```",
        "",
        f"Median wall of {report['runs']} runs as processes, the two modes alternating; "
        f"load average {load} (2 cores) when it finished.",
        "",
        "| input | lexical | semantic on | target (semantic on) |",
        "|---|---:|---:|---:|",
        f"| `gate`, a {report['turn_bytes']:,}-byte pasted turn | "
        f"{median['gate_lexical']:.2f} s | {median['gate_fused']:.2f} s | <= 1.5 s |",
        f"| `retrieve`, a {report['query_chars']:,}-character query | "
        f"{median['retrieve_lexical']:.2f} s | {median['retrieve_fused']:.2f} s | <= 1 s |",
        END])


def write_docs(block: str) -> None:
    write_block(DOCS, BEGIN, END, block, heading="Long input, per turn")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turn-bytes", type=int, default=60 * 1024)
    parser.add_argument("--query-chars", type=int, default=20_000)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    report = run(args.runs, args.turn_bytes, args.query_chars)
    print(json.dumps(report, indent=2))
    if args.write_docs:
        write_docs(markdown(report))


if __name__ == "__main__":
    main()

"""Per-turn cost of the gate: process wall time of ``memory-forest gate``.

Usage: python scripts/bench_gate.py [--docs N] [--forest DIR] [--runs R] [--keep DIR]
                                    [--before COMMAND]

Measures, on the packaged example forest and on a synthetic forest of about
N documents (generated like ``bench_scale.py``, or an indexed forest given
with ``--forest``):

- ``lean``: ``python -P -m memory_forest gate ROOT``, the command ``hooks
  install`` writes; the gate's path imports no rich, pydantic or parsers.
- ``cli``: the ``memory-forest`` console script, whatever it points at.
- ``in_process``: ``gate.consult`` in this process (no start-up cost).
- ``python``: a bare ``python -c pass``, the floor of any process.
- ``before``: with ``--before COMMAND``, ``COMMAND gate ROOT`` for another
  build (e.g. the main branch's console script), on the same turns in the
  same run, so two versions are compared side by side. A failure receipt
  from it is recorded (as its status), not fatal.

Turns on the synthetic forest come in classes, all drawn from the forest's
own vocabulary so that they match:

- ``content``: 3 to 8 words drawn uniformly from the vocabulary past its 500
  most frequent words, like the content words of a question: each is in at
  most a few hundred documents, most in a few dozen.
- ``zipf_3`` and ``zipf_20``: 3 or 20 words drawn with the text's own Zipf
  frequencies. The vocabulary has no stopwords, so its top words sit in
  nearly every document, as no real word does after stopword removal: a
  worst case for ranking, which scores every document a word appears in.
- ``unmatched`` (an English question whose words are not in the forest) and
  ``blank``.
- ``preamble_60``: 60 Zipf words of context, then a ``content`` question.
- ``log_70kb``: a pasted log of about 70 KB whose words the forest does not
  hold, then a ``content`` question: over the 64 KiB reduction threshold.
- ``zipf_70kb``: about 70 KB of Zipf text from the forest's own vocabulary,
  then a ``content`` question: the worst case for the reduction, every word
  of the paste is in the index. Children run with bytecode caches written
and warmed (``PYTHONDONTWRITEBYTECODE`` removed), as an installed package
runs. Prints JSON: milliseconds, p50 and p95 per class.
"""

from __future__ import annotations

import argparse
import compileall
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

from bench_scale import Zipf, backdate, plan_trees, vocabulary
from forestgen import write_forest

import memory_forest
from memory_forest import gate, operations

EXAMPLE_TURNS = [
    "How cold should the kimchi fridge be, and for how long?",
    "what did we decide about the drip line pressure?",
    "Any notes on the brown spots on the tomato leaves?",
    "za'atar: how do I toast the sesame?",
    "Remind me which bed the napa cabbage came from",
]
CONTENT_FROM_RANK = 500
UNMATCHED = "Could you remind me what we decided about the quarterly budget review last week?"


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["COLUMNS"] = "120"
    return env


def wall_ms(command: list[str], stdin: bytes, runs: int,
            failures: set[str] | None = None) -> list[float]:
    """Wall times of ``runs`` processes; a failure receipt stops the run, unless
    ``failures`` is given to collect the failure codes in."""
    times = []
    env = child_env()
    subprocess.run(command, input=stdin, capture_output=True, env=env, check=False)  # warm up
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.run(command, input=stdin, capture_output=True, env=env, check=False)
        times.append((time.perf_counter() - started) * 1000)
        if b'"ok":false' in proc.stdout:
            if failures is None:
                sys.exit(f"gate failed: {proc.stdout[:300]!r} {proc.stderr[:300]!r}")
            failures.add(json.loads(proc.stdout)["error"]["code"])
    return times


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * (len(ordered) - 1) + 0.5))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1)}


def measure(root: Path, turns: dict[str, list[str]], runs: int,
            before: str | None = None) -> dict:
    lean = [sys.executable, "-P", "-m", "memory_forest", "gate", str(root)]
    script = shutil.which("memory-forest", path=os.path.dirname(sys.executable))
    report: dict = {}
    for name, texts in turns.items():
        per_turn = max(1, runs // len(texts))
        lean_times, cli_times, local_times, statuses = [], [], [], set()
        before_times: list[float] = []
        before_failures: set[str] = set()
        for text in texts:
            data = text.encode("utf-8")
            if before:
                before_times += wall_ms([before, "gate", str(root)], data, per_turn,
                                        before_failures)
            lean_times += wall_ms(lean, data, per_turn)
            if script:
                cli_times += wall_ms([script, "gate", str(root)], data, per_turn)
            for _ in range(per_turn):
                started = time.perf_counter()
                receipt = gate.consult(root, data)
                local_times.append((time.perf_counter() - started) * 1000)
                statuses.add(receipt["status"])
        report[name] = {"turns": len(texts), "runs": len(lean_times),
                        "status": sorted(statuses),
                        "lean_ms": summary(lean_times),
                        "cli_ms": summary(cli_times) if cli_times else None,
                        "in_process_ms": summary(local_times)}
        if before:
            report[name]["before_ms"] = summary(before_times)
            report[name]["before_failures"] = sorted(before_failures)
    return report


def log_paste(size: int) -> str:
    """A pasted service log of about ``size`` bytes, in words no forest holds."""
    lines, total, number = [], 0, 0
    while total < size:
        line = (f"2026-11-30T09:{number % 60:02d}:{number % 59:02d}Z worker-{number % 7} INFO "
                f"request id=req{number:06d} status=200 latency_ms={number % 97} "
                "path=/api/v2/items")
        lines.append(line)
        total += len(line) + 1
        number += 1
    return "\n".join(lines)


def synthetic_turns(rng: random.Random, zipf: Zipf, count: int) -> dict[str, list[str]]:
    content = zipf.words[CONTENT_FROM_RANK:]

    def question() -> str:
        return " ".join(rng.sample(content, rng.randint(3, 8))) + "?"

    return {
        "content": [question() for _ in range(count)],
        "zipf_3": [zipf.text(3) for _ in range(count)],
        "zipf_20": [zipf.text(20) for _ in range(count)],
        "unmatched": [UNMATCHED],
        "blank": ["   \n"],
        "preamble_60": [f"{zipf.text(60)}. {question()}" for _ in range(count)],
        "log_70kb": [f"{log_paste(70_000)}\n\n{question()}" for _ in range(count)],
        "zipf_70kb": [f"{zipf.text(6_700)}\n\n{question()}" for _ in range(count)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--forest", type=Path, help="An indexed forest to use instead.")
    parser.add_argument("--runs", type=int, default=30, help="Processes per turn class.")
    parser.add_argument("--keep", type=Path, help="Write the generated forest here, keep it.")
    parser.add_argument("--before", help="Another build's memory-forest command, measured "
                        "side by side on the same turns.")
    args = parser.parse_args()

    package = Path(memory_forest.__file__).parent
    compileall.compile_dir(package, quiet=1)  # what 'pip install' does for a real install
    rng = random.Random(20261130)
    zipf = Zipf(vocabulary(20_000, rng), rng)
    workdir = Path(tempfile.mkdtemp(prefix="mf-gate-bench-"))
    try:
        example = workdir / "example"
        operations.init(example, example=True)
        operations.index(example)
        if args.forest:
            big = args.forest
        else:
            big = (args.keep or workdir) / "forest"
            write_forest(big, plan_trees(args.docs, zipf, rng))
            backdate(big, 3600)
            operations.index(big)
        documents = operations.status(big)["documents"]
        python_ms = summary(wall_ms([sys.executable, "-c", "pass"], b"", args.runs))
        result = {
            "python": sys.version.split()[0],
            "python_bare_ms": python_ms,
            "example": measure(example, {"question": EXAMPLE_TURNS, "blank": ["   \n"]},
                               args.runs, args.before),
            "synthetic": {"documents": documents,
                          **measure(big, synthetic_turns(rng, zipf, 5), args.runs,
                                    args.before)},
        }
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

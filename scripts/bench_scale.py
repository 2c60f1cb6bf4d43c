"""Index and retrieval at scale on a synthetic forest.

Usage: python scripts/bench_scale.py --docs N [--queries Q] [--keep DIR]

Generates a valid forest of about N documents (trees x branches x leaves,
text drawn from a Zipf-distributed vocabulary, mtimes set an hour back as in
a forest that has been in use), then measures with the real CLI: full index
time and peak RSS, incremental index time after editing 1 and 100 leaves,
index size, in-process ``retrieve`` latency over a fixed query set, and the
wall time of ``memory-forest retrieve --json`` processes. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from forestgen import write_forest

from memory_forest import retrieve
from memory_forest.statefiles import index_path

BRANCHES_PER_TREE = 10
LEAVES_PER_BRANCH = 20
SYLLABLES = ["ka", "lo", "mi", "nu", "ri", "sa", "te", "vo", "zen", "dar", "mel", "kor",
             "pin", "tus", "gra", "bel", "sho", "fi", "qua", "ost"]


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Zipf:
    """Draw words with frequency proportional to 1/rank, like natural text."""

    def __init__(self, words: list[str], rng: random.Random) -> None:
        self.words = words
        self.rng = rng
        weights = [1 / (rank + 1) for rank in range(len(words))]
        total = sum(weights)
        acc, self.cumulative = 0.0, []
        for weight in weights:
            acc += weight / total
            self.cumulative.append(acc)

    def text(self, count: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cumulative, k=count))


def plan_trees(docs: int, zipf: Zipf, rng: random.Random) -> dict:
    per_tree = 1 + BRANCHES_PER_TREE * (1 + LEAVES_PER_BRANCH)
    tree_count = max(1, round((docs - 1) / per_tree))
    owners = 1 + tree_count * (1 + BRANCHES_PER_TREE)
    leaves_left = max(tree_count * BRANCHES_PER_TREE, docs - owners)
    trees: dict = {}
    for t in range(tree_count):
        branches = {}
        for b in range(BRANCHES_PER_TREE):
            share = leaves_left // (tree_count * BRANCHES_PER_TREE) + (
                1 if (t * BRANCHES_PER_TREE + b) < leaves_left % (tree_count * BRANCHES_PER_TREE)
                else 0)
            leaves = {}
            for leaf in range(share):
                paragraphs = [zipf.text(rng.randint(30, 80)) for _ in range(rng.randint(2, 5))]
                leaves[f"leaf-{leaf:03d}"] = (zipf.text(4).title(), "\n\n".join(paragraphs))
            branches[f"branch-{b:02d}"] = leaves
        trees[f"tree-{t:03d}"] = branches
    return trees


def question_set(zipf: Zipf, rng: random.Random, count: int) -> list[str]:
    """Fixed queries of 2-5 content words, as a person would ask about their memory.

    The 100 most frequent words of the vocabulary play the part of the function
    words ("the", "of", "what") that a real query's stopword filter removes, so
    they are left out; everything else is drawn with its natural frequency.
    """
    content = Zipf(zipf.words[100:], rng)
    return [content.text(rng.randint(2, 5)) for _ in range(count)]


def backdate(root: Path, seconds: int) -> None:
    then = time.time() - seconds
    for directory, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(directory, name), (then, then))


# Measure processes as a host runs them: with bytecode caches (some sandboxes disable
# writing them, which would make every start-up recompile the package from source).
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cli(*args: str) -> tuple[float, dict, int]:
    """Run the real CLI; return wall seconds, its JSON, and the child's peak RSS in KiB."""
    exe = shutil.which("memory-forest", path=os.path.dirname(sys.executable)) or "memory-forest"
    started = time.perf_counter()
    proc = subprocess.run([exe, *args, "--json"], capture_output=True, text=True, check=False,
                          env=CLI_ENV)
    wall = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = json.loads(proc.stdout)
    if not out.get("ok"):
        sys.exit(f"memory-forest {args[0]} failed: {out.get('error')}")
    return wall, out, rss


def edit_leaves(root: Path, count: int, rng: random.Random, zipf: Zipf) -> None:
    leaves = sorted((root / "04 stm").rglob("*.md"))
    for path in rng.sample(leaves, count):
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"\n{zipf.text(20)}\n")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def run(docs: int, queries: int, keep: Path | None) -> dict:
    rng = random.Random(20261130)
    zipf = Zipf(vocabulary(20_000, rng), rng)
    workdir = Path(tempfile.mkdtemp(prefix="mf-bench-"))
    root = (keep or workdir) / "forest"
    try:
        generated_at = time.perf_counter()
        written = write_forest(root, plan_trees(docs, zipf, rng))
        backdate(root, 3600)
        generate_s = time.perf_counter() - generated_at

        full_s, full, rss_kib = cli("index", str(root), "--full")
        one_s, one, _ = _incremental(root, 1, rng, zipf)
        hundred_s, hundred, _ = _incremental(root, 100, rng, zipf)

        query_set = question_set(zipf, rng, queries)
        latencies = []
        for query in query_set:
            started = time.perf_counter()
            retrieve.retrieve(root, query, limit=10)
            latencies.append((time.perf_counter() - started) * 1000)
        cli("retrieve", str(root), query_set[0])  # warm the bytecode and page caches
        walls = [cli("retrieve", str(root), q)[0] * 1000 for q in query_set[:20]]
        return {
            "documents": written,
            "generate_s": round(generate_s, 2),
            "index_full_s": round(full_s, 3),
            "index_full_reported_s": full["seconds"],
            "index_full_peak_rss_mib": round(rss_kib / 1024, 1),
            "index_incremental_1_s": round(one_s, 3),
            "index_incremental_1_reported_s": one["seconds"],
            "index_incremental_1_changed": one["changed"],
            "index_incremental_100_s": round(hundred_s, 3),
            "index_incremental_100_reported_s": hundred["seconds"],
            "index_incremental_100_changed": hundred["changed"],
            "index_size_mib": round(index_path(root).stat().st_size / 2**20, 1),
            "retrieve_in_process_ms_p50": round(statistics.median(latencies), 2),
            "retrieve_in_process_ms_p95": round(percentile(latencies, 0.95), 2),
            "retrieve_process_wall_ms_p50": round(statistics.median(walls), 1),
            "retrieve_process_wall_ms_p95": round(percentile(walls, 0.95), 1),
            "queries": len(query_set),
        }
    finally:
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _incremental(root: Path, count: int, rng: random.Random, zipf: Zipf):
    # Let the last build age past the racy-mtime window so only the edits are re-read.
    time.sleep(2.1)
    edit_leaves(root, count, rng, zipf)
    return cli("index", str(root))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="Write the forest here and keep it.")
    args = parser.parse_args()
    print(json.dumps(run(args.docs, args.queries, args.keep), indent=2))


if __name__ == "__main__":
    main()

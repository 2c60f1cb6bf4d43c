"""Move and forget wall on a generated forest, beside remember in the same run.

Usage: python scripts/bench_move_forget.py [--docs N] [--calls N] [--write]

On a forest of ``--docs`` documents (default 10,000, generated as
``bench_writers.py`` does, indexed once), ``--calls`` rounds (default 15) each run,
interleaved so a change of machine load hits every command alike:

- ``remember``: a new leaf in an existing branch (the reference writer);
- ``move``: a leaf to another branch of its tree, by path, its old branch
  listing it and one other branch linking to it (both rewritten);
- ``forget``: a leaf, by id;

with the real CLI in a fresh process each (what an agent pays), then the same
three in-process (the library alone). Prints JSON: per command the median and
p95 wall. ``--write`` puts the table into docs/benchmarks.md between its
``bench_move_forget`` markers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import Zipf, backdate, plan_trees, vocabulary  # noqa: E402
from bench_writers import cli, ms, percentile  # noqa: E402
from docblock import measured_block, write_block  # noqa: E402
from forestgen import write_forest  # noqa: E402

from memory_forest import operations  # noqa: E402
from memory_forest.writers import forget, move, remember  # noqa: E402
from memory_forest.writers.markdown import add_child_link  # noqa: E402

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN = "<!-- bench_move_forget:begin -->"
END = "<!-- bench_move_forget:end -->"
COMMANDS = ("remember", "move", "forget")


def link_leaves(root: Path, tree: str, branches: dict[str, dict]) -> None:
    """Give the generated branches what a real forest has: each lists its leaves, and the
    next branch links to the first leaf of this one (a note pointing across)."""
    names = sorted(branches)
    for number, branch in enumerate(names):
        path = root / f"03 mtm/{tree}/{branch}.md"
        text = path.read_text(encoding="utf-8")
        for leaf in sorted(branches[branch]):
            rel = f"04 stm/{tree}/{branch}/{leaf}.md"
            text = add_child_link(text, "Leaves", rel, leaf)
        other = names[(number + 1) % len(names)]
        first = sorted(branches[other])[0]
        text += f"\nSee [[04 stm/{tree}/{other}/{first}|{first}]].\n"
        path.write_text(text, encoding="utf-8")


def run(docs: int, calls: int, workdir: Path) -> dict:
    rng = random.Random(20261204)
    zipf = Zipf(vocabulary(20_000, rng), rng)
    root = workdir / "forest"
    trees = plan_trees(docs, zipf, rng)
    written = write_forest(root, trees)
    for tree, branches in trees.items():
        link_leaves(root, tree, branches)
    backdate(root, 3600)
    operations.index(root, full=True)
    # The leaves to move and forget: the first leaves of branches with several, so no
    # branch is emptied; each is used once.
    sources = [(tree, branch, sorted(leaves)) for tree, branches in sorted(trees.items())
               for branch, leaves in sorted(branches.items()) if len(leaves) >= 4]
    rng.shuffle(sources)
    walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
    lib: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for n in range(calls):
        for side, record in (("cli", walls), ("lib", lib)):
            tree, branch, leaves = sources[2 * n + (side == "lib")]
            others = sorted(b for b in trees[tree] if b != branch)
            leaf, gone = leaves[0], leaves[1]
            target = f"{tree}/{others[0]}/moved-{side}-{n}"
            source = f"04 stm/{tree}/{branch}/{leaf}.md"
            doc_id = f"stm-{tree}-{branch}-{gone}"
            if side == "cli":
                record["remember"].append(cli(
                    "remember", str(root), "--tree", tree, "--branch", branch, "--leaf",
                    f"bench-{n}", "--content", zipf.text(60))[0])
                record["move"].append(cli("move", str(root), source, "--to", target)[0])
                record["forget"].append(cli("forget", str(root), doc_id)[0])
                continue
            for name, call in (
                    ("remember", partial(remember.remember, root, tree, branch, f"lib-{n}",
                                         content=zipf.text(60))),
                    ("move", partial(move.move, root, source, target)),
                    ("forget", partial(forget.forget, root, doc_id))):
                started = time.perf_counter()
                call()
                record[name].append(time.perf_counter() - started)
    audit = operations.audit(root)
    return {"documents": written, "calls": calls, "audit_errors": audit["summary"]["errors"],
            **{f"{name}_wall_ms_p50": ms(statistics.median(walls[name])) for name in COMMANDS},
            **{f"{name}_wall_ms_p95": ms(percentile(walls[name], 0.95)) for name in COMMANDS},
            **{f"{name}_in_process_ms_p50": ms(statistics.median(lib[name]))
               for name in COMMANDS}}


def write(report: dict, argv: list[str]) -> None:
    rows = ["| command | CLI wall p50 | CLI wall p95 | in-process p50 |", "|---|---|---|---|"]
    for name in COMMANDS:
        rows.append(f"| `{name}` | {report[f'{name}_wall_ms_p50']:g} ms "
                    f"| {report[f'{name}_wall_ms_p95']:g} ms "
                    f"| {report[f'{name}_in_process_ms_p50']:g} ms |")
    block = measured_block(
        BEGIN, END, report, f"; {report['calls']} rounds of the three commands, interleaved, on "
        f"one forest of {report['documents']:,} documents (medians and p95; `audit` errors "
        f"afterwards: {report['audit_errors']}).", "bench_move_forget.py", argv, rows)
    write_block(DOCS, BEGIN, END, block, heading="Move and forget at 10,000 documents")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--write", action="store_true", help="write the table into "
                        "docs/benchmarks.md")
    argv = sys.argv[1:]
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="mf-bench-move-"))
    try:
        report = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                  "load_average_1m": round(os.getloadavg()[0], 2)}
        report.update(run(args.docs, args.calls, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report, indent=2))
    if args.write:
        write(report, argv)


if __name__ == "__main__":
    main()

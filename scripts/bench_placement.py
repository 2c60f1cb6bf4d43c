"""How well ``remember`` files facts by itself: the placement table on a labelled set.

Usage: python scripts/bench_placement.py [--semantic] [--write] [--show-misses]

The labelled set lives in tests/data/placement/: ``seed.json`` is a household
forest (9 trees, 17 branches, 1-2 leaves each with title, tags and body) and
``facts.jsonl`` holds 156 facts, each labelled with the branch it belongs to
(``tree/branch``) or ``inbox`` when it belongs nowhere. Each fact has a kind:
``direct`` (it shares a word with its branch's or tree's title), ``indirect``
(phrased without them: it shares at most words of the branch's leaves), ``instance``
(it names another instance than a leaf of its branch: batch 8 beside batch 7, 2026
beside 2025, another person: it must get a leaf of its own) and ``nowhere``. Every
4th fact (the 4th, 8th, ...) is held out: the decision rule was calibrated on the
others only, and the held-out part is reported apart.

The forest is written with ``remember`` (tree, branch, leaf, titles, tags), indexed
with ``index`` (``--semantic`` embeds it and turns semantic ranking on), and every
fact is placed with ``placement.place(append=True)``, the question both
``remember --append`` and ``consolidate`` ask. Figures per part: placeable facts
filed in their branch, all facts filed in a wrong branch, nowhere-facts sent to the
inbox, instance facts appended to the other instance's leaf, and the median cost of
one ``place`` call. ``--write`` puts the table into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from docblock import write_block

from memory_forest import operations
from memory_forest.forest import Forest
from memory_forest.placement import place
from memory_forest.writers.remember import remember

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "placement"
DOCS_FILE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_placement: begin -->", "<!-- bench_placement: end -->"
HELD_OUT_EVERY = 4


def load() -> tuple[dict, list[dict]]:
    seed = json.loads((DATA / "seed.json").read_text(encoding="utf-8"))
    facts = [json.loads(line) for line in
             (DATA / "facts.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    for number, fact in enumerate(facts, start=1):
        fact["held_out"] = number % HELD_OUT_EVERY == 0
    return seed, facts


def build(root: Path, seed: dict, semantic: bool) -> None:
    """The seed forest, written leaf by leaf through ``remember`` and then indexed."""
    operations.init(root, inbox=True)
    for tree, spec in seed["trees"].items():
        for branch, branch_spec in spec["branches"].items():
            for leaf in branch_spec["leaves"]:
                remember(root, tree=tree, branch=branch, leaf=leaf["leaf"],
                         title=leaf["title"], content=leaf["body"], tree_title=spec["title"],
                         branch_title=branch_spec["title"], tag=leaf["tags"])
    operations.index(root, semantic=semantic)


def placed(root: Path, facts: list[dict]) -> list[float]:
    """Place every fact (in order), recording where it went; the cost of each call."""
    costs = []
    with Forest.open(root) as forest:
        for fact in facts:
            start = time.perf_counter()
            where = place(forest, fact["text"], append=True)
            costs.append(time.perf_counter() - start)
            fact["got"] = "inbox" if where.action == "inbox" else f"{where.tree}/{where.branch}"
            fact["action"], fact["leaf"] = where.action, where.path
            fact["rule"] = where.reason["rule"]
    return costs


def share(part: list[dict], hit) -> tuple[int, int]:
    return sum(1 for fact in part if hit(fact)), len(part)


def figures(part: list[dict]) -> dict[str, tuple[int, int]]:
    placeable = [fact for fact in part if fact["branch"] != "inbox"]
    nowhere = [fact for fact in part if fact["branch"] == "inbox"]
    instances = [fact for fact in part if "instance" in fact]
    return {
        "in_branch": share(placeable, lambda fact: fact["got"] == fact["branch"]),
        "indirect_in_branch": share([fact for fact in placeable if fact["kind"] == "indirect"],
                                    lambda fact: fact["got"] == fact["branch"]),
        "wrong_branch": share(part, lambda fact: fact["got"] not in ("inbox", fact["branch"])),
        "nowhere_in_inbox": share(nowhere, lambda fact: fact["got"] == "inbox"),
        "instance_appended": share(instances, lambda fact: fact["action"] == "append" and
                                   fact["leaf"].startswith("04 stm/" + fact["instance"] + ".")),
    }


def pct(pair: tuple[int, int]) -> str:
    hit, total = pair
    return f"{100 * hit / total:.1f} % ({hit}/{total})" if total else "-"


ROWS = (("placeable facts in their branch (target >= 85 %)", "in_branch"),
        ("... of them phrased without the branch's words", "indirect_in_branch"),
        ("all facts in a wrong branch (target <= 3 %)", "wrong_branch"),
        ("nowhere-facts in the inbox (target >= 80 %)", "nowhere_in_inbox"),
        ("instance facts appended to the other instance (must be 0)", "instance_appended"))


def table(runs: dict[str, tuple[list[dict], float]]) -> str:
    heads = [f"{mode}, {part}" for mode in runs for part in ("tuned", "held out")]
    lines = ["| | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]
    cells = {}
    for mode, (facts, _) in runs.items():
        cells[mode] = [figures([fact for fact in facts if not fact["held_out"]]),
                       figures([fact for fact in facts if fact["held_out"]])]
    for label, key in ROWS:
        row = [pct(part[key]) for mode in runs for part in cells[mode]]
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    costs = [f"{runs[mode][1] * 1000:.2f} ms" for mode in runs for _ in (0, 1)]
    lines.append("| median cost of one place call | " + " | ".join(costs) + " |")
    return "\n".join(lines)


def run(seed: dict, facts: list[dict], semantic: bool) -> tuple[list[dict], float]:
    mine = [dict(fact) for fact in facts]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "forest"
        build(root, seed, semantic)
        costs = placed(root, mine)
    return mine, statistics.median(costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--semantic", action="store_true",
                        help="Also place with semantic ranking on (needs the semantic extra).")
    parser.add_argument("--write", action="store_true", help="Write the table into the docs.")
    parser.add_argument("--show-misses", action="store_true",
                        help="List every fact not filed where its label says (tuned part).")
    options = parser.parse_args()
    seed, facts = load()
    runs = {"lexical": run(seed, facts, semantic=False)}
    note = ""
    if options.semantic:
        from memory_forest.semantic_model import unavailable

        reason = unavailable()
        if reason is None:
            runs["semantic"] = run(seed, facts, semantic=True)
        else:
            note = f"\n\nSemantic: not measured on this machine ({reason})."
    if options.show_misses:
        for mode, (done, _) in runs.items():
            for fact in done:
                if fact["got"] != fact["branch"] and not fact["held_out"]:
                    print(f"{mode}: {fact['branch']} -> {fact['got']} ({fact['rule']}): "
                          f"{fact['text']}", file=sys.stderr)
    branches = sum(len(spec["branches"]) for spec in seed["trees"].values())
    indirect = sum(1 for fact in facts if fact["kind"] == "indirect")
    placeable = sum(1 for fact in facts if fact["branch"] != "inbox")
    summary = (f"{len(facts)} facts over {branches} branches ({placeable} placeable, "
               f"{indirect} of them phrased without their branch's words, "
               f"{len(facts) - placeable} that belong nowhere); every "
               f"{HELD_OUT_EVERY}th fact held out of tuning.")
    block = f"{BEGIN}\n{summary}\n\n{table(runs)}{note}\n{END}"
    print(block)
    if options.write:
        write_block(DOCS_FILE, BEGIN, END, block, heading="Placement")


if __name__ == "__main__":
    main()

"""Benchmark ``memory-forest browse`` on a synthetic forest of N documents.

    .venv/bin/python scripts/bench_browse.py --docs 10000

Writes a valid forest (XLTM, trees, branches, leaves with parent links and
realistic text, plus Daily pages, Life Archive records and ISTM shards)
directly with 0700/0600 modes into a temporary directory, runs ``browse``
once, prints one JSON object with the figures and removes everything unless
``--keep`` is given. Deterministic for a given ``--docs`` and ``--seed``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

BRANCHES_PER_TREE = 20
LEAVES_PER_BRANCH = 48
EVENTS_PER_SHARD = 6

_WORDS = (
    "bed tray seedling basil tomato pepper drip emitter valve pressure sensor humidity "
    "ventilation shade cloth compost batch brine jar label crock ferment cabbage chili "
    "garlic ginger salt ratio temperature cold room shelf harvest rota volunteer ledger "
    "invoice supplier delivery pallet rainwater tank filter pump timer schedule fault "
    "reading morning evening weekly monthly check repair replace order measure note"
).split()
_TOPICS = ("greenhouse", "kitchen", "orchard", "workshop", "apiary", "pantry", "compost",
           "seedbank", "rainwater", "market", "tools", "library", "finance", "volunteers")
_TAGS = ("decision", "observation", "procedure", "incident", "recipe", "supplier", "plan")


def sentence(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(8, 18))
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def plan(total: int) -> dict[str, int]:
    """How many documents of each kind make up ``total`` Markdown documents."""
    daily = max(1, total // 70)
    archive = max(1, total // 250)
    structured = max(4, total - daily - archive)  # XLTM + at least one of LTM/MTM/STM
    return {"daily": daily, "archive": archive, "structured": structured}


def generate(root: Path, total: int, seed: int = 7) -> dict[str, int]:
    """Write a valid forest with ``total`` Markdown documents at ``root`` (must not exist)."""
    from memory_forest import operations

    rng = random.Random(seed)
    operations.init(root)
    counts = plan(total)
    budget = counts["structured"] - 1  # the XLTM is one
    trees: list[tuple[str, list[tuple[str, list[str]]]]] = []
    number = 0
    while budget > 0:
        tree = f"{_TOPICS[number % len(_TOPICS)]}-{number // len(_TOPICS) + 1}"
        number += 1
        budget -= 1
        branches: list[tuple[str, list[str]]] = []
        for b in range(BRANCHES_PER_TREE):
            if budget <= 0:
                break
            budget -= 1
            leaves = []
            for leaf in range(LEAVES_PER_BRANCH):
                if budget <= 0:
                    break
                budget -= 1
                leaves.append(f"2026-{1 + leaf % 12:02d}-{rng.choice(_WORDS)}-{leaf:03d}")
            branches.append((f"{rng.choice(_WORDS)}-{b:02d}", leaves))
        trees.append((tree, branches))
    written = 0
    days = [f"2026-{1 + d // 28 % 12:02d}-{1 + d % 28:02d}" for d in range(counts["daily"])]
    days = sorted(set(days))

    tree_lines = "\n".join(f"- [[02 ltm/{t}_LTM|{t.title()}]]: {sentence(rng)}" for t, _ in trees)
    _doc(root, "01 xltm/XLTM.md", "xltm-root", "Forest root map",
         f"## Trees\n\n{tree_lines}\n\n## Cross-tree invariants\n\n{paragraph(rng, 3)}", rng)
    written += 1
    for tree, branches in trees:
        lines = "\n".join(f"- [[03 mtm/{tree}/{b}|{b}]]: {sentence(rng)}" for b, _ in branches)
        _doc(root, f"02 ltm/{tree}_LTM.md", f"ltm-{tree}", tree.title(),
             f"Up: [[01 xltm/XLTM|Forest root map]]\n\n{paragraph(rng, 4)}\n\n## Branches\n\n"
             f"{lines}\n\n## Stable contracts\n\n{paragraph(rng, 3)}", rng)
        written += 1
        for branch, leaves in branches:
            lines = "\n".join(f"- [[04 stm/{tree}/{branch}/{leaf}|{leaf}]]" for leaf in leaves)
            _doc(root, f"03 mtm/{tree}/{branch}.md", f"mtm-{tree}-{branch}", branch,
                 f"Up: [[02 ltm/{tree}_LTM|{tree.title()}]]\n\n{paragraph(rng, 3)}\n\n"
                 f"## Procedure\n\n1. {sentence(rng)}\n2. {sentence(rng)}\n3. {sentence(rng)}"
                 f"\n\n## Leaves\n\n{lines}", rng)
            written += 1
            for leaf in leaves:
                day = rng.choice(days)
                event = f"06 istm/{day}.jsonl#evt-{day}-{rng.randrange(EVENTS_PER_SHARD)}"
                _doc(root, f"04 stm/{tree}/{branch}/{leaf}.md",
                     f"stm-{tree}-{branch}-{leaf}", leaf.replace("-", " ").capitalize(),
                     f"Up: [[03 mtm/{tree}/{branch}|{branch}]]\n\n{paragraph(rng, 4)}\n\n"
                     f"## Decision\n\n{paragraph(rng, 2)}\n\n- {sentence(rng)}\n- "
                     f"{sentence(rng)}\n\nSource: `{event}`", rng, sources=[event])
                written += 1
    for day in days:
        entries = "\n\n".join(f"## d-{day.replace('-', '')}-{e}\n\n{paragraph(rng, 2)}\n"
                              f"Sources: `06 istm/{day}.jsonl#evt-{day}-{e}`" for e in range(3))
        _doc(root, f"05 daily/{day}.md", f"daily-{day}", f"Daily {day}", entries, rng)
        written += 1
        lines = []
        for e in range(EVENTS_PER_SHARD):
            lines.append(json.dumps({
                "event_id": f"evt-{day}-{e}", "observed_at": f"{day}T08:{e:02d}:00Z",
                "captured_at": f"{day}T08:{e:02d}:05Z", "source": "bench-agent",
                "kind": rng.choice(("observation", "note", "tool_result")),
                "payload": {"text": sentence(rng)},
            }, sort_keys=True))
        _write(root, f"06 istm/{day}.jsonl", "\n".join(lines) + "\n")
    for a in range(counts["archive"]):
        _doc(root, f"00 life_archive/record-{a:04d}.md", f"archive-{a}", f"Archive record {a}",
             f"Links to the root map: [[01 xltm/XLTM|Forest root map]]\n\n{paragraph(rng, 4)}",
             rng, status="archived")
        written += 1
    return {"documents": written, "trees": len(trees),
            "branches": sum(len(b) for _, b in trees),
            "leaves": sum(len(leaves) for _, b in trees for _, leaves in b),
            "daily": len(days), "archive": counts["archive"], "istm_shards": len(days)}


def _doc(root: Path, rel: str, doc_id: str, title: str, body: str, rng: random.Random,
         sources: list[str] | None = None, status: str = "active") -> None:
    meta = [f'id: "{doc_id}"', f'title: "{title}"', 'created: "2026-01-05T08:00:00Z"',
            'updated: "2026-11-28T09:00:00Z"', f'status: "{status}"']
    if sources:
        meta.append("sources:\n" + "\n".join(f'  - "{s}"' for s in sources))
    meta.append("tags:\n" + "\n".join(f'  - "{t}"' for t in rng.sample(_TAGS, 2)))
    _write(root, rel, "---\n" + "\n".join(meta) + f"\n---\n# {title}\n\n{body}\n")


def _write(root: Path, rel: str, text: str) -> None:
    folder = root
    for part in rel.split("/")[:-1]:
        folder = folder / part
        if not folder.is_dir():
            os.mkdir(folder, 0o700)
            os.chmod(folder, 0o700)
    fd = os.open(root / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(text.encode("utf-8"))


def _tree_bytes(path: Path) -> tuple[int, int]:
    files = size = 0
    for folder, _, names in os.walk(path):
        for name in names:
            files += 1
            size += os.lstat(os.path.join(folder, name)).st_size
    return files, size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000, help="Markdown documents to generate")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the forest and the site")
    args = parser.parse_args(argv)

    from memory_forest.browse import browse
    from memory_forest.forest import Forest
    from memory_forest.snapshot import scan

    work = Path(tempfile.mkdtemp(prefix="bench-browse-"))
    try:
        root, out = work / "forest", work / "site"
        started = time.perf_counter()
        shape = generate(root, args.docs, args.seed)
        generated = time.perf_counter() - started

        started = time.perf_counter()
        scan(Forest.open(root))
        scanned = time.perf_counter() - started

        wall, cpu = time.perf_counter(), time.process_time()
        outcome = browse(root, out)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if not outcome["ok"] or outcome["issues"]["errors"]:
            print(json.dumps({"ok": False, "outcome": outcome}), file=sys.stderr)
            return 1
        _, forest_bytes = _tree_bytes(root)
        site_files, site_bytes = _tree_bytes(out)
        graph_bytes = (out / "graph.html").stat().st_size
        index_bytes = (out / "index.html").stat().st_size
        figures = {
            "docs": outcome["documents"],
            "canonical_files": sum(outcome["counts"].values()),
            "shape": shape,
            "forest_mib": round(forest_bytes / 2**20, 2),
            "generate_forest_s": round(generated, 2),
            "scan_s": round(scanned, 2),
            "browse_wall_s": round(wall, 2),
            "browse_cpu_s": round(cpu, 2),
            "browse_ms_per_doc": round(1000 * wall / max(1, outcome["documents"]), 3),
            "site_files": site_files,
            "site_mib": round(site_bytes / 2**20, 2),
            "index_html_mib": round(index_bytes / 2**20, 2),
            "graph_html_mib": round(graph_bytes / 2**20, 2),
            "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
        }
        if args.keep:
            figures["kept"] = str(work)
        print(json.dumps(figures, sort_keys=True))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

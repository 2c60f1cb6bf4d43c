"""Retrieval quality on LoCoMo: recall of evidence sessions in retrieve's trails.

Usage: python scripts/bench_retrieval.py [LOCOMO_DIR] [--write-docs]

Builds one forest from every conversation in LOCOMO_DIR (default
../shared/bench/locomo): a tree per conversation, one branch, one STM leaf
per session holding its date and ``dia_id speaker: text`` turns. Indexes it,
then runs ``retrieve`` for every question (category 5 and questions without
evidence are skipped) and prints recall_any@k, recall_all@k and latency.
The data is research benchmark data: it is read from outside the repository
and never copied into it.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from forestgen import write_forest

from memory_forest import operations, retrieve

KS = (1, 3, 5, 10)
DEFAULT_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "bench" / "locomo"


def load_conversations(directory: Path) -> dict[str, dict]:
    files = sorted(directory.glob("*.json"))
    if not files:
        sys.exit(f"no LoCoMo conversations (*.json) in {directory}")
    return {f"locomo-{f.stem}": json.loads(f.read_text(encoding="utf-8")) for f in files}


def session_numbers(conversation: dict) -> list[int]:
    return sorted(int(m.group(1)) for key in conversation
                  if (m := re.fullmatch(r"session_(\d+)", key)))


def build_trees(conversations: dict[str, dict]) -> dict:
    trees = {}
    for tree, conv in conversations.items():
        leaves = {}
        for n in session_numbers(conv):
            date = conv.get(f"session_{n}_date_time", "")
            turns = [_turn(t) for t in conv[f"session_{n}"]]
            leaves[f"session-{n:02d}"] = (f"Session {n}", f"Date: {date}\n\n" + "\n\n".join(turns))
        trees[tree] = {"sessions": leaves}
    return trees


def _turn(turn: dict) -> str:
    """One turn as ``dia_id speaker: text``, with the description of a shared image."""
    line = f"{turn['dia_id']} {turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        line += f" [shares an image: {turn['blip_caption']}]"
    return line


def questions(conversations: dict[str, dict]) -> list[tuple[str, str, set[str]]]:
    items = []
    for tree, conv in conversations.items():
        for qa in conv["qa"]:
            if qa.get("category") == 5 or not qa.get("evidence"):
                continue
            sessions = set()
            for ev in qa["evidence"]:
                m = re.match(r"D(\d+):", ev.strip())
                if m:
                    sessions.add(f"04 stm/{tree}/sessions/session-{int(m.group(1)):02d}.md")
            if sessions:
                items.append((tree, qa["question"], sessions))
    return items


def run(directory: Path) -> dict:
    conversations = load_conversations(directory)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "forest"
        documents = write_forest(root, build_trees(conversations))
        operations.index(root, full=True)
        items = questions(conversations)
        hits_any = dict.fromkeys(KS, 0)
        hits_all = dict.fromkeys(KS, 0)
        latencies = []
        for _tree, question, evidence in items:
            started = time.perf_counter()
            try:
                trails = retrieve.retrieve(root, question, limit=max(KS))["trails"]
            except Exception as exc:  # a question with no searchable words ranks nothing
                if getattr(exc, "code", None) != "query_not_searchable":
                    raise
                trails = []
            latencies.append((time.perf_counter() - started) * 1000)
            ranked = [t["nodes"][-1]["path"] for t in trails if t["complete"]]
            for k in KS:
                top = set(ranked[:k])
                hits_any[k] += bool(top & evidence)
                hits_all[k] += evidence <= top
    n = len(items)
    latencies.sort()
    return {
        "conversations": len(conversations),
        "documents": documents,
        "questions": n,
        **{f"recall_any@{k}": round(hits_any[k] / n, 3) for k in KS},
        **{f"recall_all@{k}": round(hits_all[k] / n, 3) for k in KS},
        "latency_ms_p50": round(statistics.median(latencies), 2),
        "latency_ms_p95": round(latencies[int(0.95 * (n - 1))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo_dir", nargs="?", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args()
    print(json.dumps(run(args.locomo_dir.resolve()), indent=2))


if __name__ == "__main__":
    main()

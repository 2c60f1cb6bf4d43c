"""Retrieval quality on LoCoMo: recall of evidence sessions in retrieve's trails.

Usage: python scripts/bench_retrieval.py [LOCOMO_DIR] [--semantic]

Builds one forest from every conversation in LOCOMO_DIR (default
../shared/bench/locomo): a tree per conversation, one branch, one STM leaf
per session holding its date and ``dia_id speaker: text`` turns. Indexes it,
then runs ``retrieve`` for every question (category 5 and questions without
evidence are skipped) and prints recall_any@k, recall_all@k and latency.

With ``--semantic`` the forest is indexed with ``index --semantic`` (every
session embedded with the real model: a few minutes on two cores) and every
question is asked twice in the same run, with ``lexical=True`` and fused, so
the two rankings are compared on the same index: both sets of figures side
by side, and per question, how many each ranking wins over the other (the
evidence in the top k for one and not the other) with a two-sided sign test.
The data is research benchmark data: it is read from outside the repository
and never copied into it.
"""

from __future__ import annotations

import argparse
import json
import math
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


def run(directory: Path, semantic: bool = False) -> dict:
    conversations = load_conversations(directory)
    rankings = ("lexical", "fused") if semantic else ("lexical",)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "forest"
        documents = write_forest(root, build_trees(conversations))
        built = operations.index(root, full=True, semantic=semantic)
        items = questions(conversations)
        ranked = {name: [] for name in rankings}
        latencies = {name: [] for name in rankings}
        for _tree, question, _evidence in items:
            for name in rankings:
                started = time.perf_counter()
                ranked[name].append(_ranked(root, question, lexical=name == "lexical",
                                            expected=name if semantic else None))
                latencies[name].append((time.perf_counter() - started) * 1000)
    figures = {name: _figures(ranked[name], items, latencies[name]) for name in rankings}
    report = {"conversations": len(conversations), "documents": documents,
              "questions": len(items)}
    if not semantic:
        return {**report, **figures["lexical"]}
    done = built["semantic"]
    return {**report, "embedded": {key: done[key] for key in ("embedded", "chunks", "seconds")},
            **figures, "fused_vs_lexical": _duel(ranked["fused"], ranked["lexical"], items)}


def _ranked(root: Path, question: str, lexical: bool, expected: str | None) -> list[str]:
    """The session leaves of retrieve's complete trails, in trail order."""
    try:
        found = retrieve.retrieve(root, question, limit=max(KS), lexical=lexical)
    except Exception as exc:  # a question with no searchable words ranks nothing
        if getattr(exc, "code", None) != "query_not_searchable":
            raise
        return []
    if expected is not None and found["ranking"] != expected:
        sys.exit(f"asked for {expected} ranking, got {found['ranking']} "
                 f"({found['ranking_reason']})")
    return [t["nodes"][-1]["path"] for t in found["trails"] if t["complete"]]


def _figures(ranked: list[list[str]], items: list, latencies: list[float]) -> dict:
    n = len(items)
    latencies = sorted(latencies)
    hits_any = {k: sum(bool(set(r[:k]) & ev) for r, (_, _, ev) in zip(ranked, items, strict=True))
                for k in KS}
    hits_all = {k: sum(ev <= set(r[:k]) for r, (_, _, ev) in zip(ranked, items, strict=True))
                for k in KS}
    return {
        **{f"recall_any@{k}": round(hits_any[k] / n, 3) for k in KS},
        **{f"recall_all@{k}": round(hits_all[k] / n, 3) for k in KS},
        "latency_ms_p50": round(statistics.median(latencies), 2),
        "latency_ms_p95": round(latencies[int(0.95 * (n - 1))], 2),
    }


def _duel(ours: list[list[str]], theirs: list[list[str]], items: list) -> dict:
    """Per question, where one ranking has the evidence in its top k and the other not."""
    duel = {}
    for name, k, whole in (("any@1", 1, False), ("any@5", 5, False), ("all@5", 5, True)):
        def hit(ranked: list[str], evidence: set[str], k: int = k, whole: bool = whole) -> bool:
            top = set(ranked[:k])
            return evidence <= top if whole else bool(top & evidence)
        pairs = [(hit(a, ev), hit(b, ev)) for a, b, (_, _, ev) in zip(ours, theirs, items,
                                                                       strict=True)]
        wins = sum(1 for a, b in pairs if a and not b)
        losses = sum(1 for a, b in pairs if b and not a)
        duel[name] = {"wins": wins, "losses": losses, "sign_test_p": _sign_test(wins, losses)}
    return duel


def _sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: how likely so uneven a split is when neither is better."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n
    return round(min(1.0, 2 * tail), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo_dir", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--semantic", action="store_true",
                        help="Index with semantic ranking on; report lexical and fused.")
    args = parser.parse_args()
    print(json.dumps(run(args.locomo_dir.resolve(), args.semantic), indent=2))


if __name__ == "__main__":
    main()

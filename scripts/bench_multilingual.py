"""Multilingual mini-benchmark: recall of the answering leaf, lexical core against fused ranking.

Usage: python scripts/bench_multilingual.py [--write-docs]

Builds the benchmark forest (the packaged example forest plus the extra trees,
branches and leaves in tests/data/multilingual/forest.json, some of them in
Korean, Japanese or Spanish), indexes it with ``semantic=True`` and runs every
question of tests/data/multilingual/questions.jsonl twice: ``retrieve`` with
``lexical=True`` and ``retrieve`` fused. A question counts at k when its
expected leaf ends one of the first k trails. Prints recall@1 and recall@5 as
JSON: overall, per question language, and for the cross-language questions
(the question's language is not the leaf's) and the same-language ones.
It also asks every question of tests/data/multilingual/nothing.jsonl
(gibberish, and questions this forest knows nothing about; a calibration
half and a held-out half) and prints the share that got no trail at all,
in both modes: the other side of recall, what ``semantic_null`` is
calibrated on. ``--write-docs`` also writes the tables into
docs/benchmarks.md between its ``bench_multilingual`` markers.

tests/test_multilingual.py loads this module to build the same forest and
score it the same way, so the test and the table cannot drift apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from docblock import write_block
from forestgen import write_document

from memory_forest import operations, retrieve
from memory_forest.errors import ForestError

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "multilingual"
DOCS = REPO / "docs" / "benchmarks.md"
BEGIN = "<!-- bench_multilingual:begin -->"
END = "<!-- bench_multilingual:end -->"
KS = (1, 5)
LANGS = ("ko", "ja", "es", "en")
# The example forest's leaves mix languages: English prose around a quoted note. Their
# language here is the prose's, the one a reader skimming the leaf sees first.
EXAMPLE_LEAF_LANG = "en"


def load_forest() -> dict[str, Any]:
    return json.loads((DATA / "forest.json").read_text(encoding="utf-8"))


def load_questions() -> list[dict[str, str]]:
    lines = (DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def load_nothing() -> list[dict[str, str]]:
    lines = (DATA / "nothing.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def trail_counts(root: Path, items: list[dict[str, str]], lexical: bool) -> dict[str, int]:
    """For every question id, how many trails it got (the leaves of ``ranked_leaves``)."""
    return {item["id"]: len(ranked_leaves(root, item["question"], lexical))
            for item in items}


def empty_shares(items: list[dict[str, str]], counts: dict[str, dict[str, int]]
                 ) -> dict[str, Any]:
    """The share of questions with no trail, per mode, by kind and split and overall."""
    groups: dict[str, list[str]] = {"all": [item["id"] for item in items]}
    for item in items:
        groups.setdefault(f"{item['kind']}, {item['split']}", []).append(item["id"])
    return {group: {"questions": len(ids),
                    **{mode: round(sum(1 for i in ids if not found[i]) / len(ids), 3)
                       for mode, found in counts.items()}}
            for group, ids in sorted(groups.items())}


def leaf_languages(forest: dict[str, Any]) -> dict[str, str]:
    """The language of every extra leaf, by its forest-relative path."""
    return {f"04 stm/{tree}/{branch}/{name}.md": leaf["lang"]
            for tree, spec in forest["trees"].items()
            for branch, branch_spec in spec["branches"].items()
            for name, leaf in branch_spec["leaves"].items()}


def build(root: Path, forest: dict[str, Any] | None = None) -> list[str]:
    """Write the example forest and the extra documents into ``root``; return the new leaves.

    A tree entry without a title is a tree the example already holds: only its new
    branches are written. Every document links to its immediate parent, as the
    writers would write it.
    """
    forest = load_forest() if forest is None else forest
    operations.init(root, example=True)
    leaves = []
    for tree, spec in forest["trees"].items():
        ltm = f"02 ltm/{tree}_LTM"
        if "title" in spec:
            write_document(root, f"{ltm}.md", spec["title"], f"ltm-{tree}",
                           f"Up: [[01 xltm/XLTM|Forest root map]]\n\n{spec['body']}")
        elif not (root / f"{ltm}.md").is_file():
            raise ValueError(f"tree {tree!r} has no title and the example forest has no {ltm}")
        tree_title = spec.get("title", tree.capitalize())
        for branch, branch_spec in spec["branches"].items():
            mtm = f"03 mtm/{tree}/{branch}"
            write_document(root, f"{mtm}.md", branch_spec["title"], f"mtm-{tree}-{branch}",
                           f"Up: [[{ltm}|{tree_title}]]\n\n{branch_spec['body']}")
            for name, leaf in branch_spec["leaves"].items():
                rel = f"04 stm/{tree}/{branch}/{name}.md"
                write_document(root, rel, leaf["title"], f"stm-{tree}-{branch}-{name}",
                               f"Up: [[{mtm}|{branch_spec['title']}]]\n\n{leaf['body']}")
                leaves.append(rel)
    return leaves


def ranked_leaves(root: Path, question: str, lexical: bool, limit: int = max(KS)) -> list[str]:
    """The paths that end the first ``limit`` trails for ``question``.

    A call that should be fused but ranked lexically (the extra missing, no vectors) is an
    error, not a low figure: the table would otherwise measure the lexical core twice.
    """
    try:
        found = retrieve.retrieve(root, question, limit=limit, no_unfiled=True, lexical=lexical)
    except ForestError as exc:  # a question with no searchable words ranks nothing
        if exc.code != "query_not_searchable":
            raise
        return []
    wanted = "lexical" if lexical else "fused"
    if found["ranking"] != wanted:
        raise RuntimeError(f"retrieve ranked {found['ranking']}, not {wanted}: "
                           f"{found['ranking_reason']}")
    return [trail["nodes"][-1]["path"] for trail in found["trails"] if trail["nodes"]]


def score(root: Path, questions: list[dict[str, str]], lexical: bool) -> dict[str, int | None]:
    """For every question id, the rank (1-based) of its expected leaf, or None past ``KS``."""
    ranks: dict[str, int | None] = {}
    for item in questions:
        ranked = ranked_leaves(root, item["question"], lexical)
        ranks[item["id"]] = ranked.index(item["expected"]) + 1 \
            if item["expected"] in ranked else None
    return ranks


def recall(ranks: dict[str, int | None], ids: list[str]) -> dict[str, float | None]:
    if not ids:
        return dict.fromkeys((f"recall@{k}" for k in KS), None)
    return {f"recall@{k}": round(sum(1 for i in ids if (ranks[i] or k + 1) <= k) / len(ids), 3)
            for k in KS}


def table(questions: list[dict[str, str]], languages: dict[str, str],
          ranks: dict[str, dict[str, int | None]]) -> dict[str, Any]:
    """Recall per mode over every question, each question language, and cross/same language."""
    def leaf_lang(item: dict[str, str]) -> str:
        return languages.get(item["expected"], EXAMPLE_LEAF_LANG)

    groups = {"all": [q["id"] for q in questions]}
    groups.update({lang: [q["id"] for q in questions if q["lang"] == lang] for lang in LANGS})
    groups["cross-language"] = [q["id"] for q in questions if q["lang"] != leaf_lang(q)]
    groups["same-language"] = [q["id"] for q in questions if q["lang"] == leaf_lang(q)]
    return {group: {"questions": len(ids),
                    **{mode: recall(mode_ranks, ids) for mode, mode_ranks in ranks.items()}}
            for group, ids in groups.items()}


def run() -> dict[str, Any]:
    forest = load_forest()
    questions = load_questions()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "forest"
        leaves = build(root, forest)
        started = time.perf_counter()
        operations.index(root, semantic=True)
        index_s = time.perf_counter() - started
        ranks = {"lexical": score(root, questions, lexical=True),
                 "fused": score(root, questions, lexical=False)}
        nothing = load_nothing()
        counts = {"lexical": trail_counts(root, nothing, lexical=True),
                  "fused": trail_counts(root, nothing, lexical=False)}
    missed = {mode: " ".join(sorted(i for i, rank in mode_ranks.items() if rank is None))
              for mode, mode_ranks in ranks.items()}
    return {"leaves": len(leaves) + 4, "questions": len(questions),
            "index_semantic_s": round(index_s, 1),
            "table": table(questions, leaf_languages(forest), ranks),
            "missed_at_5": missed, "nothing": empty_shares(nothing, counts),
            "nothing_with_trails": {mode: " ".join(sorted(i for i, n in found.items() if n))
                                    for mode, found in counts.items()}}


def markdown(report: dict[str, Any]) -> list[str]:
    rows = ["| questions | n | lexical @1 | lexical @5 | fused @1 | fused @5 |",
            "|---|---:|---:|---:|---:|---:|"]
    for group, row in report["table"].items():
        cells = [f"{row[mode][f'recall@{k}']:.3f}" for mode in ("lexical", "fused") for k in KS]
        rows.append(f"| {group} | {row['questions']} | " + " | ".join(cells) + " |")
    return rows


def write_docs(report: dict[str, Any]) -> None:
    missed = ", ".join(f"`{i}`" for i in report["missed_at_5"]["fused"].split()) or "none"
    block = "\n".join([
        BEGIN,
        f"{report['questions']} questions over {report['leaves']} leaves; "
        f"`index --semantic` of the whole forest took {report['index_semantic_s']} s.",
        "",
        "```console",
        "$ .venv/bin/python scripts/bench_multilingual.py --write-docs",
        "```",
        "",
        *markdown(report),
        "",
        f"Missed at 5 by the fused ranking: {missed}.",
        "",
        "Questions with nothing to find (`nothing.jsonl`): the share that got no trail.",
        "",
        "| questions | n | lexical | fused |",
        "|---|---:|---:|---:|",
        *(f"| {group} | {row['questions']} | {row['lexical']:.3f} | {row['fused']:.3f} |"
          for group, row in report["nothing"].items()),
        "",
        "With trails, fused: " + (", ".join(
            f"`{i}`" for i in report["nothing_with_trails"]["fused"].split()) or "none")
        + "; lexical: " + (", ".join(
            f"`{i}`" for i in report["nothing_with_trails"]["lexical"].split()) or "none")
        + ".",
        END])
    write_block(DOCS, BEGIN, END, block, heading="Multilingual mini-benchmark")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true",
                        help="also write the table into docs/benchmarks.md")
    args = parser.parse_args()
    report = run()
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if args.write_docs:
        write_docs(report)


if __name__ == "__main__":
    sys.exit(main())

"""Credential detector benchmark: speed, false positives and recall on the credential corpus.

Usage: python scripts/bench_credentials.py [--side LABEL=SRC ...] [--runs 5] [--write]

For each side (a label and a ``src`` folder holding a build of memory_forest;
default: this checkout's, labelled "this build"), in a process of its own
whose PYTHONPATH starts with that folder, so two builds compare in one run:

- speed: lines per second of ``credentials.findings`` (what sync and the
  release audit refuse) over the whole ordinary text at once, and of
  ``redact_text`` (what the writers store) line by line; median of --runs,
  over the ordinary lines and over the lines of the credential forms;
- false positives: the share of ordinary lines sync flags, and the share the
  writers change;
- recall on the corpus: the share of forms sync flags, and the share whose
  secret is gone from what ``redact_text`` returns; the ids each one misses.

The forms are tests/data/credentials/forms.jsonl and the ordinary lines the
6,000 that tests/credcorpus.py gathers from text already on the machine (the
same ones tests/test_credential_corpus.py checks). Prints JSON; ``--write``
puts the table into docs/benchmarks.md between its markers. Findings and
secrets are never printed, only form ids.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from docblock import write_block

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_credentials:begin -->", "<!-- bench_credentials:end -->"


def median_rate(count: int, work, runs: int) -> float:
    """``count`` lines over the median wall time of ``runs`` calls of ``work``."""
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        walls.append(time.perf_counter() - started)
    return count / statistics.median(walls)


def measure(runs: int) -> dict[str, Any]:
    """This process's build, on the corpus: run inside the side's own interpreter."""
    import memory_forest
    from memory_forest.credentials import findings
    from memory_forest.writers.redact import redact_text
    from tests.credcorpus import forms, ordinary_lines

    corpus, ordinary = forms(), ordinary_lines()
    form_lines = [line for form in corpus for line in form["text"].splitlines()]

    def flagged_lines(lines: list[str]) -> set[int]:
        return {number for number, _ in findings("\n".join(lines))}

    def redact_all(lines: list[str]) -> list[str]:
        return [redact_text(line, {}) for line in lines]

    sync_missed = [form["id"] for form in corpus if not findings(form["text"])]
    writers_missed = [form["id"] for form in corpus
                      if form["secret"] in redact_text(form["text"], {})]
    changed = sum(1 for line, out in zip(ordinary, redact_all(ordinary), strict=True)
                  if out != line)
    return {
        "build": str(Path(memory_forest.__file__).resolve().parents[1]),
        "forms": len(corpus), "ordinary_lines": len(ordinary), "form_lines": len(form_lines),
        "sync_lines_per_s": {
            "ordinary": round(median_rate(len(ordinary), lambda: flagged_lines(ordinary), runs)),
            "forms": round(median_rate(len(form_lines), lambda: flagged_lines(form_lines),
                                       runs))},
        "writers_lines_per_s": {
            "ordinary": round(median_rate(len(ordinary), lambda: redact_all(ordinary), runs)),
            "forms": round(median_rate(len(form_lines), lambda: redact_all(form_lines), runs))},
        "false_positive_rate": {"sync": round(len(flagged_lines(ordinary)) / len(ordinary), 5),
                                "writers": round(changed / len(ordinary), 5)},
        "recall": {"sync": round(1 - len(sync_missed) / len(corpus), 4),
                   "writers": round(1 - len(writers_missed) / len(corpus), 4)},
        "missed": {"sync": sync_missed, "writers": writers_missed},
    }


def run_side(src: Path, runs: int) -> dict[str, Any]:
    """Measure the build in ``src`` in a fresh interpreter, so sides never share a module."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src.resolve()), str(REPO)]))
    done = subprocess.run([sys.executable, __file__, "--measure", "--runs", str(runs)],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        sys.exit(f"measuring {src} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def write_docs(report: dict[str, dict[str, Any]]) -> None:
    rows = ["| build | lines/s, sync, ordinary | lines/s, sync, forms "
            "| lines/s, writers, ordinary | lines/s, writers, forms "
            "| false positives, sync | false positives, writers "
            "| recall, sync | recall, writers |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, side in report.items():
        sync_speed, writers_speed = side["sync_lines_per_s"], side["writers_lines_per_s"]
        rate, recall = side["false_positive_rate"], side["recall"]
        forms = side["forms"]
        rows.append(
            f"| {label} | {sync_speed['ordinary']:,} | {sync_speed['forms']:,} "
            f"| {writers_speed['ordinary']:,} | {writers_speed['forms']:,} "
            f"| {rate['sync']:.2%} | {rate['writers']:.2%} "
            f"| {recall['sync']:.3f} ({forms - len(side['missed']['sync'])} of {forms}) "
            f"| {recall['writers']:.3f} ({forms - len(side['missed']['writers'])} of {forms}) |")
    rows.append("")
    for label, side in report.items():
        for who in ("sync", "writers"):
            missed = side["missed"][who]
            rows.append(f"- {label}, {who} misses {len(missed)}: "
                        + (", ".join(f"`{form_id}`" for form_id in missed) or "none") + ".")
    block = "\n".join([BEGIN, *rows, END])
    write_block(DOCS, BEGIN, END, block)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", action="append", metavar="LABEL=SRC",
                        help="a build to measure: its label and its src folder (repeatable)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per figure (median)")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.measure:
        print(json.dumps(measure(options.runs)))
        return
    sides = {}
    for given in options.side or [f"this build={REPO / 'src'}"]:
        label, _, src = given.partition("=")
        if not label or not Path(src, "memory_forest").is_dir():
            parser.error(f"--side {given!r}: give LABEL=SRC, SRC holding memory_forest/")
        sides[label] = Path(src)
    report = {label: run_side(src, options.runs) for label, src in sides.items()}
    print(json.dumps(report, indent=2))
    if options.write:
        write_docs(report)


if __name__ == "__main__":
    main()

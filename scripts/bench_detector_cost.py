"""What the one credential detector costs: a ``remember`` process, and lines per second.

Usage: python scripts/bench_detector_cost.py --before DIR [--runs N]

``DIR`` is the ``src`` directory of an earlier checkout (for example
``git archive <commit> src | tar -x -C /tmp/before``, then ``/tmp/before/src``).
Both versions run with this interpreter, alternately, side by side:

- ``remember`` wall time, one process per call, median of ``--runs`` (default 15),
  with ordinary text and with text holding a credential (the case that loads
  the detector's rules);
- lines per second over every line of docs/*.md and the example forest, through
  the writers' ``redact_text`` and through the line check sync and the release
  audit use.

Prints JSON; docs/benchmarks.md ("One credential detector") records the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDINARY = "The kimchi batch went into the cellar on Monday; taste it again on Friday."
# Assembled, so this file holds no credential-shaped line.
WITH_SECRET = "The cellar wifi pass" + "word: Fr1dge-42-cold, ask before sharing."

LINES_PROBE = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from memory_forest.writers.redact import redact_text
from memory_forest.credentials import line_findings
root = Path(sys.argv[2])
files = sorted((root / "docs").glob("*.md")) + sorted(
    p for p in (root / "src/memory_forest/example").rglob("*") if p.suffix in (".md", ".jsonl"))
lines = [line for path in files for line in path.read_text(encoding="utf-8").splitlines()]
out = {"lines": len(lines)}
for name, call in (("redact_text", lambda line: redact_text(line, {})),
                   ("line_findings", line_findings)):
    call("warm up pass" + "word=x1y2z3")
    best = None
    for _ in range(3):
        start = time.perf_counter()
        for line in lines:
            call(line)
        spent = time.perf_counter() - start
        best = spent if best is None else min(best, spent)
    out[name] = round(len(lines) / best)
print(json.dumps(out))
"""


def cli(src: str, *args: str) -> float:
    env = dict(os.environ, PYTHONPATH=src)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memory_forest", *args, "--json"], env=env,
                   check=True, capture_output=True, timeout=120)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="src directory of the earlier code")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    versions = {"before": str(Path(args.before).resolve()), "after": str(ROOT / "src")}
    result: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        forests = {}
        for name, src in versions.items():
            forests[name] = str(Path(tmp) / name)
            cli(src, "init", forests[name])
        times: dict[str, dict[str, list[float]]] = {
            name: {"ordinary": [], "with_secret": []} for name in versions}
        for run in range(args.runs):
            for name, src in versions.items():  # alternate, so load hits both alike
                for case, text in (("ordinary", ORDINARY), ("with_secret", WITH_SECRET)):
                    times[name][case].append(cli(src, "remember", forests[name],
                                                 f"{text} ({run})"))
        for name, src in versions.items():
            probe = subprocess.run([sys.executable, "-c", LINES_PROBE, src, str(ROOT)],
                                   check=True, capture_output=True, text=True, timeout=600)
            result[name] = {
                "remember_ordinary_ms": round(statistics.median(times[name]["ordinary"]) * 1000),
                "remember_with_secret_ms": round(
                    statistics.median(times[name]["with_secret"]) * 1000),
                "lines_per_second": json.loads(probe.stdout)}
    print(json.dumps({"runs": args.runs, **result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

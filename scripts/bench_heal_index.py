"""What healing damaged index state costs a turn, a write and an index run.

Usage: python scripts/bench_heal_index.py [--docs N] [--runs R] [--before COMMAND]

On a synthetic forest of about N documents (``bench_scale.py``'s generator),
each row is the median process wall time of R runs of the real CLI, each run
on a fresh copy of the indexed forest with the damage applied just before:

- ``gate`` (``--format claude-code``) on a sound index, after a writer was
  killed mid-commit (a hot journal: the first turn rolls it back), and with a
  FIFO where the journal belongs (the turn goes through without memory);
- ``remember`` on a sound index and after the hot journal;
- ``index`` on a sound index (incremental, nothing changed) and with a FIFO
  in place of the index (removed, full rebuild).

With ``--before COMMAND`` (another build's console script, e.g. the main
branch's) the same rows run for it in the same minutes, alternating run by
run; a row it fails or hangs on (10 s) is recorded as its error code.
Run it with bytecode caches written (no PYTHONDONTWRITEBYTECODE), as an
installed package runs, or start-up dominates every row. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_scale import prepared_forest  # noqa: E402
from forestkit import leave_hot_journal  # noqa: E402

HOOK = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "pump pressure valve"})
TIMEOUT = 10


def _journal_fifo(root: Path) -> None:
    os.mkfifo(root / ".memory-forest" / "index.sqlite3-journal")


def _index_fifo(root: Path) -> None:
    index = root / ".memory-forest" / "index.sqlite3"
    index.unlink()
    os.mkfifo(index)


ROWS = {
    "gate, sound index": ("gate", None),
    "gate, hot journal": ("gate", leave_hot_journal),
    "gate, FIFO journal": ("gate", _journal_fifo),
    "remember, sound index": ("remember", None),
    "remember, hot journal": ("remember", leave_hot_journal),
    "index, sound index": ("index", None),
    "index, FIFO index": ("index", _index_fifo),
}


def once(command: list[str], what: str, root: Path) -> tuple[float, str]:
    args = {"gate": ["gate", str(root), "--format", "claude-code"],
            "remember": ["remember", str(root), "Pump 3 valve pressure checked at 2 bar.",
                         "--json"],
            "index": ["index", str(root), "--json"]}[what]
    started = time.perf_counter()
    try:
        done = subprocess.run([*command, *args], input=HOOK if what == "gate" else "",
                              capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return TIMEOUT, "hang"
    seconds = time.perf_counter() - started
    answer = json.loads(done.stdout.splitlines()[-1])
    if "decision" in answer:
        return seconds, "blocked"
    if "error" in answer:
        return seconds, answer["error"]["code"]
    context = answer.get("hookSpecificOutput", {}).get("additionalContext")
    if context is not None:
        passed = json.loads(context.splitlines()[-1])
        return seconds, "ok" if passed["lookup_completed"] else f"through: {passed['reason']}"
    return seconds, "ok"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", help="Another build's console script, run side by side.")
    args = parser.parse_args()
    script = Path(sys.executable).with_name("memory-forest")  # as the other build is run
    tools = {"this": [str(script)] if script.is_file() else [sys.executable, "-m",
                                                             "memory_forest"]}
    if args.before:
        tools["before"] = [args.before]
    with tempfile.TemporaryDirectory() as tmp:
        source, stamp = prepared_forest(Path(tmp) / "gen", args.docs)
        indexed = Path(tmp) / "indexed"
        shutil.copytree(source, indexed, symlinks=True)
        subprocess.run([*tools["this"], "index", str(indexed), "--json"], check=True,
                       capture_output=True)
        out: dict[str, dict[str, object]] = {}
        for label, (what, damage) in ROWS.items():
            samples: dict[str, list[float]] = {name: [] for name in tools}
            outcome: dict[str, str] = {}
            for run in range(args.runs):
                for name, command in tools.items():
                    root = Path(tmp) / f"run-{name}-{run}"
                    shutil.copytree(indexed, root, symlinks=True)
                    if damage is not None:
                        damage(root)
                    seconds, outcome[name] = once(command, what, root)
                    samples[name].append(seconds)
                    shutil.rmtree(root)
            out[label] = {name: {"p50_ms": round(statistics.median(values) * 1000),
                                 "outcome": outcome[name]} for name, values in samples.items()}
    print(json.dumps({"documents": stamp["documents"], "runs": args.runs, "rows": out},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

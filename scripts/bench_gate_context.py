"""Size of the context a hook format adds to a turn: bytes for one trail and for five.

Usage: python scripts/bench_gate_context.py [--before COMMAND] [--write]

Builds one forest (three trees, realistic paths and titles) in a private
temporary directory, indexes it, and sends each turn through
``python -P -m memory_forest gate ROOT --format claude-code`` as a host would,
then measures the ``additionalContext`` it gets back:

- ``bytes``: UTF-8 bytes of the whole context (prose and JSON), median over
  the turns of a class;
- ``repeated``: how many node paths the context states more than once (a
  path written twice counts once per extra time), median;
- ``trails``: how many trails the receipt found for the turn (its count);
- ``render_us``: (this build) microseconds to render the five-trail context
  from its receipt in process, at the default budget and at the floor, where
  entries must be left out; median of 500.

Turn classes: ``one_trail`` (each turn names a word one leaf holds) and
``five_trails`` (each turn names a word five leaves in three trees hold).
``--before COMMAND`` runs ``COMMAND gate ROOT --format claude-code`` as well
(e.g. ``"env PYTHONPATH=/tmp/old/src python -P -m memory_forest"`` for another
checkout), on the same index in the same run, for a side-by-side table.
``--write`` puts that table into docs/benchmarks.md between its markers.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from docblock import write_block
from forestgen import write_forest

from memory_forest import gate, hookcontext, operations

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_gate_context:begin -->", "<!-- bench_gate_context:end -->"

# Five leaves share "sourdough", across three trees; every other leaf has a word of its own.
TREES = {
    "kitchen": {
        "fermentation": {
            "kimchi-batch-7": ("Kimchi batch 7, napa cabbage from bed 3",
                               "Kimchi fridge at 1 C for three weeks; taste on day 10."),
            "sourdough-starter-feeding": ("Sourdough starter feeding schedule",
                                          "Feed the sourdough starter 1:5:5 twice a day."),
            "miso-crock": ("Miso crock, barley koji, started October 2026",
                           "Miso under a salt cap; check the weight monthly."),
        },
        "baking": {
            "weekend-sourdough-loaf": ("Weekend sourdough loaf, 75% hydration",
                                       "Sourdough bulk 5 h at 24 C, then cold proof overnight."),
            "rye-crispbread": ("Rye crispbread with caraway",
                               "Roll thin, dock well, bake at 200 C for 12 minutes."),
        },
    },
    "garden": {
        "irrigation": {
            "2026-11-drip-retrofit": ("Drip retrofit, November 2026",
                                      "Drip line pressure regulator set to 1.5 bar."),
            "rain-barrel-overflow": ("Rain barrel overflow and the downspout diverter",
                                     "Overflow hose routed to the sourdough herb bed."),
        },
        "beds": {
            "bed-3-napa-cabbage": ("Bed 3: napa cabbage, autumn 2026",
                                   "Napa cabbage planted 2 September; sourdough discard as "
                                   "mulch trial."),
            "tomato-leaf-spots": ("Brown spots on the tomato leaves (early blight?)",
                                  "Remove lower leaves; copper spray as a last resort."),
        },
    },
    "house": {
        "heating": {
            "boiler-service-2026": ("Boiler service, December 2026",
                                    "Engineer replaces the flue gasket; warm spot for sourdough."),
            "radiator-bleeding": ("Radiator bleeding order, ground floor first",
                                  "Bleed from the radiator nearest the boiler outwards."),
        },
    },
}
TURNS = {
    "one_trail": ["How cold should the kimchi fridge be?", "What about the miso crock?",
                  "rye crispbread temperature?", "drip line regulator pressure?",
                  "the radiator bleeding order"],
    "five_trails": ["sourdough", "anything about sourdough?", "remind me of the sourdough notes",
                    "sourdough: what did we write down?", "all my sourdough records"],
}


def context_of(command: list[str], root: Path, turn: str) -> tuple[str, dict]:
    hook = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": turn})
    done = subprocess.run([*command, "gate", str(root), "--format", "claude-code"],
                          input=hook, capture_output=True, text=True, timeout=120, check=True)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    receipt = subprocess.run([*command, "gate", str(root)], input=turn, capture_output=True,
                             text=True, timeout=120)
    return context, json.loads(receipt.stdout)


def repeated_paths(context: str, paths: set[str]) -> int:
    """Extra statements of a node path in the JSON: 0 when every path appears once."""
    counts = Counter(value for value in _strings(json.loads(context.split("\n", 1)[1]))
                     if value in paths)
    return sum(count - 1 for count in counts.values())


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def measure(command: list[str], root: Path, paths: set[str]) -> dict[str, dict[str, float]]:
    rows = {}
    for name, turns in TURNS.items():
        sizes, repeats, trails = [], [], []
        for turn in turns:
            context, receipt = context_of(command, root, turn)
            sizes.append(len(context.encode("utf-8")))
            repeats.append(repeated_paths(context, paths))
            trails.append(receipt["retrieve"]["count"])
        rows[name] = {"bytes": statistics.median(sizes), "max_bytes": max(sizes),
                      "repeated": statistics.median(repeats), "trails": statistics.median(trails)}
    return rows


def render_us(root: Path) -> dict[str, dict[str, int]]:
    """Per budget: the median render time and how many trails it left out."""
    receipt = gate.consult(root, TURNS["five_trails"][0].encode())
    times = {}
    for budget in (hookcontext.DEFAULT_CONTEXT_BYTES, hookcontext.MIN_CONTEXT_BYTES):
        samples = []
        for _ in range(500):
            start = time.perf_counter()
            text = hookcontext.context(receipt, budget)
            samples.append(time.perf_counter() - start)
        omitted = json.loads(text.split("\n", 1)[1]).get("omitted", {}).get("trails", 0)
        times[str(budget)] = {"us": round(statistics.median(samples) * 1e6),
                              "trails_left_out": omitted}
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another build's command, run as COMMAND gate ...")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    options = parser.parse_args()
    sides = {"after": [sys.executable, "-P", "-m", "memory_forest"]}
    if options.before:
        sides = {"before": shlex.split(options.before), **sides}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "forest"
        write_forest(root, TREES)
        operations.index(root)
        paths = {str(path.relative_to(root)) for path in root.rglob("*.md")}
        report = {side: measure(command, root, paths) for side, command in sides.items()}
        report["render_us"] = render_us(root)
    print(json.dumps(report, indent=2))
    if options.write:
        write_docs(report)


def write_docs(report: dict[str, dict[str, Any]]) -> None:
    rows = ["| turns | trails | side | context bytes (median) | largest | node paths repeated |",
            "|---|---:|---|---:|---:|---:|"]
    for name in TURNS:
        for side in ("before", "after"):
            if side not in report:
                continue
            table = report[side]
            row = table[name]
            rows.append(f"| {name.replace('_', ' ')} | {row['trails']:g} | {side} | "
                        f"{row['bytes']:g} | {row['max_bytes']:g} | {row['repeated']:g} |")
    rows.append("")
    rows += [f"- Rendering the five-trail context from its receipt, in process, at {budget} "
             f"bytes: {row['us']} µs ({row['trails_left_out']} trail(s) left out)."
             for budget, row in report["render_us"].items()]
    block = "\n".join([BEGIN, *rows, END])
    write_block(DOCS, BEGIN, END, block)


if __name__ == "__main__":
    main()

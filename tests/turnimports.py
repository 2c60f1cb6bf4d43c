"""What the per-turn processes load: the gate and `retrieve --json`, run for real.

A turn starts a process, so what it imports is paid every turn. This helper answers one
prompt through each on an indexed example forest, in a fresh interpreter, and reads its
``sys.modules`` once the answer is printed. tests/test_imports.py holds the allow-list;
scripts/import_census.py uses the same run to class the modules that keep lazy imports.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from memory_forest import operations

PROMPT = "How long does the kimchi ferment?"
PROBE = ("import json, sys\nfrom memory_forest.cli import main\n"
         "try:\n    main(json.loads(sys.argv[1]))\nexcept SystemExit:\n    pass\n"
         "sys.stderr.write(json.dumps(sorted(sys.modules)))\n")


def loaded(argv: list[str], stdin: str = "") -> tuple[dict, set[str]]:
    """The answer one CLI run prints, and every module its process had loaded by then."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], input=stdin,
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout), set(json.loads(done.stderr.splitlines()[-1]))


@functools.cache
def turn_modules() -> frozenset[str]:
    """Every module the gate or `retrieve --json` loads answering a prompt that finds evidence."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "forest"
        operations.init(root, example=True)
        operations.index(root)
        gate, by_gate = loaded(["gate", str(root)], PROMPT)
        found, by_retrieve = loaded(["retrieve", str(root), PROMPT, "--json"])
    assert gate["status"] == "evidence_found" and found["ok"], (gate, found)
    return frozenset(by_gate | by_retrieve)

"""What the tests that kill a writer mid-write share: the CLI run with a crash point,
the leaf they write, and the structured plan that replaces one file and creates two.

A writer killed at a step (``MEMORY_FOREST_TEST_CRASH_AT``, docs/writing.md "Test
hooks") is the same process in every such test, so it is run one way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from memory_forest import testhooks
from memory_forest.digest import sha256_hex
from memory_forest.writers.structured import structured_context

REMEMBER = ["--tree", "kitchen", "--branch", "pickles", "--leaf", "dill", "--title",
            "Dill pickles", "--content", "Brine at 5 percent."]


def cli(*args, crash: str | None = None) -> tuple[int, dict]:
    """The exit code and the JSON answer of one CLI run, killed at ``crash`` if given."""
    env = dict(os.environ)
    env.pop(testhooks.CRASH_ENV, None)
    if crash:
        env[testhooks.CRASH_ENV] = crash
    proc = subprocess.run([sys.executable, "-m", "memory_forest", *map(str, args), "--json"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout.strip() else {})


def structured_plan(root: Path, transaction_id: str) -> dict[str, Any]:
    """A sweep of the example forest: one file replaced, a leaf and a new branch's leaf
    created."""
    mtm = "03 mtm/kitchen/fermentation.md"
    return {"schema_version": 1, "transaction_id": transaction_id,
            "snapshot_sha256": structured_context(root, "kimchi")["snapshot_sha256"],
            "changes": [
                {"target": {"layer": "mtm", "tree": "kitchen", "branch": "fermentation"},
                 "operation": "replace", "body": "Reviewed.",
                 "preimage_sha256": sha256_hex((root / mtm).read_bytes())},
                {"target": {"layer": "stm", "tree": "kitchen", "branch": "fermentation",
                            "leaf": "kimchi-batch-8"}, "operation": "create", "body": "New.",
                 "frontmatter": {"title": "Kimchi batch 8"}, "supersedes": "stm-kimchi-batch-7"},
                {"target": {"layer": "stm", "tree": "garden", "branch": "beds", "leaf": "a"},
                 "operation": "create", "body": "Bed.", "frontmatter": {"title": "Bed A"}}]}

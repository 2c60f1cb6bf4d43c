"""Journey: a word only a leaf's body holds never leaves through a metadata-only answer.

A person remembers a fact about their cellar and captures an event about it,
both through the CLI. Then every metadata-only surface is asked about the
cellar: the gate in each output format, the CLI's route, search and retrieve,
and the MCP tools. The question matches the leaf three ways (route by its
title, retrieve by its text, and the capture as unfiled evidence), so each
answer names it; a sentinel word that stands only in the leaf's body and the
capture's payload must appear in none of them. Counting keys or lengths would
pass with the word appended to a title; this looks for the word itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Built from halves so that no file of the tests holds the word whole next to a title.
SENTINEL = "Vorpal" + "sentinelword"
LEAF = "04 stm/house/cellar/humidity-gauge.md"
# Found by route (its title) and left off every trail at --limit 2, where two cellar leaves
# match the body better: the hook context then lists it among the route results of its own.
MANUAL = "04 stm/tools/gauges/humidity-gauge-manual.md"
TURN = "cellar humidity gauge"
EVENT = {"observed_at": "2026-12-01T08:00:00Z", "source": "journey", "kind": "note",
         "event_id": "evt-cellar-1",
         "payload": {"text": f"cellar humidity gauge swapped for the {SENTINEL} model"}}


def cli(root: Path, *args: str, stdin: str = "") -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "memory_forest", args[0], str(root),
                           *args[1:], "--json"], input=stdin, capture_output=True, text=True,
                          timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout


def ok(root: Path, *args: str, stdin: str = "") -> dict:
    code, out = cli(root, *args, stdin=stdin)
    answer = json.loads(out)
    assert code == 0 and answer.get("ok", True), answer
    return answer


@pytest.fixture(scope="module")
def cellar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("journey") / "forest"
    subprocess.run([sys.executable, "-m", "memory_forest", "init", str(root), "--json"],
                   check=True, capture_output=True, timeout=60)
    ok(root, "remember", f"The gauge reads {SENTINEL} when the dehumidifier is off.",
       "--tree", "house", "--branch", "cellar", "--leaf", "humidity-gauge",
       "--title", "Cellar humidity gauge")
    ok(root, "remember", "Cellar humidity stays at sixty percent in winter; the cellar "
       "humidity gauge reads it.", "--tree", "house", "--branch", "cellar",
       "--leaf", "winter-readings", "--title", "Winter readings")
    ok(root, "remember", f"Keep the spare battery in the {SENTINEL} box.",
       "--tree", "tools", "--branch", "gauges", "--leaf", "humidity-gauge-manual",
       "--title", "Humidity gauge manual")
    ok(root, "capture", "-", stdin=json.dumps(EVENT))
    ok(root, "index")
    return root


def test_the_question_reaches_the_leaf_three_ways(cellar):
    """Not vacuous: route, retrieve and the unfiled list all name what the question
    matches, so a leak through any of them would show in the outputs below."""
    receipt = ok(cellar, "gate", stdin=TURN)
    assert LEAF in [result["path"] for result in receipt["route"]["results"]]
    assert LEAF in [trail["nodes"][-1]["path"] for trail in receipt["retrieve"]["trails"]]
    assert receipt["retrieve"]["unfiled"], receipt
    assert SENTINEL in (cellar / LEAF).read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_a_route_result_off_every_trail_reaches_the_hook_by_its_title_only(cellar, fmt):
    """The hook context lists route results no trail holds on their own, from the route
    phase's titles: the manual is one at --limit 2, and its body word must stay out."""
    receipt = ok(cellar, "gate", "--limit", "2", stdin=TURN)
    assert MANUAL in [result["path"] for result in receipt["route"]["results"]]
    assert MANUAL not in [node["path"] for trail in receipt["retrieve"]["trails"]
                          for node in trail["nodes"]]
    hook = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": TURN,
                       "session_id": "s1"})
    code, out = cli(cellar, "gate", "--format", fmt, "--limit", "2", stdin=hook)
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and MANUAL in context and "Humidity gauge manual" in context
    assert SENTINEL in (cellar / MANUAL).read_text(encoding="utf-8")
    assert SENTINEL not in out


@pytest.mark.parametrize("fmt", ["receipt", "claude-code", "codex"])
def test_no_gate_format_carries_a_body_word(cellar, fmt):
    data = TURN if fmt == "receipt" else json.dumps(
        {"hook_event_name": "UserPromptSubmit", "prompt": TURN, "session_id": "s1"})
    code, out = cli(cellar, "gate", "--format", fmt, stdin=data)
    assert code == 0 and json.loads(out)
    assert SENTINEL not in out
    if fmt != "receipt":
        assert LEAF in json.loads(out)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("args", [("route", TURN), ("retrieve", TURN), ("search", TURN)])
def test_no_metadata_only_command_carries_a_body_word(cellar, args):
    answer = ok(cellar, *args)
    assert LEAF in json.dumps(answer) and SENTINEL not in json.dumps(answer)


def test_no_metadata_only_tool_carries_a_body_word(cellar, tmp_path):
    pytest.importorskip("mcp", reason="the optional 'mcp' SDK is not installed")
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    answers = []

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                       args=["-m", "memory_forest", "serve", str(cellar)])
        with (tmp_path / "stderr.log").open("w") as log:
            async with stdio_client(params, errlog=log) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for name in ("route", "retrieve", "search"):
                        done = await session.call_tool(name, {"query": TURN})
                        answers.append(done.model_dump_json(by_alias=True))

    anyio.run(main)
    assert len(answers) == 3
    for text in answers:
        assert LEAF in text and SENTINEL not in text

"""Journey: a person tells their agent 20 things in a day, and memory files them itself.

A fresh example forest (``init --example``: a greenhouse tree with an irrigation
branch, a kitchen tree with a fermentation branch), 20 facts remembered one by one
through the real CLI with no tree, branch or leaf: the drip, tomato, kimchi and
za'atar facts land under their branches (new leaves, the forest learning each), the
rest (the boiler, the passport, the dentist...) wait in the inbox with the rule that
sent them there, and nothing is misfiled. A fact about batch 8 appended with
``--append`` goes to batch 8's leaf, never to batch 7's. Then the agent asks through
the gate and gets the filed fact on a complete root-first trail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import run_cli

IRRIGATION = "greenhouse/irrigation"
FERMENTATION = "kitchen/fermentation"
INBOX = "inbox/inbox"

# (fact, where it belongs, the rule when the inbox gets it): written as a person says
# things in a day, before looking at what placement does with them.
DAY = [
    ("The drip irrigation filter clogs every two weeks; rinse it before the pressure check.",
     IRRIGATION, None),
    ("Drip line on bed C leaks at the third emitter, taped it for now.", IRRIGATION, None),
    ("Pressure gauge read 1.4 bar this morning, above the 1.2 we agreed.", IRRIGATION, None),
    ("Watered the tomato beds at the base only, as decided; the brown spots stopped "
     "spreading.", IRRIGATION, None),
    ("Opened the south vents in the morning for the tomatoes.", IRRIGATION, None),
    ("Kimchi batch 8 started with less salt and more napa cabbage.", FERMENTATION, None),
    ("Kimchi batch 7 tasted sour on day 14; moved it to the cold room.", FERMENTATION, None),
    ("Toasted a new jar of the za'atar blend with more sumac.", FERMENTATION, None),
    ("Started a fermentation crock of sauerkraut with white cabbage.", FERMENTATION, None),
    # Only one word in common with the kitchen (the recipe card spells gochugaru in
    # Korean): one word is a coincidence, so it waits in the inbox.
    ("The gochugaru for kimchi is almost finished, buy 500 g.", INBOX, "too_few_terms"),
    ("Boiler service booked for 9 December.", INBOX, "no_candidate"),
    ("Renew the passport before the summer holidays.", INBOX, "too_few_terms"),
    ("The car's winter tyres go on next Saturday.", INBOX, "too_few_terms"),
    ("Dentist appointment moved to 14 March.", INBOX, "too_few_terms"),
    ("Library books are due back on Friday.", INBOX, "no_candidate"),
    ("Lena's school trip to the zoo costs 12 euros.", INBOX, "too_few_terms"),
    ("Bought a new bicycle lock; the old key is lost.", INBOX, "too_few_terms"),
    ("The neighbours' cat sleeps in our shed again.", INBOX, "no_candidate"),
    ("Wi-Fi router restarted after the power cut.", INBOX, "no_candidate"),
    ("Mum's birthday is on 3 May, she likes orchids.", INBOX, "too_few_terms"),
]


def remember(root: Path, *args: str) -> dict:
    done = run_cli("remember", root, *args, "--json")
    assert done.code == 0, done.stderr
    return done.json()


def branch_of(placement: dict) -> str:
    return f"{placement['tree']}/{placement['branch']}"


def test_twenty_facts_file_themselves_and_the_gate_finds_one(tmp_path: Path):
    root = tmp_path / "forest"
    assert run_cli("init", root, "--example", "--json").code == 0
    assert len(DAY) == 20

    landed = []
    for fact, expected, rule in DAY:
        placement = remember(root, fact)["placement"]
        landed.append((fact, branch_of(placement), placement["reason"]["rule"]))
        assert branch_of(placement) == expected, (fact, placement["reason"])
        if rule is not None:
            assert placement["action"] == "inbox" and placement["reason"]["rule"] == rule
        else:
            assert placement["action"] == "new_leaf"
            assert placement["reason"]["rule"] == "confident"
        path = root / placement["path"]
        assert fact in path.read_text(encoding="utf-8"), placement["path"]
    assert sum(1 for _, where, _ in landed if where != INBOX) == 9

    # The drip filter fact of daily use, no longer sent to the inbox for low coverage.
    drip = remember(root, DAY[0][0], "--dry-run")["placement"]
    assert drip["reason"]["matched_terms"][:2] == ["drip", "irrigation"]

    # Identity before similarity: batch 8's news is appended to batch 8's leaf, which now
    # exists, although batch 7's leaves share more of its words.
    sour = remember(root, "Kimchi batch 8 tasted sour on day 12.", "--append")["placement"]
    assert sour["action"] == "append"
    assert sour["path"] == "04 stm/kitchen/fermentation/kimchi-batch-8-started-with-less.md"
    assert sour["reason"]["other_instance"]["leaf"] in (
        "04 stm/kitchen/fermentation/kimchi-batch-7.md",
        "04 stm/kitchen/fermentation/kimchi-batch-7-tasted-sour-on-day-14.md",
        "04 stm/kitchen/fermentation/kimchi-batch-7-tasted-sour-on.md")
    batch_7 = (root / "04 stm/kitchen/fermentation/kimchi-batch-7.md").read_text("utf-8")
    assert "batch 8" not in batch_7

    # The forest stays valid, and the inbox's leaves are listed under its branch.
    audited = run_cli("audit", root, "--json")
    assert audited.code == 0 and audited.json()["ok"] is True
    inbox_branch = (root / "03 mtm/inbox/inbox.md").read_text(encoding="utf-8")
    assert inbox_branch.count("[[04 stm/inbox/inbox/") == 11

    # The agent asks through the gate: the filed fact comes back on its root-first trail.
    done = subprocess.run([sys.executable, "-m", "memory_forest", "gate", str(root)],
                          input=b"How often does the drip filter clog?", capture_output=True,
                          timeout=60)
    receipt = json.loads(done.stdout)
    assert done.returncode == 0 and receipt["status"] == "evidence_found"
    trail = [node["path"] for node in receipt["retrieve"]["trails"][0]["nodes"]]
    assert trail == ["01 xltm/XLTM.md", "02 ltm/greenhouse_LTM.md",
                     "03 mtm/greenhouse/irrigation.md",
                     "04 stm/greenhouse/irrigation/the-drip-irrigation-filter-clogs-every.md"]
    assert "rinse" not in done.stdout.decode("utf-8")  # metadata only: no text of the leaf

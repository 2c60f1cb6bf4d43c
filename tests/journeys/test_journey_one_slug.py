"""One slug names a leaf and a Daily entry: the same words, each in its own grammar.

A user remembers a fact with a French title and a phone app drops an event
in French into the raw layer; consolidation turns the event into a Daily
entry. The leaf keeps its accents (a route segment is any NFC text), the
entry id folds them away (an anchor is ASCII), both read like the words
they came from, and an entry written by hand under an older naming is read
as it is: never renamed, still cited, still found.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

from conftest import run_cli

DAY = "2026-12-03"
HAND_ID = "d-20261203-reglage-secateur"  # three words, stopwords dropped: the older rule
HAND_DAILY = f"""---
id: "daily-{DAY}"
title: "Daily {DAY}"
created: "{DAY}T21:00:00Z"
updated: "{DAY}T21:00:00Z"
status: "active"
---
# Daily {DAY}

## {HAND_ID}

Sécateur affûté: lame neuve posée.
"""
EVENT = {"event_id": "ev-taille-1", "observed_at": f"{DAY}T08:00:00Z", "kind": "note",
         "source": "phone", "payload": {"text": "Réglage du sécateur d\u2019été: lame affûtée."}}


def cli(*args: str | os.PathLike[str], stdin: str | None = None) -> dict:
    if stdin is None:
        done = run_cli(*args, "--json")
        assert done.code == 0, (done.stdout, done.stderr)
        return done.json()
    done = subprocess.run([sys.executable, "-m", "memory_forest", *map(str, args), "--json"],
                          input=stdin.encode("utf-8"), capture_output=True, timeout=60)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return json.loads(done.stdout)


def test_a_french_fact_and_a_french_event_get_one_slug_each_in_its_grammar(
        example_forest: Path):
    root = example_forest
    daily = root / "05 daily" / f"{DAY}.md"
    daily.write_text(HAND_DAILY, encoding="utf-8")
    os.chmod(daily, 0o600)

    # The title names the leaf: accents kept, composed, lower case.
    filed = cli("remember", root, "Le sécateur se règle avant la taille d'été.",
                "--title", "Sécateur d'été (réglage)")
    leaf = filed["placement"]["leaf"]
    assert leaf == unicodedata.normalize("NFC", "sécateur-d-été-réglage")
    assert (root / filed["path"]).is_file() and filed["path"].endswith(f"/{leaf}.md")

    # The event becomes an entry whose id is the same words folded to ASCII; the
    # apostrophe without an ASCII form still separates words.
    cli("capture", root, "-", stdin=json.dumps(EVENT, ensure_ascii=False))
    proposal = cli("consolidate", root)["proposal"]
    [entry] = [entry for day in proposal["days"] for entry in day["entries"]]
    assert entry["entry_id"] == "d-20261203-reglage-du-secateur-d-ete-lame"
    # The entry written by hand is promoted under its own id, into a leaf named by the
    # same slug as a remembered fact: its words with their accents.
    [hand] = [p for p in proposal["promotions"] if p["entry_id"] == HAND_ID]
    assert hand["source"]["pointer"] == f"05 daily/{DAY}.md#{HAND_ID}"
    assert hand["placement"]["leaf"] == unicodedata.normalize(
        "NFC", "sécateur-affûté-lame-neuve-posée")
    accepted = cli("proposals", "accept", root, proposal["proposal_id"])
    assert accepted["status"] == "accepted"
    promoted = {e["entry_id"]: e["leaf"] for e in accepted["entries"]}
    hand_leaf = promoted[HAND_ID]
    assert f"05 daily/{DAY}.md#{HAND_ID}" in (root / hand_leaf).read_text(encoding="utf-8")

    # The entry written by hand keeps its id, beside the new one, in the same record.
    text = daily.read_text(encoding="utf-8")
    assert text.count(f"## {HAND_ID}\n") == 1
    assert text.count(f"## {entry['entry_id']}\n") == 1
    assert cli("validate", root)["summary"]["errors"] == 0

    # The leaves are found the way a user asks: by the words their names were made of.
    found = cli("retrieve", root, "sécateur réglage")
    paths = {node["path"] for trail in found["trails"] for node in trail["nodes"]}
    assert {filed["path"], hand_leaf} <= paths

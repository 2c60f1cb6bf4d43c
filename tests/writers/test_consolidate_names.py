"""Names consolidation derives from raw text never carry a credential.

Another tool (or another machine) writes events straight into an ISTM shard,
with no redaction of its own. ``consolidate`` turns their text into a
summary, an entry id, a leaf name and a title; ``proposals accept`` turns
those into files, headings and the parent's child list. None of it may hold
the credential: not a file of the forest, not the stored proposal, not what
``proposals show`` or ``accept`` print.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from writerkit import assert_whole

from memory_forest import operations
from memory_forest.forest import Forest
from memory_forest.writers import proposals
from memory_forest.writers.consolidate import consolidate, unmarked
from memory_forest.writers.redact import find_secret

# Built at run time, so this file holds no credential-shaped literal of its own.
GITHUB = "ghp" + "_" + "zq8yt3nvbK2mW7pLx4RcT9hJdF6sQe1AuY0o"
AWS_ID = "AKIA" + "Q3VZ7TXN5KRB2WLM"
AWS_SIGNING = "wJalrXUtnF" + "EMI/K7MDENG/bPxRfiCYzQ8v4T2mL9"
ROUTER_LOGIN = "Hx7-kv93" + "-trellis-Qm2"
KEYWORD = "pass" + "word"
SECRETS = (GITHUB, AWS_ID, AWS_SIGNING, ROUTER_LOGIN)
TEXTS = {
    "ev-github": f"{GITHUB} deploy token for the greenhouse sensor bridge",
    "ev-aws": f"{AWS_ID} {AWS_SIGNING} are the backup bucket keys for the greenhouse",
    "ev-password": f"{KEYWORD}={ROUTER_LOGIN} opens the router admin page",
}
SHARD = "06 istm/2026-12-02.jsonl"


def hand_written_events(root: Path) -> list[str]:
    """Events as another tool appends them: one JSON object a line, nothing redacted."""
    lines = [json.dumps({"event_id": event_id, "observed_at": "2026-12-02T07:00:00Z",
                         "captured_at": "2026-12-02T07:00:01Z", "source": "other-tool",
                         "kind": "note", "payload": {"text": text}})
             for event_id, text in TEXTS.items()]
    path = root / SHARD
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.chmod(path, 0o600)
    operations.index(root)  # what sync does after it brings another machine's shards
    return [f"{SHARD}#{event_id}" for event_id in TEXTS]


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def everything_written(root: Path) -> dict[str, str]:
    """Every file under the root, derived state included, but the shard the other tool
    wrote and the search index, which mirrors that shard's text so it can be found."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and rel != SHARD \
                and not rel.startswith(".memory-forest/index."):
            found[rel] = path.read_bytes().decode("utf-8", "replace")
    return found


def cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "memory_forest", *args, "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_names_from_hand_written_events_never_carry_the_credential(example):
    pointers = hand_written_events(example)
    made = consolidate(example)
    proposal = made["proposal"]
    assert made["redactions"], "the events' credentials were not counted as redactions"
    entries = [entry for day in proposal["days"] for entry in day["entries"]]
    cited = {source["pointer"] for entry in entries for source in entry["sources"]}
    assert cited == set(pointers)
    for entry in entries:
        placement = entry["placement"]
        for name in (entry["entry_id"], placement["leaf"], placement["title"]):
            assert not leaks(name) and "redacted" not in name.lower(), name
    assert not leaks(json.dumps(made))

    proposal_id = proposal["proposal_id"]
    shown = cli("proposals", "show", str(example), proposal_id)
    human = subprocess.run([sys.executable, "-m", "memory_forest", "proposals", "show",
                            str(example), proposal_id], capture_output=True, text=True,
                           timeout=120)
    assert human.returncode == 0, human.stderr
    assert not leaks(shown) and not leaks(human.stdout)

    accepted = cli("proposals", "accept", str(example), proposal_id)
    assert not leaks(accepted)
    assert json.loads(accepted)["status"] == "accepted"
    written = everything_written(example)
    assert {rel: leaks(text) for rel, text in written.items() if leaks(text)} == {}
    assert any("[REDACTED:" in text for rel, text in written.items()
               if rel.startswith("04 stm/"))  # the text is there, without the secret
    assert_whole(example)


def test_an_event_that_is_only_a_credential_gets_a_plain_name(example):
    path = example / SHARD
    path.write_text(json.dumps({"event_id": "ev-only", "observed_at": "2026-12-02T07:00:00Z",
                                "captured_at": "2026-12-02T07:00:01Z", "source": "other-tool",
                                "kind": "note", "payload": GITHUB}) + "\n", encoding="utf-8")
    os.chmod(path, 0o600)
    operations.index(example)
    proposal = consolidate(example)["proposal"]
    [entry] = [entry for day in proposal["days"] for entry in day["entries"]
               if entry["sources"][0]["pointer"] == f"{SHARD}#ev-only"]
    assert entry["entry_id"] == "d-20261202-entry"
    assert (entry["placement"]["leaf"], entry["placement"]["title"]) == ("note", "Note")
    assert entry["summary"] == "[REDACTED:github_token]"


def test_an_event_whose_id_is_a_credential_is_skipped_and_not_echoed(example):
    path = example / SHARD
    path.write_text(json.dumps({"event_id": GITHUB, "observed_at": "2026-12-02T07:00:00Z",
                                "captured_at": "2026-12-02T07:00:01Z", "source": "other-tool",
                                "kind": "note", "payload": {"text": "bridge notes"}}) + "\n",
                    encoding="utf-8")
    os.chmod(path, 0o600)
    operations.index(example)
    made = consolidate(example)
    assert [item["reason"] for item in made["skipped"]] == ["secret_in_name"]
    assert not leaks(json.dumps(made))
    stored, _ = proposals.every(Forest.open(example))
    assert all(GITHUB not in proposals.pointers(item) for item in stored)


def test_markers_are_dropped_from_the_words_of_a_name():
    assert unmarked("[REDACTED:github_token] deploy  token [REDACTED:assignment]") == \
        "deploy token"
    assert unmarked("[REDACTED:aws_access_key]") == ""


def test_names_never_read_as_a_credential_once_the_markers_are_gone(example):
    """Dropping a marker joins the words around it: a sentence that states a password
    then goes on would name a leaf with the next word in the password's place, which
    itself reads as a password. Such a name falls back to a plain one."""
    secret = "hunter" + "2"
    path = example / SHARD
    path.write_text(json.dumps({"event_id": "ev-prose", "observed_at": "2026-12-02T07:00:00Z",
                                "captured_at": "2026-12-02T07:00:01Z", "source": "other-tool",
                                "kind": "note",
                                "payload": {"text": f"my {KEYWORD} is {secret} ok"}}) + "\n",
                    encoding="utf-8")
    os.chmod(path, 0o600)
    operations.index(example)
    proposal = consolidate(example)["proposal"]
    [entry] = [entry for day in proposal["days"] for entry in day["entries"]
               if entry["sources"][0]["pointer"] == f"{SHARD}#ev-prose"]
    placement = entry["placement"]
    assert secret not in json.dumps(proposal)
    for name in (entry["entry_id"], placement["leaf"], placement["title"]):
        assert find_secret(name) is None, name

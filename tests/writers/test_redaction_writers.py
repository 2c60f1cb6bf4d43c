"""No writer stores a secret, in any field: the whole forest directory is searched after each
write (canonical files, receipts, journals, the index), and the receipt's ``redactions``
count one per secret the caller gave and the writer stored.

Fake credentials are assembled from two pieces so that no line here looks like a real one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli
from writerkit import assert_whole, contents, daily_plan, event, jsonl, write_json

from memory_forest import operations
from memory_forest.errors import ForestError
from memory_forest.writers import capture
from memory_forest.writers.daily import apply_daily
from memory_forest.writers.promote import promote
from memory_forest.writers.remember import remember
from memory_forest.writers.structured import apply_structured, structured_context
from memory_forest.writers.supersede import supersede

AWS_ID = "AKIA" + "IOSFODNN7Q2W3E4R"
AWS_BARE_KEY = "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYzq8w3e5r7t"
GITHUB = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
SLACK = "xoxb-" + "123456789012-abcdefghij"
STRIPE = "sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
OPENAI = "sk-" + "proj-abcdefghijklmnopqrstuvwx"
URL_PASSWORD = "Hunter" + "22pass"
PHRASE_PASSWORD = "sword" + "fish77"
FIELD_PASSWORD = "q1w2e3" + "r4t5y6"
WIDE_PASSWORD = "ｗｉｄｅ" + "ｓｅｃｒｅｔ９"
SECRETS = [AWS_ID, AWS_BARE_KEY, GITHUB, SLACK, STRIPE, GOOGLE, OPENAI, URL_PASSWORD,
           PHRASE_PASSWORD, FIELD_PASSWORD, WIDE_PASSWORD]
MARKER = re.compile(r"\[REDACTED:([a-z_]+)\]")


def leaks(root: Path) -> list[tuple[str, str]]:
    """(file, secret) for every planted secret found in any file under ``root``."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            data = (Path(folder) / name).read_bytes()
            found += [(str(Path(folder, name).relative_to(root)), secret) for secret in SECRETS
                      if secret.encode() in data]
    return found


def stored_rules(root: Path, before: dict[str, bytes]) -> Counter[str]:
    """The markers in canonical files this write created or changed, by rule."""
    rules: Counter[str] = Counter()
    for path, data in contents(root).items():
        if before.get(path) != data:
            rules.update(MARKER.findall(data.decode("utf-8")))
    return rules


def receipt_on_disk(root: Path, out: dict) -> dict:
    path = root / ".memory-forest/receipts" / f"{out['transaction_id']}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def assert_clean(root: Path, out: dict) -> None:
    assert leaks(root) == []
    assert receipt_on_disk(root, out)["redactions"] == out["redactions"]
    assert_whole(root)


# --- remember -------------------------------------------------------------------------------


def test_remember_redacts_title_tags_parent_titles_and_content_through_the_cli(empty_forest):
    proc = run_cli("remember", empty_forest, "--tree", "ops", "--branch", "keys", "--leaf",
                   "rotation", "--title", f"Key {AWS_ID}", "--tag", GITHUB, "--tag", "plain",
                   "--tree-title", f"Ops {SLACK}", "--branch-title", f"Keys {STRIPE}",
                   "--content", f"db at https://app:{URL_PASSWORD}@db.internal/x; "
                   f"the password is {PHRASE_PASSWORD}.", "--json")
    out = proc.json()
    assert out["ok"], out
    assert out["redactions"] == {"aws_access_key": 1, "github_token": 1, "slack_token": 1,
                                 "stripe_key": 1, "url_credentials": 1, "password_phrase": 1}
    leaf = (empty_forest / out["path"]).read_text(encoding="utf-8")
    assert 'title: "Key [REDACTED:aws_access_key]"' in leaf
    assert "\n# Key [REDACTED:aws_access_key]\n" in leaf
    assert "[REDACTED:github_token]" in leaf and "plain" in leaf
    branch = (empty_forest / "03 mtm/ops/keys.md").read_text(encoding="utf-8")
    assert "# Keys [REDACTED:stripe_key]" in branch
    assert "|Key REDACTED:aws_access_key]]" in branch  # the child list, from the stored title
    tree = (empty_forest / "02 ltm/ops_LTM.md").read_text(encoding="utf-8")
    assert "# Ops [REDACTED:slack_token]" in tree
    assert set(stored_rules(empty_forest, {})) == set(out["redactions"])
    assert_clean(empty_forest, out)


def test_remember_counts_only_what_it_stores(example_forest):
    # The tree and branch exist and keep their titles; the leaf exists and keeps its tags.
    out = remember(example_forest, "kitchen", "fermentation", "kimchi-batch-7", None,
                   "Day 15.", tree_title=f"K {SLACK}", branch_title=f"F {STRIPE}",
                   tag=[GITHUB])
    assert out["redactions"] == {} and not out["created"]
    assert_clean(example_forest, out)


def test_remember_refuses_a_route_name_holding_a_credential(empty_forest):
    before = contents(empty_forest)
    with pytest.raises(ForestError) as info:
        remember(empty_forest, "ops", "keys", AWS_ID, None, "x")
    assert info.value.code == "secret_in_name" and info.value.details["field"] == "leaf"
    assert contents(empty_forest) == before


def test_a_transaction_id_holding_a_credential_is_refused(empty_forest):
    proc = run_cli("remember", empty_forest, "--tree", "a", "--branch", "b", "--leaf", "c",
                   "--content", "x", "--transaction-id", f"tx-{GITHUB}", "--json")
    out = proc.json()
    assert proc.code == 2 and out["error"]["code"] == "secret_in_name"
    assert GITHUB not in proc.stdout + proc.stderr and leaks(empty_forest) == []


# --- capture --------------------------------------------------------------------------------


def test_capture_redacts_payload_keys_and_values_at_depth_and_the_caller_fields(
        empty_forest, tmp_path):
    payload = {"text": f"deploy with {OPENAI}", GOOGLE: "a key as a key",
               "config": {"db": {"password": FIELD_PASSWORD, "hosts": [
                   f"https://svc:{URL_PASSWORD}@h1/x", {"aws": [AWS_ID, AWS_BARE_KEY]}]}},
               "creds": {"access_key_id": AWS_ID, "key": AWS_BARE_KEY},
               "note": f"ｐａｓｓｗｏｒｄ={WIDE_PASSWORD}"}
    source = tmp_path / "events.jsonl"
    source.write_bytes(jsonl([event(1, payload=payload, extra=f"from {SLACK}")]))
    before = contents(empty_forest)
    out = capture.capture_events(empty_forest, capture.parse_input(source.read_bytes()))
    want = {"api_key": 1, "google_api_key": 1, "secret_field": 1, "url_credentials": 1,
            "aws_access_key": 2, "aws_secret_key": 2, "slack_token": 1, "assignment": 1}
    assert out["redactions"] == want
    # Each secret is stored once, in the event: the markers are exactly the counts.
    assert stored_rules(empty_forest, before) == Counter(want)
    record = json.loads((empty_forest / out["shard"]).read_text(encoding="utf-8"))
    assert record["payload"]["note"] == "ｐａｓｓｗｏｒｄ=[REDACTED:assignment]"  # verbatim rest
    assert record["payload"]["config"]["db"]["hosts"][1] == {"aws": [
        "[REDACTED:aws_access_key]", "[REDACTED:aws_secret_key]"]}
    assert record["payload"]["[REDACTED:google_api_key]"] == "a key as a key"
    assert_clean(empty_forest, out)


def test_an_event_id_holding_a_credential_is_refused_not_stored(empty_forest, tmp_path):
    before = contents(empty_forest)
    source = tmp_path / "events.jsonl"
    source.write_bytes(jsonl([event(1), event(2, event_id=f"evt-{AWS_ID}")]))
    proc = run_cli("capture", empty_forest, "--file", source, "--json")
    out = proc.json()
    assert proc.code == 2 and out["error"]["code"] == "secret_in_name"
    assert out["error"]["details"] == {"field": "event_id", "rule": "aws_access_key", "event": 2}
    assert AWS_ID not in proc.stdout + proc.stderr
    assert contents(empty_forest) == before and leaks(empty_forest) == []


# --- plans ----------------------------------------------------------------------------------


def test_apply_daily_redacts_every_summary(example_forest, tmp_path):
    plan = daily_plan("d-secrets", "2026-11-30", [
        {"entry_id": "d-s1", "source_record_ids": ["evt-20261128-0001"],
         "summary": f"Rotated {OPENAI}; the password is {PHRASE_PASSWORD}."},
        {"entry_id": "d-s2", "source_record_ids": ["evt-20261128-0002"],
         "summary": f"New key {GOOGLE}"}])
    before = contents(example_forest)
    out = apply_daily(example_forest, write_json(tmp_path / "d.json", plan))
    want = {"api_key": 1, "password_phrase": 1, "google_api_key": 1}
    assert out["redactions"] == want and stored_rules(example_forest, before) == Counter(want)
    assert_clean(example_forest, out)


def test_apply_daily_refuses_an_entry_id_holding_a_credential(example_forest, tmp_path):
    plan = daily_plan("d-bad", "2026-11-30", [
        {"entry_id": GITHUB, "source_record_ids": ["evt-20261128-0001"], "summary": "x"}])
    with pytest.raises(ForestError) as info:
        apply_daily(example_forest, write_json(tmp_path / "d.json", plan))
    assert info.value.code == "plan_bad_entry_id"
    assert info.value.details == {"loc": "entries.0.entry_id"}


def test_apply_structured_redacts_title_tags_and_body(example_forest, tmp_path):
    operations.index(example_forest)
    mtm = "03 mtm/kitchen/fermentation.md"
    preimage = hashlib.sha256((example_forest / mtm).read_bytes()).hexdigest()
    changes = [
        {"target": {"layer": "stm", "tree": "kitchen", "branch": "fermentation",
                    "leaf": "keys"}, "operation": "create",
         "body": f"# Heading {SLACK}\n\nkey {OPENAI} at https://u:{URL_PASSWORD}@h/x",
         "frontmatter": {"title": f"Keys {AWS_ID}", "tags": [GITHUB, "ok"]}},
        {"target": {"layer": "mtm", "tree": "kitchen", "branch": "fermentation"},
         "operation": "replace", "preimage_sha256": preimage,
         "body": f"Stripe {STRIPE}", "frontmatter": {"title": f"Fermentation {GOOGLE}"}},
    ]
    snapshot = structured_context(example_forest, "kimchi")["snapshot_sha256"]
    plan = {"schema_version": 1, "transaction_id": "sweep-secrets",
            "snapshot_sha256": snapshot, "changes": changes}
    out = apply_structured(example_forest, write_json(tmp_path / "s.json", plan))
    assert out["redactions"] == {"slack_token": 1, "api_key": 1, "url_credentials": 1,
                                 "aws_access_key": 1, "github_token": 1, "stripe_key": 1,
                                 "google_api_key": 1}
    assert set(stored_rules(example_forest, {})) >= set(out["redactions"])
    assert_clean(example_forest, out)


def test_apply_structured_refuses_a_target_name_holding_a_credential(example_forest, tmp_path):
    operations.index(example_forest)
    change = {"target": {"layer": "stm", "tree": "kitchen", "branch": "fermentation",
                         "leaf": STRIPE}, "operation": "create", "body": "x",
              "frontmatter": {"title": "X"}}
    plan = {"schema_version": 1, "transaction_id": "sweep-bad",
            "snapshot_sha256": "0" * 64, "changes": [change]}
    with pytest.raises(ForestError) as info:
        apply_structured(example_forest, write_json(tmp_path / "s.json", plan))
    assert info.value.code == "plan_bad_segment"
    assert info.value.details == {"loc": "changes.0.target.leaf"}


def promotion_plan(txid: str, leaf: str, title: str, tree_title: str, branch_title: str,
                   entry_ids: list[str]) -> dict:
    return {"schema_version": 1, "transaction_id": txid, "entry_ids": entry_ids, "title": title,
            "route": {"tree": "greenhouse", "tree_title": tree_title, "branch": "water",
                      "branch_title": branch_title, "leaf": leaf}}


def test_promote_redacts_the_titles_it_stores_and_counts_only_those(example_forest, tmp_path):
    for number in (1, 2):
        apply_daily(example_forest, write_json(tmp_path / f"d{number}.json", daily_plan(
            f"d-p{number}", "2026-11-30", [{"entry_id": f"d-p{number}", "summary": "Drip.",
                                            "source_record_ids": ["evt-20261128-0001"]}])))
    first = promote(example_forest, write_json(tmp_path / "p1.json", promotion_plan(
        "p-1", "drip", f"Drip {AWS_ID}", f"Greenhouse {SLACK}", f"Water {STRIPE}", ["d-p1"])))
    # The greenhouse tree exists and keeps its title; the branch and leaf are new.
    assert first["created"]
    assert first["redactions"] == {"aws_access_key": 1, "stripe_key": 1}
    assert_clean(example_forest, first)
    # Everything exists now: the titles are ignored, so nothing is stored or counted.
    again = promote(example_forest, write_json(tmp_path / "p2.json", promotion_plan(
        "p-2", "drip", f"Drip {GOOGLE}", f"G {GITHUB}", f"W {OPENAI}", ["d-p2"])))
    assert not again["created"] and again["redactions"] == {}
    assert_clean(example_forest, again)


# --- supersede ------------------------------------------------------------------------------


def test_supersede_redacts_the_title_the_heading_title_tags_and_body(example_forest, tmp_path):
    new = tmp_path / "zaatar-v3.md"
    new.write_text(f"---\ntags: [{GITHUB}, spice]\n---\n# Za'atar {AWS_ID}\n\n"
                   f"Supplier login https://me:{URL_PASSWORD}@shop/x\n", encoding="utf-8")
    out = supersede(example_forest, "stm-zaatar-blend", str(new))
    assert out["redactions"] == {"github_token": 1, "aws_access_key": 1, "url_credentials": 1}
    text = (example_forest / out["path"]).read_text(encoding="utf-8")
    assert "# Za'atar [REDACTED:aws_access_key]" in text
    assert_clean(example_forest, out)

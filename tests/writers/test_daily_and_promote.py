"""apply-daily (entries with stable anchors) and promote (Daily entries into one leaf)."""

from __future__ import annotations

import pytest
from writerkit import assert_whole, contents, daily_plan, write_json

from memory_forest import schemas
from memory_forest.documents import read_facts, split_frontmatter
from memory_forest.errors import ForestError
from memory_forest.routes import parse_route
from memory_forest.writers.daily import apply_daily
from memory_forest.writers.promote import promote

E1, E2 = "evt-20261128-0001", "evt-20261128-0002"


def entry(entry_id: str, *events: str, summary: str = "A summary.") -> dict:
    return {"entry_id": entry_id, "source_record_ids": list(events or [E1]), "summary": summary}


def anchors(root, rel):
    return read_facts(parse_route(rel), (root / rel).read_bytes(), 0, 10_000)[0].anchors


def test_a_new_daily_record_with_anchored_entries(example_forest, tmp_path):
    plan = daily_plan("d-tx-1", "2026-11-30", [
        entry("d-1", E1, E2, summary="Drip fixed.\n## not an entry\n[[01 xltm/XLTM]]"),
        entry("d-2", E2)])
    out = apply_daily(example_forest, write_json(tmp_path / "p.json", plan))
    assert out["ok"] and out["created"] and out["entries"] == ["d-1", "d-2"]
    schemas.validate("WriteResult", out)
    rel = "05 daily/2026-11-30.md"
    assert anchors(example_forest, rel) == ["d-1", "d-2"]
    text = (example_forest / rel).read_text(encoding="utf-8")
    meta, body, _ = split_frontmatter(text)
    assert meta["title"] == "Daily 2026-11-30" and body.startswith("# Daily 2026-11-30\n")
    assert ("Sources: `06 istm/2026-11-28.jsonl#evt-20261128-0001`, "
            "`06 istm/2026-11-28.jsonl#evt-20261128-0002`") in body
    assert_whole(example_forest)


def test_entries_are_appended_to_an_existing_daily_record(example_forest, tmp_path):
    rel = "05 daily/2026-11-28.md"
    before = (example_forest / rel).read_text(encoding="utf-8")
    apply_daily(example_forest, write_json(tmp_path / "p.json", daily_plan(
        "d-tx-2", "2026-11-28", [entry("d-20261128-late")])))
    after = (example_forest / rel).read_text(encoding="utf-8")
    assert split_frontmatter(after)[1].startswith(split_frontmatter(before)[1].rstrip("\n"))
    assert anchors(example_forest, rel) == ["d-20261128-drip", "d-20261128-tomato",
                                            "d-20261128-late"]
    assert_whole(example_forest)


@pytest.mark.parametrize("entries, code", [
    ([entry("d-20261128-drip")], "daily_entry_exists"),  # ids are unique across Daily
    ([entry("d-9", "evt-missing")], "daily_source_missing"),
])
def test_daily_rejections_change_nothing(example_forest, tmp_path, entries, code):
    before = contents(example_forest)
    with pytest.raises(ForestError) as info:
        apply_daily(example_forest, write_json(tmp_path / "p.json", daily_plan(
            "d-tx-3", "2026-11-30", entries)))
    assert info.value.code == code
    assert contents(example_forest) == before


def promotion(txid, entry_ids, leaf="drip-notes", title=None):
    plan = {"schema_version": 1, "transaction_id": txid, "entry_ids": entry_ids,
            "route": {"tree": "greenhouse", "tree_title": "Greenhouse", "branch": "water",
                      "branch_title": "Water", "leaf": leaf}}
    if title:
        plan["title"] = title
    return plan


def test_promote_into_a_new_branch(example_forest, tmp_path):
    out = promote(example_forest, write_json(tmp_path / "p.json", promotion(
        "p-1", ["d-20261128-drip", "d-20261128-tomato"], title="Drip notes")))
    rel = "04 stm/greenhouse/water/drip-notes.md"
    assert out["path"] == rel and out["created"]
    assert [d["disposition"] for d in out["dispositions"]] == ["promoted", "promoted"]
    schemas.validate("WriteResult", out)
    meta, body, _ = split_frontmatter((example_forest / rel).read_text(encoding="utf-8"))
    assert meta["title"] == "Drip notes"
    assert meta["sources"] == ["05 daily/2026-11-28.md#d-20261128-drip",
                               "05 daily/2026-11-28.md#d-20261128-tomato"]
    assert "pressure lowered to 1.2 bar" in body and "Leaf spots on the bed B" in body
    assert "Up: [[03 mtm/greenhouse/water|Water]]" in body
    ltm = (example_forest / "02 ltm/greenhouse_LTM.md").read_text(encoding="utf-8")
    assert "[[03 mtm/greenhouse/water|Water]]" in ltm
    assert_whole(example_forest)


def test_promote_appends_to_an_existing_leaf_once(example_forest, tmp_path):
    promote(example_forest, write_json(tmp_path / "a.json", promotion("p-1", [
        "d-20261128-drip"])))
    out = promote(example_forest, write_json(tmp_path / "b.json", promotion("p-2", [
        "d-20261128-tomato"])))
    assert not out["created"]
    before = contents(example_forest)
    with pytest.raises(ForestError) as info:
        promote(example_forest, write_json(tmp_path / "c.json", promotion("p-3", [
            "d-20261128-drip"])))
    assert info.value.code == "entry_already_promoted"
    assert contents(example_forest) == before
    assert_whole(example_forest)


def test_promote_rejections(example_forest, tmp_path):
    with pytest.raises(ForestError) as info:
        promote(example_forest, write_json(tmp_path / "p.json", promotion("p-4", ["d-nope"])))
    assert info.value.code == "daily_entry_missing"
    (example_forest / "05 daily/2026-11-29.md").write_text(
        "# Other day\n\n## d-20261128-drip\n\nSame id.\n", encoding="utf-8")
    (example_forest / "05 daily/2026-11-29.md").chmod(0o600)
    with pytest.raises(ForestError) as info:
        promote(example_forest, write_json(tmp_path / "q.json", promotion(
            "p-5", ["d-20261128-drip"])))
    assert info.value.code == "daily_entry_ambiguous"


def test_a_summary_with_code_is_stored_and_promoted_whole(example_forest, tmp_path):
    """A ``# comment`` in a code block is code, not the end of the entry."""
    summary = ("Flush the drip line: `now-6h&to=now#x` at 3%\n\n```sh\n# every Monday\n"
               "if [[ -f /tmp/drip ]]; then flush; fi\n```\n\nSee [[01 xltm/XLTM]].")
    apply_daily(example_forest, write_json(tmp_path / "d.json", daily_plan(
        "d-tx-code", "2026-11-30", [entry("d-code", summary=summary), entry("d-next")])))
    daily = (example_forest / "05 daily/2026-11-30.md").read_text(encoding="utf-8")
    stored = summary.replace("See [[", "See \\[\\[")  # the only change: no wikilink
    assert f"## d-code\n\n{stored}\n\nSources: " in daily
    assert anchors(example_forest, "05 daily/2026-11-30.md") == ["d-code", "d-next"]
    out = promote(example_forest, write_json(tmp_path / "p.json", promotion(
        "p-code", ["d-code"], leaf="flush")))
    leaf = (example_forest / out["path"]).read_text(encoding="utf-8")
    assert f"Promoted from `05 daily/2026-11-30.md#d-code`:\n\n{stored}\n\nSources: " in leaf
    assert "## d-next" not in leaf and anchors(example_forest, out["path"]) == []
    assert_whole(example_forest)


def test_secrets_in_a_summary_and_a_leaf_title_are_redacted(example_forest, tmp_path):
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz"  # release-audit: allow (a fake)
    out = apply_daily(example_forest, write_json(tmp_path / "d.json", daily_plan(
        "d-tx-key", "2026-11-30", [entry("d-key", summary=f"Rotated {secret} at 9.")])))
    daily = (example_forest / out["path"]).read_text(encoding="utf-8")
    assert out["redactions"] == {"api_key": 1} and secret not in daily
    assert "Rotated [REDACTED:api_key] at 9." in daily
    done = promote(example_forest, write_json(tmp_path / "p.json", promotion(
        "p-key", ["d-key"], leaf="keys", title=f"Keys {secret}")))
    assert done["redactions"] == {"api_key": 1}
    assert secret not in (example_forest / done["path"]).read_text(encoding="utf-8")

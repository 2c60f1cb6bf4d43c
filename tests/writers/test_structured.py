"""structured-context and apply-structured: a reviewed sweep bound to a snapshot."""

from __future__ import annotations

import hashlib

import pytest
from writerkit import assert_whole, contents, write_json

from memory_forest import operations, schemas
from memory_forest.documents import split_frontmatter
from memory_forest.errors import ForestError
from memory_forest.writers.structured import apply_structured, structured_context

MTM = "03 mtm/kitchen/fermentation.md"


@pytest.fixture
def forest(example_forest):
    operations.index(example_forest)
    return example_forest


def sha(root, rel):
    return hashlib.sha256((root / rel).read_bytes()).hexdigest()


def plan(root, changes, txid="sweep-1", snapshot=None):
    if snapshot is None:
        snapshot = structured_context(root, "kimchi")["snapshot_sha256"]
    return {"schema_version": 1, "transaction_id": txid, "snapshot_sha256": snapshot,
            "changes": changes}


def apply(root, tmp_path, data):
    return apply_structured(root, write_json(tmp_path / f"{data['transaction_id']}.json", data))


def test_context_returns_fresh_bounded_bodies_and_a_snapshot(forest):
    out = structured_context(forest, "kimchi")
    assert out["ok"] and out["body_included"]
    paths = [doc["path"] for doc in out["documents"]]
    assert paths[0] == "01 xltm/XLTM.md"
    assert "04 stm/kitchen/fermentation/kimchi-batch-7.md" in paths
    for doc in out["documents"]:
        assert doc["sha256"] == sha(forest, doc["path"]) and not doc["truncated"]
        assert doc["body"] == split_frontmatter((forest / doc["path"]).read_text())[1]
    assert out["structured_documents"] == 9
    lines = "".join(f"{p}\t{sha(forest, p)}\n" for p in sorted(
        str(f.relative_to(forest)) for layer in ("01 xltm", "02 ltm", "03 mtm", "04 stm")
        for f in (forest / layer).rglob("*.md")))
    assert out["snapshot_sha256"] == hashlib.sha256(lines.encode()).hexdigest()
    before = contents(forest)
    structured_context(forest, "fermentation")
    assert contents(forest) == before  # read-only


def test_a_sweep_creates_replaces_supersedes_and_disposes(forest, tmp_path):
    preimage = sha(forest, MTM)
    changes = [
        {"target": {"layer": "stm", "tree": "kitchen", "branch": "fermentation",
                    "leaf": "kimchi-batch-8"}, "operation": "create",
         "body": "Batch 8.\n## not structure\n[[01 xltm/XLTM]]",
         "frontmatter": {"title": "Kimchi batch 8", "tags": ["kimchi"],
                         "sources": ["06 istm/2026-11-28.jsonl#evt-20261128-0003"]},
         "supersedes": "stm-kimchi-batch-7",
         "daily_entries": [{"entry_id": "d-20261128-drip", "disposition": "source_only"}]},
        {"target": {"layer": "mtm", "tree": "kitchen", "branch": "fermentation"},
         "operation": "replace", "preimage_sha256": preimage, "body": "Reviewed in November.",
         "frontmatter": {"tags": ["fermentation", "reviewed"]}},
        {"target": {"layer": "stm", "tree": "garden", "branch": "beds", "leaf": "bed-b"},
         "operation": "create", "body": "Tomatoes.", "frontmatter": {"title": "Bed B"},
         "daily_entries": [{"entry_id": "d-20261128-tomato", "disposition": "promoted"}]},
    ]
    out = apply(forest, tmp_path, plan(forest, changes))
    schemas.validate("WriteResult", out)
    assert [c["path"] for c in out["changes"]] == [
        "04 stm/kitchen/fermentation/kimchi-batch-8.md", MTM, "04 stm/garden/beds/bed-b.md"]
    assert {d["entry_id"]: d["disposition"] for d in out["dispositions"]} == {
        "d-20261128-drip": "source_only", "d-20261128-tomato": "promoted"}
    mtm_meta, mtm_body, _ = split_frontmatter((forest / MTM).read_text(encoding="utf-8"))
    assert mtm_meta["id"] == "mtm-kitchen-fermentation"
    assert mtm_meta["created"] == "2026-03-02T10:00:00Z"
    assert mtm_meta["tags"] == ["fermentation", "reviewed"]
    assert "Reviewed in November." in mtm_body and "tasting notes" not in mtm_body
    for child in ("kimchi-batch-7", "zaatar-blend", "kimchi-batch-8"):
        assert f"[[04 stm/kitchen/fermentation/{child}|" in mtm_body
    old = split_frontmatter((forest / "04 stm/kitchen/fermentation/kimchi-batch-7.md"
                             ).read_text(encoding="utf-8"))[0]
    new = split_frontmatter((forest / "04 stm/kitchen/fermentation/kimchi-batch-8.md"
                             ).read_text(encoding="utf-8"))[0]
    assert old["status"] == "superseded" and old["superseded_by"] == new["id"]
    assert new["supersedes"] == "stm-kimchi-batch-7"
    bed = split_frontmatter((forest / "04 stm/garden/beds/bed-b.md").read_text())[0]
    assert bed["sources"] == ["05 daily/2026-11-28.md#d-20261128-tomato"]
    assert "[[02 ltm/garden_LTM|garden]]" in (forest / "01 xltm/XLTM.md").read_text()
    assert_whole(forest)


def test_a_plan_can_create_a_tree_top_down(forest, tmp_path):
    changes = [
        {"target": {"layer": "stm", "tree": "shop", "branch": "tools", "leaf": "saw"},
         "operation": "create", "body": "Sharp.", "frontmatter": {"title": "Saw"}},
        {"target": {"layer": "ltm", "tree": "shop"}, "operation": "create",
         "body": "The workshop.", "frontmatter": {"title": "Workshop"}},
        {"target": {"layer": "mtm", "tree": "shop", "branch": "tools"}, "operation": "create",
         "body": "Hand tools.", "frontmatter": {"title": "Tools"}},
    ]
    apply(forest, tmp_path, plan(forest, changes))
    assert "Up: [[02 ltm/shop_LTM|Workshop]]" in (forest / "03 mtm/shop/tools.md").read_text()
    assert "Up: [[03 mtm/shop/tools|Tools]]" in (forest / "04 stm/shop/tools/saw.md").read_text()
    assert "- [[04 stm/shop/tools/saw|Saw]]" in (forest / "03 mtm/shop/tools.md").read_text()
    assert_whole(forest)


def _create(leaf="new", **extra):
    change = {"target": {"layer": "stm", "tree": "kitchen", "branch": "fermentation",
                         "leaf": leaf}, "operation": "create", "body": "x",
              "frontmatter": {"title": "New"}}
    change.update(extra)
    return change


@pytest.mark.parametrize("changes, code", [
    ([_create("kimchi-batch-7")], "target_exists"),
    ([{"target": {"layer": "stm", "tree": "kitchen", "branch": "fermentation", "leaf": "nope"},
       "operation": "replace", "preimage_sha256": "0" * 64, "body": "x"}], "target_missing"),
    ([{"target": {"layer": "mtm", "tree": "kitchen", "branch": "fermentation"},
       "operation": "replace", "preimage_sha256": "0" * 64, "body": "x"}], "preimage_mismatch"),
    ([_create(daily_entries=[{"entry_id": "d-x", "disposition": "promoted"}])],
     "daily_entry_missing"),
    ([_create(frontmatter={"title": "N", "sources": ["06 istm/nope.jsonl"]})],
     "source_not_canonical"),
    ([_create(frontmatter={"title": "N", "sources": ["05 daily/2026-01-01.md"]})],
     "source_missing"),
    ([_create(frontmatter={"title": "N", "sources": ["05 daily/2026-11-28.md#nope"]})],
     "source_missing"),
    ([_create(supersedes="no-such-id")], "supersede_target_missing"),
    ([_create(supersedes="mtm-kitchen-fermentation"),
      _create("other", supersedes="mtm-kitchen-fermentation")], "already_superseded"),
    ([_create(body="bell\x07")], "plan_control_character"),
])
def test_sweep_rejections_change_nothing(forest, tmp_path, changes, code):
    before = contents(forest)
    with pytest.raises(ForestError) as info:
        apply(forest, tmp_path, plan(forest, changes, txid=f"tx-{code}"))
    assert info.value.code == code
    assert contents(forest) == before


def test_a_stale_snapshot_is_refused(forest, tmp_path):
    snapshot = structured_context(forest, "kimchi")["snapshot_sha256"]
    leaf = forest / "04 stm/kitchen/fermentation/zaatar-blend.md"
    leaf.write_text(leaf.read_text() + "\nhand edit\n", encoding="utf-8")
    before = contents(forest)
    with pytest.raises(ForestError) as info:
        apply(forest, tmp_path, plan(forest, [_create()], snapshot=snapshot))
    assert info.value.code == "snapshot_mismatch"
    assert contents(forest) == before
    # The hand edit is seen without a re-index: a fresh context binds again.
    out = apply(forest, tmp_path, plan(forest, [_create()], txid="sweep-2"))
    assert out["ok"]
    assert_whole(forest)


def test_a_body_is_stored_verbatim_and_code_in_it_is_no_section(forest, tmp_path):
    """A body's ``## Leaves`` inside a code block is code: new children join the real list."""
    from memory_forest.writers.remember import remember

    body = ("Dashboard: https://g.example/d?from=now-6h&to=now#panel-3 (3%, `make brine`)\n\n"
            "```md\n## Leaves\n\n- [[04 stm/kitchen/fermentation/fake]]\n```")
    change = {"target": {"layer": "mtm", "tree": "kitchen", "branch": "fermentation"},
              "operation": "replace", "preimage_sha256": sha(forest, MTM), "body": body,
              "frontmatter": {}}
    apply(forest, tmp_path, plan(forest, [change]))
    text = (forest / MTM).read_text(encoding="utf-8")
    assert f"\n\n{body}\n\n## Leaves\n\n- [[04 stm/kitchen/fermentation/" in text
    remember(forest, "kitchen", "fermentation", "miso", "Miso", "Koji started.")
    after = (forest / MTM).read_text(encoding="utf-8")
    assert f"{body}\n\n## Leaves\n\n" in after  # the code block is unchanged
    assert after.endswith("- [[04 stm/kitchen/fermentation/miso|Miso]]\n")
    assert_whole(forest)


def test_secrets_in_a_sweep_body_and_title_are_redacted(forest, tmp_path):
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz"  # release-audit: allow (a fake)
    change = {"target": {"layer": "stm", "tree": "kitchen", "branch": "fermentation",
                         "leaf": "keys"}, "operation": "create", "body": f"key {secret}",
              "frontmatter": {"title": f"Key {secret}", "tags": [f"password={secret}"]}}
    out = apply(forest, tmp_path, plan(forest, [change]))
    text = (forest / "04 stm/kitchen/fermentation/keys.md").read_text(encoding="utf-8")
    assert secret not in text and "key [REDACTED:api_key]" in text
    assert out["redactions"] == {"api_key": 3}  # the tag's value is named by its own shape

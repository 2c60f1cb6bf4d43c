"""move and forget through the real CLI: ids, child lists, links, receipts, ISTM, audit,
refusals that change nothing, and SIGKILL at each step recovered to before or after."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from conftest import run_cli
from crashkit import cli
from writerkit import assert_whole, contents, istm_records, state

from memory_forest.digest import sha256_hex

ZAATAR = "04 stm/kitchen/fermentation/zaatar-blend.md"
KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
FERMENTATION = "03 mtm/kitchen/fermentation.md"
IRRIGATION = "03 mtm/greenhouse/irrigation.md"
MOVED = "04 stm/greenhouse/irrigation/zaatar-blend.md"
NOTES = "03 mtm/greenhouse/notes.md"
NOTE = """---
id: "mtm-greenhouse-notes"
title: "Greenhouse notes"
---
# Greenhouse notes

Up: [[02 ltm/greenhouse_LTM|Greenhouse]]

The thyme for [[04 stm/kitchen/fermentation/zaatar-blend|the za'atar]] grows in bed F.
"""


@pytest.fixture
def forest(example: Path) -> Path:
    return example


def hand_note(root: Path) -> None:
    """A branch note written by hand (not indexed yet) that links to the za'atar leaf."""
    (root / NOTES).write_text(NOTE, encoding="utf-8")
    (root / NOTES).chmod(0o600)


def text(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def test_move_keeps_the_id_and_relinks_every_link(forest):
    hand_note(forest)
    old_bytes = (forest / ZAATAR).read_bytes()
    code, out = cli("move", forest, "stm-zaatar-blend", "--to", "greenhouse/irrigation")
    assert code == 0, out
    assert (out["source"], out["path"], out["id"]) == (ZAATAR, MOVED, "stm-zaatar-blend")
    assert out["relinked"] == [NOTES]
    assert not (forest / ZAATAR).exists()
    moved = text(forest, MOVED)
    assert 'id: "stm-zaatar-blend"' in moved
    assert "Up: [[03 mtm/greenhouse/irrigation|Irrigation]]" in moved
    assert "kitchen/fermentation" not in moved
    # The body is carried over byte for byte: only the Up line and 'updated' differ.
    body = old_bytes.decode().split("Up: ", 1)[1].split("\n", 1)[1]
    assert moved.endswith(body)
    assert "zaatar-blend" not in text(forest, FERMENTATION)
    assert "- [[04 stm/greenhouse/irrigation/zaatar-blend|Za'atar blend]]" in \
        text(forest, IRRIGATION)
    assert "[[04 stm/greenhouse/irrigation/zaatar-blend|the za'atar]]" in text(forest, NOTES)
    touched = {item["path"]: item for item in out["touched"]}
    assert touched[ZAATAR]["after_sha256"] is None
    assert touched[ZAATAR]["before_sha256"] == sha256_hex(old_bytes)
    assert touched[MOVED]["before_sha256"] is None
    logged = [r for r in istm_records(forest) if r["event_id"] == out["event_id"]]
    assert logged[0]["kind"] == "move" and logged[0]["payload"] == {"moved": [{
        "id": "stm-zaatar-blend", "from": ZAATAR, "to": MOVED,
        "sha256": sha256_hex(old_bytes)}]}
    code, found = cli("retrieve", forest, "sesame sumac")
    assert [trail["nodes"][-1]["path"] for trail in found["trails"]][:1] == [MOVED]
    assert found["trails"][0]["complete"] is True
    assert_whole(forest)


def test_move_can_rename_within_its_branch(forest):
    code, out = cli("move", forest, ZAATAR, "--to", "kitchen/fermentation/zaatar")
    assert code == 0, out
    assert out["path"] == "04 stm/kitchen/fermentation/zaatar.md"
    listing = text(forest, FERMENTATION)
    assert "[[04 stm/kitchen/fermentation/zaatar|Za'atar blend]]" in listing
    assert "zaatar-blend" not in listing
    assert_whole(forest)


def test_a_branch_moves_to_another_tree_with_its_leaves(forest):
    hand_note(forest)
    ids = {rel: text(forest, rel).split('id: "', 1)[1].split('"', 1)[0]
           for rel in (FERMENTATION, KIMCHI, ZAATAR)}
    code, out = cli("move", forest, "mtm-kitchen-fermentation", "--to", "greenhouse")
    assert code == 0, out
    branch = "03 mtm/greenhouse/fermentation.md"
    leaves = {KIMCHI: "04 stm/greenhouse/fermentation/kimchi-batch-7.md",
              ZAATAR: "04 stm/greenhouse/fermentation/zaatar-blend.md"}
    assert out["path"] == branch and out["id"] == "mtm-kitchen-fermentation"
    assert [(item["from"], item["to"], item["id"]) for item in out["moved"]] == [
        (FERMENTATION, branch, ids[FERMENTATION]),
        *((old, new, ids[old]) for old, new in leaves.items())]
    assert out["relinked"] == [NOTES]
    assert "Up: [[02 ltm/greenhouse_LTM|Greenhouse]]" in text(forest, branch)
    for old, new in leaves.items():
        assert not (forest / old).exists()
        assert "Up: [[03 mtm/greenhouse/fermentation|Fermentation]]" in text(forest, new)
        assert f"[[{new[:-3]}|" in text(forest, branch)
    assert "fermentation" not in text(forest, "02 ltm/kitchen_LTM.md").split("---")[-1]
    assert "[[03 mtm/greenhouse/fermentation|Fermentation]]" in text(forest,
                                                                      "02 ltm/greenhouse_LTM.md")
    assert f"[[{leaves[ZAATAR][:-3]}|the za'atar]]" in text(forest, NOTES)
    assert not (forest / "04 stm/kitchen").exists() and not (forest / "03 mtm/kitchen").exists()
    assert_whole(forest)


@pytest.mark.parametrize(("source", "to", "code", "exit_code"), [
    (KIMCHI, "kitchen/fermentation/zaatar-blend", "move_target_exists", 1),
    (KIMCHI, "kitchen/fermentation", "move_target_exists", 1),  # where it already is
    (KIMCHI, "kitchen/pickles", "move_branch_missing", 1),
    (FERMENTATION, "greenhouse/irrigation", "move_target_exists", 1),
    (FERMENTATION, "garden", "move_tree_missing", 1),
    (FERMENTATION, "greenhouse/a/b", "move_target_invalid", 2),  # a branch takes TREE[/BRANCH]
    ("02 ltm/kitchen_LTM", "greenhouse", "move_layer_unsupported", 1),
    ("01 xltm/XLTM", "greenhouse/irrigation", "move_layer_unsupported", 1),
    ("stm-no-such-leaf", "greenhouse/irrigation", "document_missing", 1),
    ("04 stm/kitchen/fermentation/gone.md", "greenhouse/irrigation", "document_missing", 1),
    ("04 stm/../x.md", "greenhouse/irrigation", "document_path_invalid", 2),
    (KIMCHI, "greenhouse", "move_target_invalid", 2),  # a leaf takes TREE/BRANCH[/LEAF]
    (KIMCHI, "greenhouse/a/b/c", "move_target_invalid", 2),
    (KIMCHI, "greenhouse/bad|name", "move_target_invalid", 2),
])
def test_move_refusals_name_a_fix_and_change_nothing(forest, source, to, code, exit_code):
    before = state(forest)
    exit_status, out = cli("move", forest, source, "--to", to)
    assert (exit_status, out["error"]["code"]) == (exit_code, code), out
    assert "memory-forest" in out["error"]["message"] or "--to" in out["error"]["message"]
    assert state(forest) == before


def test_dry_runs_say_what_would_change_and_write_nothing(forest):
    hand_note(forest)
    before = state(forest)
    code, out = cli("move", forest, ZAATAR, "--to", "greenhouse/irrigation", "--dry-run")
    assert code == 0 and out["dry_run"] is True, out
    assert out["would_remove"] == [ZAATAR]
    assert {MOVED, FERMENTATION, IRRIGATION, NOTES} <= set(out["would_change"])
    code, out = cli("forget", forest, FERMENTATION, "--recursive", "--dry-run")
    assert code == 0, out
    assert out["would_remove"] == [FERMENTATION, KIMCHI, ZAATAR]
    assert out["dangling"] == [{"path": NOTES, "target": ZAATAR}]
    assert state(forest) == before
    assert not list((forest / ".memory-forest/receipts").glob("*.json"))


def test_forget_removes_a_leaf_records_it_and_lists_dangling_links(forest):
    hand_note(forest)
    old = (forest / ZAATAR).read_bytes()
    code, out = cli("forget", forest, "stm-zaatar-blend")
    assert code == 0, out
    assert out["removed"] == [{"path": ZAATAR, "id": "stm-zaatar-blend",
                               "sha256": sha256_hex(old)}]
    assert out["tidied"] == FERMENTATION and out["dangling"] == [{"path": NOTES,
                                                                  "target": ZAATAR}]
    assert not (forest / ZAATAR).exists()
    assert "zaatar-blend" not in text(forest, FERMENTATION)
    logged = [r for r in istm_records(forest) if r["event_id"] == out["event_id"]][0]
    assert logged["kind"] == "forget" and logged["payload"]["removed"] == out["removed"]
    shard = b"".join(data for path, data in contents(forest).items()
                     if path.startswith("06 istm/"))
    assert b"sumac" in old and b"sumac" not in shard  # the text is never recorded
    code, found = cli("search", forest, "sumac")
    assert found["count"] == 0
    # The note's link dangles: a warning; the note stays indexed and found.
    code, indexed = cli("index", forest)
    assert code == 0 and [(p["path"], p["code"], p["level"]) for p in indexed["problems"]] == \
        [(NOTES, "link_unresolved", "warning")]
    code, found = cli("route", forest, "greenhouse notes")
    assert NOTES in [hit["path"] for hit in found["results"]]
    again_code, again = cli("forget", forest, ZAATAR)
    assert (again_code, again["error"]["code"]) == (1, "document_missing")


def test_forget_retried_with_its_transaction_id_answers_from_the_receipt(forest):
    args = ("forget", forest, ZAATAR, "--transaction-id", "tx-forget-once")
    code, first = cli(*args)
    assert code == 0 and first["already_applied"] is False
    code, again = cli(*args)
    assert code == 0 and again["already_applied"] is True and again["removed"] == first["removed"]


def test_forget_a_branch_needs_recursive_then_takes_everything_under_it(forest):
    before = state(forest)
    code, out = cli("forget", forest, FERMENTATION)
    assert (code, out["error"]["code"]) == (1, "forget_not_empty")
    assert out["error"]["details"]["documents"] == 2 and "--recursive" in out["error"]["message"]
    assert state(forest) == before
    code, out = cli("forget", forest, "02 ltm/kitchen_LTM", "--recursive")
    assert code == 0, out
    assert [item["path"] for item in out["removed"]] == [
        "02 ltm/kitchen_LTM.md", FERMENTATION, KIMCHI, ZAATAR]
    assert out["tidied"] == "01 xltm/XLTM.md" and "kitchen_LTM" not in text(forest,
                                                                          "01 xltm/XLTM.md")
    # The folders it emptied go too.
    assert not (forest / "03 mtm/kitchen").exists() and not (forest / "04 stm/kitchen").exists()
    assert_whole(forest)


@pytest.mark.parametrize("source", ["01 xltm/XLTM.md", "05 daily/2026-11-28.md",
                                    "00 life_archive/2025-first-greenhouse-season.md"])
def test_forget_keeps_the_root_map_and_the_records_of_what_happened(forest, source):
    before = state(forest)
    code, out = cli("forget", forest, source, "--recursive")
    assert (code, out["error"]["code"]) == (1, "forget_layer_unsupported")
    assert state(forest) == before


def test_a_leaf_deleted_by_hand_leaves_its_parent_indexed_and_forget_tidies_it(forest):
    (forest / ZAATAR).unlink()
    code, indexed = cli("index", forest)
    assert code == 0
    [problem] = indexed["problems"]
    assert (problem["path"], problem["code"], problem["level"]) == \
        (FERMENTATION, "link_child_missing", "warning")
    assert "memory-forest forget" in problem["message"]
    code, found = cli("retrieve", forest, "kimchi batch")
    trail = found["trails"][0]
    assert trail["complete"] is True and trail["nodes"][-2]["path"] == FERMENTATION
    # A write into the same branch is not blocked by the line it did not write.
    code, out = cli("remember", forest, "--tree", "kitchen", "--branch", "fermentation",
                    "--leaf", "miso", "--content", "Miso started in the cellar.")
    assert code == 0, out
    code, out = cli("forget", forest, ZAATAR)
    assert code == 0, out
    assert out["removed"] == [] and out["tidied"] == FERMENTATION
    assert "zaatar-blend" not in text(forest, FERMENTATION)
    assert_whole(forest)


def test_a_person_reads_what_moved_what_went_and_what_dangles(forest):
    hand_note(forest)
    dry = run_cli("move", forest, ZAATAR, "--to", "greenhouse/irrigation", "--dry-run")
    assert dry.code == 0 and "move dry run: nothing written" in dry.stdout, dry.stderr
    assert f"would move {ZAATAR} -> {MOVED} (id stm-zaatar-blend)" in dry.stdout
    moved = run_cli("move", forest, ZAATAR, "--to", "greenhouse/irrigation")
    assert moved.code == 0, moved.stderr
    assert f"  - {ZAATAR}\n" in moved.stdout and f"  + {MOVED}\n" in moved.stdout
    gone = run_cli("forget", forest, MOVED)
    assert gone.code == 0, gone.stderr
    assert f"removed {MOVED} (id stm-zaatar-blend)" in gone.stdout
    assert f"dangling link in {NOTES} to {MOVED}" in gone.stdout
    refused = run_cli("forget", forest, FERMENTATION)
    assert refused.code == 1 and "forget_not_empty" in refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr


# --- crashes -----------------------------------------------------------------------------------

STEPS = ["staged", "journaled", "writing", "writing:3", "written", "indexed", "receipted"]
ROLLED_BACK = {"staged", "journaled", "writing", "writing:3"}
RUNS = {"move": ("move", ZAATAR, "--to", "greenhouse/irrigation"),
        "move-branch": ("move", FERMENTATION, "--to", "greenhouse"),
        "forget": ("forget", FERMENTATION, "--recursive")}


def manifest(root: Path) -> dict:
    return json.loads((root / ".memory-forest/journal/manifest.json").read_text())


@pytest.mark.parametrize("operation", sorted(RUNS))
@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_each_step_recovers_to_before_or_after(forest, operation, step):
    command, *args = RUNS[operation]
    before = state(forest)
    killed, _ = cli(command, forest, *args, crash=step)
    assert killed == -signal.SIGKILL
    pending = manifest(forest) if (forest / ".memory-forest/journal/manifest.json").exists() \
        else None
    code, repaired = cli("doctor", forest, "--repair")
    assert code == 0, repaired
    files = {path: data for path, (data, _, _) in state(forest).items() if not path.endswith("/")}
    if step in ROLLED_BACK:
        assert state(forest) == before, f"not the before state after a crash at {step}"
    else:
        assert pending is not None and pending["state"] == "written"
        for entry in pending["entries"]:
            if entry["after"] is None:
                assert entry["path"] not in files
            else:
                assert sha256_hex(files[entry["path"]]) == entry["after"]["sha256"]
        untouched = {p for p in before if p not in {e["path"] for e in pending["entries"]}
                     and not p.endswith("/")}
        assert {p: files[p] for p in untouched} == {p: before[p][0] for p in untouched}
    assert_whole(forest)


def test_the_next_writer_finishes_a_killed_move(forest):
    assert cli("move", forest, ZAATAR, "--to", "greenhouse/irrigation", crash="written")[0] \
        == -signal.SIGKILL
    code, unlocked = cli("unlock", forest, "--stale")
    assert code == 0, unlocked
    code, out = cli("forget", forest, KIMCHI)
    assert code == 0 and out["recovered"]["action"] == "rolled_forward", out
    assert (forest / MOVED).exists() and not (forest / ZAATAR).exists()
    assert "zaatar-blend" in text(forest, IRRIGATION)
    assert_whole(forest)


@pytest.mark.parametrize("older", [False, True], ids=["entry-files", "manifest-text"])
def test_a_torn_move_journal_is_restored_with_the_removed_leaf_back(forest, older):
    before = state(forest)
    assert cli("move", forest, ZAATAR, "--to", "greenhouse/irrigation", crash="written")[0] \
        == -signal.SIGKILL
    assert cli("unlock", forest, "--stale")[0] == 0
    journal = forest / ".memory-forest/journal"
    raw = (journal / "manifest.json").read_bytes()
    if older:  # a journal from before entry files: read from the manifest's text
        for entry in journal.glob("entry-*.json"):
            entry.unlink()
        (journal / "manifest.json").write_bytes(raw[:-40])
    else:
        (journal / "manifest.json").write_bytes(raw[:10])
    code, done = cli("doctor", forest, "--repair", "--restore-journal")
    assert code == 0, done
    assert ZAATAR in done["repair"]["journal"]["restored"]
    assert state(forest) == before
    assert_whole(forest)


def test_an_entry_that_lost_its_after_image_is_damage_not_a_removal(forest):
    assert cli("move", forest, ZAATAR, "--to", "greenhouse/irrigation", crash="written")[0] \
        == -signal.SIGKILL
    path = forest / ".memory-forest/journal/manifest.json"
    manifest = json.loads(path.read_text())
    [entry] = [e for e in manifest["entries"] if e["path"] == IRRIGATION]
    del entry["after"]
    path.write_text(json.dumps(manifest))
    kept = (forest / IRRIGATION).read_bytes()
    code, out = cli("doctor", forest, "--repair")
    assert (code, out["error"]["code"]) == (1, "journal_corrupt"), out
    assert (forest / IRRIGATION).read_bytes() == kept

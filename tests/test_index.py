"""The derived index: what it stores, how it is built, and what it never does."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from forestkit import (
    INDEX,
    RandomForest,
    canonical_files,
    canonical_state,
    index_rows,
    mode_of,
    new_forest,
    quarantine_rows,
    set_meta,
    write_file,
)

from memory_forest import operations, retrieve
from memory_forest.errors import ForestError
from memory_forest.store.schema import INDEX_SCHEMA_VERSION


def _index_files(root: Path) -> list[str]:
    return sorted(os.listdir(root / ".memory-forest"))


# --- what a build writes --------------------------------------------------------------------


def test_full_build_is_private_and_versioned(tmp_path):
    root = new_forest(tmp_path, example=True)
    outcome = operations.index(root)
    assert outcome["ok"] and outcome["mode"] == "full"
    assert outcome["documents"] == outcome["added"] == 12
    assert mode_of(root / INDEX) == 0o600
    assert mode_of(root / ".memory-forest") == 0o700
    # No temporary file or journal is left beside the index.
    assert _index_files(root) == ["forest.json", "index.sqlite3"]
    con = sqlite3.connect(root / INDEX)
    version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    con.close()
    assert version == (str(INDEX_SCHEMA_VERSION),)


def test_every_document_is_recorded_with_its_route(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    docs, terms = index_rows(root)
    by_path = {row[0]: row for row in docs}
    assert set(by_path) == set(canonical_files(root))
    leaf = by_path["04 stm/kitchen/fermentation/kimchi-batch-7.md"]
    (path, layer, number, tree, branch, name, parent, doc_id, title, status, sha, size,
     mtime_ns, _facts) = leaf
    assert (layer, number, tree, branch, name) == ("04 stm", 4, "kitchen", "fermentation",
                                                    "kimchi-batch-7")
    assert parent == "03 mtm/kitchen/fermentation.md"
    assert (doc_id, title, status) == ("stm-kimchi-batch-7", "Kimchi batch 7", "active")
    data = (root / path).read_bytes()
    assert sha == hashlib.sha256(data).hexdigest() and size == len(data)
    assert mtime_ns == os.stat(root / path).st_mtime_ns
    assert by_path["01 xltm/XLTM.md"][6] is None  # the root map has no parent
    assert len(terms) == len(docs)


def test_incremental_after_no_change_reads_nothing_new(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    again = operations.index(root)
    assert again["mode"] == "incremental"
    assert (again["added"], again["changed"], again["deleted"]) == (0, 0, 0)
    assert again["unchanged"] == again["documents"] == 12
    assert mode_of(root / INDEX) == 0o600
    assert _index_files(root) == ["forest.json", "index.sqlite3"]


# --- incremental equals full ----------------------------------------------------------------


def _expected_counts(before: dict, after: dict, broken_before: set[str] = frozenset(),
                     broken_after: set[str] = frozenset()) -> dict[str, int]:
    """What an incremental build must report, over the files that were and are indexable."""
    before = {rel: data for rel, (data, _, _) in before.items() if rel not in broken_before}
    after = {rel: data for rel, (data, _, _) in after.items() if rel not in broken_after}
    both = set(before) & set(after)
    changed = sum(1 for rel in both if before[rel] != after[rel])
    return {"added": len(set(after) - set(before)), "deleted": len(set(before) - set(after)),
            "changed": changed, "unchanged": len(both) - changed}


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_incremental_index_equals_a_full_rebuild(tmp_path, seed):
    """Edits that break files (bad YAML, a lateral link) and edits that fix them again:
    the incremental index quarantines and restores exactly what a full rebuild does."""
    forest = RandomForest(new_forest(tmp_path), random.Random(seed))
    forest.populate()
    assert 30 <= len(forest.docs) <= 60
    assert operations.validate(forest.root)["ok"] and operations.audit(forest.root)["ok"]
    assert operations.index(forest.root)["mode"] == "full"
    seen_broken = False
    for round_number in range(4):
        before, broken_before = canonical_files(forest.root), set(forest.broken)
        forest.mutate(count=forest.rng.randint(3, 12), breaking=True)
        after = canonical_files(forest.root)
        seen_broken = seen_broken or bool(forest.broken)
        outcome = operations.index(forest.root)
        assert outcome["mode"] == "incremental"
        counts = {key: outcome[key] for key in ("added", "deleted", "changed", "unchanged")}
        assert counts == _expected_counts(before, after, broken_before, forest.broken), \
            f"round {round_number}"
        assert outcome["quarantined"] == len(forest.broken)
        assert {p["path"] for p in outcome["problems"] if p["level"] == "error"} == forest.broken

        fresh = tmp_path / f"fresh-{round_number}"
        shutil.copytree(forest.root, fresh)
        full = operations.index(fresh, full=True)
        assert full["mode"] == "full"
        assert full["problems"] == outcome["problems"]
        assert index_rows(forest.root) == index_rows(fresh)
        assert quarantine_rows(forest.root) == quarantine_rows(fresh)
        assert operations.doctor(forest.root)["index"]["state"] == "current"
        for query in ("tomato pressure", "ferment jar", "Leaf"):
            assert retrieve.retrieve(forest.root, query) == retrieve.retrieve(fresh, query)
    assert seen_broken


def test_same_size_edit_inside_the_racy_window_is_seen(tmp_path):
    """An edit that keeps the size and the mtime is caught by re-hashing recent files."""
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    rel = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    path = root / rel
    st = os.stat(path)
    data = path.read_bytes().replace(b"sour enough", b"SOUR ENOUGH")
    assert len(data) == st.st_size
    write_file(root, rel, data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    outcome = operations.index(root)
    assert outcome["changed"] == 1
    docs, _ = index_rows(root)
    assert {row[0]: row[10] for row in docs}[rel] == hashlib.sha256(data).hexdigest()


def test_old_files_are_reused_by_size_and_mtime_and_retrieve_still_fails_closed(tmp_path):
    """Old files with the same size and mtime are not re-read (the fast path), so an edit
    that forges both goes unseen by ``index``; ``retrieve`` re-hashes and flags it, and
    refuses it with ``strict``."""
    forest = RandomForest(new_forest(tmp_path), random.Random(7))
    forest.populate(trees=1, branches=1, leaves=2)
    operations.index(forest.root)
    rel = forest.of_layer("04 stm/")[0]
    path = forest.root / rel
    st = os.stat(path)
    data = path.read_bytes()
    forged = data.replace(b"Leaf", b"LEAF", 1)
    assert forged != data and len(forged) == len(data)
    write_file(forest.root, rel, forged)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    outcome = operations.index(forest.root)
    assert outcome["unchanged"] == outcome["documents"] == len(forest.docs)
    title = forest.docs[rel].title
    flagged = [node for trail in retrieve.retrieve(forest.root, title)["trails"]
               for node in trail["nodes"] if node["path"] == rel]
    assert flagged and all(node["changed_since_index"] for node in flagged)
    with pytest.raises(ForestError) as caught:
        retrieve.retrieve(forest.root, title, strict=True)
    assert caught.value.code == "index_stale"
    assert caught.value.details == {"path": rel}
    operations.index(forest.root, full=True)
    assert retrieve.retrieve(forest.root, title)["count"] >= 1


# --- failure modes --------------------------------------------------------------------------


def test_held_lock_makes_index_fail_at_once(tmp_path):
    root = new_forest(tmp_path, example=True)
    lock = tmp_path / "forest.maintenance.lock"
    os.mkdir(lock, 0o700)
    with pytest.raises(ForestError) as caught:  # how fast: scripts/bench_fail_fast.py
        operations.index(root, wait=0)
    assert caught.value.code == "lock_held", caught.value.details
    assert lock.is_dir()  # another writer's lock is never removed
    assert not (root / INDEX).exists()


def test_index_releases_its_lock(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    operations.index(root, full=True)
    assert not (tmp_path / "forest.maintenance.lock").exists()


@pytest.mark.parametrize("full", [False, True])
def test_a_forest_level_fault_leaves_the_previous_index_untouched(tmp_path, full):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    previous = (root / INDEX).read_bytes()
    shutil.rmtree(root / "05 daily")  # a missing layer: no quarantine routes around it
    with pytest.raises(ForestError) as caught:
        operations.index(root, full=full)
    assert caught.value.code == "layer_missing"
    assert [issue["path"] for issue in caught.value.details["issues"]] == ["05 daily"]
    assert (root / INDEX).read_bytes() == previous
    assert _index_files(root) == ["forest.json", "index.sqlite3"]
    assert not (tmp_path / "forest.maintenance.lock").exists()


ORPHAN = "04 stm/kitchen/fermentation/orphan.md"
BAD_YAML = "04 stm/kitchen/fermentation/bad-yaml.md"
KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
BRANCH = "03 mtm/kitchen/fermentation.md"


@pytest.mark.parametrize("full", [False, True])
def test_an_unreadable_document_is_left_out_and_a_link_problem_is_indexed(tmp_path, full):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    write_file(root, ORPHAN, b"---\ntitle: Orphan\n---\n# Orphan\n\nNo parent link.\n")
    write_file(root, BAD_YAML, b"---\ntitle: [unclosed\n---\n# Bad\n\nSauerkraut notes.\n")
    outcome = operations.index(root, full=full)
    assert outcome["ok"] and outcome["quarantined"] == 1
    graded = {(p["path"], p["code"], p["level"]) for p in outcome["problems"]}
    assert (ORPHAN, "link_parent_missing", "warning") in graded
    assert {path for path, _, level in graded if level == "error"} == {BAD_YAML}
    assert set(outcome["problems"][0]) == {"path", "code", "message", "level"}
    indexed = {row[0] for row in index_rows(root)[0]}
    assert {KIMCHI, ORPHAN} <= indexed and BAD_YAML not in indexed
    assert outcome["documents"] == len(indexed) == 13
    assert [row[0] for row in quarantine_rows(root)] == [BAD_YAML]
    assert operations.doctor(root)["index"] == {"state": "current", "documents": 13,
                                                "quarantined": 1}
    assert retrieve.retrieve(root, "kimchi")["count"] == 1
    # Its owner comes from its path: the note without an 'Up:' line ends a complete trail.
    [trail] = retrieve.retrieve(root, "orphan parent link")["trails"]
    assert trail["complete"] and trail["nodes"][-1]["path"] == ORPHAN
    found = retrieve.retrieve(root, "sauerkraut")
    assert found["count"] == 0
    assert found["left_out"] == [{"path": BAD_YAML, "code": "frontmatter_invalid"}]
    assert not operations.validate(root)["ok"]  # the strict checks still fail
    strict = operations.audit(root)
    assert not strict["ok"]
    assert {(i["path"], i["code"]) for i in strict["issues"] if i["level"] == "error"} >= {
        (ORPHAN, "link_parent_missing"), (BAD_YAML, "frontmatter_invalid")}


@pytest.mark.parametrize("full", [False, True])
def test_a_file_too_large_to_read_is_named_by_the_words_of_its_name(tmp_path, full):
    root = new_forest(tmp_path, example=True)
    config = root / ".memory-forest/forest.json"
    settings = json.loads(config.read_bytes())
    write_file(root, ".memory-forest/forest.json",
               json.dumps({**settings, "limits": {"max_file_bytes": 4096}}).encode())
    operations.index(root)
    big = "04 stm/kitchen/fermentation/habanero-gloves.md"
    write_file(root, big, b"# Gloves\n\n" + b"nitrile quokka " * 600)
    outcome = operations.index(root, full=full)
    assert outcome["quarantined"] == 1
    assert (big, "file_too_large") in {(p["path"], p["code"]) for p in outcome["problems"]}
    # Never read: its name is what it is found by, not its text.
    assert retrieve.retrieve(root, "habanero gloves")["left_out"] == [
        {"path": big, "code": "file_too_large"}]
    assert retrieve.retrieve(root, "nitrile quokka")["left_out"] == []
    write_file(root, big, b"# Gloves\n\nUp: [[03 mtm/kitchen/fermentation]]\n\nNitrile.\n")
    operations.index(root, full=full)
    found = retrieve.retrieve(root, "habanero gloves")
    assert found["left_out"] == [] and found["trails"][0]["nodes"][-1]["path"] == big


def test_a_link_problem_keeps_a_document_indexed_and_its_fix_clears_the_warning(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    good = (root / BRANCH).read_bytes()
    write_file(root, BRANCH, good + b"\nSee also [[03 mtm/greenhouse/irrigation]]\n")
    outcome = operations.index(root)
    assert outcome["changed"] == 1 and outcome["quarantined"] == 0
    assert [(p["path"], p["code"], p["level"]) for p in outcome["problems"]] == [
        (BRANCH, "link_lateral", "warning")]
    indexed = {row[0] for row in index_rows(root)[0]}
    assert {BRANCH, KIMCHI} <= indexed
    [trail] = retrieve.retrieve(root, "kimchi")["trails"]
    assert trail["complete"] and BRANCH in {node["path"] for node in trail["nodes"]}
    # The lateral link is kept as a plain link, never an ownership edge.
    assert {"parent": BRANCH, "child": KIMCHI} in trail["canonical_parent_child"]
    assert all(edge["parent"] != "03 mtm/greenhouse/irrigation.md"
               for edge in trail["canonical_parent_child"])
    # The strict audit fails the branch, and none of the children below it.
    assert {issue["path"] for issue in operations.audit(root)["issues"]} == {BRANCH}
    write_file(root, BRANCH, good)
    fixed = operations.index(root)
    assert fixed["changed"] == 1 and fixed["quarantined"] == 0 and fixed["problems"] == []
    assert quarantine_rows(root) == []


def test_index_never_changes_a_canonical_byte(tmp_path):
    forest = RandomForest(new_forest(tmp_path), random.Random(11))
    forest.populate(trees=2, branches=2, leaves=3)
    before = canonical_state(forest.root)
    operations.index(forest.root)
    operations.index(forest.root)
    operations.index(forest.root, full=True)
    assert canonical_state(forest.root) == before


# --- schema version -------------------------------------------------------------------------


def test_schema_mismatch_fails_every_reader_and_index_rebuilds(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    set_meta(root, "schema_version", "999")
    calls = {
        "route": lambda: retrieve.route(root, "kimchi"),
        "search": lambda: retrieve.search(root, "kimchi"),
        "retrieve": lambda: retrieve.retrieve(root, "kimchi"),
    }
    for name, call in calls.items():
        with pytest.raises(ForestError) as caught:
            call()
        assert caught.value.code == "index_schema_mismatch", name
        assert "memory-forest index ROOT" in caught.value.message, name
        assert caught.value.details == {"found": "999", "expected": INDEX_SCHEMA_VERSION}
    outcome = operations.index(root)  # a plain index starts over and says why
    assert (outcome["mode"], outcome["rebuilt"]) == ("full", "schema_mismatch")
    assert retrieve.route(root, "kimchi")["count"] == 1
    assert "rebuilt" not in operations.index(root)


def test_index_without_a_version_is_a_mismatch(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    con = sqlite3.connect(root / INDEX)
    with con:
        con.execute("DROP TABLE meta")
    con.close()
    with pytest.raises(ForestError) as caught:
        retrieve.route(root, "kimchi")
    assert caught.value.code == "index_schema_mismatch"


def test_unreadable_index_is_reported_not_raised(tmp_path):
    root = new_forest(tmp_path, example=True)
    write_file(root, str(INDEX), b"this is not a database" * 100)
    with pytest.raises(ForestError) as caught:
        retrieve.retrieve(root, "kimchi")
    assert caught.value.code == "index_corrupt"
    assert "memory-forest index ROOT" in caught.value.message
    outcome = operations.index(root)
    assert (outcome["mode"], outcome["rebuilt"]) == ("full", "index_corrupt")
    assert retrieve.retrieve(root, "kimchi")["count"] == 1


def test_missing_index_has_its_own_code(tmp_path):
    root = new_forest(tmp_path, example=True)
    with pytest.raises(ForestError) as caught:
        retrieve.search(root, "kimchi")
    assert caught.value.code == "index_missing"


# --- doctor ---------------------------------------------------------------------------------


def test_doctor_reports_absent_current_and_stale(tmp_path):
    root = new_forest(tmp_path, example=True)
    assert operations.doctor(root)["index"] == {"state": "absent"}
    operations.index(root)
    assert operations.doctor(root)["index"] == {"state": "current", "documents": 12,
                                                "quarantined": 0}
    leaf = root / "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    write_file(root, "04 stm/kitchen/fermentation/kimchi-batch-7.md",
               leaf.read_bytes() + b"\nDay 14: ready.\n")
    (root / "04 stm/greenhouse/irrigation/tomato-leaf-spots.md").unlink()
    report = operations.doctor(root)["index"]
    assert report == {"state": "stale", "changed": 1, "deleted": 1, "documents": 12,
                      "quarantined": 0}
    set_meta(root, "schema_version", "0")
    assert operations.doctor(root)["index"] == {"state": "invalid",
                                                "code": "index_schema_mismatch"}

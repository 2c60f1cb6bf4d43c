"""Ordinary use never blocks: debris is ignored, wide modes are repairable, one broken
file is that file's problem. Through the real CLI, on a real forest."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
from conftest import run_cli
from forestkit import index_rows, write_file

from memory_forest import operations
from memory_forest.config import DEFAULT_LIMITS
from memory_forest.ignore import is_debris
from memory_forest.safety import walk, write_private

KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
BRANCH_DIR = "04 stm/kitchen/fermentation"

# One of each kind an editor or an OS leaves beside a note.
DEBRIS = (".x.md.swp", ".x.md.swo", "x.md~", "#x.md#", ".DS_Store", "Thumbs.db",
          "desktop.ini", "x.md.tmp", ".~lock.x.md#")
LAYER_DIRS = ("00 life_archive", "01 xltm", "02 ltm", "03 mtm", "03 mtm/kitchen", "04 stm",
              "04 stm/kitchen", BRANCH_DIR, "05 daily", "06 istm", ".")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def scatter_debris(root: Path) -> int:
    """Debris in every layer, at every depth; the Emacs lock is a dangling symlink, as
    Emacs makes it. Returns how many entries were made."""
    made = 0
    for folder in LAYER_DIRS:
        for name in DEBRIS:
            path = root / folder / name
            path.write_bytes(b"\x00 not markdown, not UTF-8: \xff\n")
            os.chmod(path, 0o644)  # wide, too: debris is never even looked at
            made += 1
        os.symlink("/nonexistent/user@host.1234", root / folder / ".#x.md")
        made += 1
    return made


# --- debris --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*DEBRIS, ".#x.md", "THUMBS.DB", "notes.md~"])
def test_debris_names(name):
    assert is_debris(name)


@pytest.mark.parametrize("name", ["x.md", "kimchi.md", "events.jsonl", "#", "a#b.md",
                                  "swp.md", ".swp", "tmp.md", "XLTM.md", "x.md.bak"])
def test_ordinary_names_are_not_debris(name):
    assert not is_debris(name)


def test_debris_in_every_layer_is_ignored_everywhere(example_forest, tmp_path):
    root = example_forest
    made = scatter_debris(root)
    for command in ("validate", "audit"):
        result = run_cli("--json", command, root)
        assert result.code == 0, result.stdout
        assert result.json()["issues"] == []
    indexed = run_cli("--json", "index", root)
    assert indexed.code == 0 and indexed.json()["problems"] == []
    assert indexed.json()["documents"] == 12
    maintained = run_cli("--json", "maintain", root, "--verify-all")
    assert maintained.code == 0 and maintained.json()["ok"], maintained.stdout
    doctor = run_cli("--json", "doctor", root).json()
    assert doctor["walk"]["ignored"] == made and doctor["walk"]["issues"] == 0
    assert doctor["index"]["state"] == "current"
    browsed = run_cli("--json", "browse", root, "--out", tmp_path / "site")
    assert browsed.code == 0, browsed.stdout + browsed.stderr
    assert browsed.json()["issues"] == {"errors": 0, "warnings": 0}
    # A writer lists the branch folder with the debris in it and does not stumble.
    remembered = run_cli("--json", "remember", root, "--tree", "kitchen", "--branch",
                         "fermentation", "--leaf", "miso", "--title", "Miso",
                         "--content", "Miso needs six months.")
    assert remembered.code == 0, remembered.stdout + remembered.stderr
    assert (root / BRANCH_DIR / ".x.md.swp").read_bytes().startswith(b"\x00")  # untouched
    assert mode(root / BRANCH_DIR / ".x.md.swp") == 0o644


def test_the_walk_never_looks_behind_a_debris_name(tmp_path):
    root = tmp_path / "r"
    os.mkdir(root, 0o700)
    os.mkfifo(root / "x.tmp")  # a FIFO: stat'ing is fine, opening would block
    os.symlink("/etc/passwd", root / "notes.md~")
    listing = walk(root, {"max_dirs": 10, "max_depth": 5, "max_files": 10,
                          "max_total_bytes": 10, "max_file_bytes": 10})
    assert (listing.files, listing.issues, listing.ignored) == ([], [], 2)


def test_derived_state_never_counts_against_the_forest_byte_limit(example, tmp_path):
    """At 200,000 documents with vectors the state directory holds gigabytes; the limit
    guards memory, so a big index (here, beside a small limit) never fails the next build."""
    config = json.loads((example / ".memory-forest" / "forest.json").read_text())
    index_bytes = (example / ".memory-forest" / "index.sqlite3").stat().st_size
    canonical = walk(example, DEFAULT_LIMITS).total_bytes
    assert canonical < index_bytes  # not vacuous: the index alone would cross the limit
    config["limits"] = {"max_total_bytes": canonical + index_bytes // 2}
    write_private(example / ".memory-forest" / "forest.json", json.dumps(config).encode())
    assert operations.index(example)["problems"] == []
    assert operations.status(example)["ready"]


# --- modes ---------------------------------------------------------------------------------


def test_a_wide_mode_is_a_warning_for_index_an_error_for_validate_and_repair_fixes_it(
        example_forest, tmp_path):
    root = example_forest
    os.chmod(root / KIMCHI, 0o644)
    os.chmod(root / BRANCH_DIR, 0o755)
    outside = tmp_path / "outside.md"
    outside.write_text("not ours\n", encoding="utf-8")
    os.chmod(outside, 0o644)
    os.symlink(outside, root / "04 stm/kitchen/link.md")  # never followed, never chmod'ed

    indexed = run_cli("--json", "index", root)
    assert indexed.code == 0
    warnings = {(p["path"], p["code"]) for p in indexed.json()["problems"]
                if p["level"] == "warning"}
    assert warnings == {(KIMCHI, "mode_file_not_private"), (BRANCH_DIR, "mode_dir_not_private")}
    assert KIMCHI in {row[0] for row in index_rows(root)[0]}
    assert run_cli("validate", root).code == 1

    repaired = run_cli("--json", "doctor", root, "--repair")
    assert repaired.code == 0, repaired.stdout + repaired.stderr
    assert repaired.json()["repair"]["modes"] == [
        {"path": BRANCH_DIR, "was": "0755", "now": "0700"},
        {"path": KIMCHI, "was": "0644", "now": "0600"}]
    assert mode(root / KIMCHI) == 0o600 and mode(root / BRANCH_DIR) == 0o700
    assert mode(outside) == 0o644
    os.unlink(root / "04 stm/kitchen/link.md")
    assert run_cli("validate", root).code == 0
    again = run_cli("--json", "doctor", root, "--repair").json()["repair"]
    assert again["modes"] == [] and again["modes_failed"] == []


def test_repair_covers_the_root_and_the_state_directory(example_forest):
    root = example_forest
    os.chmod(root, 0o755)
    os.chmod(root / ".memory-forest", 0o750)
    os.chmod(root / ".memory-forest/forest.json", 0o644)
    human = run_cli("doctor", root, "--repair")
    assert human.code == 0
    assert "repair: journal none, 3 mode(s) restored" in human.stdout
    assert ".memory-forest/forest.json: 0644 -> 0600" in human.stdout
    assert (mode(root), mode(root / ".memory-forest")) == (0o700, 0o700)
    assert mode(root / ".memory-forest/forest.json") == 0o600


# --- quarantine through the CLI -------------------------------------------------------------


def test_human_index_lists_each_problem_and_what_was_left_out(example_forest):
    root = example_forest
    write_file(root, "04 stm/kitchen/fermentation/bad.md", b"---\ntitle: [oops\n---\n# Bad\n")
    leaf = root / KIMCHI
    write_file(root, KIMCHI, leaf.read_bytes() + b"\nSee [[04 stm/kitchen/fermentation/bad]]\n")
    done = run_cli("index", root)
    assert done.code == 0, done.stdout + done.stderr
    assert "error  04 stm/kitchen/fermentation/bad.md  frontmatter_invalid  " in done.stdout
    assert f"warning  {KIMCHI}  link_lateral  line" in done.stdout  # indexed all the same
    assert "1 document(s) left out of the index" in done.stdout
    status = run_cli("--json", "status", root).json()
    assert status["ready"] is True and status["index"]["quarantined"] == 1
    assert "1 document(s) are left out" in status["next_step"]


def test_maintain_with_problems_exits_3_and_says_how_many(example_forest):
    root = example_forest
    write_file(root, "04 stm/kitchen/fermentation/bad.md", b"---\ntitle: [oops\n---\n# Bad\n")
    as_json = run_cli("--json", "maintain", root)
    assert as_json.code == 3
    outcome = as_json.json()
    assert outcome["error"]["code"] == "maintain_problems" and outcome["quarantined"] == 1
    human = run_cli("maintain", root)
    assert human.code == 3
    assert "error  04 stm/kitchen/fermentation/bad.md  frontmatter_invalid  " in human.stdout
    assert "1 document(s) left out of the index" in human.stdout
    assert "[maintain_problems]" in human.stderr and "Traceback" not in human.stderr


def test_a_missing_config_is_a_warning_and_indexing_goes_on(example_forest):
    os.unlink(example_forest / ".memory-forest/forest.json")
    done = run_cli("--json", "index", example_forest)
    assert done.code == 0
    assert [(p["code"], p["level"]) for p in done.json()["problems"]] == [
        ("config_missing", "warning")]


def test_a_missing_layer_blocks_with_its_own_code(example_forest):
    shutil.rmtree(example_forest / "06 istm")
    done = run_cli("--json", "index", example_forest)
    assert done.code == 1
    error = done.json()["error"]
    assert error["code"] == "layer_missing"
    assert error["details"]["issues"][0]["path"] == "06 istm"


def test_a_symlinked_parent_is_quarantined_and_its_children_are_not(example_forest, tmp_path):
    root = example_forest
    branch = root / "03 mtm/kitchen/fermentation.md"
    outside = tmp_path / "fermentation.md"
    outside.write_bytes(branch.read_bytes())
    branch.unlink()
    branch.symlink_to(outside)
    indexed = run_cli("--json", "index", root)
    assert indexed.code == 0
    outcome = indexed.json()
    assert [(p["path"], p["code"]) for p in outcome["problems"]] == [
        ("03 mtm/kitchen/fermentation.md", "symlink")]
    assert outcome["quarantined"] == 1 and outcome["documents"] == 11
    assert KIMCHI in {row[0] for row in index_rows(root)[0]}
    audited = run_cli("--json", "audit", root).json()
    assert {issue["path"] for issue in audited["issues"]} == {"03 mtm/kitchen/fermentation.md"}


def test_an_index_of_an_older_schema_is_rebuilt_and_says_why(example_forest):
    """An index from before the problem list was kept: 'index' rebuilds it in full, once."""
    root = example_forest
    assert run_cli("index", root).code == 0
    con = sqlite3.connect(root / ".memory-forest/index.sqlite3")
    with con:
        con.execute("DROP TABLE problems")
        con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    con.close()
    assert run_cli("--json", "doctor", root).json()["index"]["state"] == "invalid"
    write_file(root, "04 stm/kitchen/fermentation/bad.md", b"---\ntitle: [oops\n---\n# Bad\n")
    done = run_cli("--json", "index", root)
    assert done.code == 0, done.stdout
    assert (done.json()["mode"], done.json()["rebuilt"]) == ("full", "schema_mismatch")
    assert done.json()["quarantined"] == 1
    again = run_cli("--json", "index", root).json()
    assert (again["mode"], again["quarantined"]) == ("incremental", 1)
    index = run_cli("--json", "doctor", root).json()["index"]
    assert (index["state"], index["quarantined"]) == ("current", 1)


def test_a_lateral_link_is_indexed_and_broken_yaml_left_out_while_the_rest_retrieves(
        example_forest):
    """The two everyday breakages, through the real CLI: index builds, the branch with a
    lateral link stays on its trails, the file that cannot be read is named as left out."""
    root = example_forest
    branch = root / "03 mtm/kitchen/fermentation.md"
    branch.write_text(branch.read_text() + "\nSee also [[03 mtm/greenhouse/irrigation]].\n")
    spots = root / "04 stm/greenhouse/irrigation/tomato-leaf-spots.md"
    spots.write_text("---\ntitle: [unclosed\n---\n" + spots.read_text().split("---\n", 2)[-1])

    built = run_cli("index", root, "--json")
    assert built.code == 0, built.stderr
    graded = {(p["path"], p["code"], p["level"]) for p in built.json()["problems"]}
    assert {(path, code) for path, code, level in graded if level == "error"} == {
        ("04 stm/greenhouse/irrigation/tomato-leaf-spots.md", "frontmatter_invalid")}
    assert ("03 mtm/kitchen/fermentation.md", "link_lateral", "warning") in graded
    assert built.json()["quarantined"] == 1

    found = run_cli("retrieve", root, "kimchi ripening temperature", "--json")
    assert found.code == 0, found.stderr
    trail = found.json()["trails"][0]
    chain = ["01 xltm/XLTM.md", "02 ltm/kitchen_LTM.md", "03 mtm/kitchen/fermentation.md",
             KIMCHI]
    assert [n["path"] for n in trail["nodes"]] == chain
    assert trail["complete"] is True and trail["missing"] == []
    # Ownership comes from the paths: the lateral link claims no edge.
    assert trail["canonical_parent_child"] == [
        {"parent": parent, "child": child}
        for parent, child in zip(chain, chain[1:], strict=False)]
    spotted = run_cli("retrieve", root, "tomato leaf spots", "--json").json()
    assert "04 stm/greenhouse/irrigation/tomato-leaf-spots.md" not in [
        node["path"] for t in spotted["trails"] for node in t["nodes"]]
    assert {"path": "04 stm/greenhouse/irrigation/tomato-leaf-spots.md",
            "code": "frontmatter_invalid"} in spotted["left_out"]
    assert run_cli("audit", root).code == 1  # the strict check still fails

"""``open`` (one explicit body read) and ``status`` (readiness), in the library and the CLI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest
from conftest import raises_code
from forestkit import new_forest, write_doc

from memory_forest import operations
from memory_forest.opening import open_document

KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memory_forest", *args], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "COLUMNS": "120"})


def test_open_returns_metadata_and_the_current_body(shared_example):
    outcome = open_document(shared_example, KIMCHI)
    assert outcome["operation"] == "open" and outcome["body_included"] is True
    assert outcome["body"] == (shared_example / KIMCHI).read_text(encoding="utf-8")
    assert (outcome["path"], outcome["layer"], outcome["id"]) == (KIMCHI, "04 stm",
                                                                  "stm-kimchi-batch-7")


def test_open_reaches_the_life_archive_but_sources_only_when_asked(shared_example):
    archive = open_document(shared_example, "00 life_archive/2025-first-greenhouse-season.md")
    assert archive["layer"] == "00 life_archive"
    for source in ("05 daily/2026-11-28.md", "06 istm/2026-11-28.jsonl"):
        error = raises_code(lambda s=source: open_document(shared_example, s),
                            "source_layer_not_allowed")
        assert error.exit_code == 2
        assert open_document(shared_example, source, allow_source_layers=True)["path"] == source


@pytest.mark.parametrize("path, code", [
    ("../outside.md", "route_escape"),
    ("/etc/passwd", "route_escape"),
    ("", "route_escape"),
    ("04 stm/kitchen/../../x.md", "route_escape"),
    (".memory-forest/forest.json", "route_unknown_layer"),
    ("04 stm/kitchen/fermentation/kimchi-batch-7.MD", "route_extension_case"),
    ("04 stm/kitchen/fermentation/x\x00.md", "route_bad_segment"),
    ("04 stm/kitchen/fermentation/nothing.md", "not_found"),
])
def test_open_refuses_paths_that_are_not_indexed_documents(shared_example, path, code):
    raises_code(lambda: open_document(shared_example, path), code)


def test_open_returns_current_bytes_of_a_changed_or_unindexed_file(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    late = "04 stm/kitchen/fermentation/late.md"
    write_doc(root, late, "Late", "written after indexing")
    opened = open_document(root, late)
    assert opened["indexed"] is False and opened["verified"] is False
    assert opened["title"] == "Late" and "written after indexing" in opened["body"]
    assert opened["body"] == (root / late).read_text(encoding="utf-8")
    (root / KIMCHI).write_bytes((root / KIMCHI).read_bytes().replace(b"day 10", b"day 11"))
    opened = open_document(root, KIMCHI)
    assert opened["indexed"] is True and opened["verified"] is False
    assert opened["changed_since_index"] is True and "day 11" in opened["body"]
    assert opened["current_sha256"] == hashlib.sha256((root / KIMCHI).read_bytes()).hexdigest()
    assert opened["sha256"] != opened["current_sha256"]  # the indexed hash, for comparison


def test_open_takes_the_wikilink_form_and_a_document_id(shared_example):
    by_path = open_document(shared_example, KIMCHI)
    assert by_path["verified"] is True and by_path["indexed"] is True
    assert open_document(shared_example, KIMCHI.removesuffix(".md")) == by_path
    assert open_document(shared_example, "stm-kimchi-batch-7") == by_path
    raises_code(lambda: open_document(shared_example, "no-such-id"), "not_found")
    raises_code(lambda: open_document(shared_example, "04 stm/kitchen/fermentation/nothing"),
                "not_found")


def test_open_refuses_a_symlink_swapped_in_after_indexing(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    secret = tmp_path / "secret.md"
    secret.write_text("outside the forest")
    (root / KIMCHI).unlink()
    (root / KIMCHI).symlink_to(secret)
    raises_code(lambda: open_document(root, KIMCHI), "symlink")


def test_cli_open_prints_the_body_as_inert_text(shared_example):
    done = cli("open", str(shared_example), KIMCHI)
    assert done.returncode == 0
    assert "Kimchi batch 7" in done.stdout and "[[03 mtm/kitchen/fermentation|" in done.stdout
    assert "배추김치" in done.stdout
    done = cli("--json", "open", str(shared_example), "05 daily/2026-11-28.md")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "source_layer_not_allowed"
    done = cli("open", str(shared_example), "05 daily/2026-11-28.md", "--allow-source-layers",
               "--json")
    assert json.loads(done.stdout)["layer"] == "05 daily"


def test_status_is_ready_for_a_readable_index_and_says_when_it_is_behind(tmp_path):
    root = new_forest(tmp_path, example=True)
    absent = operations.status(root)
    assert absent["ready"] is False and absent["index"]["state"] == "absent"
    assert absent["next_step"].startswith("run 'memory-forest index ROOT'")
    operations.index(root)
    current = operations.status(root)
    assert current["ready"] is True and current["next_step"] is None
    assert current["documents"] == 12 and current["counts"]["04 stm"] == 4
    write_doc(root, "04 stm/kitchen/fermentation/late.md", "Late", "after indexing")
    stale = operations.status(root)
    # Behind the files is still consultable (changes are flagged), but says to re-index.
    assert stale["ready"] is True and stale["index"]["state"] == "stale"
    assert stale["next_step"].startswith("run 'memory-forest index ROOT'")
    assert str(tmp_path) not in json.dumps(stale)


def test_cli_status(shared_example):
    done = cli("status", str(shared_example))
    assert done.returncode == 0 and "ready" in done.stdout and "yes" in done.stdout
    outcome = json.loads(cli("status", str(shared_example), "--json").stdout)
    assert outcome["operation"] == "status" and outcome["ready"] is True

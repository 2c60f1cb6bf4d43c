"""supersede: the new record beside the old one; the old one marked, never rewritten."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from writerkit import assert_whole, contents

from memory_forest import schemas
from memory_forest.documents import split_frontmatter
from memory_forest.errors import ForestError
from memory_forest.writers.supersede import supersede

OLD = "04 stm/kitchen/fermentation/zaatar-blend.md"


def new_file(tmp_path, name="zaatar-v2.md", text=None):
    path = tmp_path / name
    path.write_text(text if text is not None else
                    '---\ntitle: "Za\'atar v2"\ntags: ["spice"]\n'
                    'sources: ["05 daily/2026-11-28.md#d-20261128-tomato"]\n---\n'
                    "# A heading the frontmatter title wins over\n\nThyme 2, sumac 1.\n"
                    "## not an anchor\n", encoding="utf-8")
    return str(path)


def test_supersede_marks_the_old_and_links_the_new(example_forest, tmp_path):
    old_text = (example_forest / OLD).read_text(encoding="utf-8")
    out = supersede(example_forest, "stm-zaatar-blend", new_file(tmp_path))
    new_rel = "04 stm/kitchen/fermentation/zaatar-v2.md"
    assert out["path"] == new_rel and out["superseded"] == OLD
    schemas.validate("WriteResult", out)
    old_meta, old_body, _ = split_frontmatter((example_forest / OLD).read_text())
    assert old_body == split_frontmatter(old_text)[1]  # history is not rewritten
    assert old_meta["status"] == "superseded" and old_meta["superseded_by"] == out["id"]
    meta, body, _ = split_frontmatter((example_forest / new_rel).read_text(encoding="utf-8"))
    assert meta["id"] == out["id"] and meta["supersedes"] == "stm-zaatar-blend"
    assert meta["title"] == "Za'atar v2" and meta["tags"] == ["spice"]
    assert "\n    ## not an anchor" in body and "Up: [[03 mtm/kitchen/fermentation|" in body
    assert "[[04 stm/kitchen/fermentation/zaatar-v2|Za'atar v2]]" in (
        example_forest / "03 mtm/kitchen/fermentation.md").read_text(encoding="utf-8")
    assert_whole(example_forest)


def test_a_heading_gives_the_title_when_frontmatter_has_none(example_forest, tmp_path):
    out = supersede(example_forest, "stm-zaatar-blend", new_file(tmp_path, "z3.md",
                                                           "# Blend three\n\nMore sumac.\n"))
    meta = split_frontmatter((example_forest / out["path"]).read_text(encoding="utf-8"))[0]
    assert meta["title"] == "Blend three"


@pytest.mark.parametrize("name, text, old_id, code", [
    ("z.txt", "x", "stm-zaatar-blend", "supersede_file_not_markdown"),
    ("z.md", "---\nstatus: archived\n---\nx\n", "stm-zaatar-blend",
     "supersede_frontmatter_field_not_allowed"),
    ("z.md", "---\ntags: [1, 2]\n---\nx\n", "stm-zaatar-blend", "supersede_frontmatter_invalid"),
    ("z.md", "---\ntitle: [\n---\nx\n", "stm-zaatar-blend", "supersede_frontmatter_invalid"),
    ("z.md", "x", "no-such-id", "supersede_target_missing"),
    ("z.md", "x", "ltm-kitchen", "supersede_layer_unsupported"),
    ("kimchi-batch-7.md", "x", "stm-zaatar-blend", "target_exists"),
    ("z|y.md", "x", "stm-zaatar-blend", "route_unlinkable_segment"),
    ("z.md", "---\nsources: ['06 istm/2026-11-28.jsonl#nope']\n---\nx\n", "stm-zaatar-blend",
     "source_missing"),
])
def test_rejections_change_nothing(example_forest, tmp_path, name, text, old_id, code):
    before = contents(example_forest)
    with pytest.raises(ForestError) as info:
        supersede(example_forest, old_id, new_file(tmp_path, name, text))
    assert info.value.code == code
    assert contents(example_forest) == before


def test_a_superseded_record_cannot_be_superseded_again(example_forest, tmp_path):
    supersede(example_forest, "stm-zaatar-blend", new_file(tmp_path))
    with pytest.raises(ForestError) as info:
        supersede(example_forest, "stm-zaatar-blend", new_file(tmp_path, "z4.md", "x"))
    assert info.value.code == "already_superseded"


def test_a_file_that_is_not_utf8(example_forest, tmp_path):
    (tmp_path / "z.md").write_bytes(b"\xff")
    with pytest.raises(ForestError) as info:
        supersede(example_forest, "stm-zaatar-blend", str(tmp_path / "z.md"))
    assert info.value.code == "supersede_file_not_utf8"


def test_secrets_in_the_new_record_are_redacted(example_forest, tmp_path):
    secret = "sk-live-abcdefghijklmnopqrstuvwxyz"  # release-audit: allow (a fake)
    out = supersede(example_forest, "stm-zaatar-blend", new_file(
        tmp_path, "z4.md", f"---\ntitle: Key {secret}\n---\nRotated {secret}.\n"))
    text = (example_forest / out["path"]).read_text(encoding="utf-8")
    assert secret not in text and "Rotated [REDACTED:api_key]." in text
    assert out["redactions"] == {"api_key": 2}


def test_supersede_to_places_the_new_record_and_links_its_parents(example_forest, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "memory_forest", "supersede", example_forest,
                           "--id", "stm-zaatar-blend", "--file", new_file(tmp_path),
                           "--to", "pantry/spices", "--json"],
                          capture_output=True, text=True, timeout=120)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["ok"], out
    new_rel = "04 stm/pantry/spices/zaatar-v2.md"
    assert out["path"] == new_rel and out["superseded"] == OLD
    assert not (example_forest / "04 stm/kitchen/fermentation/zaatar-v2.md").exists()
    meta, body, _ = split_frontmatter((example_forest / new_rel).read_text(encoding="utf-8"))
    assert meta["supersedes"] == "stm-zaatar-blend" and "Up: [[03 mtm/pantry/spices|" in body
    assert "[[04 stm/pantry/spices/zaatar-v2|Za'atar v2]]" in (
        example_forest / "03 mtm/pantry/spices.md").read_text(encoding="utf-8")
    assert "[[03 mtm/pantry/spices|" in (example_forest / "02 ltm/pantry_LTM.md").read_text()
    old_meta, _, _ = split_frontmatter((example_forest / OLD).read_text())
    assert old_meta["status"] == "superseded" and old_meta["superseded_by"] == out["id"]
    assert_whole(example_forest)


@pytest.mark.parametrize("to", ["pantry", "a/b/c/d", "pantry/../x"])
def test_supersede_to_refuses_a_target_it_cannot_name(example_forest, tmp_path, to):
    before = contents(example_forest)
    proc = subprocess.run([sys.executable, "-m", "memory_forest", "supersede", example_forest,
                           "--id", "stm-zaatar-blend", "--file", new_file(tmp_path),
                           "--to", to, "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "move_target_invalid"
    assert contents(example_forest) == before

"""A forest opened as an Obsidian vault: links resolve by Obsidian's rule, properties are YAML,
and what Obsidian adds (``.obsidian/``, ``.trash/``) never breaks validation, audit or browse."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path

import pytest
import yaml

from memory_forest import operations
from memory_forest.browse import browse
from memory_forest.forest import Forest
from memory_forest.snapshot import scan


@pytest.fixture
def forest(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    operations.init(root, example=True)
    return root


def markdown_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if not p.relative_to(root).parts[0].startswith("."))


def test_every_canonical_wikilink_resolves_by_obsidians_rule(forest: Path) -> None:
    """Obsidian resolves ``[[T]]`` (no extension) to ``T.md`` under the vault root."""
    snap = scan(Forest.open(forest))
    checked = 0
    for path, facts in snap.facts.items():
        if path.endswith(".jsonl"):
            continue
        for link in facts.links:
            assert not link.target.startswith("/"), (path, link)
            assert (forest / (link.target + ".md")).is_file(), (path, link.target)
            checked += 1
        parent = snap.routes[path].parent_path
        if parent:
            assert parent[:-3] in {link.target for link in facts.links}, path
    assert checked >= 10


def test_frontmatter_is_a_yaml_mapping_obsidian_shows_as_properties(forest: Path) -> None:
    files = markdown_files(forest)
    assert len(files) == 11
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert text.startswith("---\n"), path
        block = text[4:text.index("\n---\n", 4)]
        meta = yaml.safe_load(block)
        assert isinstance(meta, dict) and meta, path
        for key, value in meta.items():
            assert isinstance(key, str)
            if isinstance(value, list):
                assert all(isinstance(item, str) for item in value), (path, key)
            else:
                assert isinstance(value, str | dt.date | dt.datetime), (path, key, value)
        assert isinstance(meta.get("title"), str) and meta["title"].strip(), path
        assert isinstance(meta.get("id"), str), path
        for key in ("created", "updated"):
            dt.datetime.fromisoformat(str(meta[key]).replace("Z", "+00:00"))
        for key in ("tags", "sources"):
            assert key not in meta or isinstance(meta[key], list), (path, key)


def _obsidian_was_here(root: Path, outside: Path) -> None:
    """What opening the vault in Obsidian (and deleting a note to its trash) leaves behind."""
    config = root / ".obsidian"
    (config / "plugins" / "some-plugin").mkdir(parents=True)
    os.chmod(config, 0o755)
    (config / "workspace.json").write_text(json.dumps({"main": {"type": "split"}}))
    (config / "app.json").write_text('{"useMarkdownLinks": false, "newLinkFormat": "absolute"}')
    (config / "graph.json").write_text('{"colorGroups": []}')
    (config / "plugins" / "some-plugin" / "main.js").write_text("module.exports = {};\n")
    for path in config.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    outside.write_text("not part of the forest")
    (config / "plugins" / "linked-outside").symlink_to(outside)
    (config / "snippets").symlink_to(root / "04 stm")  # a loop back into the forest
    trash = root / ".trash"
    (trash / "04 stm" / "old").mkdir(parents=True)
    (trash / "04 stm" / "old" / "deleted-note.md").write_text("[[not/a/canonical/link]]\n")
    (trash / "Untitled.md").write_text("# stray\n")
    for path in [trash, *trash.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


def _digest(root: Path) -> dict[str, str]:
    found = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[rel] = "dir"
    return found


def test_forest_stays_valid_after_obsidian_opened_it(forest: Path, tmp_path: Path) -> None:
    _obsidian_was_here(forest, tmp_path / "outside.txt")
    before = _digest(forest)
    validated = operations.validate(forest)
    audited = operations.audit(forest)
    assert validated["ok"] and audited["ok"], (validated["issues"], audited["issues"])
    assert not any(issue["path"].startswith((".obsidian", ".trash"))
                   for issue in validated["issues"] + audited["issues"])
    assert sum(audited["counts"].values()) == 12
    outcome = browse(forest, tmp_path / "site")
    assert outcome["ok"] and outcome["issues"] == {"errors": 0, "warnings": 0}
    pages = {str(p.relative_to(tmp_path / "site")) for p in (tmp_path / "site").rglob("*.html")}
    assert not any(".obsidian" in p or ".trash" in p or "deleted-note" in p for p in pages)
    assert _digest(forest) == before  # nothing under the vault was written or followed

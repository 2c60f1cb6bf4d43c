"""``init``: refusals, private modes, and the synthetic example."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
from conftest import REPO, raises_code, tree_state, write

from memory_forest import operations
from memory_forest.layers import LAYERS

EXAMPLES = REPO / "examples"


def files_under(base: Path) -> dict[str, bytes]:
    found = {}
    for path in sorted(base.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            found[path.relative_to(base).as_posix()] = path.read_bytes()
    return found


# --- refusals -------------------------------------------------------------------------------


def _existing_file(tmp_path: Path) -> Path:
    return write(tmp_path, "target", "keep me", mode=0o644)


def _existing_dir(tmp_path: Path) -> Path:
    write(tmp_path, "target/notes.md", "keep me", mode=0o644)
    return tmp_path / "target"


def _empty_dir(tmp_path: Path) -> Path:
    (tmp_path / "target").mkdir()
    return tmp_path / "target"


def _symlink_to_dir(tmp_path: Path) -> Path:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "target")
    return tmp_path / "target"


def _dangling_symlink(tmp_path: Path) -> Path:
    os.symlink(tmp_path / "does-not-exist", tmp_path / "target")
    return tmp_path / "target"


@pytest.mark.parametrize(
    "make",
    [_existing_file, _existing_dir, _empty_dir, _symlink_to_dir, _dangling_symlink],
    ids=["existing file", "existing dir", "empty dir", "symlink to dir", "dangling symlink"],
)
def test_init_refuses_an_existing_target_and_touches_nothing(tmp_path: Path, make) -> None:
    target = make(tmp_path)
    before = tree_state(tmp_path)
    error = raises_code(lambda: operations.init(target), "init_target_exists")
    assert error.exit_code == 1
    assert tree_state(tmp_path) == before  # no staging directory left behind either
    assert not (tmp_path / "does-not-exist").exists()


def test_init_refuses_a_missing_parent_and_creates_no_ancestors(tmp_path: Path) -> None:
    raises_code(lambda: operations.init(tmp_path / "a" / "b" / "forest"), "init_parent_missing")
    assert os.listdir(tmp_path) == []


def test_init_refuses_a_symlinked_parent(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    raises_code(lambda: operations.init(tmp_path / "link" / "forest"), "init_parent_invalid")
    assert os.listdir(tmp_path / "real") == []


def test_init_refuses_a_file_as_parent(tmp_path: Path) -> None:
    write(tmp_path, "file", "x")
    raises_code(lambda: operations.init(tmp_path / "file" / "forest"), "init_parent_invalid")


# --- what init creates ----------------------------------------------------------------------


def assert_all_private(root: Path) -> int:
    """Every directory 0700, every file 0600, nothing else; return how many entries."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            count += 1
            st = os.lstat(Path(dirpath) / name)
            assert stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode), name
            want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
            assert stat.S_IMODE(st.st_mode) == want, (dirpath, name, oct(st.st_mode))
    assert stat.S_IMODE(os.lstat(root).st_mode) == 0o700
    return count


@pytest.mark.parametrize("example", [False, True])
def test_everything_init_creates_is_private_even_with_umask_0(tmp_path: Path, umask_zero,
                                                              example: bool) -> None:
    root = tmp_path / "forest"
    operations.init(root, example=example)
    count = assert_all_private(root)
    expected = 9  # seven layers, the state directory and forest.json
    if example:
        files = operations.example_files()
        folders = {rel.rsplit("/", n)[0] for rel in files for n in (1, 2, 3)
                   if rel.count("/") > n}
        expected += len(files) + len(folders)
    assert count == expected


def test_init_creates_the_seven_layers_and_a_config(tmp_path: Path) -> None:
    root = tmp_path / "forest"
    outcome = operations.init(root)
    dirnames = [layer.dirname for layer in LAYERS]
    assert sorted(os.listdir(root)) == sorted([".memory-forest", *dirnames])
    assert os.listdir(root / ".memory-forest") == ["forest.json"]
    config = json.loads((root / ".memory-forest/forest.json").read_bytes())
    assert config["schema_version"] == 1
    assert re.fullmatch(r"[0-9a-f]{32}", config["forest_id"])
    assert outcome == {"ok": True, "operation": "init", "schema_version": 1, "root": "forest",
                       "example": False, "inbox": False, "layers": dirnames, "files": []}
    assert sorted(os.listdir(tmp_path)) == ["forest"]  # the staging directory was renamed


def test_each_forest_gets_its_own_id(tmp_path: Path) -> None:
    ids = set()
    for name in ("one", "two"):
        operations.init(tmp_path / name)
        ids.add(json.loads((tmp_path / name / ".memory-forest/forest.json").read_bytes())
                ["forest_id"])
    assert len(ids) == 2


def test_init_accepts_a_relative_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    outcome = operations.init("rel-forest")
    assert outcome["root"] == "rel-forest"
    assert (tmp_path / "rel-forest" / "01 xltm").is_dir()


# --- the example ----------------------------------------------------------------------------


def test_example_files_written_match_the_package(example_forest: Path) -> None:
    packaged = operations.example_files()
    assert files_under(example_forest / "00 life_archive").keys()  # not empty
    on_disk = {rel: data for rel, data in files_under(example_forest).items()
               if not rel.startswith(".memory-forest/")}
    assert on_disk == packaged


def test_the_example_forest_is_kept_only_as_package_data() -> None:
    # A second copy under examples/ would have to be kept equal by hand; init --example
    # writes the forest from the package instead.
    packaged = set(operations.example_files().values())
    copied = [rel for rel, data in files_under(EXAMPLES).items() if data in packaged]
    assert copied == [], "examples/ holds copies of src/memory_forest/example/"
    layer_dirs = {layer.dirname for layer in LAYERS}
    forests = [path for path in EXAMPLES.rglob("*") if path.is_dir() and path.name in layer_dirs]
    assert forests == [], "examples/ holds a forest; point at init --example instead"


MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_links_in_the_examples_readmes_lead_to_files_that_exist() -> None:
    readmes = sorted(EXAMPLES.rglob("*.md"))
    assert EXAMPLES / "README.md" in readmes
    for readme in readmes:
        for target in MARKDOWN_LINK.findall(readme.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (readme.parent / target).exists(), f"{readme.relative_to(REPO)}: {target}"


def test_example_has_every_kind_of_record(example_forest: Path) -> None:
    files = operations.example_files()
    trees = {rel.split("/")[1] for rel in files if rel.startswith("04 stm/")}
    assert len(trees) >= 2
    for tree in trees:
        assert f"02 ltm/{tree}_LTM.md" in files
        assert any(rel.startswith(f"03 mtm/{tree}/") for rel in files)
    for prefix in ("00 life_archive/", "01 xltm/XLTM.md", "05 daily/", "06 istm/"):
        assert any(rel.startswith(prefix) for rel in files), prefix
    events = [json.loads(line) for rel, data in files.items() if rel.startswith("06 istm/")
              for line in data.decode().splitlines()]
    assert len(events) >= 2


SCRIPTS = {
    "Latin with accents": re.compile(r"[\u00c0-\u00ff\u0100-\u017f]"),
    "Hangul": re.compile(r"[\uac00-\ud7a3]"),
    "Japanese kana": re.compile(r"[\u3040-\u30ff]"),
    "CJK ideographs (kanji)": re.compile(r"[\u4e00-\u9fff]"),
    "Arabic": re.compile(r"[\u0600-\u06ff]"),
}


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_leaves_contain_text_in_each_script(script: str) -> None:
    leaves = "".join(data.decode("utf-8") for rel, data in operations.example_files().items()
                     if rel.startswith("04 stm/"))
    assert SCRIPTS[script].search(leaves), f"no {script} text in any leaf"


def test_example_text_is_nfc() -> None:
    import unicodedata

    for rel, data in operations.example_files().items():
        text = data.decode("utf-8")
        assert unicodedata.normalize("NFC", text) == text, rel

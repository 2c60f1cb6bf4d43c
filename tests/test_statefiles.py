"""Every name under .memory-forest/ is spelled once, in statefiles.py, and means what is on disk."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from memory_forest import operations, statefiles

SRC = Path(__file__).resolve().parents[1] / "src" / "memory_forest"

# A path-like string (no whitespace: prose in a message or help text may name the file)
# that spells an entry of the state directory by hand.
_STATE_NAME = re.compile(
    r"(^|/)\.memory-forest(/|$)|forest\.json|index\.sqlite3|manifest\.json"
    r"|journal-staging-|journal\.set-aside-|(^|/)(journal|receipts|proposals)/"
    r"|/(journal|receipts|proposals)$"
)


def _hand_spelt(source: str) -> list[str]:
    return [node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and not re.search(r"\s", node.value) and _STATE_NAME.search(node.value)]


# statefiles names every entry; the state directory's own name sits in warmsocket, below it,
# which the per-turn client loads without pathlib, and statefiles takes it from there.
SPELLERS = {"statefiles.py", "warmsocket.py"}


def test_no_module_but_statefiles_spells_a_state_file_name():
    found = {str(path.relative_to(SRC)): names for path in sorted(SRC.rglob("*.py"))
             if path.name not in SPELLERS
             and (names := _hand_spelt(path.read_text("utf-8")))}
    assert found == {}
    assert _hand_spelt((SRC / "warmsocket.py").read_text("utf-8")) == [".memory-forest"]


def test_the_grep_sees_a_hand_spelt_name():
    assert sorted(_hand_spelt('path = root / ".memory-forest" / "forest.json"')) == [
        ".memory-forest", "forest.json"]
    assert _hand_spelt('rel = f"{STATE_DIR}/receipts/{txid}.json"') == ["/receipts/"]
    assert _hand_spelt('raise Oops("raise the limit in forest.json")') == []
    assert _hand_spelt('step = "journal"') == []  # a report key, not a path


def test_the_names_are_the_on_disk_layout(tmp_path: Path):
    """Renaming any of them would orphan the state of every existing forest."""
    assert statefiles.state_rel(statefiles.CONFIG) == ".memory-forest/forest.json"
    assert statefiles.state_rel(statefiles.INDEX) == ".memory-forest/index.sqlite3"
    assert statefiles.state_rel(statefiles.JOURNAL, statefiles.MANIFEST) == \
        ".memory-forest/journal/manifest.json"
    assert statefiles.receipt_rel("t1") == ".memory-forest/receipts/t1.json"
    assert statefiles.proposal_rel("p1") == ".memory-forest/proposals/p1.json"
    assert (statefiles.JOURNAL_STAGING_PREFIX, statefiles.JOURNAL_SET_ASIDE_PREFIX) == (
        "journal-staging-", "journal.set-aside-")
    root = tmp_path / "forest"
    operations.init(root)
    assert statefiles.config_path(root).is_file()
    assert statefiles.state_dir(root).is_dir()
    operations.index(root)
    assert statefiles.index_path(root).is_file()


def test_the_index_temp_file_is_hidden_debris_beside_the_index(tmp_path: Path):
    first, second = statefiles.index_temp_path(tmp_path), statefiles.index_temp_path(tmp_path)
    assert first != second and first.parent == statefiles.state_dir(tmp_path)
    assert re.fullmatch(r"\.index\.sqlite3\.[0-9]+\.[0-9a-f]{8}\.tmp", first.name)

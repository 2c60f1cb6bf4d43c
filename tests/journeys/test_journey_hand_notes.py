"""Journeys of notes as people write them: by hand or in Obsidian, not by the writers.

Each journey runs the real CLI in a subprocess on a real forest, the way a
user edits files in their editor and then asks (or their agent asks through
the gate): a note with a sibling link, no ``Up:`` line and a wide mode is
found at once; a leaf deleted by hand leaves its parent on complete trails;
a file that cannot be read is named as left out when it holds the words
asked for, and nothing of what it holds is shown.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from conftest import CliResult, run_cli

NOTE = "04 stm/kitchen/fermentation/hot-sauce.md"
BRANCH = "03 mtm/kitchen/fermentation.md"
CHAIN = ["01 xltm/XLTM.md", "02 ltm/kitchen_LTM.md", BRANCH, NOTE]
# Written the way a person writes in Obsidian: a sibling link by its short name, no 'Up:'
# line, a callout, an embed and tags; no id, no frontmatter beyond a title.
HAND_NOTE = """---
title: Hot sauce
---
# Hot sauce

Brine as for [[kimchi-batch-7]], then blend.

> [!warning] Habanero gloves
> Always wear habanero gloves when cutting the peppers.

![[04 stm/kitchen/fermentation/kimchi-batch-7]]

#fermentation #peppers
"""


def cli_json(*args: str | os.PathLike[str]) -> tuple[int, dict]:
    done: CliResult = run_cli(*args, "--json")
    return done.code, done.json()


def gate(root: Path, turn: str, *options: str) -> tuple[int, str]:
    """The gate as a host hook runs it: the turn on stdin, one JSON object on stdout."""
    done = subprocess.run([sys.executable, "-m", "memory_forest", "gate", str(root), *options],
                          input=turn.encode("utf-8"), capture_output=True, timeout=60)
    stdout = done.stdout.decode("utf-8")
    assert len(stdout.splitlines()) == 1, (stdout, done.stderr)
    return done.returncode, stdout


def write_by_hand(root: Path, rel: str, data: bytes, mode: int = 0o644) -> None:
    """As an editor writes: plain open, the user's mode, no lock, no writer."""
    path = root / rel
    path.write_bytes(data)
    os.chmod(path, mode)


def trail_paths(trail: dict) -> list[str]:
    return [node["path"] for node in trail["nodes"]]


def test_a_note_written_by_hand_is_found_by_retrieve_and_the_gate_and_stays_strict(
        example_forest: Path):
    root = example_forest
    write_by_hand(root, NOTE, HAND_NOTE.encode("utf-8"))

    code, built = cli_json("index", root)
    assert code == 0 and built["quarantined"] == 0
    warned = {(p["path"], p["code"]) for p in built["problems"] if p["level"] == "warning"}
    assert {(NOTE, "link_not_canonical"), (NOTE, "link_parent_missing"),
            (NOTE, "mode_file_not_private")} <= warned
    assert not [p for p in built["problems"] if p["level"] == "error"]

    code, found = cli_json("retrieve", root, "habanero gloves")
    assert code == 0
    top = found["trails"][0]
    assert trail_paths(top) == CHAIN and top["complete"] and top["missing"] == []
    # The owner comes from the path; the sibling link claims no edge.
    assert top["canonical_parent_child"] == [
        {"parent": parent, "child": child} for parent, child in zip(CHAIN, CHAIN[1:], strict=False)]
    assert all(node["verified"] for node in top["nodes"])

    code, stdout = gate(root, "Which gloves do I need for the habanero peppers?")
    receipt = json.loads(stdout)
    assert code == 0 and receipt["status"] == "evidence_found"
    assert trail_paths(receipt["retrieve"]["trails"][0]) == CHAIN
    assert receipt["retrieve"]["left_out"] == []

    # validate and audit stay strict about what indexing forgave.
    code, validated = cli_json("validate", root)
    assert code == 1 and (NOTE, "mode_file_not_private") in {
        (i["path"], i["code"]) for i in validated["issues"] if i["level"] == "error"}
    code, audited = cli_json("audit", root)
    strict = {(i["path"], i["code"]) for i in audited["issues"] if i["level"] == "error"}
    assert code == 1 and {(NOTE, "link_not_canonical"), (NOTE, "link_parent_missing")} <= strict

    # doctor --repair fixes the mode; the links stay the user's to fix.
    code, repaired = cli_json("doctor", root, "--repair")
    assert code == 0, repaired
    assert stat.S_IMODE(os.stat(root / NOTE).st_mode) == 0o600
    code, validated = cli_json("validate", root)
    assert code == 0 and validated["ok"], validated
    code, audited = cli_json("audit", root)
    assert code == 1 and {(i["path"], i["code"]) for i in audited["issues"]} == {
        (NOTE, "link_not_canonical"), (NOTE, "link_parent_missing"), (NOTE, "link_lateral")}
    code, found = cli_json("retrieve", root, "habanero gloves")
    assert trail_paths(found["trails"][0]) == CHAIN


def test_an_inbox_leaf_deleted_by_hand_leaves_its_parent_on_complete_trails(
        example_forest: Path):
    root = example_forest
    placed = []
    for fact in ("Dentist appointment moved to Thursday afternoon",
                 "Library card renewal is due in March"):
        code, done = cli_json("remember", root, fact)
        assert code == 0 and done["placement"]["action"] == "inbox", done
        placed.append(done["placement"]["path"])
    dentist, library = placed
    inbox = "03 mtm/inbox/inbox.md"
    assert "[[" + dentist[:-3] in (root / inbox).read_text(encoding="utf-8")

    (root / dentist).unlink()  # by hand: the branch still lists it
    code, built = cli_json("index", root)
    assert code == 0 and built["quarantined"] == 0
    [listed] = [p for p in built["problems"] if p["path"] == inbox]
    assert (listed["code"], listed["level"]) == ("link_child_missing", "warning")
    assert "memory-forest forget" in listed["message"]  # the command that tidies the parent

    code, found = cli_json("retrieve", root, "library card renewal")
    assert code == 0
    top = found["trails"][0]
    assert trail_paths(top) == ["01 xltm/XLTM.md", "02 ltm/inbox_LTM.md", inbox, library]
    assert top["complete"] and top["reason"] is None and top["missing"] == []
    assert all(trail["complete"] for trail in found["trails"]
               if inbox in trail_paths(trail))

    code, audited = cli_json("audit", root)  # strict: the dangling listing is an error
    assert code == 1 and (inbox, "link_child_missing") in {
        (i["path"], i["code"]) for i in audited["issues"] if i["level"] == "error"}
    code, tidied = cli_json("forget", root, dentist)
    assert code == 0 and tidied["tidied"] == inbox and tidied["removed"] == [], tidied
    code, audited = cli_json("audit", root)
    assert code == 0, audited["issues"]


def test_a_file_that_cannot_be_read_is_named_left_out_and_nothing_of_it_is_shown(
        example_forest: Path):
    root = example_forest
    pasted = "04 stm/kitchen/fermentation/label-scan.md"
    # A binary pasted over a note: bytes that are not UTF-8, readable words among them.
    write_by_hand(root, pasted, b"\x89PNG\r\n\x1a\n\xff\xfe\x00 quokka sriracha ratio 3:1 "
                                b"\x00\x01\xfe secretword\n", mode=0o600)
    code, built = cli_json("index", root)
    assert code == 0 and built["quarantined"] == 1
    assert (pasted, "not_utf8", "error") in {
        (p["path"], p["code"], p["level"]) for p in built["problems"]}

    code, found = cli_json("retrieve", root, "quokka sriracha")
    assert code == 0 and found["count"] == 0
    assert found["left_out"] == [{"path": pasted, "code": "not_utf8"}]
    code, elsewhere = cli_json("retrieve", root, "kimchi")
    assert elsewhere["count"] >= 1 and elsewhere["left_out"] == []

    code, stdout = gate(root, "What was the quokka sriracha ratio?")
    receipt = json.loads(stdout)
    assert code == 0 and receipt["status"] == "no_evidence"
    assert receipt["retrieve"]["left_out"] == [{"path": pasted, "code": "not_utf8"}]
    assert "secretword" not in stdout and "3:1" not in stdout  # metadata only
    code, hook = gate(root, json.dumps({"prompt": "What was the quokka sriracha ratio?"}),
                      "--format", "claude-code")
    context = json.loads(hook)["hookSpecificOutput"]["additionalContext"]
    prose, tree = context.split("\n", 1)
    assert code == 0 and json.loads(tree)["untrusted"]["left_out"] == [pasted]
    assert "could not be read" in prose and pasted not in prose
    assert "secretword" not in hook and "3:1" not in hook

    code, validated = cli_json("validate", root)
    assert code == 1 and (pasted, "not_utf8") in {
        (i["path"], i["code"]) for i in validated["issues"]}
    # Fixed by hand: it is indexed and found, and no longer named as left out.
    write_by_hand(root, pasted, b"# Label scan\n\nUp: [[03 mtm/kitchen/fermentation]]\n\n"
                                b"Quokka sriracha: ratio 3 to 1.\n", mode=0o600)
    code, built = cli_json("index", root)
    assert code == 0 and built["quarantined"] == 0
    code, found = cli_json("retrieve", root, "quokka sriracha")
    assert trail_paths(found["trails"][0])[-1] == pasted and found["left_out"] == []


class _Elements(HTMLParser):
    """Every start tag of a page with its attributes, and the text inside each class."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: dict[str, list[str]] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        self.tags.append((tag, found))
        if tag in ("div", "span", "a"):
            self._open.append(found.get("class", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("div", "span", "a") and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for name in self._open:
            self.text.setdefault(name, []).append(data)


def test_the_hand_written_note_browses_as_obsidian_shows_it(example_forest: Path,
                                                          tmp_path: Path):
    root = example_forest
    write_by_hand(root, NOTE, HAND_NOTE.encode("utf-8"))
    out = tmp_path / "site"
    code, browsed = cli_json("browse", root, "--out", out)
    assert code == 0, browsed
    html = (out / "doc" / (NOTE[:-3] + ".html")).read_text(encoding="utf-8")
    page = _Elements()
    page.feed(html)
    classes = [attrs.get("class", "") for _, attrs in page.tags]
    assert "callout callout-warning" in classes
    assert "".join(page.text["callout-title"]).strip() == "Habanero gloves"
    assert "Always wear habanero gloves" in "".join(page.text["callout callout-warning"])
    embeds = [attrs for tag, attrs in page.tags if attrs.get("class") == "wikilink embed"]
    assert len(embeds) == 1 and tag_of(page, embeds[0]) == "a"
    assert embeds[0]["href"].endswith("kimchi-batch-7.html")
    assert "".join(page.text["tag"]) == "#fermentation#peppers"
    # Nothing of another file inlined, nothing fetched: no image, frame or object at all.
    assert not {tag for tag, _ in page.tags} & {"img", "iframe", "object", "embed", "script"}
    kimchi = (root / "04 stm/kitchen/fermentation/kimchi-batch-7.md").read_text(encoding="utf-8")
    assert "Napa cabbage" in kimchi and "Napa cabbage" not in html


def tag_of(page: _Elements, attrs: dict[str, str]) -> str:
    return next(tag for tag, found in page.tags if found is attrs)

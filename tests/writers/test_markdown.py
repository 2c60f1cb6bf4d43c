"""Inert caller text, surgical frontmatter edits and child links (writers/markdown.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from memory_forest.documents import scan_markdown, split_frontmatter
from memory_forest.errors import ForestError
from memory_forest.writers import markdown as md

HOSTILE = (
    "## Parent\n# Title takeover\n[[01 xltm/XLTM]] and [[02 ltm/kitchen_LTM|k]]\n"
    "---\nid: evil\n---\nSetext heading\n===\nAnother\n---\n"
    "<div>raw html</div> <script>alert(1)</script> <!-- comment -->\n"
    "```\nunclosed fence\n~~~\n> ## quoted heading\n- ## listed heading\n"
    "%% obsidian comment\n&#91;&#91;01 xltm/XLTM]] \\[\\[escaped]] ![[embed]]\n"
)


def _tokens(text: str) -> list:
    return MarkdownIt("commonmark").parse(text)


def test_hostile_text_is_inert_for_the_validator_and_a_full_parser():
    out = md.inert(HOSTILE)
    heading, links, anchors = scan_markdown(out)
    assert (heading, links, anchors) == (None, [], [])
    types = {token.type for token in _tokens(out)}
    assert not types & {"heading_open", "html_block", "html_inline", "fence", "code_block",
                        "hr", "blockquote_open"}
    # It renders as the text itself: unescaping gives back the original.
    assert md.unescape(out) == HOSTILE


def test_a_document_with_hostile_body_title_and_alias_keeps_only_its_own_structure():
    text = md.document({"id": "x", "title": "T [[01 xltm/XLTM]]"}, "T [[01 xltm/XLTM]] ##",
                       ("03 mtm/a/b.md", "B]] [[02 ltm/a_LTM"), md.inert(HOSTILE))
    meta, body, _ = split_frontmatter(text)
    assert meta == {"id": "x", "title": "T [[01 xltm/XLTM]]"}
    heading, links, anchors = scan_markdown(body)
    assert [link.target for link in links] == ["03 mtm/a/b"]
    assert anchors == []
    assert heading == "T \\[\\[01 xltm/XLTM\\]\\] \\#\\#"  # the title is text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_text_is_inert_and_round_trips(text):
    out = md.inert(text)
    assert md.unescape(out) == text
    body = f"# Title\n\n{out}\n"
    heading, links, anchors = scan_markdown(body)
    assert heading == "Title" and links == [] and anchors == []


@pytest.mark.parametrize("text, code", [
    ("", "content_empty"), ("  \n ", "content_empty"), ("a\x00b", "content_control_character"),
    ("a\u2028b", "content_control_character"),
])
def test_clean_text_rejects(text, code):
    with pytest.raises(ForestError) as info:
        md.clean_text(text)
    assert info.value.code == code


def test_clean_text_normalizes_line_ends():
    assert md.clean_text("a\r\nb\rc") == "a\nb\nc"


@pytest.mark.parametrize("title, code", [
    ("", "title_empty"), ("a\nb", "title_invalid"), ("x" * 201, "title_too_long"),
    ("bell\x07", "title_invalid"),
])
def test_titles_are_one_short_line(title, code):
    with pytest.raises(ForestError) as info:
        md.check_title(title)
    assert info.value.code == code


@pytest.mark.parametrize("segment", ["a|b", "a#b", "a[b", "a]b", "a^b", "a`b", "a<b"])
def test_unlinkable_segments_are_refused(segment):
    with pytest.raises(ForestError) as info:
        md.check_linkable(segment, "leaf")
    assert info.value.code == "route_unlinkable_segment"


def test_yaml_strings_round_trip_awkward_characters():
    value = 'quote " backslash \\ tab\t nl\n del\x7f c1\x85 ls\u2028 ps\u2029 bom\ufeff 한국어'
    text = md.frontmatter({"title": value, "tags": [value, "#x: y"]}) + "body\n"
    meta, body, _ = split_frontmatter(text)
    assert meta == {"title": value, "tags": [value, "#x: y"]}
    assert body == "body\n"


OPERATOR_FRONTMATTER = (
    "---\n"
    "# a comment the operator wrote\n"
    "id: keep-me\n"
    "title: Old title   # trailing comment\n"
    "custom_block: |\n"
    "  line one\n"
    "  line two\n"
    "aliases:\n"
    "- one\n"
    "-   two\n"
    "weird:   {a: 1,   b: [x, y]}\n"
    "updated: 2026-01-01T00:00:00Z\n"
    "'quoted key': 3\n"
    "---\n"
    "# Body\n\ntext\n"
)


def test_edit_keeps_unknown_keys_byte_for_byte():
    out = md.edit_frontmatter(OPERATOR_FRONTMATTER, {"updated": "2026-12-01T00:00:00.000Z",
                                                     "status": "superseded"})
    for block in ("# a comment the operator wrote\n", "id: keep-me\n",
                  "title: Old title   # trailing comment\n",
                  "custom_block: |\n  line one\n  line two\n", "aliases:\n- one\n-   two\n",
                  "weird:   {a: 1,   b: [x, y]}\n", "'quoted key': 3\n"):
        assert block in out
    meta, body, _ = split_frontmatter(out)
    assert meta["updated"] == "2026-12-01T00:00:00.000Z" and meta["status"] == "superseded"
    assert body == "# Body\n\ntext\n"
    # Removing what was added gives the original back, except the re-rendered key.
    assert out.replace('status: "superseded"\n', "").replace(
        'updated: "2026-12-01T00:00:00.000Z"', "updated: 2026-01-01T00:00:00Z"
    ) == OPERATOR_FRONTMATTER


def test_a_document_without_frontmatter_gets_a_block_in_front():
    out = md.edit_frontmatter("# Hand written\n\nUp: [[x]]\n", {"updated": "t"})
    assert out == '---\nupdated: "t"\n---\n# Hand written\n\nUp: [[x]]\n'


@pytest.mark.parametrize("frontmatter", [
    "---\nflow: {a: 1,\nb: 2}\n---\n",  # a flow mapping across lines
    "---\nanchor: &x 1\nalias: *x\n---\n",  # an alias shared between entries
])
def test_frontmatter_the_tool_cannot_split_is_not_edited(frontmatter):
    with pytest.raises(ForestError) as info:
        md.edit_frontmatter(frontmatter + "body\n", {"updated": "t"})
    assert info.value.code == "frontmatter_not_editable"


def test_malformed_frontmatter_is_not_edited():
    with pytest.raises(ForestError) as info:
        md.edit_frontmatter("---\na: [\n---\nbody\n", {"updated": "t"})
    assert info.value.code == "frontmatter_not_editable"


def test_child_link_joins_the_existing_list_and_keeps_every_other_byte():
    text = ("---\nid: m\n---\n# M\n\nUp: [[02 ltm/t_LTM]]\n\n## Leaves\n\n- [[04 stm/t/b/a|A]]\n"
            "\n## Notes\n\nkeep\n")
    out = md.add_child_link(text, "Leaves", "04 stm/t/b/new.md", "New")
    assert out == text.replace("- [[04 stm/t/b/a|A]]\n", "- [[04 stm/t/b/a|A]]\n"
                               "- [[04 stm/t/b/new|New]]\n")


def test_child_link_without_a_list_adds_a_section_at_the_end():
    out = md.add_child_link("# M\n\nUp: [[02 ltm/t_LTM]]\n", "Leaves", "04 stm/t/b/x.md", "X")
    assert out == "# M\n\nUp: [[02 ltm/t_LTM]]\n\n## Leaves\n\n- [[04 stm/t/b/x|X]]\n"


def test_child_link_under_an_empty_heading():
    out = md.add_child_link("# M\n\n## Leaves\n", "Leaves", "04 stm/t/b/x.md", "X")
    assert out == "# M\n\n## Leaves\n\n- [[04 stm/t/b/x|X]]\n"


def test_child_link_joins_a_hand_written_list_of_siblings():
    text = "# tools\n\n- up - [[02 ltm/w_LTM|w]]\n- down - [[04 stm/w/tools/a|a]]\n\nNotes.\n"
    out = md.add_child_link(text, "Leaves", "04 stm/w/tools/b.md", "b")
    assert out == text.replace("[[04 stm/w/tools/a|a]]\n", "[[04 stm/w/tools/a|a]]\n"
                               "- [[04 stm/w/tools/b|b]]\n")

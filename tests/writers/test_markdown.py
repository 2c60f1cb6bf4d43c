"""Caller text stored verbatim, surgical frontmatter edits and child links (markdown.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from writerkit import same_modulo_neutralization

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
# What a writer puts after caller text, whose structure the text must not swallow.
AFTER = "\n\n## after\n\nUp: [[03 mtm/a/b]]\n"


def test_a_url_and_a_command_are_stored_byte_for_byte():
    text = ("Grafana: https://g.example/d/x?from=now-6h&to=now#panel-3 (3% of `kubectl get "
            "pods -A | grep -v Running`), *bold* <b>&amp;</b> ~tilde~ back\\slash")
    assert md.neutralize(text) == text


def test_hostile_text_keeps_every_character_and_adds_no_structure():
    out = md.neutralize(HOSTILE)
    assert same_modulo_neutralization(out, HOSTILE)
    heading, links, anchors = scan_markdown(f"# Title\n\n{out}{AFTER}")
    assert heading == "Title" and anchors == ["after"]
    assert [link.target for link in links] == ["03 mtm/a/b"]


@pytest.mark.parametrize("line", ["# h", "## h", "   ### h", "#", "> ## h", "- ## h",
                                  "1. # h", "> - > # h"])
def test_a_heading_line_is_indented(line):
    out = md.neutralize(f"text\n\n{line}\n\nmore")
    assert out.split("\n")[2].endswith(line) and out.split("\n")[2].startswith(md.INDENT)
    assert scan_markdown(out)[2] == [] and scan_markdown(out)[0] is None


def test_a_line_under_a_list_item_is_indented_until_it_is_text():
    out = md.neutralize("- item\n## h")
    assert out == "- item\n" + md.INDENT * 2 + "## h"
    assert scan_markdown(out)[2] == []


def test_a_setext_underline_is_indented_and_the_text_line_kept():
    assert md.neutralize("Title\n===\nSub\n---") == f"Title\n{md.INDENT}===\nSub\n{md.INDENT}---"


def test_a_rule_that_makes_no_heading_is_left_alone():
    assert md.neutralize("one\n\n---\n\ntwo") == "one\n\n---\n\ntwo"


def test_a_closed_fence_is_kept_with_its_code_untouched():
    text = "Run:\n\n```bash\nif [[ -f x ]]; then\n# comment\nfi\n```\n\nDone %% here"
    out = md.neutralize(text)
    assert out == text.replace("Done %% here", "Done \\%\\% here")


@pytest.mark.parametrize("opener", ["```", "~~~", "<!-- open", "<pre>", "<?php", "<![CDATA["])
def test_a_block_that_would_swallow_what_follows_has_its_opener_indented(opener):
    out = md.neutralize(f"before\n\n{opener}\nrest\n## inside")
    assert out == f"before\n\n{md.INDENT}{opener}\nrest\n{md.INDENT}## inside"
    heading, links, anchors = scan_markdown(f"# T\n\n{out}{AFTER}")
    assert anchors == ["after"] and [link.target for link in links] == ["03 mtm/a/b"]


def test_a_complete_html_comment_is_kept():
    assert md.neutralize("a <!-- note --> b\n\n<!--\nblock\n-->") == \
        "a <!-- note --> b\n\n<!--\nblock\n-->"


def test_wikilinks_are_escaped_outside_code_only():
    text = "see [[01 xltm/XLTM]] and ![[embed]], not `[[code]]`\n\n    [[indented code]]"
    assert md.neutralize(text) == text.replace("see [[", "see \\[\\[").replace(
        "![[embed", "!\\[\\[embed")


@pytest.mark.parametrize("text, stored", [
    ("\\[[x]]", "\\[[x]]"),  # already no link: the escaped bracket opens nothing
    ("\\[[[x]]", "\\[\\[\\[x]]"),  # but the two brackets after it do
    ("`a\\` [[x]]", "`a\\` \\[\\[x]]"),  # a code span may close after a backslash
    ("\\`[[x]]`", "\\`\\[\\[x]]`"),  # an escaped backtick opens no span
])
def test_escapes_already_in_the_text_are_respected(text, stored):
    assert md.neutralize(text) == stored
    assert scan_markdown(stored)[1] == []


def test_an_unpaired_obsidian_comment_is_escaped_and_pairs_are_kept():
    assert md.neutralize("a %%hidden%% b") == "a %%hidden%% b"
    assert md.neutralize("a %%x%% b %% c") == "a %%x%% b \\%\\% c"
    assert md.neutralize("`%%` alone") == "`%%` alone"


def test_a_title_keeps_its_text_but_links_no_wikilink():
    assert md.neutralize_title("C# & 3% `x` [[01 xltm/XLTM]]") == \
        "C# & 3% `x` \\[\\[01 xltm/XLTM]]"


def test_a_document_with_hostile_body_title_and_alias_keeps_only_its_own_structure():
    text = md.document({"id": "x", "title": "T [[01 xltm/XLTM]]"}, "T [[01 xltm/XLTM]] %%",
                       ("03 mtm/a/b.md", "B]] [[02 ltm/a_LTM"), md.neutralize(HOSTILE))
    meta, body, _ = split_frontmatter(text)
    assert meta == {"id": "x", "title": "T [[01 xltm/XLTM]]"}
    heading, links, anchors = scan_markdown(body)
    assert [link.target for link in links] == ["03 mtm/a/b"]
    assert anchors == []
    assert heading == "T \\[\\[01 xltm/XLTM]] \\%\\%"  # the title is text


MARKDOWNISH = st.lists(st.sampled_from(list("#=-`~<>!%[]|\\*_ \n\tax1.)&")
                                        + ["[[", "]]", "```", "<!--", "-->", "%%", "    ",
                                           "\n\n", "- ", "> ", "1. "]),
                       max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(MARKDOWNISH, st.text(alphabet=st.characters(blacklist_categories=("Cs",)),
                                      max_size=120)))
def test_any_text_is_stored_modulo_the_neutralizations_and_adds_no_structure(text):
    out = md.neutralize(text)
    assert same_modulo_neutralization(out, text.replace("\r\n", "\n").replace("\r", "\n"))
    assert md.neutralize(out) == out  # stable: a Daily entry promoted again is unchanged
    heading, links, anchors = scan_markdown(f"# Title\n\n{out}{AFTER}")
    assert heading == "Title" and anchors == ["after"]
    assert [link.target for link in links] == ["03 mtm/a/b"]
    assert "[[" not in out.replace("\\[\\[", "") or not scan_markdown(out)[1]


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

"""Reading one canonical file: frontmatter, titles, wikilinks, anchors, ISTM lines."""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import ISSUE_CODES
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_forest.documents import read_facts, scan_markdown, split_frontmatter
from memory_forest.facts import Facts
from memory_forest.routes import parse_route

STM = "04 stm/tree/branch/leaf.md"
ISTM = "06 istm/events.jsonl"


def facts_of(text: str | bytes, path: str = STM, max_links: int = 10_000) -> Facts:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    facts, _ = read_facts(parse_route(path), raw, 0, max_links)
    return facts


def codes(facts: Facts) -> list[str]:
    return sorted(issue.code for issue in facts.issues)


def targets(text: str) -> list[str]:
    return [link.target for link in facts_of(text).links]


# --- titles, ids, hashes --------------------------------------------------------------------


def test_title_comes_from_frontmatter_first() -> None:
    facts = facts_of("---\ntitle: From YAML\n---\n# From heading\n")
    assert facts.title == "From YAML"
    assert facts.issues == []


def test_title_falls_back_to_first_h1_then_stem() -> None:
    assert facts_of("intro\n\n## second level\n\n# First H1\n\n# Second H1\n").title == "First H1"
    assert facts_of("no heading at all\n").title == "leaf"
    assert facts_of("---\ntitle: '  '\n---\n# Heading\n").title == "Heading"


def test_file_without_frontmatter_is_valid() -> None:
    facts = facts_of("# Plain\n\n- up - [[03 mtm/tree/branch|branch]]\n")
    assert facts.issues == []
    assert facts.id is None
    assert facts.status == "active"


def test_facts_carry_size_and_hash_of_the_exact_bytes() -> None:
    raw = "# Tï\n".encode()
    facts = facts_of(raw)
    assert facts.size == len(raw)
    assert facts.sha256 == hashlib.sha256(raw).hexdigest()


def test_the_stored_lists_sit_where_json_path_says() -> None:
    """Writers look files up by these lists with SQLite's JSON functions."""
    import json

    facts = facts_of("---\nid: x1\nstatus: archived\n---\n# T\n[[03 mtm/tree/branch#h|a]]\n")
    stored = json.loads(facts.dumps())
    for name in ("links", "event_ids", "anchors"):
        index = int(Facts.json_path(name)[2:-1])
        assert stored[index] == json.loads(json.dumps(getattr(facts, name)))
    assert stored[0] == [["03 mtm/tree/branch", 6, "h", "a"]]


def test_id_and_status_are_read() -> None:
    facts = facts_of("---\nid: stm-7\nstatus: superseded\nsuperseded_by: stm-8\n---\n")
    assert (facts.id, facts.status) == ("stm-7", "superseded")
    assert facts_of("---\nid: 42\n---\n").id == "42"


def test_unknown_frontmatter_keys_are_accepted() -> None:
    assert facts_of("---\nmood: sunny\nx-custom: [1, 2]\n---\n# T\n").issues == []


def test_bom_before_frontmatter_is_tolerated() -> None:
    facts = facts_of("\ufeff---\nid: with-bom\n---\n# T\n")
    assert facts.id == "with-bom" and facts.issues == []


# --- frontmatter problems -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "---\nid: [unclosed\n---\n# T\n",
        "---\nkey: value\n  bad indent: x\n---\n",
        "---\n\tid: tab\n---\n",
        "---\n- a list\n- not a mapping\n---\n# T\n",
        "---\njust a string\n---\n# T\n",
    ],
)
def test_malformed_or_non_mapping_frontmatter_is_frontmatter_invalid(text: str) -> None:
    facts = facts_of(text)
    assert codes(facts) == ["frontmatter_invalid"]
    assert facts.issues[0].path == STM


@pytest.mark.parametrize(
    ("yaml", "field"),
    [
        ("id: ''", "id"),
        ("id: [a, b]", "id"),
        ("id: true", "id"),
        ("title: 12", "title"),
        ("status: deleted", "status"),
        ("created: yesterday", "created"),
        ("updated: 12", "updated"),
        ("sources: 7", "sources"),
        ("tags: {a: 1}", "tags"),
        ("tags: [ok, 3]", "tags"),
        ("supersedes: 5", "supersedes"),
        ("superseded_by: 5", "superseded_by"),
    ],
)
def test_each_bad_field_is_frontmatter_bad_field(yaml: str, field: str) -> None:
    facts = facts_of(f"---\n{yaml}\n---\n# T\n")
    assert codes(facts) == ["frontmatter_bad_field"]
    assert f"'{field}'" in facts.issues[0].message


def test_good_fields_pass() -> None:
    text = (
        "---\nid: a\ntitle: T\nstatus: active\ncreated: 2026-01-01T00:00:00Z\n"
        "updated: '2026-01-02T03:04:05+00:00'\nsources: ['05 daily/2026-01-01.md#e1']\n"
        "tags: single\nsupersedes: [old]\nsuperseded_by: []\n---\n# T\n"
    )
    assert facts_of(text).issues == []


def test_empty_and_comment_only_frontmatter_are_valid() -> None:
    assert facts_of("---\n---\n# T\n").issues == []
    assert facts_of("---\n# only a comment\n---\n# T\n").title == "T"


def test_unclosed_frontmatter_fence_is_body_text() -> None:
    facts = facts_of("---\nnot closed\n\n# Heading\n\n[[03 mtm/tree/branch]]\n")
    assert facts.issues == []
    assert facts.title == "Heading"
    assert [link.line for link in facts.links] == [6]


def test_not_utf8_is_reported_and_nothing_else_is_parsed() -> None:
    facts = facts_of(b"# caf\xe9\n[[03 mtm/tree/branch]]\n")
    assert codes(facts) == ["not_utf8"]
    assert facts.links == []
    assert facts.title == "leaf"


def test_split_frontmatter_keeps_the_body_exact() -> None:
    text = "---\na: 1\n---\n\n    indented\n\n\n"
    meta, body, offset = split_frontmatter(text)
    assert meta == {"a": 1}
    assert text.endswith(body) and body.startswith("    indented")  # not stripped
    assert text.splitlines()[offset] == body.splitlines()[0]  # offset = lines before body


# --- wikilinks ------------------------------------------------------------------------------


def test_link_parts_alias_heading_and_md_suffix() -> None:
    facts = facts_of("[[03 mtm/tree/branch.md#Current state|the branch]] and ![[01 xltm/XLTM]]\n")
    first, second = facts.links
    assert (first.target, first.heading, first.alias) == ("03 mtm/tree/branch", "Current state",
                                                          "the branch")
    assert (second.target, second.heading, second.alias) == ("01 xltm/XLTM", None, None)


@pytest.mark.parametrize(
    "text",
    [
        "inline `[[02 ltm/tree_LTM]]` code\n",
        "``double [[02 ltm/tree_LTM]] ticks``\n",
        "```\n[[02 ltm/tree_LTM]]\n```\n",
        "~~~markdown\n[[02 ltm/tree_LTM]]\n~~~\n",
        "para\n\n    [[02 ltm/tree_LTM]]\n",
        "\\[\\[02 ltm/tree_LTM]]\n",
        "\\[[02 ltm/tree_LTM]]\n",
        "&#91;&#91;02 ltm/tree_LTM]]\n",
        "<div>\n[[02 ltm/tree_LTM]]\n</div>\n",
        "<!-- [[02 ltm/tree_LTM]] -->\n",
    ],
)
def test_wikilink_in_code_escape_or_html_block_is_text(text: str) -> None:
    assert targets(text) == []


def test_wikilink_in_prose_list_heading_and_emphasis_is_a_link() -> None:
    text = (
        "# Title [[01 xltm/XLTM]]\n\n- item [[02 ltm/a_LTM|a]]\n\n"
        "*[[03 mtm/a/b]]* and **[[04 stm/a/b/c]]**\n\n> quote [[03 mtm/a/q]]\n"
    )
    assert targets(text) == ["01 xltm/XLTM", "02 ltm/a_LTM", "03 mtm/a/b", "04 stm/a/b/c",
                             "03 mtm/a/q"]


def test_indented_code_right_after_frontmatter_is_not_a_link() -> None:
    # python-frontmatter strips the body; cutting it that way made this code a paragraph.
    assert targets("---\nid: x\n---\n    [[02 ltm/tree_LTM]]\n") == []


def test_each_link_reports_its_own_line() -> None:
    text = (
        "# T\n"                          # 1
        "first [[03 mtm/a/one]]\n"       # 2
        "second `code` [[03 mtm/a/two]]\n"  # 3
        "third [[03 mtm/a/three]]\n"     # 4
        "\n"                             # 5
        "- [[03 mtm/a/four]]\n"          # 6
    )
    assert [(link.target, link.line) for link in facts_of(text).links] == [
        ("03 mtm/a/one", 2), ("03 mtm/a/two", 3), ("03 mtm/a/three", 4), ("03 mtm/a/four", 6),
    ]


def test_line_numbers_count_the_frontmatter_even_with_trailing_blank_lines() -> None:
    text = "---\nid: x\n---\n\n\n# T\n\n[[03 mtm/a/b]]\n\n\n\n\n"
    assert [link.line for link in facts_of(text).links] == [8]


def test_h2_headings_are_anchors() -> None:
    facts = facts_of("# Day\n\n## d-1\n\ntext\n\n## d-2\n\n### not an anchor\n",
                     "05 daily/2026-01-01.md")
    assert facts.anchors == ["d-1", "d-2"]


def test_too_many_links_is_limit_exceeded_and_truncated() -> None:
    text = "".join(f"[[03 mtm/a/b{i}]]\n" for i in range(5))
    facts = facts_of(text, max_links=3)
    assert codes(facts) == ["limit_exceeded"]
    assert len(facts.links) == 3


def test_scan_markdown_directly() -> None:
    heading, links, anchors = scan_markdown("# H\n\n## A\n\n[[x|y]]\n", line_offset=10)
    assert heading == "H"
    assert anchors == ["A"]
    assert [(link.target, link.alias, link.line) for link in links] == [("x", "y", 15)]


# --- ISTM -----------------------------------------------------------------------------------

GOOD_EVENT = {"event_id": "e1", "observed_at": "2026-01-01T00:00:00Z",
              "captured_at": "2026-01-01T00:00:01Z", "source": "s", "kind": "note",
              "payload": {"text": "hello [[03 mtm/a/b]]"}}


def test_good_istm_lines_give_event_ids_and_no_links() -> None:
    lines = [dict(GOOD_EVENT), dict(GOOD_EVENT, event_id="e2")]
    facts = facts_of("".join(json.dumps(line) + "\n" for line in lines), ISTM)
    assert facts.issues == []
    assert facts.event_ids == ["e1", "e2"]
    assert facts.links == []
    assert facts.title == "events"


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("", "istm_blank_line"),
        ("   ", "istm_blank_line"),
        ("{not json", "istm_invalid_json"),
        ('{"a": 1} {"b": 2}', "istm_invalid_json"),
        ('{"event_id": "e", "event_id": "f"}', "istm_duplicate_key"),
        ('{"x": NaN}', "istm_non_finite"),
        ('{"x": -Infinity}', "istm_non_finite"),
        ('{"x": 1e400}', "istm_non_finite"),
        ("[1, 2]", "istm_not_object"),
        ('"a string"', "istm_not_object"),
        ('{"event_id": "e9"}', "istm_missing_key"),
        (json.dumps(dict(GOOD_EVENT, event_id="")), "istm_bad_event_id"),
        (json.dumps(dict(GOOD_EVENT, event_id=7)), "istm_bad_event_id"),
    ],
)
def test_each_bad_istm_line_has_its_code_and_line_number(line: str, code: str) -> None:
    text = json.dumps(GOOD_EVENT) + "\n" + line + "\n" + json.dumps(dict(GOOD_EVENT, event_id="z"))
    facts = facts_of(text, ISTM)
    assert codes(facts) == [code]
    assert "line 2" in facts.issues[0].message
    level = "warning" if code == "istm_blank_line" else "error"
    assert facts.issues[0].level == level


def test_istm_not_utf8() -> None:
    assert codes(facts_of(b'{"event_id": "\xff"}\n', ISTM)) == ["not_utf8"]


# --- property: no input crashes the reader --------------------------------------------------

frontmatter_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=200)


@settings(max_examples=100, deadline=None)
@given(yaml=frontmatter_text, body=frontmatter_text)
def test_any_frontmatter_gives_facts_with_known_codes(yaml: str, body: str) -> None:
    facts = facts_of(f"---\n{yaml}\n---\n{body}")
    assert isinstance(facts.title, str) and facts.title
    assert {issue.code for issue in facts.issues} <= ISSUE_CODES
    assert all(link.line >= 1 for link in facts.links)


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=300))
def test_any_bytes_as_istm_give_facts_with_known_codes(data: bytes) -> None:
    facts = facts_of(data, ISTM)
    assert {issue.code for issue in facts.issues} <= ISSUE_CODES

"""``audit``: the link contract on top of validate."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import check, issues_of, write

STM = "04 stm/kitchen/fermentation/new-leaf.md"
UP = "[[03 mtm/kitchen/fermentation|Fermentation]]"


def audit(root: Path) -> dict:
    return check(root, "audit")


def messages(outcome: dict, code: str) -> list[str]:
    return [issue["message"] for issue in outcome["issues"] if issue["code"] == code]


def test_the_example_audits_with_zero_issues(example_forest: Path) -> None:
    outcome = audit(example_forest)
    assert outcome["ok"] is True and outcome["issues"] == []
    assert outcome["operation"] == "audit"


def test_the_plain_reference_layout_audits(reference_forest: Path) -> None:
    outcome = audit(reference_forest)
    assert outcome["ok"] is True
    assert [code for _, code in issues_of(outcome)] == ["config_missing"]


def test_a_new_leaf_with_its_parent_link_is_fine(example_forest: Path) -> None:
    write(example_forest, STM, f"# New\n\n- up - {UP}\n")
    assert audit(example_forest)["issues"] == []


@pytest.mark.parametrize(
    "link",
    ["[[03 mtm/kitchen/fermentation]]", "[[03 mtm/kitchen/fermentation.md]]",
     "[[03 mtm/kitchen/fermentation#Leaves|up]]", "![[03 mtm/kitchen/fermentation]]",
     "[[ 03 mtm/kitchen/fermentation ]]"],
)
def test_parent_link_spellings_that_count(example_forest: Path, link: str) -> None:
    write(example_forest, STM, f"# New\n\n{link}\n")
    assert audit(example_forest)["issues"] == []


# --- parent links ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "parent"),
    [
        ("02 ltm/pantry_LTM.md", "01 xltm/XLTM"),
        ("03 mtm/kitchen/baking.md", "02 ltm/kitchen_LTM"),
        (STM, "03 mtm/kitchen/fermentation"),
    ],
)
def test_missing_parent_link_is_reported(example_forest: Path, path: str, parent: str) -> None:
    write(example_forest, path, "# no way up\n")
    outcome = audit(example_forest)
    assert issues_of(outcome, "link_parent_missing") == [(path, "link_parent_missing")]
    assert parent in messages(outcome, "link_parent_missing")[0]
    assert outcome["ok"] is False and outcome["error"]["code"] == "audit_failed"


def test_parent_link_inside_code_does_not_count(example_forest: Path) -> None:
    write(example_forest, STM, "# New\n\n`[[03 mtm/kitchen/fermentation]]`\n")
    assert issues_of(audit(example_forest)) == [(STM, "link_parent_missing")]


def test_xltm_daily_archive_and_istm_need_no_parent_link(example_forest: Path) -> None:
    write(example_forest, "01 xltm/XLTM.md", "# Root\n")
    write(example_forest, "05 daily/2026-11-29.md", "# Day\n")
    write(example_forest, "00 life_archive/old.md", "# Old\n")
    write(example_forest, "06 istm/events.jsonl", "")
    assert audit(example_forest)["issues"] == []


# --- link rules -----------------------------------------------------------------------------

LINK_CASES = [
    # (source path, extra link, expected code)
    (STM, "[[04 stm/kitchen/fermentation/zaatar-blend]]", "link_lateral"),
    ("03 mtm/kitchen/fermentation.md", "[[03 mtm/greenhouse/irrigation]]", "link_lateral"),
    ("02 ltm/kitchen_LTM.md", "[[02 ltm/greenhouse_LTM]]", "link_lateral"),
    (STM, "[[02 ltm/kitchen_LTM]]", "link_nonadjacent"),
    (STM, "[[01 xltm/XLTM]]", "link_nonadjacent"),
    (STM, "[[05 daily/2026-11-28]]", "link_nonadjacent"),
    ("03 mtm/kitchen/fermentation.md", "[[01 xltm/XLTM]]", "link_nonadjacent"),
    ("02 ltm/kitchen_LTM.md", "[[04 stm/kitchen/fermentation/zaatar-blend]]",
     "link_nonadjacent"),
    ("01 xltm/XLTM.md", "[[03 mtm/kitchen/fermentation]]", "link_nonadjacent"),
    ("01 xltm/XLTM.md", "[[00 life_archive/2025-first-greenhouse-season]]", "link_nonadjacent"),
    ("00 life_archive/2025-first-greenhouse-season.md", "[[02 ltm/kitchen_LTM]]",
     "link_nonadjacent"),
    ("00 life_archive/2025-first-greenhouse-season.md", "[[04 stm/kitchen/fermentation/x]]",
     "link_nonadjacent"),
    (STM, "[[03 mtm/kitchen/pickling]]", "link_unresolved"),
    ("01 xltm/XLTM.md", "[[02 ltm/garage_LTM]]", "link_child_missing"),  # a child that is gone
    (STM, "[[03 mtm/Kitchen/fermentation]]", "link_unresolved"),  # canonical paths are case-exact
    (STM, "[[fermentation]]", "link_not_canonical"),
    (STM, "[[03 mtm/kitchen]]", "link_not_canonical"),
    (STM, "[[03 mtm/../../etc/passwd]]", "link_not_canonical"),
    (STM, "[[/03 mtm/kitchen/fermentation]]", "link_not_canonical"),
    (STM, "[[03 MTM/kitchen/fermentation]]", "link_not_canonical"),
    (STM, "[[06 istm/2026-11-28.jsonl]]", "link_not_canonical"),
    ("05 daily/2026-11-28.md", "[[06 istm/2026-11-28.jsonl]]", "link_in_source_layer"),
    ("05 daily/2026-11-28.md", "[[01 xltm/XLTM]]", "link_in_source_layer"),
    ("05 daily/2026-11-28.md", "[[nothing at all]]", "link_in_source_layer"),
]


@pytest.mark.parametrize(("path", "link", "code"), LINK_CASES)
def test_each_link_rule_is_reported_at_the_source(example_forest: Path, path: str, link: str,
                                                  code: str) -> None:
    source = example_forest / path
    text = source.read_text(encoding="utf-8") if source.exists() else f"# New\n\n{UP}\n"
    write(example_forest, path, text + f"\nBad: {link}\n")
    outcome = audit(example_forest)
    assert issues_of(outcome) == [(path, code)], outcome["issues"]
    line = len((text + "\n").splitlines()) + 1
    assert messages(outcome, code)[0].startswith(f"line {line}:")
    assert outcome["ok"] is False


def test_life_archive_may_link_to_xltm(example_forest: Path) -> None:
    write(example_forest, "00 life_archive/2019.md", "# 2019\n\n[[01 xltm/XLTM|root]]\n")
    assert audit(example_forest)["issues"] == []


@pytest.mark.parametrize(
    "hidden",
    [
        "`[[02 ltm/kitchen_LTM]]`",
        "```\n[[02 ltm/kitchen_LTM]]\n```",
        "    [[02 ltm/kitchen_LTM]]",
        "\\[\\[02 ltm/kitchen_LTM]]",
        "<pre>\n[[02 ltm/kitchen_LTM]]\n</pre>",
    ],
)
def test_a_wikilink_in_code_or_escaped_is_ignored(example_forest: Path, hidden: str) -> None:
    write(example_forest, STM, f"# New\n\n{UP}\n\n{hidden}\n")
    assert audit(example_forest)["issues"] == []


def test_daily_may_cite_sources_in_backticks(example_forest: Path) -> None:
    write(example_forest, "05 daily/2026-11-29.md",
          "# Day\n\n## e1\n\nSource: `[[06 istm/2026-11-28.jsonl]]` and `06 istm/x.jsonl#e`\n")
    assert audit(example_forest)["issues"] == []


def test_istm_payload_text_is_never_a_link(example_forest: Path) -> None:
    write(example_forest, "06 istm/events.jsonl",
          '{"event_id":"n1","observed_at":"t","captured_at":"t","source":"s","kind":"k",'
          '"payload":{"text":"[[02 ltm/kitchen_LTM]] [[nowhere]]"}}\n')
    assert audit(example_forest)["issues"] == []


def test_audit_reports_validate_issues_too(example_forest: Path) -> None:
    (example_forest / "01 xltm/XLTM.md").chmod(0o644)
    write(example_forest, STM, "# orphan\n")
    assert issues_of(audit(example_forest)) == [
        ("01 xltm/XLTM.md", "mode_file_not_private"), (STM, "link_parent_missing"),
    ]


def test_each_bad_link_is_reported_with_its_own_line(example_forest: Path) -> None:
    write(example_forest, STM, f"# New\n{UP}\n[[02 ltm/kitchen_LTM]]\n[[03 mtm/x/y]]\n")
    outcome = audit(example_forest)
    assert messages(outcome, "link_nonadjacent")[0].startswith("line 3:")
    assert messages(outcome, "link_unresolved")[0].startswith("line 4:")


def test_reference_layout_catches_a_broken_up_line(reference_forest: Path) -> None:
    path = "04 stm/workshop/tools/chisel-sharpening.md"
    write(reference_forest, path, "# chisel sharpening\n\n- up - [[03 mtm/workshop/tool|tools]]\n")
    assert sorted(issues_of(audit(reference_forest), None))[1:] == [
        (path, "link_parent_missing"), (path, "link_unresolved"),
    ]

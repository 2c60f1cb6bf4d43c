"""Plan models: every way a plan can be wrong has its own code; the schemas are published."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from memory_forest.errors import ForestError
from memory_forest.writers import planbase, plans

DOCS = Path(__file__).resolve().parents[2] / "docs"
SHA = "a" * 64

DAILY = {"schema_version": 1, "transaction_id": "daily-1", "date": "2026-11-30",
         "entries": [{"entry_id": "d-1", "source_record_ids": ["evt-1"], "summary": "S"}]}
SWEEP = {"schema_version": 1, "transaction_id": "sweep-1", "snapshot_sha256": SHA, "changes": [
    {"target": {"layer": "stm", "tree": "t", "branch": "b", "leaf": "l"}, "operation": "create",
     "body": "B", "frontmatter": {"title": "L"}}]}
PROMOTION = {"schema_version": 1, "transaction_id": "promo-1", "entry_ids": ["d-1"],
             "route": {"tree": "t", "tree_title": "T", "branch": "b", "branch_title": "B",
                       "leaf": "l"}}
GOOD = {"daily": DAILY, "structured": SWEEP, "promotion": PROMOTION}


def code_of(kind: str, data) -> str:
    raw = data if isinstance(data, str | bytes) else json.dumps(data)
    with pytest.raises(ForestError) as info:
        plans.parse(kind, raw)
    assert info.value.exit_code == 2
    return info.value.code


def edited(kind: str, change) -> dict:
    data = copy.deepcopy(GOOD[kind])
    change(data)
    return data


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_good_plans_parse(kind):
    plan = plans.parse(kind, json.dumps(GOOD[kind]))
    assert plan.transaction_id == GOOD[kind]["transaction_id"]


@pytest.mark.parametrize("kind", sorted(GOOD))
@pytest.mark.parametrize("raw, code", [
    ("{", "plan_invalid_json"), ("[]", "plan_not_object"), ('{"a":1,"a":2}', "plan_duplicate_key"),
    ('{"x": NaN}', "plan_invalid_json"), ("null", "plan_not_object"),
])
def test_not_a_plan(kind, raw, code):
    assert code_of(kind, raw) == code


def test_too_large():
    assert code_of("daily", b" " * (plans.MAX_PLAN_BYTES + 1)) == "plan_too_large"


def _set(path: str, value):
    def change(data):
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        if value is KeyError:
            del node[last]
        elif last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value
    return change


@pytest.mark.parametrize("kind, path, value, code", [
    ("daily", "extra", 1, "plan_unknown_field"),
    ("daily", "entries.0.extra", 1, "plan_unknown_field"),
    ("daily", "date", KeyError, "plan_missing_field"),
    ("daily", "schema_version", KeyError, "plan_missing_field"),
    ("daily", "schema_version", 2, "plan_bad_schema_version"),
    ("daily", "schema_version", True, "plan_bad_schema_version"),
    ("daily", "schema_version", 1.0, "plan_bad_schema_version"),
    ("daily", "transaction_id", "has space", "plan_bad_transaction_id"),
    ("daily", "transaction_id", 7, "plan_bad_transaction_id"),
    ("daily", "date", "30-11-2026", "plan_bad_date"),
    ("daily", "date", "2026-02-30", "plan_bad_date"),
    ("daily", "entries", [], "plan_empty_list"),
    ("daily", "entries.0.entry_id", "## x", "plan_bad_entry_id"),
    ("daily", "entries.0.source_record_ids", [], "plan_empty_list"),
    ("daily", "entries.0.source_record_ids", ["bad id"], "plan_bad_event_id"),
    ("daily", "entries.0.summary", "", "plan_empty_text"),
    ("daily", "entries.0.summary", "   ", "plan_empty_text"),
    ("daily", "entries.0.summary", "x" * (planbase.MAX_TEXT + 1), "plan_text_too_long"),
    ("daily", "entries.0.summary", 5, "plan_bad_value"),
    ("daily", "entries.0.summary", "bell\x07", "plan_control_character"),
    ("daily", "entries.0.summary", "e\u0301", "plan_not_nfc"),
    ("structured", "snapshot_sha256", "ABC", "plan_bad_sha256"),
    ("structured", "changes", [], "plan_empty_list"),
    ("structured", "changes.0.target.layer", "daily", "plan_bad_target_layer"),
    ("structured", "changes.0.target", {"tree": "t"}, "plan_bad_target_layer"),
    ("structured", "changes.0.target", {"layer": "ltm", "tree": "t", "branch": "b"},
     "plan_unknown_field"),
    ("structured", "changes.0.target", {"layer": "mtm", "tree": "t"}, "plan_missing_field"),
    ("structured", "changes.0.target.path", "04 stm/t/b/l.md", "plan_unknown_field"),
    ("structured", "changes.0.target.leaf", "a|b", "plan_bad_segment"),
    ("structured", "changes.0.target.leaf", "../x", "plan_bad_segment"),
    ("structured", "changes.0.operation", "delete", "plan_bad_operation"),
    ("structured", "changes.0.frontmatter.id", "x", "plan_unknown_field"),
    ("structured", "changes.0.frontmatter.status", "archived", "plan_unknown_field"),
    ("structured", "changes.0.frontmatter.title", "a\nb", "plan_bad_title"),
    ("structured", "changes.0.frontmatter.title", KeyError, "plan_missing_title"),
    ("structured", "changes.0.preimage_sha256", SHA, "plan_create_with_preimage"),
    ("structured", "changes.0.operation", "replace", "plan_replace_without_preimage"),
    ("structured", "changes.0.daily_entries", [{"entry_id": "d", "disposition": "lost"}],
     "plan_bad_disposition"),
    ("promotion", "route.leaf_title", "x", "plan_unknown_field"),
    ("promotion", "route.tree_title", KeyError, "plan_missing_field"),
    ("promotion", "route.branch", "a#b", "plan_bad_segment"),
    ("promotion", "route.tree_title", "a\tb\nc", "plan_bad_title"),
    ("promotion", "entry_ids", ["d-1", "d-1"], "plan_duplicate_entry_id"),
    ("promotion", "entry_ids", ["d 1"], "plan_bad_entry_id"),
    ("promotion", "entry_ids", ["d"] * 201, "plan_too_many_items"),
])
def test_each_rejection_has_its_code(kind, path, value, code):
    assert code_of(kind, edited(kind, _set(path, value))) == code


def test_duplicates_inside_a_plan():
    twice = edited("daily", lambda d: d["entries"].append(dict(d["entries"][0])))
    assert code_of("daily", twice) == "plan_duplicate_entry_id"
    same = edited("structured", lambda d: d["changes"].append(copy.deepcopy(d["changes"][0])))
    assert code_of("structured", same) == "plan_duplicate_target"

    def disposed_twice(data):
        second = copy.deepcopy(data["changes"][0])
        second["target"]["leaf"] = "other"
        data["changes"].append(second)
        for change in data["changes"]:
            change["daily_entries"] = [{"entry_id": "d-1", "disposition": "promoted"}]
    assert code_of("structured", edited("structured", disposed_twice)) == \
        "plan_duplicate_disposition"


def test_supersedes_only_on_create():
    def replace_with_supersedes(data):
        change = data["changes"][0]
        change.update(operation="replace", preimage_sha256=SHA, supersedes="old")
    assert code_of("structured", edited("structured", replace_with_supersedes)) == \
        "plan_supersedes_requires_create"


def test_errors_name_the_field():
    with pytest.raises(ForestError) as info:
        plans.parse("structured", json.dumps(edited("structured", _set(
            "changes.0.frontmatter.id", "x"))))
    assert info.value.details["loc"] == "changes.0.frontmatter.id"


def test_plan_files_are_read_safely(tmp_path):
    target = tmp_path / "plan.json"
    target.write_text(json.dumps(DAILY), encoding="utf-8")
    (tmp_path / "link.json").symlink_to(target)
    for source, code in ((str(tmp_path / "missing.json"), "plan_unreadable"),
                         (str(tmp_path / "link.json"), "plan_symlink"),
                         (str(tmp_path), "plan_not_regular_file")):
        with pytest.raises(ForestError) as info:
            plans.load("daily", source)
        assert info.value.code == code
    assert plans.load("daily", str(target)).date == "2026-11-30"


@pytest.mark.parametrize("kind", sorted(plans.SCHEMA_FILES))
def test_published_json_schemas_match_the_models(kind):
    assert (DOCS / plans.SCHEMA_FILES[kind]).read_text(encoding="utf-8") == \
        plans.schema_text(kind)


def test_schemas_are_closed_and_pin_the_version():
    for kind in plans.SCHEMA_FILES:
        schema = json.loads(plans.schema_text(kind))
        assert schema["additionalProperties"] is False
        assert schema["properties"]["schema_version"]["const"] == 1
        assert "transaction_id" in schema["required"]
        for definition in schema.get("$defs", {}).values():
            assert definition.get("additionalProperties") is False

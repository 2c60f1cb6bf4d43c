"""Layers and routes: the names a forest is made of, and every way a path can be wrong."""

from __future__ import annotations

import pytest
from conftest import raises_code
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_forest.errors import ForestError
from memory_forest.layers import BY_KEY, LAYERS, layer_for
from memory_forest.routes import (
    MAX_SEGMENT,
    casefold_key,
    check_segment,
    children_prefix,
    link_target,
    parse_route,
    segment_problem,
)

ROUTE_CODES = {
    "route_unknown_layer", "route_noncanonical_layer_dir", "route_bad_shape",
    "route_bad_segment", "route_escape", "route_extension_case",
}


# --- layers ---------------------------------------------------------------------------------


def test_seven_layers_with_exact_directory_names() -> None:
    assert [layer.dirname for layer in LAYERS] == [
        "00 life_archive", "01 xltm", "02 ltm", "03 mtm", "04 stm", "05 daily", "06 istm",
    ]
    assert [layer.extension for layer in LAYERS] == [".md"] * 6 + [".jsonl"]


def test_allowed_links_match_the_contract_table() -> None:
    allowed = {layer.key: set(layer.links_to) for layer in LAYERS}
    assert allowed == {
        "life_archive": {"xltm"},
        "xltm": {"ltm"},
        "ltm": {"mtm", "xltm"},
        "mtm": {"stm", "ltm"},
        "stm": {"mtm"},
        "daily": set(),
        "istm": set(),
    }


def test_only_layers_01_to_04_are_the_structured_tree() -> None:
    assert [layer.key for layer in LAYERS if layer.structured] == ["xltm", "ltm", "mtm", "stm"]


@pytest.mark.parametrize("text", ["stm", "04", "4", "04 stm", " stm "])
def test_layer_for_accepts_key_number_and_dirname(text: str) -> None:
    assert layer_for(text) is BY_KEY["stm"]


@pytest.mark.parametrize("text", ["07", "STM", "short", "", "04stm"])
def test_layer_for_unknown_is_none(text: str) -> None:
    assert layer_for(text) is None


# --- valid routes ---------------------------------------------------------------------------


def test_parse_every_canonical_shape() -> None:
    xltm = parse_route("01 xltm/XLTM.md")
    assert xltm.layer.key == "xltm" and xltm.parent_path is None

    ltm = parse_route("02 ltm/field-ops_LTM.md")
    assert (ltm.layer.key, ltm.tree) == ("ltm", "field-ops")
    assert ltm.parent_path == "01 xltm/XLTM.md"

    mtm = parse_route("03 mtm/field-ops/trial.md")
    assert (mtm.tree, mtm.branch) == ("field-ops", "trial")
    assert mtm.parent_path == "02 ltm/field-ops_LTM.md"

    stm = parse_route("04 stm/field-ops/trial/day one.md")
    assert (stm.tree, stm.branch, stm.leaf) == ("field-ops", "trial", "day one")
    assert stm.parent_path == "03 mtm/field-ops/trial.md"
    assert stm.link_target == "04 stm/field-ops/trial/day one"

    assert parse_route("00 life_archive/old times.md").name == "old times"
    assert parse_route("05 daily/2026-02-28.md").name == "2026-02-28"
    assert parse_route("06 istm/events.jsonl").name == "events"
    assert parse_route("06 istm/2024-02-29.jsonl").name == "2024-02-29"
    for path in ("00 life_archive/x.md", "05 daily/2026-02-28.md", "06 istm/events.jsonl"):
        assert parse_route(path).parent_path is None


def test_unicode_segments_are_fine() -> None:
    route = parse_route("04 stm/정원/발효/김치 7번.md")
    assert (route.tree, route.branch, route.leaf) == ("정원", "발효", "김치 7번")
    assert parse_route("02 ltm/庭_LTM.md").tree == "庭"


def test_link_target_drops_only_md() -> None:
    assert link_target("03 mtm/a/b.md") == "03 mtm/a/b"
    assert link_target("06 istm/events.jsonl") == "06 istm/events.jsonl"


# --- invalid routes: one code per failure ---------------------------------------------------

BAD_PATHS = [
    # route_escape
    ("", "route_escape"),
    ("/etc/passwd", "route_escape"),
    ("../outside.md", "route_escape"),
    ("02 ltm/../../outside_LTM.md", "route_escape"),
    ("02 ltm/./x_LTM.md", "route_escape"),
    ("03 mtm//b.md", "route_escape"),
    ("05 daily/", "route_escape"),
    ("03 mtm\\t\\b.md", "route_escape"),
    ("C:/forest/01 xltm/XLTM.md", "route_escape"),
    # route_unknown_layer
    ("07 extra/x.md", "route_unknown_layer"),
    ("notes/x.md", "route_unknown_layer"),
    (".obsidian/app.md", "route_unknown_layer"),
    # route_noncanonical_layer_dir
    ("02 LTM/x_LTM.md", "route_noncanonical_layer_dir"),
    ("02_ltm/x_LTM.md", "route_noncanonical_layer_dir"),
    ("2 ltm/x_LTM.md", "route_noncanonical_layer_dir"),
    ("02  ltm/x_LTM.md", "route_noncanonical_layer_dir"),
    ("ltm/x_LTM.md", "route_noncanonical_layer_dir"),
    ("04-stm/a/b/c.md", "route_noncanonical_layer_dir"),
    # route_bad_shape
    ("02 ltm", "route_bad_shape"),
    ("01 xltm/Root.md", "route_bad_shape"),
    ("02 ltm/tree.md", "route_bad_shape"),
    ("02 ltm/_LTM.md", "route_bad_shape"),
    ("02 ltm/sub/tree_LTM.md", "route_bad_shape"),
    ("03 mtm/tree.md", "route_bad_shape"),
    ("03 mtm/tree/branch/extra.md", "route_bad_shape"),
    ("04 stm/tree/branch.md", "route_bad_shape"),
    ("04 stm/a/b/c/d.md", "route_bad_shape"),
    ("04 stm/a/b/c.txt", "route_bad_shape"),
    ("05 daily/today.md", "route_bad_shape"),
    ("05 daily/2026-02-30.md", "route_bad_shape"),
    ("05 daily/2026/2026-01-01.md", "route_bad_shape"),
    ("06 istm/log.jsonl", "route_bad_shape"),
    ("06 istm/events.md", "route_bad_shape"),
    ("00 life_archive/sub/x.md", "route_bad_shape"),
    # route_bad_segment
    ("03 mtm/tree/ branch.md", "route_bad_segment"),
    ("03 mtm/tree/branch .md", "route_bad_segment"),
    ("03 mtm/.tree/branch.md", "route_bad_segment"),
    ("04 stm/a/b/.md", "route_bad_segment"),
    ("03 mtm/tree/bra\x07nch.md", "route_bad_segment"),
    ("03 mtm/tree/bra\x85nch.md", "route_bad_segment"),
    ("03 mtm/tree/cafe\u0301.md", "route_bad_segment"),  # NFD, not NFC
    ("03 mtm/tree/" + "x" * (MAX_SEGMENT + 1) + ".md", "route_bad_segment"),
    # route_extension_case
    ("05 daily/2026-01-01.MD", "route_extension_case"),
    ("02 ltm/x_LTM.Md", "route_extension_case"),
    ("06 istm/events.JSONL", "route_extension_case"),
]


@pytest.mark.parametrize(("path", "code"), BAD_PATHS)
def test_bad_path_is_rejected_with_its_code(path: str, code: str) -> None:
    error = raises_code(lambda: parse_route(path), code)
    assert error.details["path"] == path[:500]
    assert error.exit_code == 1


def test_segment_of_exactly_max_length_is_accepted() -> None:
    leaf = "y" * MAX_SEGMENT
    assert parse_route(f"04 stm/a/b/{leaf}.md").leaf == leaf


@pytest.mark.parametrize(
    ("segment", "problem"),
    [("", "empty"), (".hidden", "starts with a dot"), ("a/b", "contains a path separator"),
     ("a\\b", "contains a path separator"), ("tab\there", "contains a control character"),
     (" x", "has leading or trailing whitespace"), ("e\u0301", "is not NFC")],
)
def test_segment_problems_are_named(segment: str, problem: str) -> None:
    assert segment_problem(segment) == problem
    raises_code(lambda: check_segment(segment, "tree"), "route_bad_segment")


def test_casefold_key_folds_case_and_normalizes() -> None:
    assert casefold_key("02 LTM/Straße_LTM.md") == casefold_key("02 ltm/STRASSE_ltm.md")
    assert casefold_key("03 mtm/t/cafe\u0301.md") == casefold_key("03 mtm/t/caf\u00e9.md")
    assert casefold_key("03 mtm/a/b.md") != casefold_key("03 mtm/a/c.md")


# --- property: parsing never fails with anything but a route code ---------------------------

segments = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)


@settings(max_examples=100, deadline=None)
@given(tree=segments, branch=segments, leaf=segments)
def test_any_segments_give_a_route_or_a_route_code(tree: str, branch: str, leaf: str) -> None:
    path = f"04 stm/{tree}/{branch}/{leaf}.md"
    try:
        route = parse_route(path)
    except ForestError as exc:
        assert exc.code in ROUTE_CODES
        return
    assert (route.tree, route.branch, route.leaf) == (tree, branch, leaf)
    assert all(segment_problem(s) is None for s in (tree, branch, leaf))
    assert route.parent_path == f"03 mtm/{tree}/{branch}.md"


@settings(max_examples=100, deadline=None)
@given(path=st.text(max_size=60))
def test_any_text_gives_a_route_or_a_route_code(path: str) -> None:
    try:
        route = parse_route(path)
    except ForestError as exc:
        assert exc.code in ROUTE_CODES
        assert isinstance(exc.message, str) and exc.message
    else:
        assert route.path == path
        assert ".." not in path.split("/")


@pytest.mark.parametrize("path, layer", [
    ("01 xltm/XLTM-conflict-alpha-20261203T101500Z.md", "xltm"),
    ("01 xltm/XLTM-conflict-alpha-20261203T101500Z-conflict-beta-20261204T080000Z.md", "xltm"),
    ("02 ltm/garden_LTM-conflict-alpha-20261203T101500Z.md", "ltm"),
    ("05 daily/2026-12-01-conflict-alpha-20261203T101500Z.md", "daily"),
])
def test_a_conflict_copy_parses_in_its_originals_layer_and_owns_nothing(path, layer) -> None:
    route = parse_route(path)
    assert route.layer.key == layer
    assert children_prefix(path) is None
    if layer == "ltm":
        assert route.tree == "garden" and route.parent_path == "01 xltm/XLTM.md"


@pytest.mark.parametrize("path", [
    "01 xltm/XLTM-conflict-alpha.md",  # no time
    "01 xltm/Other-conflict-alpha-20261203T101500Z.md",
    "02 ltm/garden-conflict-alpha-20261203T101500Z.md",  # the original is no tree
    "02 ltm/_LTM-conflict-alpha-20261203T101500Z.md",
    "05 daily/2026-02-30-conflict-alpha-20261203T101500Z.md",
    "01 xltm/-conflict-alpha-20261203T101500Z.md",
])
def test_a_name_that_only_looks_like_a_copy_stays_a_bad_shape(path) -> None:
    raises_code(lambda: parse_route(path), "route_bad_shape")

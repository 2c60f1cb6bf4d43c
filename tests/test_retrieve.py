"""route, search and retrieve over a real index: shapes, ordering, staleness, hostile input."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from forestkit import WORDS, RandomForest, new_forest, skeleton, write_doc, write_file
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_forest import operations, ranking, retrieve
from memory_forest.errors import ForestError
from memory_forest.queryplan import QueryPlan

NODE_KEYS = {"path", "layer", "title", "id", "status", "sha256", "size", "mtime_ns", "verified",
             "changed_since_index", "current_sha256", "missing", "read_error"}
# A trail node also says how fresh it is and what supersedes it.
TRAIL_NODE_KEYS = NODE_KEYS | {"updated", "age_days", "superseded_by", "superseded_by_path"}
TRAIL_KEYS = {"nodes", "complete", "missing", "reason", "score", "status",
              "original_query_matched", "matched_query_plan_probe_count",
              "canonical_parent_child"}
KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"


def plan(*queries: str) -> QueryPlan:
    return QueryPlan.model_validate({"schema_version": 1,
                                     "probes": [{"query": q} for q in queries]})


def owners(outcome: dict) -> list[str]:
    return [trail["nodes"][-1]["path"] for trail in outcome["trails"]]


# --- trail shapes ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Path:
    """One word per level: xylograph (XLTM), marmoset (tree), pangolin (branch), quillwort
    (leaf), each found nowhere else."""
    root = skeleton(tmp_path_factory.mktemp("shapes"), {
        "garden": {"beds": {"soil": "Loam with compost and quillwort."},
                   "paths": {"gravel": "Raked weekly."}},
        "kitchen": {"jars": {"brine": "Salt ratio of two percent."}},
    })
    write_doc(root, "01 xltm/XLTM.md", "Root map", "Anchor word: xylograph.", "xltm")
    write_doc(root, "02 ltm/garden_LTM.md", "Garden", "Tree word: marmoset.", "ltm-garden")
    write_doc(root, "03 mtm/garden/beds.md", "Beds", "Branch word: pangolin.", "mtm-garden-beds")
    operations.index(root)
    return root


def test_leaf_match_gives_a_complete_root_first_trail(shapes):
    outcome = retrieve.retrieve(shapes, "quillwort")
    assert outcome["ok"] and outcome["count"] == 1 and outcome["body_included"] is False
    trail = outcome["trails"][0]
    assert set(trail) == TRAIL_KEYS
    paths = [node["path"] for node in trail["nodes"]]
    assert paths == ["01 xltm/XLTM.md", "02 ltm/garden_LTM.md", "03 mtm/garden/beds.md",
                     "04 stm/garden/beds/soil.md"]
    assert [node["layer"] for node in trail["nodes"]] == ["01 xltm", "02 ltm", "03 mtm",
                                                            "04 stm"]
    assert trail["complete"] is True and trail["missing"] == [] and trail["reason"] is None
    assert all(node["verified"] and not node["changed_since_index"] for node in trail["nodes"])
    assert trail["canonical_parent_child"] == [
        {"parent": paths[0], "child": paths[1]},
        {"parent": paths[1], "child": paths[2]},
        {"parent": paths[2], "child": paths[3]},
    ]
    assert trail["original_query_matched"] is True
    assert trail["matched_query_plan_probe_count"] == 0
    assert trail["score"] > 0 and trail["status"] == "active"
    for node in trail["nodes"]:
        assert set(node) == TRAIL_NODE_KEYS
        data = (shapes / node["path"]).read_bytes()
        assert node["sha256"] == hashlib.sha256(data).hexdigest()
        assert node["size"] == len(data)
    assert trail["nodes"][3]["id"] == "stm-garden-beds-soil"
    assert trail["nodes"][3]["title"] == "Soil"


@pytest.mark.parametrize(("query", "depth"), [("xylograph", 1), ("marmoset", 2),
                                               ("pangolin", 3)])
def test_match_above_stm_gives_a_partial_trail_ending_there(shapes, query, depth):
    outcome = retrieve.retrieve(shapes, query)
    assert outcome["count"] == 1  # never a fan-out over what the match owns
    trail = outcome["trails"][0]
    assert trail["complete"] is False and trail["reason"] == "no_leaf" and trail["missing"] == []
    assert len(trail["nodes"]) == depth
    assert trail["nodes"][0]["path"] == "01 xltm/XLTM.md"
    assert len(trail["canonical_parent_child"]) == depth - 1
    for edge, (parent, child) in zip(trail["canonical_parent_child"],
                                     zip(trail["nodes"], trail["nodes"][1:], strict=False),
                                     strict=True):
        assert edge == {"parent": parent["path"], "child": child["path"]}


def test_owner_evidence_supports_the_deeper_trail_instead_of_forking(shapes):
    leaf_only = retrieve.retrieve(shapes, "quillwort")["trails"][0]
    both = retrieve.retrieve(shapes, "marmoset quillwort")
    assert owners(both) == ["04 stm/garden/beds/soil.md"]
    assert both["trails"][0]["score"] > leaf_only["score"]


def test_no_match_is_an_empty_answer_not_an_error(shapes):
    outcome = retrieve.retrieve(shapes, "nonexistentword")
    assert outcome["ok"] and outcome["count"] == 0 and outcome["trails"] == []


def test_source_and_archive_layers_are_never_implicit_candidates(tmp_path):
    root = skeleton(tmp_path, {"t": {"b": {"l": "Plain leaf."}}})
    write_file(root, "05 daily/2026-01-02.md", b"# Daily\n\n## d-1\n\nquokka sighted.\n")
    write_file(root, "06 istm/events.jsonl", json.dumps({
        "event_id": "e1", "observed_at": "2026-01-02T00:00:00Z",
        "captured_at": "2026-01-02T00:00:00Z", "source": "s", "kind": "note",
        "payload": {"text": "quokka again"}}).encode() + b"\n")
    write_file(root, "00 life_archive/history.md",
               b"# History\n\n[[01 xltm/XLTM]] quokka in the archive.\n")
    operations.index(root)
    assert retrieve.retrieve(root, "quokka")["count"] == 0
    assert retrieve.search(root, "quokka")["count"] == 0
    explicit = retrieve.search(root, "quokka", layer=["daily", "06", "00 life_archive"])
    assert sorted(r["layer"] for r in explicit["results"]) == ["00 life_archive", "05 daily",
                                                               "06 istm"]
    with pytest.raises(ForestError) as caught:
        retrieve.search(root, "quokka", layer=["attic"])
    assert (caught.value.code, caught.value.exit_code) == ("unknown_layer", 2)


# --- ordering -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ranked(tmp_path_factory) -> Path:
    filler = " ".join(WORDS * 3)
    root = skeleton(tmp_path_factory.mktemp("ranked"), {"lab": {"notes": {
        "strong-probe": "zymurgy zymurgy zymurgy zymurgy",
        "weak-direct": f"{filler} quinoa {filler}",
        "both": f"{filler} quinoa zymurgy {filler}",
        "active-spice": f"{filler} saffron {filler}",
        "old-spice": "saffron saffron saffron",
        "older-spice": "saffron saffron saffron saffron",
    }}})
    for leaf, status in (("old-spice", "superseded"), ("older-spice", "archived")):
        write_doc(root, f"04 stm/lab/notes/{leaf}.md", leaf.capitalize(),
                  "saffron " * (3 if status == "superseded" else 4), f"id-{leaf}", status)
    operations.index(root)
    return root


def test_plan_only_trail_never_outranks_a_direct_one(ranked):
    outcome = retrieve.retrieve(ranked, "quinoa", query_plan=plan("zymurgy"))
    assert outcome["probes"] == 1
    by_owner = {t["nodes"][-1]["path"].rsplit("/", 1)[1]: t for t in outcome["trails"]}
    assert owners(outcome)[:2] == ["04 stm/lab/notes/both.md", "04 stm/lab/notes/weak-direct.md"]
    assert owners(outcome)[2] == "04 stm/lab/notes/strong-probe.md"
    strong, weak = by_owner["strong-probe.md"], by_owner["weak-direct.md"]
    assert strong["score"] > weak["score"]  # a better score, and still ranked after
    assert (strong["original_query_matched"], strong["matched_query_plan_probe_count"]) == \
        (False, 1)
    assert (weak["original_query_matched"], weak["matched_query_plan_probe_count"]) == (True, 0)
    assert by_owner["both.md"]["matched_query_plan_probe_count"] == 1


def test_inactive_trails_rank_below_active_ones_and_say_so(ranked):
    outcome = retrieve.retrieve(ranked, "saffron")
    statuses = [(t["nodes"][-1]["path"].rsplit("/", 1)[1], t["status"]) for t in outcome["trails"]]
    assert statuses[0] == ("active-spice.md", "active")
    assert sorted(statuses[1:]) == [("old-spice.md", "superseded"),
                                    ("older-spice.md", "archived")]
    scores = {t["nodes"][-1]["path"]: t["score"] for t in outcome["trails"]}
    assert scores["04 stm/lab/notes/old-spice.md"] > scores["04 stm/lab/notes/active-spice.md"]
    assert outcome["trails"][1]["nodes"][-1]["status"] != "active"


@pytest.mark.parametrize("operation", ["route", "search"])
def test_inactive_results_rank_below_active_ones_in_route_and_search(ranked, operation):
    query = "saffron" if operation == "search" else "spice"
    outcome = getattr(retrieve, operation)(ranked, query)
    statuses = [item["status"] for item in outcome["results"]]
    assert statuses[0] == "active" and sorted(statuses[1:]) == ["archived", "superseded"]
    # An inactive result with the better score still ranks after the active one.
    assert outcome["results"][1]["score"] > outcome["results"][0]["score"]


def test_output_is_deterministic_for_the_same_index(ranked):
    for _ in range(2):
        first = retrieve.retrieve(ranked, "saffron quinoa", query_plan=plan("zymurgy"))
        assert json.dumps(first) == json.dumps(retrieve.retrieve(ranked, "saffron quinoa",
                                                                 query_plan=plan("zymurgy")))
    assert retrieve.search(ranked, "saffron") == retrieve.search(ranked, "saffron")
    assert retrieve.route(ranked, "spice") == retrieve.route(ranked, "spice")


@pytest.fixture(scope="module")
def random_forest(tmp_path_factory) -> Path:
    forest = RandomForest(new_forest(tmp_path_factory.mktemp("random")), random.Random(3))
    forest.populate(trees=3, branches=2, leaves=4)
    for _ in range(8):
        forest.set_status()
    operations.index(forest.root)
    return forest.root


@settings(max_examples=60, deadline=None)
@given(query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
       probes=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
                       max_size=4))
def test_ranking_rules_hold_for_any_query_and_plan(random_forest, query, probes):
    outcome = retrieve.retrieve(random_forest, query, limit=100, query_plan=plan(*probes))
    keys = [(not t["original_query_matched"], t["status"] != "active", -t["score"],
             -len(t["nodes"]), t["nodes"][-1]["path"]) for t in outcome["trails"]]
    assert keys == sorted(keys)
    for trail in outcome["trails"]:
        assert trail["original_query_matched"] or trail["matched_query_plan_probe_count"] > 0
        assert trail["matched_query_plan_probe_count"] <= len(probes)


# --- staleness ------------------------------------------------------------------------------


def _append(root: Path, rel: str, text: bytes) -> None:
    write_file(root, rel, (root / rel).read_bytes() + text)


def test_changed_leaf_on_a_trail_is_flagged_and_strict_fails_closed(example):
    _append(example, KIMCHI, b"\nDay 14: ready.\n")
    outcome = retrieve.retrieve(example, "김치")
    leaf = outcome["trails"][0]["nodes"][-1]
    assert leaf["path"] == KIMCHI and leaf["verified"] is False
    assert leaf["changed_since_index"] is True and leaf["missing"] is False
    assert leaf["current_sha256"] == hashlib.sha256((example / KIMCHI).read_bytes()).hexdigest()
    with pytest.raises(ForestError) as caught:
        retrieve.retrieve(example, "김치", strict=True)
    assert caught.value.code == "index_stale"
    assert caught.value.details == {"path": KIMCHI}


def test_changed_owner_on_a_trail_is_flagged_and_strict_fails_closed(example):
    owner = "03 mtm/kitchen/fermentation.md"
    _append(example, owner, b"\nA new note.\n")
    nodes = retrieve.retrieve(example, "김치")["trails"][0]["nodes"]
    assert [node["path"] for node in nodes if not node["verified"]] == [owner]
    with pytest.raises(ForestError) as caught:
        retrieve.retrieve(example, "김치", strict=True)
    assert caught.value.details == {"path": owner}


def test_deleted_file_on_a_trail_is_flagged_missing_and_strict_fails_closed(example):
    (example / KIMCHI).unlink()
    leaf = retrieve.retrieve(example, "김치")["trails"][0]["nodes"][-1]
    assert (leaf["path"], leaf["missing"], leaf["current_sha256"]) == (KIMCHI, True, None)
    with pytest.raises(ForestError) as caught:
        retrieve.retrieve(example, "김치", strict=True)
    assert (caught.value.code, caught.value.details) == ("index_stale", {"path": KIMCHI})


def test_an_owner_missing_from_the_index_makes_the_trail_partial(example):
    import sqlite3

    owner = "03 mtm/kitchen/fermentation.md"
    # What the index holds when it left the owner out for a problem of its own.
    con = sqlite3.connect(example / ".memory-forest" / "index.sqlite3")
    with con:
        rowid = con.execute("SELECT rowid FROM docs WHERE path = ?", (owner,)).fetchone()[0]
        con.execute("DELETE FROM terms WHERE rowid = ?", (rowid,))
        con.execute("DELETE FROM docs WHERE rowid = ?", (rowid,))
    con.close()
    trail = retrieve.retrieve(example, "김치")["trails"][0]
    assert trail["nodes"][-1]["path"] == KIMCHI and owner not in [n["path"] for n in trail["nodes"]]
    assert trail["complete"] is False
    assert (trail["missing"], trail["reason"]) == ([owner], "owner_not_indexed")


def test_change_off_the_returned_trails_does_not_block(example):
    _append(example, KIMCHI, b"\nDay 14: ready.\n")
    outcome = retrieve.retrieve(example, "斑点")
    assert owners(outcome) == ["04 stm/greenhouse/irrigation/tomato-leaf-spots.md"]


def test_search_bodies_are_the_current_bytes_and_say_when_they_changed(example):
    indexed = retrieve.search(example, "kimchi", include_body=True)
    assert indexed["results"][0]["verified"] is True
    _append(example, KIMCHI, b"\nDay 14: ready.\n")
    outcome = retrieve.search(example, "kimchi", include_body=True)
    hit = next(item for item in outcome["results"] if item["path"] == KIMCHI)
    assert hit["body"] == (example / KIMCHI).read_text(encoding="utf-8")
    assert "Day 14: ready." in hit["body"]
    assert hit["verified"] is False and hit["changed_since_index"] is True
    assert hit["sha256"] == indexed["results"][0]["sha256"] != hit["current_sha256"]
    metadata = retrieve.search(example, "kimchi")
    assert metadata["results"][0]["changed_since_index"] is True and "body" not in \
        metadata["results"][0]
    with pytest.raises(ForestError) as caught:
        retrieve.search(example, "kimchi", include_body=True, strict=True)
    assert (caught.value.code, caught.value.details) == ("index_stale", {"path": KIMCHI})
    assert retrieve.route(example, "kimchi")["count"] == 1


def test_search_with_body_returns_the_current_file(example):
    outcome = retrieve.search(example, "斑点", include_body=True)
    assert outcome["body_included"] is True
    item = outcome["results"][0]
    assert item["body"] == (example / item["path"]).read_text(encoding="utf-8")


# --- queries are data -----------------------------------------------------------------------

HOSTILE = st.lists(
    st.one_of(
        st.sampled_from(['"', "'", "AND", "OR", "NOT", "NEAR", "NEAR(", "*", "^", ":", "{", "}",
                         "(", ")", "title:", "path:", "body:", "{title path}:", "-", "+", "\\",
                         "%", "_", ";", "--", "/*", "*/", "kimchi", "김치", "斑点", "🍅", "🧪",
                         "\u200b", "\t", "\x01", "\x1b[31m", "\x7f", "\u0085", "rank",
                         "bm25(terms)", "' OR 1=1 --", "x\"y", "زعتر", "e\u0301"]),
        st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                max_size=12),
    ),
    max_size=10,
).map(" ".join)
ALLOWED = {"query_empty", "query_not_searchable"}


@settings(max_examples=80, deadline=None)
@given(query=HOSTILE, probe=HOSTILE)
def test_hostile_queries_never_raise(shared_example, query, probe):
    calls = [
        lambda: retrieve.route(shared_example, query),
        lambda: retrieve.search(shared_example, query),
        lambda: retrieve.search(shared_example, query, include_body=True, layer=["05", "06"]),
        lambda: retrieve.retrieve(shared_example, query),
    ]
    if probe.strip():
        calls.append(lambda: retrieve.retrieve(shared_example, query, query_plan=plan(probe)))
    for call in calls:
        try:
            outcome = call()
        except ForestError as exc:
            assert exc.code in ALLOWED, exc.code
            continue
        assert outcome["ok"] is True
        json.dumps(outcome)


def test_operator_words_are_searched_as_words(tmp_path):
    root = skeleton(tmp_path, {"t": {"b": {"logic": "Near the gate.", "other": "Far away."}}})
    operations.index(root)
    assert owners(retrieve.retrieve(root, "NEAR")) == ["04 stm/t/b/logic.md"]
    assert owners(retrieve.retrieve(root, '"near" OR *')) == ["04 stm/t/b/logic.md"]


def test_empty_unsearchable_and_out_of_range_inputs(shared_example):
    for query in ("", "   ", "\t\n"):
        with pytest.raises(ForestError) as caught:
            retrieve.retrieve(shared_example, query)
        assert (caught.value.code, caught.value.exit_code) == ("query_empty", 2)
    for query in ("?!...", "the of and", "* ^ :"):
        with pytest.raises(ForestError) as caught:
            retrieve.route(shared_example, query)
        assert (caught.value.code, caught.value.exit_code) == ("query_not_searchable", 1)
    for limit in (0, -1, 101):
        with pytest.raises(ForestError) as caught:
            retrieve.search(shared_example, "kimchi", limit=limit)
        assert (caught.value.code, caught.value.exit_code) == ("limit_out_of_range", 2)


def test_limit_bounds_the_answer(random_forest):
    assert retrieve.retrieve(random_forest, " ".join(WORDS[:20]), limit=3)["count"] == 3
    assert retrieve.search(random_forest, " ".join(WORDS[:20]), limit=2)["count"] == 2


# --- multiscript ----------------------------------------------------------------------------

MULTISCRIPT = [
    ("김치", KIMCHI),
    ("김치 숙성 온도", KIMCHI),
    ("斑点", "04 stm/greenhouse/irrigation/tomato-leaf-spots.md"),
    ("トマト", "04 stm/greenhouse/irrigation/tomato-leaf-spots.md"),
    ("芝麻", "04 stm/kitchen/fermentation/zaatar-blend.md"),
    ("زعتر", "04 stm/kitchen/fermentation/zaatar-blend.md"),
    ("الزعتر", "04 stm/kitchen/fermentation/zaatar-blend.md"),
    ("الزَّعْتَر", "04 stm/kitchen/fermentation/zaatar-blend.md"),
    ("réglage", "04 stm/greenhouse/irrigation/2026-11-drip-retrofit.md"),
    ("reglage", "04 stm/greenhouse/irrigation/2026-11-drip-retrofit.md"),
    ("RÉGLAGE du goutte-à-goutte", "04 stm/greenhouse/irrigation/2026-11-drip-retrofit.md"),
]


@pytest.mark.parametrize(("query", "leaf"), MULTISCRIPT)
def test_multiscript_queries_find_the_right_leaf_first(shared_example, query, leaf):
    outcome = retrieve.retrieve(shared_example, query)
    first = outcome["trails"][0]
    assert first["nodes"][-1]["path"] == leaf
    assert first["complete"] and first["original_query_matched"]
    assert retrieve.search(shared_example, query)["results"][0]["path"] == leaf


def test_a_translation_probe_reaches_a_leaf_the_query_cannot(shared_example):
    assert retrieve.retrieve(shared_example, "kimchee")["count"] == 0
    outcome = retrieve.retrieve(shared_example, "kimchee", query_plan=plan("배추김치"))
    assert owners(outcome) == [KIMCHI]
    assert outcome["trails"][0]["original_query_matched"] is False


# --- no bodies unless asked -----------------------------------------------------------------


def test_no_body_text_in_any_output_unless_asked(tmp_path):
    sentinel = "Xylophonicsentinel"
    root = skeleton(tmp_path, {"t": {"b": {"leaf": f"Plain words, then {sentinel} here."}}})
    operations.index(root)
    outputs = [
        retrieve.route(root, sentinel),
        retrieve.route(root, f"leaf {sentinel}"),
        retrieve.search(root, sentinel),
        retrieve.retrieve(root, sentinel),
        retrieve.retrieve(root, "nothing", query_plan=plan(sentinel)),
    ]
    assert outputs[2]["count"] == 1 and outputs[3]["count"] == 1  # it was found...
    for outcome in outputs:
        text = json.dumps(outcome, ensure_ascii=False)
        assert sentinel not in text and sentinel.lower() not in text  # ...but never shown
        assert "Plain words" not in text
    with_body = json.dumps(retrieve.search(root, sentinel, include_body=True))
    assert sentinel in with_body


def test_words_the_index_lacks_never_crowd_out_the_question(shared_example):
    filler = " ".join(f"zq{n}x" for n in range(ranking.MAX_QUERY_TERMS))
    first = retrieve.retrieve(shared_example, f"kimchi {filler}")
    last = retrieve.retrieve(shared_example, f"{filler} kimchi")
    kimchi = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    assert first["trails"][0]["nodes"][-1]["path"] == kimchi
    assert last["trails"][0]["nodes"][-1]["path"] == kimchi


def test_the_term_bound_keeps_the_rarest_terms(tmp_path):
    root = new_forest(tmp_path, example=True)
    common = [f"everywhere{n}" for n in range(ranking.MAX_QUERY_TERMS)]
    for number in range(4):
        write_doc(root, f"04 stm/kitchen/fermentation/common-{number}.md", f"Common {number}",
                  " ".join(common), f"stm-common-{number}")
    rare = "04 stm/kitchen/fermentation/rare.md"
    write_doc(root, rare, "Rare", "Saltpangolin brine.", "stm-rare")
    operations.index(root)
    from memory_forest.indexreader import connect

    con = connect(root)
    terms = [*common, "saltpangolin", "zzabsentzz"]
    chosen = ranking.chosen_terms(con, terms)
    assert len(chosen) == ranking.MAX_QUERY_TERMS and "saltpangolin" in chosen
    assert "zzabsentzz" not in chosen and chosen == [t for t in terms if t in chosen]
    # Frequencies use the index's own folding and stemming.
    frequencies = ranking.document_frequencies(con, ["KIMCHI", "Everywhere0", "fermenting"])
    assert frequencies["Everywhere0"] == 4 and frequencies["KIMCHI"] >= 1
    assert frequencies["fermenting"] >= 1  # stems like 'fermentation' in the index
    con.close()
    outcome = retrieve.retrieve(root, " ".join(common) + " saltpangolin")
    assert rare in owners(outcome)  # by position alone, the 49th word was never searched

"""Freshness at query time: every trail node says when it was updated and how old that is,
a superseded node names its successor, and --since/--until bound where a trail may end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import raises_code
from forestkit import write_doc

from memory_forest import index, retrieve
from memory_forest.forest import Forest
from memory_forest.writers.supersede import supersede

KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
ZAATAR = "04 stm/kitchen/fermentation/zaatar-blend.md"
DAY_S = 86_400


def node(outcome: dict, path: str) -> dict:
    return next(n for trail in outcome["trails"] for n in trail["nodes"] if n["path"] == path)


def ends(outcome: dict) -> list[str]:
    return [trail["nodes"][-1]["path"] for trail in outcome["trails"]]


def test_updated_comes_from_the_frontmatter_and_age_from_now(example):
    outcome = retrieve.retrieve(example, "kimchi batch")
    kimchi = node(outcome, KIMCHI)
    assert kimchi["updated"] == "2026-11-28T09:00:00Z"  # as the example's frontmatter says
    then = 1_795_856_400  # 2026-11-28T09:00:00Z
    assert abs(kimchi["age_days"] - (time.time() - then) / DAY_S) <= 0.06
    assert kimchi["age_days"] == round(kimchi["age_days"], 1)
    assert kimchi["superseded_by"] is None and kimchi["superseded_by_path"] is None


def test_without_frontmatter_updated_the_mtime_stands_in(example):
    rel = "04 stm/kitchen/fermentation/sauerkraut.md"
    write_doc(example, rel, "Sauerkraut", "Sauerkraut crock at 2 percent salt.", "stm-kraut")
    stamp = 1_764_000_000  # 2025-11-24T16:00:00Z
    os.utime(example / rel, (stamp, stamp))
    index.build(Forest.open(example))
    kraut = node(retrieve.retrieve(example, "sauerkraut crock"), rel)
    assert kraut["updated"] == "2025-11-24T16:00:00Z"
    assert abs(kraut["age_days"] - (time.time() - stamp) / DAY_S) <= 0.06


def test_a_superseded_node_names_its_successor_and_where_it_is(example, tmp_path):
    new = tmp_path / "zaatar-v2.md"
    new.write_text("# Za'atar blend v2\n\nMore sumac, less salt.\n", encoding="utf-8")
    out = supersede(example, "stm-zaatar-blend", os.fspath(new))
    outcome = retrieve.retrieve(example, "zaatar blend sumac", limit=10)
    old = node(outcome, ZAATAR)
    assert old["status"] == "superseded"
    assert old["superseded_by"] == out["id"] and old["superseded_by_path"] == out["path"]


def test_a_successor_the_index_does_not_hold_has_no_path(example):
    text = (example / ZAATAR).read_text(encoding="utf-8")
    (example / ZAATAR).write_text(text.replace('status: "active"', 'status: "superseded"\n'
                                               'superseded_by: "stm-nowhere"'),
                                  encoding="utf-8")
    index.build(Forest.open(example))
    old = node(retrieve.retrieve(example, "zaatar blend"), ZAATAR)
    assert old["superseded_by"] == "stm-nowhere" and old["superseded_by_path"] is None


def test_since_and_until_bound_where_a_trail_ends(example):
    rel = "04 stm/kitchen/fermentation/kimchi-batch-8.md"
    write_doc(example, rel, "Kimchi batch 8", "Kimchi batch 8 salted.", "stm-kimchi-8")
    text = (example / rel).read_text(encoding="utf-8")
    (example / rel).write_text(text.replace('status: "active"', 'status: "active"\n'
                                            'updated: "2026-12-02T10:00:00Z"'), encoding="utf-8")
    index.build(Forest.open(example))
    assert {KIMCHI, rel} <= set(ends(retrieve.retrieve(example, "kimchi batch")))
    assert ends(retrieve.retrieve(example, "kimchi batch", since="2026-12-01")) == [rel]
    until = retrieve.retrieve(example, "kimchi batch", until="2026-11-28")
    assert KIMCHI in ends(until) and rel not in ends(until)
    # A bare date as until is the whole day; a timestamp is that second.
    assert KIMCHI not in ends(retrieve.retrieve(example, "kimchi batch",
                                                until="2026-11-28T08:59:59Z"))
    assert ends(retrieve.retrieve(example, "kimchi batch", since="2026-12-03")) == []
    # The bounds also apply to the unfiled captures, by observed time.
    outcome = retrieve.retrieve(example, "tomato leaves", since="2026-11-28",
                                until="2026-11-28")
    assert [u["anchor"] for u in outcome["unfiled"]] == ["d-20261128-tomato"]
    assert retrieve.retrieve(example, "tomato leaves", since="2026-11-29")["unfiled"] == []


def test_bad_bounds_are_usage_errors(example):
    for value in ("yesterday", "2026-13-01", "", "28/11/2026"):
        error = raises_code(lambda v=value: retrieve.retrieve(example, "kimchi", since=v),
                            "time_invalid")
        assert error.exit_code == 2 and error.details == {"param": "since"}
    raises_code(lambda: retrieve.retrieve(example, "kimchi", until="soon"), "time_invalid")
    raises_code(lambda: retrieve.retrieve(example, "kimchi", since="2026-12-02",
                                          until="2026-12-01"), "time_range_empty")


def test_a_bad_since_on_the_cli_is_one_json_error(example: Path):
    done = subprocess.run([sys.executable, "-m", "memory_forest", "--json", "retrieve",
                           os.fspath(example), "kimchi", "--since", "last week"],
                          capture_output=True, text=True, timeout=60)
    lines = done.stdout.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stdout + done.stderr
    error = json.loads(lines[0])
    assert error["ok"] is False and error["error"]["code"] == "time_invalid"
    assert "Traceback" not in done.stderr

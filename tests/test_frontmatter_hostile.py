"""Hostile frontmatter: one bounded loader, so a file is refused everywhere or safe everywhere.

Alias bombs, self-references, tags beyond JSON's types, deep nesting, keys
that are not strings and non-finite numbers are refused as
``frontmatter_unsafe`` with the file's line, before anything is expanded.
Each consumer (validate, index, browse, structured-context, the writers) is
driven over a forest holding such a file: the file is that command's
per-file problem, never an ``internal_error``, a traceback, a RecursionError
or unbounded memory. Ordinary frontmatter reads exactly as before.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_forest import operations
from memory_forest.browse import browse
from memory_forest.documents import read_facts, split_frontmatter
from memory_forest.errors import ForestError
from memory_forest.routes import parse_route
from memory_forest.safe_yaml import MAX_FRONTMATTER_DEPTH, FrontmatterError
from memory_forest.safety import write_private
from memory_forest.writers.remember import remember

MTM = "03 mtm/kitchen/fermentation.md"
STM = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
MEMORY_CAP = 300 * 1024 * 1024


def alias_bomb(levels: int = 10) -> str:
    """About 1 KB of YAML that expands to 10**levels strings."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def nested(depth: int) -> str:
    return "deep: " + "[" * depth + "]" * depth + "\n"


# (name, YAML put first in a frontmatter, line of the refused event counted in the file)
HOSTILE = [
    ("alias_bomb", alias_bomb(), 2),
    ("self_reference", "r: &r [*r]\n", 2),
    ("anchor_only", "title: &t Plain\n", 2),
    ("merge_alias", "base: &b {x: 1}\nkid:\n  <<: *b\n", 2),
    ("binary", "blob: !!binary aGVsbG8=\n", 2),
    ("set", "things: !!set {a, b}\n", 2),
    ("python_object", "obj: !!python/object:os.system [echo]\n", 2),
    ("python_name", "f: !!python/name:os.system\n", 2),
    ("custom_tag", "x: !secret hunter2\n", 2),
    ("explicit_timestamp", "when: !!timestamp 2026-11-30\n", 2),
    ("tag_deep_inside", "tags:\n  - ok\n  - !foo bar\n", 4),
    ("too_deep", nested(MAX_FRONTMATTER_DEPTH + 1), 2),
    ("non_string_key", "2026: a year\n", 2),
    ("list_key", "? [a, b]\n: x\n", 2),
    ("bang_int_key", "! 7: x\n", 2),
    ("non_finite", "score: .inf\n", 2),
    ("nan", "score: .NaN\n", 2),
    ("negative_inf", "score: -.Inf\n", 2),
]


def document(yaml_text: str) -> str:
    return f"---\n{yaml_text}---\n# Doc\n\nbody\n"


@pytest.mark.parametrize(("name", "yaml_text", "line"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_frontmatter_is_refused_with_its_line(name: str, yaml_text: str,
                                                      line: int) -> None:
    started = time.perf_counter()
    with pytest.raises(FrontmatterError) as caught:
        split_frontmatter(document(yaml_text))
    # Refused at the first event, never expanded: it takes milliseconds. The bound
    # is loose so a busy machine cannot fail it, and still far below any expansion.
    assert time.perf_counter() - started < 5.0
    assert caught.value.code == "frontmatter_unsafe"
    assert str(caught.value).startswith(f"line {line}: ")


@pytest.mark.parametrize(("name", "yaml_text", "line"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_read_facts_reports_frontmatter_unsafe(name: str, yaml_text: str, line: int) -> None:
    raw = document(yaml_text).encode()
    facts, text = read_facts(parse_route(STM), raw, 0, 1000)
    assert [(i.code, i.level) for i in facts.issues] == [("frontmatter_unsafe", "error")]
    assert f"(line {line}: " in facts.issues[0].message
    assert facts.title == "Doc"  # the body is still read


def test_the_line_counts_from_the_top_of_the_file() -> None:
    text = "\ufeff---\nid: x\ntitle: y\n\n# a comment\nbad: !!binary aGk=\n---\n"
    with pytest.raises(FrontmatterError, match=r"^line 6: tag !!binary"):
        split_frontmatter(text)


def test_malformed_yaml_stays_frontmatter_invalid() -> None:
    with pytest.raises(FrontmatterError) as caught:
        split_frontmatter("---\nid: [unclosed\n---\n")
    assert caught.value.code == "frontmatter_invalid"


ORDINARY = """---
id: "stm-ordinary"
title: Grüße, 東京 and emoji 🌱
created: 2026-11-30T09:00:00Z
updated: 2026-12-01
status: active
tags: [kimchi, "fermentation"]
count: 3
ratio: 0.25
flag: true
nothing: null
typed: !!str 42
plain_bang: ! 7
nested:
  level2:
    level3: [1, two, {k: v}]
---
# Ordinary
"""


def test_ordinary_frontmatter_reads_as_before() -> None:
    meta, body, offset = split_frontmatter(ORDINARY)
    assert meta == {
        "id": "stm-ordinary", "title": "Grüße, 東京 and emoji 🌱",
        "created": dt.datetime(2026, 11, 30, 9, 0, tzinfo=dt.UTC),
        "updated": dt.date(2026, 12, 1), "status": "active",
        "tags": ["kimchi", "fermentation"], "count": 3, "ratio": 0.25, "flag": True,
        "nothing": None, "typed": "42", "plain_bang": 7,
        "nested": {"level2": {"level3": [1, "two", {"k": "v"}]}},
    }
    assert (body, offset) == ("# Ordinary\n", ORDINARY.count("\n") - 1)
    facts, _ = read_facts(parse_route(STM), ORDINARY.encode(), 0, 1000)
    assert facts.issues == [] and facts.id == "stm-ordinary"


def test_nesting_up_to_the_bound_is_accepted() -> None:
    meta, _, _ = split_frontmatter(document(nested(MAX_FRONTMATTER_DEPTH - 1)))
    depth, value = 0, meta["deep"]
    while isinstance(value, list):
        depth, value = depth + 1, value[0] if value else None
    assert depth == MAX_FRONTMATTER_DEPTH - 1  # the top-level mapping is the first level


def test_quoted_numbers_and_words_are_ordinary_strings() -> None:
    meta, _, _ = split_frontmatter('---\n"2026": year\nscore: ".inf"\nname: "&not an anchor"\n'
                                   "star: a*b\n---\n")
    assert meta == {"2026": "year", "score": ".inf", "name": "&not an anchor", "star": "a*b"}


# --- every consumer, in process ---------------------------------------------------------------


@pytest.fixture
def hostile_forest(example_forest: Path) -> Path:
    """The example forest with a ten-level alias bomb in an STM leaf and a self-reference in
    the MTM above it."""
    plant_first(example_forest, STM, alias_bomb())
    plant_first(example_forest, MTM, "r: &r [*r]\n")
    return example_forest


def plant_first(root: Path, rel: str, yaml_text: str) -> None:
    """Put ``yaml_text`` at the top of the file's existing frontmatter."""
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    write_private(path, ("---\n" + yaml_text + text[4:]).encode("utf-8"))


def unsafe_paths(issues: list[dict]) -> set[str]:
    return {issue["path"] for issue in issues if issue["code"] == "frontmatter_unsafe"}


def test_validate_and_index_report_the_files(hostile_forest: Path) -> None:
    checked = operations.validate(hostile_forest)
    assert unsafe_paths(checked["issues"]) == {MTM, STM}
    indexed = operations.index(hostile_forest)
    assert indexed["ok"] and indexed["quarantined"] == 2
    assert unsafe_paths(indexed["problems"]) == {MTM, STM}


def test_an_index_built_under_other_reading_rules_starts_over(example_forest: Path) -> None:
    """Facts cached under older rules may call a now-refused file clean: never reuse them."""
    import sqlite3

    from forestkit import INDEX, set_meta

    operations.index(example_forest)
    set_meta(example_forest, "reader_version", "1")
    again = operations.index(example_forest)
    assert again["rebuilt"] == "reader_changed" and again["mode"] == "full"
    assert "rebuilt" not in operations.index(example_forest)
    con = sqlite3.connect(example_forest / INDEX)  # an index from before the key existed
    with con:
        con.execute("DELETE FROM meta WHERE key = 'reader_version'")
    con.close()
    assert operations.index(example_forest)["rebuilt"] == "reader_changed"


def test_browse_shows_the_files_as_problems(hostile_forest: Path, tmp_path: Path) -> None:
    done = browse(hostile_forest, tmp_path / "site")
    assert done["ok"] and done["issues"]["errors"] >= 2
    issues_page = (tmp_path / "site" / "issues.html").read_text(encoding="utf-8")
    assert issues_page.count("frontmatter is refused") >= 2
    leaf = (tmp_path / "site" / "doc" / STM.replace(".md", ".html")).read_text(encoding="utf-8")
    assert "frontmatter is refused" in leaf and "lol" in leaf  # shown as text, not expanded


def test_structured_context_is_json_safe(example_forest: Path) -> None:
    from memory_forest.writers.structured import structured_context

    plant_first(example_forest, MTM, "blob: !!binary aGk=\nset: !!set {a}\n")
    plant_first(example_forest, STM, "created_at: 2026-11-30T09:00:00Z\n")
    operations.index(example_forest)
    found = structured_context(example_forest, "kimchi fermentation")
    text = json.dumps(found, allow_nan=False)  # raises on bytes, sets, dates or NaN
    by_path = {doc["path"]: doc for doc in found["documents"]}
    assert by_path[STM]["frontmatter"]["created_at"] == "2026-11-30T09:00:00+00:00"
    assert "aGk=" not in text  # the refused MTM is a problem, its tags never decoded


def test_a_writer_editing_a_refused_file_fails_cleanly(hostile_forest: Path) -> None:
    with pytest.raises(ForestError) as caught:
        remember(hostile_forest, "kitchen", "fermentation", "new-batch", None, "a new note")
    assert caught.value.code == "frontmatter_not_editable"
    assert caught.value.details == {"reason": "frontmatter_unsafe"}


# --- the real CLI, with bounded memory and time ------------------------------------------------


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def capped_cli(*args: str | os.PathLike[str]) -> tuple[int, dict, str]:
    env = dict(os.environ, NO_COLOR="1", PYTHONIOENCODING="utf-8")
    proc = subprocess.run([sys.executable, "-m", "memory_forest", "--json", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=10,
                          preexec_fn=_capped)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout + proc.stderr
    return proc.returncode, json.loads(lines[0]), proc.stderr


def test_cli_consumers_stay_bounded(hostile_forest: Path, tmp_path: Path) -> None:
    code, out, _ = capped_cli("validate", hostile_forest)
    assert code != 0 and unsafe_paths(out["issues"]) == {MTM, STM}
    code, out, _ = capped_cli("index", hostile_forest)
    assert code == 0 and out["quarantined"] == 2
    code, out, _ = capped_cli("browse", hostile_forest, "--out", tmp_path / "site")
    assert code == 0 and out["ok"], out
    code, out, _ = capped_cli("structured-context", hostile_forest, "kimchi")
    assert out["operation"] == "structured_context"
    assert out.get("error", {}).get("code") != "internal_error", out
    code, out, _ = capped_cli("remember", hostile_forest, "--tree", "kitchen", "--branch",
                              "fermentation", "--leaf", "new-batch", "--content", "note")
    assert code != 0 and out["error"]["code"] == "frontmatter_not_editable", out

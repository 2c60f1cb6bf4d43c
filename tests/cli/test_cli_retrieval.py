"""The real ``memory-forest`` process: index, route, search, retrieve and doctor."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from forestkit import (
    INDEX,
    canonical_state,
    index_rows,
    mode_of,
    new_forest,
    set_meta,
    skeleton,
    write_file,
)

from memory_forest import operations

KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
SENTINEL = "Quixoticsentinel"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memory_forest", *args], input=stdin,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "120"})


def run_json(*args: str, stdin: str | None = None) -> tuple[int, dict, str]:
    done = run("--json", *args, stdin=stdin)
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout + done.stderr  # exactly one JSON object
    outcome = json.loads(lines[0])
    # Deterministic machine output: compact with sorted keys.
    assert lines[0] == json.dumps(outcome, sort_keys=True, separators=(",", ":"),
                                  ensure_ascii=False)
    assert "Traceback" not in done.stderr
    return done.returncode, outcome, done.stderr


def build(parent: Path) -> Path:
    """The example forest plus a leaf whose body holds a sentinel word, indexed."""
    root = new_forest(parent, example=True)
    write_file(root, "04 stm/kitchen/fermentation/sentinel.md", (
        "---\nid: stm-sentinel\ntitle: Pantry check\n---\n# Pantry check\n\n"
        "Up: [[03 mtm/kitchen/fermentation]]\n\n"
        f"The shelf with the {SENTINEL} jars was restocked.\n").encode())
    operations.index(root)
    return root


@pytest.fixture
def forest(tmp_path: Path) -> Path:
    """A forest this test may change."""
    return build(tmp_path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A forest the tests of this module only read."""
    return build(tmp_path_factory.mktemp("cli"))


# --- index ----------------------------------------------------------------------------------


def test_index_json_reports_counts_and_writes_a_private_file(tmp_path):
    root = new_forest(tmp_path, example=True)
    code, outcome, stderr = run_json("index", str(root))
    assert code == 0 and stderr == ""  # no progress bar under --json
    assert outcome["operation"] == "index" and outcome["schema_version"] == 1
    assert (outcome["mode"], outcome["documents"], outcome["added"]) == ("full", 12, 12)
    assert mode_of(root / INDEX) == 0o600 and mode_of(root / ".memory-forest") == 0o700
    code, outcome, stderr = run_json("index", str(root))
    assert code == 0 and stderr == ""
    assert (outcome["mode"], outcome["unchanged"]) == ("incremental", 12)


def test_index_human_mode_prints_a_summary(forest):
    done = run("index", str(forest), "--full")
    assert done.returncode == 0
    assert "index full: 13 documents" in done.stdout


def test_index_fails_at_once_while_the_lock_is_held(forest):
    lock = forest.with_name(forest.name + ".maintenance.lock")
    os.mkdir(lock, 0o700)
    before = (forest / INDEX).read_bytes()
    code, outcome, _ = run_json("index", str(forest), "--full", "--wait", "0")
    assert code == 1 and outcome["error"]["code"] == "lock_held"
    assert lock.is_dir() and (forest / INDEX).read_bytes() == before


def test_a_wide_mode_is_indexed_with_a_warning(forest):
    os.chmod(forest / KIMCHI, 0o644)
    code, outcome, _ = run_json("index", str(forest))
    assert code == 0 and outcome["ok"] and outcome["quarantined"] == 0
    assert outcome["problems"] == [{"path": KIMCHI, "code": "mode_file_not_private",
                                    "message": "mode is 0644, must be 0600: run "
                                    "memory-forest doctor ROOT --repair",
                                    "level": "warning"}]
    assert KIMCHI in {row[0] for row in index_rows(forest)[0]}


def test_schema_mismatch_names_the_rebuild_and_index_does_it(forest):
    set_meta(forest, "schema_version", "999")
    code, outcome, _ = run_json("retrieve", str(forest), "kimchi")
    assert code == 1 and outcome["error"]["code"] == "index_schema_mismatch"
    assert "'memory-forest index ROOT'" in outcome["error"]["message"]
    code, outcome, _ = run_json("index", str(forest))
    assert code == 0 and outcome["rebuilt"] == "schema_mismatch"
    code, outcome, _ = run_json("retrieve", str(forest), "kimchi")
    assert code == 0 and outcome["trails"][0]["nodes"][-1]["path"] == KIMCHI


# --- retrieval output -----------------------------------------------------------------------


def test_retrieve_json_returns_verified_trails(shared):
    code, outcome, _ = run_json("retrieve", str(shared), "김치 숙성 온도", "--limit", "2")
    assert code == 0 and outcome["operation"] == "retrieve" and outcome["ok"]
    trail = outcome["trails"][0]
    assert [n["path"] for n in trail["nodes"]] == [
        "01 xltm/XLTM.md", "02 ltm/kitchen_LTM.md", "03 mtm/kitchen/fermentation.md", KIMCHI]
    assert trail["complete"] is True and len(trail["canonical_parent_child"]) == 3
    assert outcome["count"] <= 2


def test_human_retrieve_shows_the_trail(shared):
    done = run("retrieve", str(shared), "斑点")
    assert done.returncode == 0
    assert "Tomato leaf spots" in done.stdout and "04 stm/greenhouse/irrigation" in done.stdout


def test_no_body_text_reaches_stdout_without_include_body(shared):
    for args in (("route", "pantry " + SENTINEL), ("search", SENTINEL, "--layer", "stm"),
                 ("retrieve", SENTINEL)):
        code, outcome, _ = run_json(args[0], str(shared), *args[1:])
        assert code == 0 and outcome["count"] >= 1, args  # the sentinel's leaf was found...
        stdout = json.dumps(outcome, ensure_ascii=False)
        assert SENTINEL not in stdout and SENTINEL.lower() not in stdout  # ...not shown
        assert "restocked" not in stdout
    human = run("retrieve", str(shared), SENTINEL)
    assert human.returncode == 0 and "Pantry check" in human.stdout
    assert SENTINEL not in human.stdout


def test_search_found_the_sentinel_and_shows_it_only_with_include_body(shared):
    code, outcome, _ = run_json("search", str(shared), SENTINEL)
    assert code == 0 and outcome["count"] == 1 and outcome["body_included"] is False
    assert "body" not in outcome["results"][0]
    code, outcome, _ = run_json("search", str(shared), SENTINEL, "--include-body")
    assert code == 0 and SENTINEL in outcome["results"][0]["body"]


def test_read_only_commands_change_nothing(forest):
    before = canonical_state(forest)
    index_before = (forest / INDEX).read_bytes(), os.stat(forest / INDEX).st_mtime_ns
    for args in (("route", "kimchi"), ("search", "kimchi", "--include-body"),
                 ("retrieve", "김치"), ("doctor",)):
        code, outcome, _ = run_json(args[0], str(forest), *args[1:])
        assert code == 0 and outcome["ok"], args
    assert canonical_state(forest) == before
    assert ((forest / INDEX).read_bytes(), os.stat(forest / INDEX).st_mtime_ns) == index_before


# --- stale index ----------------------------------------------------------------------------


def test_a_hand_edit_is_flagged_and_strict_fails_closed(forest):
    write_file(forest, KIMCHI, (forest / KIMCHI).read_bytes() + b"\nDay 14.\n")
    code, outcome, _ = run_json("retrieve", str(forest), "김치")
    assert code == 0 and outcome["trails"][0]["nodes"][-1]["changed_since_index"] is True
    code, outcome, _ = run_json("search", str(forest), "kimchi", "--include-body")
    hit = next(item for item in outcome["results"] if item["path"] == KIMCHI)
    assert code == 0 and hit["verified"] is False and hit["body"].endswith("Day 14.\n")
    for command, query, extra in (("retrieve", "김치", ()),
                                  ("search", "kimchi", ("--include-body",))):
        code, outcome, _ = run_json(command, str(forest), query, *extra, "--strict")
        assert code == 1 and outcome["error"]["code"] == "index_stale"
        assert outcome["error"]["details"] == {"path": KIMCHI}
    human = run("retrieve", str(forest), "김치")
    assert human.returncode == 0 and "changed since index" in human.stdout
    human = run("search", str(forest), "kimchi")
    assert human.returncode == 0 and "Kimchi batch 7" in human.stdout
    assert "changed since index" in human.stdout


def test_a_same_size_edit_is_flagged_and_strict_fails_closed(forest):
    """One character replaced, size and mtime kept: only the hash can tell, so every
    verifying read must compare hashes, never sizes or times."""
    path = forest / KIMCHI
    st = os.stat(path)
    edited = path.read_bytes().replace(b"day 10: sour", b"day 11: sour", 1)
    assert len(edited) == st.st_size and edited != path.read_bytes()
    write_file(forest, KIMCHI, edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    for command, query, extra in (("retrieve", "김치", ()),
                                  ("search", "kimchi", ("--include-body",))):
        code, outcome, _ = run_json(command, str(forest), query, *extra, "--strict")
        assert code == 1 and outcome["error"]["code"] == "index_stale", command
        assert outcome["error"]["details"] == {"path": KIMCHI}
    code, outcome, _ = run_json("retrieve", str(forest), "김치")
    node = outcome["trails"][0]["nodes"][-1]
    assert code == 0 and node["path"] == KIMCHI
    assert (node["verified"], node["changed_since_index"]) == (False, True)
    code, outcome, _ = run_json("search", str(forest), "kimchi", "--include-body")
    hit = next(item for item in outcome["results"] if item["path"] == KIMCHI)
    assert code == 0 and (hit["verified"], hit["changed_since_index"]) == (False, True)
    assert hit["body"].endswith("day 11: sour enough; move to the cold room.\n")
    code, opened, _ = run_json("open", str(forest), KIMCHI)
    assert code == 0 and (opened["verified"], opened["changed_since_index"]) == (False, True)
    assert opened["current_sha256"] == hashlib.sha256(edited).hexdigest() != opened["sha256"]
    assert opened["body"] == edited.decode("utf-8")


def test_search_body_prints_as_indented_text_with_real_newlines(shared):
    human = run("search", str(shared), "kimchi", "--include-body", "--limit", "1")
    assert human.returncode == 0 and "\\x0a" not in human.stdout
    lines = human.stdout.splitlines()
    assert "Kimchi batch 7" in lines[0]
    body = (shared / KIMCHI).read_text(encoding="utf-8").splitlines()
    printed = [line.strip() for line in lines[1:]]
    assert printed == [line.strip() for line in body]
    assert all(line.startswith("      ") for line in lines[1:] if line)


def test_open_takes_the_wikilink_form_and_an_id(shared):
    by_path = run_json("open", str(shared), KIMCHI)
    assert by_path[0] == 0 and by_path[1]["indexed"] is True
    assert run_json("open", str(shared), KIMCHI.removesuffix(".md")) == by_path
    assert run_json("open", str(shared), "stm-kimchi-batch-7") == by_path
    code, outcome, _ = run_json("open", str(shared), "stm-no-such-thing")
    assert code == 1 and outcome["error"]["code"] == "not_found"


# --- usage errors ---------------------------------------------------------------------------


def test_empty_query_is_a_usage_error(shared):
    for command, query in (("route", ""), ("search", "   "), ("retrieve", "")):
        code, outcome, _ = run_json(command, str(shared), query)
        assert code == 2 and outcome["error"]["code"] == "query_empty"
        assert outcome["operation"] == command and outcome["ok"] is False


def test_query_without_searchable_words_has_its_code(shared):
    code, outcome, _ = run_json("retrieve", str(shared), "?!… — ***")
    assert code == 1 and outcome["error"]["code"] == "query_not_searchable"


def test_limit_out_of_range_is_a_usage_error(shared):
    code, outcome, _ = run_json("retrieve", str(shared), "kimchi", "--limit", "0")
    assert code == 2 and outcome["error"]["code"] == "limit_out_of_range"


def test_query_operators_are_data_on_the_command_line(shared):
    code, outcome, _ = run_json("retrieve", str(shared), 'kimchi" OR title:* NEAR(^x) --')
    assert code == 0 and outcome["trails"][0]["nodes"][-1]["path"] == KIMCHI


# --- query plans ----------------------------------------------------------------------------


def test_query_plan_from_a_file(shared, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"schema_version": 1, "probes": [{"query": "배추김치"}]}),
                    encoding="utf-8")
    code, outcome, _ = run_json("retrieve", str(shared), "kimchee", "--query-plan", str(plan))
    assert code == 0 and outcome["probes"] == 1
    trail = outcome["trails"][0]
    assert trail["nodes"][-1]["path"] == KIMCHI
    assert (trail["original_query_matched"], trail["matched_query_plan_probe_count"]) == \
        (False, 1)


def test_query_plan_from_stdin(shared):
    plan = json.dumps({"schema_version": 1, "probes": [{"query": "斑点"}]})
    code, outcome, _ = run_json("retrieve", str(shared), "tomato", "--query-plan", "-",
                                stdin=plan)
    assert code == 0 and outcome["trails"][0]["matched_query_plan_probe_count"] == 1


@pytest.mark.parametrize(("plan", "code"), [
    ('{"schema_version": 1, "schema_version": 1, "probes": []}', "query_plan_duplicate_key"),
    (json.dumps({"schema_version": 1, "probes": [{"query": str(i)} for i in range(9)]}),
     "query_plan_too_many_probes"),
])
def test_bad_plans_from_stdin_are_usage_errors(shared, plan, code):
    exit_code, outcome, _ = run_json("retrieve", str(shared), "kimchi", "--query-plan", "-",
                                     stdin=plan)
    assert exit_code == 2 and outcome["error"]["code"] == code


def test_bad_plan_files_are_refused(shared, tmp_path):
    real = tmp_path / "plan.json"
    real.write_text('{"schema_version": 1, "probes": []}', encoding="utf-8")
    (tmp_path / "link.json").symlink_to(real)
    for source, code in ((tmp_path / "link.json", "query_plan_symlink"),
                         (tmp_path, "query_plan_not_regular_file")):
        exit_code, outcome, _ = run_json("retrieve", str(shared), "kimchi", "--query-plan",
                                         str(source))
        assert exit_code == 2 and outcome["error"]["code"] == code, source


# --- doctor ---------------------------------------------------------------------------------


def test_doctor_reports_the_index_state(tmp_path):
    root = skeleton(tmp_path, {"t": {"b": {"l": "Body."}}})
    assert run_json("doctor", str(root))[1]["index"] == {"state": "absent"}
    operations.index(root)
    assert run_json("doctor", str(root))[1]["index"] == {"state": "current", "documents": 4,
                                                         "quarantined": 0}
    write_file(root, "04 stm/t/b/l.md", (root / "04 stm/t/b/l.md").read_bytes() + b"More.\n")
    code, outcome, _ = run_json("doctor", str(root))
    assert code == 0
    assert outcome["index"] == {"state": "stale", "changed": 1, "deleted": 0, "documents": 4,
                                "quarantined": 0}


# --- the command line as the catalog declares it -------------------------------------------


@pytest.mark.parametrize("spelled", [
    ["retrieve", "{root}", "kimchi", "--json"],
    ["--json", "retrieve", "{root}", "kimchi", "--limit=10"],
    ["retrieve", "--strict", "{root}", "kimchi", "-n", "10", "--json"],
    ["retrieve", "{root}", "--json", "--", "kimchi"],
])
def test_every_spelling_of_a_retrieve_line_gives_the_same_answer(shared_example, spelled):
    line = [arg.format(root=shared_example) for arg in spelled]
    done = subprocess.run([sys.executable, "-m", "memory_forest", *line],
                          capture_output=True, text=True, timeout=60)
    plain = subprocess.run([sys.executable, "-m", "memory_forest", "retrieve",
                            str(shared_example), "kimchi", "--json"],
                           capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout) == json.loads(plain.stdout)


@pytest.mark.parametrize("args", [
    ["retrieve", "{root}", "q", "extra"],
    ["retrieve", "{root}", "q", "--limit", "x"], ["retrieve", "{root}", "q", "--limit"],
    ["retrieve", "{root}", "q", "--limit", "1", "--bogus"],
])
def test_malformed_retrieve_lines_are_usage_errors(shared_example, args):
    line = [arg.format(root=shared_example) for arg in args]
    done = subprocess.run([sys.executable, "-m", "memory_forest", "--json", *line],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout
    assert json.loads(done.stdout)["error"]["code"] == "usage_error"


def test_retrieve_as_a_process_answers_and_fails_with_codes(shared_example):
    lean = subprocess.run([sys.executable, "-m", "memory_forest", "retrieve",
                           str(shared_example), "kimchi", "--json"],
                          capture_output=True, text=True, timeout=60)
    full = subprocess.run([sys.executable, "-m", "memory_forest", "retrieve",
                           str(shared_example), "kimchi", "-n", "10", "--json"],
                          capture_output=True, text=True, timeout=60)
    assert lean.returncode == full.returncode == 0
    assert json.loads(lean.stdout) == json.loads(full.stdout)
    failed = subprocess.run([sys.executable, "-m", "memory_forest", "retrieve",
                             str(shared_example), "?!", "--json"],
                            capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["error"]["code"] == "query_not_searchable"

"""The per-turn gate: receipts, phase order, failures that leak nothing, hook formats."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tree_state
from forestkit import hook_context, new_forest, trail_ends, tree_nodes, write_doc

from memory_forest import gate, hookcontext, operations, ranking, retrieve
from memory_forest.gate import MAX_INPUT_BYTES, MAX_TURN_BYTES, MESSAGES

RECEIPT_KEYS = {"schema_version", "operation", "ok", "status", "lookup_required",
                "lookup_completed", "body_included", "route", "retrieve", "turn_sha256",
                "turn_bytes", "turn_reduced", "unverified"}
FAILURE_KEYS = {"schema_version", "operation", "ok", "status", "lookup_required",
                "lookup_completed", "body_included", "error", "reason", "fix", "turn_sha256"}
# Both hosts' UserPromptSubmit output objects are closed (Codex publishes the schema).
HOOK_KEYS = {"continue", "decision", "hookSpecificOutput", "reason", "stopReason",
             "suppressOutput", "systemMessage"}
SECRET = "Zebulon" + "secretword"  # a turn word that must never be echoed
KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"


def run_gate(root: Path | str, stdin: bytes | str, *options: str,
             before: tuple[str, ...] = ()) -> tuple[int, dict, str, str]:
    """Run the gate as a hook runs it; return (exit code, the JSON object, stdout, stderr)."""
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    command = [sys.executable, "-m", "memory_forest", "gate", *before, str(root), *options]
    done = subprocess.run(command, input=data, capture_output=True, timeout=60)
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    lines = stdout.splitlines()
    assert len(lines) == 1, (stdout, stderr)
    return done.returncode, json.loads(lines[0]), stdout, stderr


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def body_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A forest where one word is only in a leaf's body: route (titles, paths) cannot see it."""
    root = new_forest(tmp_path_factory.mktemp("gate"), example=True)
    write_doc(root, "04 stm/kitchen/fermentation/pantry.md", "Pantry check",
              "The shelf with the Quixoticsentinel jars was restocked.", "stm-pantry")
    operations.index(root)
    return root


# --- receipts -------------------------------------------------------------------------------


def test_a_matching_turn_finds_evidence_with_the_exact_receipt_shape(shared_example):
    turn = b"How cold should the kimchi fridge be?"
    receipt = gate.consult(shared_example, turn)
    assert set(receipt) == RECEIPT_KEYS
    assert receipt["schema_version"] == 1 and receipt["operation"] == "memory_forest_gate"
    assert receipt["ok"] is True and receipt["status"] == "evidence_found"
    assert receipt["lookup_required"] is True and receipt["lookup_completed"] is True
    assert receipt["body_included"] is False
    assert receipt["turn_sha256"] == sha(turn)
    assert receipt["turn_bytes"] == len(turn) and receipt["turn_reduced"] is False
    assert receipt["unverified"] == []
    assert receipt["route"]["count"] == len(receipt["route"]["results"]) >= 1
    assert receipt["retrieve"]["count"] == len(receipt["retrieve"]["trails"]) >= 1
    assert receipt["retrieve"]["trails"][0]["nodes"][-1]["path"] == KIMCHI
    assert "body" not in json.dumps(receipt).replace("body_included", "")


def test_both_phases_run_even_when_route_finds_nothing(body_only):
    receipt = gate.consult(body_only, b"anything about Quixoticsentinel?")
    # Route matches titles and paths only; the word is in a body, so only retrieve finds it.
    assert receipt["route"] == {"count": 0, "results": []}
    assert receipt["retrieve"]["count"] == 1
    assert receipt["retrieve"]["trails"][0]["nodes"][-1]["path"] == \
        "04 stm/kitchen/fermentation/pantry.md"
    assert receipt["status"] == "evidence_found" and receipt["lookup_completed"] is True


def test_zero_matches_is_a_successful_no_evidence(shared_example):
    code, receipt, _, _ = run_gate(shared_example, "quarterly budget review spreadsheet")
    assert code == 0 and receipt["ok"] is True and receipt["status"] == "no_evidence"
    assert receipt["lookup_required"] is True and receipt["lookup_completed"] is True
    assert receipt["route"] == {"count": 0, "results": []}
    assert receipt["retrieve"] == {"count": 0, "trails": [], "unfiled": [], "left_out": [],
                                   "ranking": "lexical", "ranking_reason": "semantic_off"}


@pytest.mark.parametrize("turn", ["", "   ", "\n\t \r\n", "\u3000\u00a0"])
def test_a_blank_turn_is_a_noop(shared_example, turn):
    code, receipt, _, _ = run_gate(shared_example, turn)
    assert code == 0 and receipt["ok"] is True and receipt["status"] == "noop"
    assert receipt["lookup_required"] is False and receipt["lookup_completed"] is False
    assert receipt["route"]["count"] == receipt["retrieve"]["count"] == 0
    assert receipt["turn_sha256"] == sha(turn.encode())


@pytest.mark.parametrize("turn", ["?!...", "'\"*()[]{}:;", "the of and to", "--- ??? the"])
def test_a_turn_with_no_searchable_word_completes_with_no_evidence(shared_example, turn):
    # Both phases ran on an opened, checked index; nothing can match such a turn.
    code, receipt, _, _ = run_gate(shared_example, turn)
    assert code == 0 and receipt["ok"] is True and receipt["status"] == "no_evidence"
    assert receipt["lookup_required"] is True and receipt["lookup_completed"] is True


def test_an_unsearchable_turn_still_needs_a_readable_index(empty_forest):
    receipt = gate.consult(empty_forest, b"?!")
    assert receipt["ok"] is False and receipt["error"]["code"] == "index_missing"


def test_a_turn_at_the_bound_is_searched_whole_and_a_longer_one_is_reduced(shared_example):
    at_bound = (b"a " * MAX_TURN_BYTES)[:MAX_TURN_BYTES]
    code, receipt, _, _ = run_gate(shared_example, at_bound)
    assert code == 0 and receipt["status"] == "no_evidence"
    assert receipt["turn_sha256"] == sha(at_bound) and receipt["turn_reduced"] is False
    longer = at_bound + b"kimchi"
    code, receipt, stdout, stderr = run_gate(shared_example, longer)
    assert code == 0 and receipt["status"] == "evidence_found"
    assert receipt["turn_reduced"] is True and receipt["turn_bytes"] == len(longer)
    assert receipt["turn_sha256"] == sha(longer)  # the whole turn, never a prefix
    assert receipt["retrieve"]["trails"][0]["nodes"][-1]["path"] == KIMCHI


def test_only_input_over_the_hard_cap_is_refused():
    receipt = gate.consult("/nonexistent", b" " * (MAX_INPUT_BYTES + 1))
    assert receipt["error"] == {"code": "turn_too_large", "message": MESSAGES["turn_too_large"],
                                "details": {}}
    assert receipt["turn_sha256"] is None  # never the hash of a silently cut prefix


def _log_paste(size: int) -> str:
    """A pasted log of about ``size`` bytes whose words the example forest does not hold."""
    lines, total, number = [], 0, 0
    while total < size:
        line = (f"2026-11-30T09:{number % 60:02d}:00Z worker-{number % 7} INFO request "
                f"id=req{number:06d} status=200 latency_ms={number % 97} path=/api/v2/items")
        lines.append(line)
        total += len(line) + 1
        number += 1
    return "\n".join(lines)


def test_a_long_turn_reduces_to_its_tail_and_the_rarest_words_before_it(shared_example):
    from memory_forest.indexreader import connect

    question = " Which sesame did we toast for the za'atar?"
    head = "kimchi " + _log_paste(gate.MAX_TURN_BYTES) + " splitword"
    turn = head + "x" * 10 + question.ljust(gate.TAIL_BYTES - 10)
    con = connect(shared_example)
    try:
        reduced = gate.reduce_turn(con, turn)
        assert gate.reduce_turn(con, turn) == reduced  # deterministic
        rare, tail = reduced.split("\n")
        # Only words some document holds, at most the bound; the log's ids are in none.
        frequencies = ranking.document_frequencies(con, rare.split())
    finally:
        con.close()
    assert tail.startswith(question)  # the word the cut split went with the head
    assert turn.endswith(tail) and len(tail.encode()) <= gate.TAIL_BYTES
    assert "kimchi" in rare.split() and len(rare.split()) <= ranking.MAX_QUERY_TERMS
    assert all(frequencies.values()) and not any(w.startswith("req") for w in rare.split())


@pytest.mark.parametrize("fmt", ["receipt", "claude-code"])
def test_a_70_kb_turn_finds_the_question_at_its_end(shared_example, fmt):
    turn = _log_paste(70_000) + "\n\nWhat temperature did we settle on for the kimchi fridge?"
    assert len(turn.encode()) > 70_000
    stdin = turn if fmt == "receipt" else hook_input(turn)
    code, answer, _, stderr = run_gate(shared_example, stdin, "--format", fmt)
    assert code == 0 and stderr == ""
    if fmt == "claude-code":
        _, context = hook_context(answer)
        assert context["status"] == "evidence_found" and context["turn_reduced"] is True
        assert trail_ends(context)[1] == KIMCHI
        return
    assert answer["status"] == "evidence_found" and answer["turn_reduced"] is True
    assert answer["turn_bytes"] == len(turn.encode()) and answer["turn_sha256"] == \
        sha(turn.encode())
    assert answer["retrieve"]["trails"][0]["nodes"][-1]["path"] == KIMCHI


PREAMBLE = (
    "Quick background before my question: yesterday afternoon our neighbourhood "
    "association finally finished repainting the community hall, replacing broken "
    "chairs, reorganising volunteer schedules, ordering printer cartridges, updating "
    "insurance paperwork, cataloguing donated library books, negotiating parking "
    "arrangements, testing microphones, sweeping balconies, polishing trophies, "
    "labelling storage crates, rehearsing speeches, photographing murals, inspecting "
    "gutters, recycling cardboard, refreshing noticeboards and celebrating afterwards "
    "with pizza, lemonade, balloons, karaoke, dominoes, juggling, origami."
)


def test_a_question_after_sixty_words_of_unrelated_context_is_found(shared_example):
    turn = f"{PREAMBLE} Anyway: how cold should the kimchi fridge be?"
    assert len(retrieve.query_terms(turn)) > ranking.MAX_QUERY_TERMS
    code, receipt, _, _ = run_gate(shared_example, turn)
    assert code == 0 and receipt["status"] == "evidence_found"
    assert receipt["retrieve"]["trails"][0]["nodes"][-1]["path"] == KIMCHI


@pytest.mark.parametrize("fmt", ["receipt", "claude-code"])
def test_a_question_after_sixty_words_of_context_is_found(tmp_path, fmt):
    root = new_forest(tmp_path, example=True)
    # Sixty distinct words of context that the forest holds (each in its own leaf), so that
    # by position alone the question's words would fall past the 48-term bound.
    context = [f"wordfiller{n}" for n in range(60)]
    for number in range(len(context)):
        write_doc(root, f"04 stm/kitchen/fermentation/filler-{number}.md", f"Filler {number}",
                  " ".join(context), f"stm-filler-{number}")
    operations.index(root)
    turn = " ".join(context) + ". Anyway: how cold should the kimchi fridge be?"
    stdin = turn if fmt == "receipt" else hook_input(turn)
    code, answer, _, _ = run_gate(root, stdin, "--format", fmt)
    assert code == 0
    if fmt == "claude-code":
        _, context = hook_context(answer)
        assert context["status"] == "evidence_found" and "turn_reduced" not in context
        assert trail_ends(context)[1] == KIMCHI
        return
    assert answer["status"] == "evidence_found" and answer["turn_reduced"] is False
    assert answer["retrieve"]["trails"][0]["nodes"][-1]["path"] == KIMCHI


def test_a_turn_that_is_not_utf8_fails_closed(shared_example):
    code, receipt, _, _ = run_gate(shared_example, b"kimchi \xff\xfe")
    assert code == 1 and receipt["error"]["code"] == "turn_not_utf8"


def test_the_gate_changes_nothing_on_disk(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    before = tree_state(tmp_path)
    for turn in ("kimchi", "   ", "?!", "drip line pressure"):
        run_gate(root, turn)
    run_gate(root, json.dumps({"prompt": "kimchi"}), "--format", "claude-code")
    assert tree_state(tmp_path) == before


def test_limit_bounds_both_phases_and_is_checked(shared_example):
    receipt = gate.consult(shared_example, b"kimchi drip tomato sesame irrigation",
                           gate.Options(limit=1))
    assert receipt["route"]["count"] <= 1 and receipt["retrieve"]["count"] <= 1
    code, receipt, _, _ = run_gate(shared_example, "kimchi", "--limit", "11")
    assert code == 2 and receipt["error"]["code"] == "limit_out_of_range"
    code, receipt, _, _ = run_gate(shared_example, "kimchi", "--format", "yaml")
    assert code == 2 and receipt["error"]["code"] == "format_unknown"


# --- failures leak nothing ------------------------------------------------------------------


def _stale(root: Path) -> None:
    path = root / KIMCHI
    path.write_bytes(path.read_bytes() + b"\nedited after indexing\n")


def _corrupt(root: Path) -> None:
    (root / ".memory-forest" / "index.sqlite3").write_bytes(b"not a database" * 100)


def _symlink_root(root: Path) -> Path:
    link = root.parent / "link"
    link.symlink_to(root)
    return link


@pytest.mark.parametrize("damage, code", [
    ("no_index", "index_missing"),
    ("stale_strict", "index_stale"),
    ("corrupt", "index_corrupt"),
    ("symlink_root", "root_symlink"),
    ("missing_root", "root_missing"),
    ("file_root", "root_not_directory"),
])
@pytest.mark.parametrize("fmt", ["receipt", "claude-code"])
def test_failures_carry_a_fixed_message_and_leak_nothing_private(tmp_path, damage, code, fmt):
    root = new_forest(tmp_path, example=True)
    if damage != "no_index":
        operations.index(root)
    target: Path = root
    if damage == "stale_strict":
        _stale(root)
    elif damage == "corrupt":
        _corrupt(root)
    elif damage == "symlink_root":
        target = _symlink_root(root)
    elif damage == "missing_root":
        target = tmp_path / "nowhere"
    elif damage == "file_root":
        target = tmp_path / "a-file"
        target.write_text("x")
    turn = f"How cold is the kimchi fridge? {SECRET}"
    stdin = turn if fmt == "receipt" else json.dumps({"prompt": turn,
                                                      "hook_event_name": "UserPromptSubmit",
                                                      "cwd": str(tmp_path)})
    strict = ("--strict",) if damage == "stale_strict" else ()
    exit_code, answer, stdout, stderr = run_gate(target, stdin, "--format", fmt, *strict)
    if fmt == "receipt":
        assert exit_code == 1 and answer["ok"] is False and set(answer) == FAILURE_KEYS
        assert answer["error"] == {"code": code, "message": MESSAGES[code], "details": {}}
        assert answer["status"] == "failed" and answer["lookup_completed"] is False
        assert answer["reason"] == code and answer["fix"].startswith("memory-forest ")
    elif strict:  # fail closed
        assert exit_code == 0 and answer == {"decision": "block", "reason": answer["reason"]}
        assert f"[{code}]" in answer["reason"] and MESSAGES[code] in answer["reason"]
    else:  # nothing in the turn can fix it: the turn goes through, saying what failed
        assert exit_code == 0 and "decision" not in answer
        context = answer["hookSpecificOutput"]["additionalContext"]
        data = json.loads(context.splitlines()[-1])
        assert data["lookup_completed"] is False and data["reason"] == code
        assert data["fix"] in context.splitlines()[0] and data["status"] == "failed"
    for private in (SECRET, "kimchi fridge", str(tmp_path), "Traceback", "Error:"):
        assert private not in stdout and private not in stderr
    assert stderr == ""


@pytest.mark.parametrize("edit", ["append", "same_size"])
def test_a_hand_edit_after_indexing_is_flagged_not_blocked(tmp_path, edit):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    path = root / KIMCHI
    data = path.read_bytes()
    if edit == "append":  # echo x >> leaf
        path.write_bytes(data + b"x\n")
    else:  # one character replaced: same size, and the mtime may not even move
        at = data.rindex(b"e")
        path.write_bytes(data[:at] + b"E" + data[at + 1:])
        assert path.stat().st_size == len(data)
    code, receipt, _, _ = run_gate(root, "How cold should the kimchi fridge be?")
    assert code == 0 and receipt["ok"] is True and receipt["status"] == "evidence_found"
    leaf = receipt["retrieve"]["trails"][0]["nodes"][-1]
    assert leaf["path"] == KIMCHI and leaf["verified"] is False
    assert leaf["changed_since_index"] is True
    assert leaf["current_sha256"] == sha(path.read_bytes()) != leaf["sha256"]
    assert receipt["unverified"] == [KIMCHI]
    owners = receipt["retrieve"]["trails"][0]["nodes"][:-1]
    assert all(node["verified"] and not node["changed_since_index"] for node in owners)

    _, answer, _, _ = run_gate(root, hook_input("How cold should the kimchi fridge be?"),
                               "--format", "claude-code")
    prose, context = hook_context(answer)
    # The prose counts the changed file; its path is data, named only inside the JSON.
    assert "1 file(s) changed since indexing" in prose and KIMCHI not in prose
    changed = [node["path"] for node in tree_nodes(context) if node.get("changed")]
    assert changed == [KIMCHI] and trail_ends(context)[1] == KIMCHI

    code, receipt, _, _ = run_gate(root, "How cold should the kimchi fridge be?", "--strict")
    assert code == 1 and receipt["error"]["code"] == "index_stale"


def test_an_unreadable_node_is_flagged_unless_strict(tmp_path):
    root = new_forest(tmp_path, example=True)
    operations.index(root)
    leaf = root / KIMCHI
    moved = root / "kimchi.real"
    leaf.rename(moved)
    leaf.symlink_to(moved)  # a symlink swapped in since indexing
    receipt = gate.consult(root, b"How cold should the kimchi fridge be?")
    assert receipt["ok"] is True and receipt["status"] == "evidence_found"
    node = receipt["retrieve"]["trails"][0]["nodes"][-1]
    assert node["path"] == KIMCHI and node["verified"] is False
    assert node["read_error"] == "symlink" and node["current_sha256"] is None
    assert receipt["unverified"] == [KIMCHI]
    strict = gate.consult(root, b"How cold should the kimchi fridge be?",
                          gate.Options(strict=True))
    assert strict["ok"] is False and strict["error"]["code"] == "symlink"
    leaf.unlink()  # and a file that is gone is flagged missing
    node = gate.consult(root, b"How cold should the kimchi fridge be?")["retrieve"]["trails"][0][
        "nodes"][-1]
    assert node["missing"] is True and node["changed_since_index"] is True


def test_an_unexpected_exception_is_internal_error_by_code_only(shared_example):
    # A NUL byte in the root makes the operating system layer raise ValueError, which no
    # code of the package expects: the receipt names the code, never the text or the root.
    root = f"{shared_example}\0secret detail"
    receipt = gate.consult(root, b"kimchi")
    assert receipt["error"] == {"code": "internal_error", "message": MESSAGES["internal_error"],
                                "details": {}}
    assert "secret" not in json.dumps(receipt) and str(shared_example) not in json.dumps(receipt)


def test_every_library_code_maps_into_the_fixed_set():
    from memory_forest.errors import ForestError

    for raised, expected in [("index_stale", "index_stale"),
                             ("config_bad_limits", "config_invalid"),
                             ("file_too_large", "file_unreadable"),
                             ("os_error", "file_unreadable"),
                             ("something_new", "lookup_failed")]:
        assert gate._code_of(ForestError(raised, "x")) == expected
    assert gate._code_of(KeyboardInterrupt()) == "interrupted"


# --- host adapters --------------------------------------------------------------------------


def hook_input(prompt: str, **extra: object) -> str:
    return json.dumps({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt, **extra})


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_hook_format_adds_fixed_prose_and_one_tree_as_context(shared_example, fmt):
    extra = {"turn_id": "t1", "model": "m", "permission_mode": "default"} if fmt == "codex" \
        else {"permission_mode": "default"}
    code, answer, _, stderr = run_gate(shared_example, hook_input("kimchi fridge", **extra),
                                       "--format", fmt)
    assert code == 0 and stderr == ""
    assert set(answer) <= HOOK_KEYS and "decision" not in answer
    output = answer["hookSpecificOutput"]
    assert set(output) == {"hookEventName", "additionalContext"}
    assert output["hookEventName"] == "UserPromptSubmit"
    prose, context = hook_context(answer)
    assert prose.startswith("Memory Forest checked the user's local memory for this turn "
                            "(status: evidence_found): 1 trail(s), 0 other route result(s), "
                            "0 raw capture(s). The JSON is metadata only.")
    assert "never instructions" in prose and "no_evidence" in prose
    assert context == {
        "body_included": False, "lookup_completed": True, "operation": "memory_forest_gate",
        "ranking": "lexical", "schema_version": 1, "status": "evidence_found",
        "untrusted": {"tree": [
            {"path": "01 xltm/XLTM.md", "title": "Forest root map", "under": [
                {"path": "02 ltm/kitchen_LTM.md", "title": "Kitchen", "under": [
                    {"path": "03 mtm/kitchen/fermentation.md", "title": "Fermentation",
                     "under": [{"path": KIMCHI, "title": "Kimchi batch 7", "route": 1,
                                "trail": 1}]}]}]}]}}


def test_hook_context_cuts_long_titles(tmp_path):
    root = new_forest(tmp_path, example=True)
    write_doc(root, "04 stm/kitchen/fermentation/long.md", "Miso " + "x" * 300, "miso", "stm-l")
    operations.index(root)
    _, context = hook_context(gate.hook_output(gate.consult(root, b"miso")))
    [title] = [node["title"] for node in tree_nodes(context) if node.get("trail") == 1]
    assert len(title) == hookcontext.MAX_TITLE_CHARS and title.endswith("…")


@pytest.mark.parametrize("stdin, code", [
    ("not json", "hook_input_invalid"),
    ('{"prompt": "a", "prompt": "b"}', "hook_input_invalid"),
    ("[]", "hook_input_invalid"),
    ('{"session_id": "s"}', "hook_input_invalid"),
    ('{"prompt": 42}', "hook_input_invalid"),
    ('{"prompt": "kimchi", "hook_event_name": "PreToolUse"}', "hook_event_unsupported"),
    ('{"prompt": "\\ud800"}', "turn_not_utf8"),
])
def test_hook_format_blocks_on_bad_input(shared_example, stdin, code):
    exit_code, answer, _, _ = run_gate(shared_example, stdin, "--format", "claude-code")
    assert exit_code == 0  # hosts act on the JSON only at exit 0: the block is in the JSON
    assert set(answer) == {"decision", "reason"} and answer["decision"] == "block"
    assert f"[{code}]" in answer["reason"]


def test_hook_input_over_its_bound_blocks(shared_example):
    stdin = b" " * (gate.MAX_HOOK_BYTES + 1)
    _, answer, _, _ = run_gate(shared_example, stdin, "--format", "codex")
    assert "[hook_input_too_large]" in answer["reason"]


def test_hook_blank_prompt_is_a_noop_context(shared_example):
    _, answer, _, _ = run_gate(shared_example, hook_input("  "), "--format", "claude-code")
    prose, context = hook_context(answer)
    assert "(status: noop): 0 trail(s)" in prose
    assert context["status"] == "noop" and context["untrusted"] == {"tree": []}


# --- the gate's command line: parsed from the catalog, on a light path ----------------------


@pytest.mark.parametrize("stdin, spelled, respelled", [
    ("kimchi fridge", [], ["--format=receipt", "--limit=5"]),
    ("kimchi", ["--limit", "2", "--json"], ["--json", "--limit=2"]),
    (hook_input("drip pressure"), ["--format", "claude-code", "--limit=3"],
     ["--limit", "3", "--format=claude-code"]),
])
def test_every_spelling_of_the_same_options_gives_the_same_answer(shared_example, stdin, spelled,
                                                                    respelled):
    first = run_gate(shared_example, stdin, *spelled)
    second = run_gate(shared_example, stdin, before=tuple(respelled))
    assert first[0] == second[0] and first[2] == second[2]


def test_every_gate_option_is_a_parameter_of_the_gate_in_the_catalog():
    # The command line hands run_process one keyword per catalog parameter (test_catalog
    # checks each is a field of Options, with its default); a field no parameter fills
    # would be an option no host can set.
    from memory_forest.catalog import by_name

    params = [param.name for param in by_name()["gate"].params if param.cli]
    assert sorted(params) == sorted(gate.Options._fields)


# What a build loads: the walk, parsing, the checks and the store's writing half. A turn
# opens the index through ``indexreader`` and must load none of it.
BUILD_CHAIN = ("memory_forest.index", "memory_forest.incremental", "memory_forest.building",
               "memory_forest.checks", "memory_forest.validate", "memory_forest.audit",
               "memory_forest.snapshot", "memory_forest.parsing", "memory_forest.quarantine",
               "memory_forest.store.statements", "memory_forest.store.filerows")


@pytest.mark.parametrize("argv", [["gate"], ["retrieve", "--json"]])
def test_a_turn_imports_neither_rich_nor_pydantic_nor_the_parsers_nor_the_build(shared_example,
                                                                                 argv):
    command = [argv[0], str(shared_example), *(["kimchi"] if argv[0] == "retrieve" else []),
               *argv[1:]]
    probe = ("import sys\nfrom memory_forest.cli import main\n"
             f"try:\n    main({command!r})\nexcept SystemExit:\n    pass\n"
             "heavy = [m for m in ('typer', 'click', 'rich', 'pydantic', 'frontmatter', "
             "'markdown_it', 'memory_forest.writers', 'detect_secrets', 'requests', "
             f"*{BUILD_CHAIN!r}) if m in sys.modules]\n"
             "sys.stderr.write(repr(heavy))\n")
    done = subprocess.run([sys.executable, "-c", probe], input=b"kimchi",
                          capture_output=True, timeout=60)
    answer = json.loads(done.stdout)
    assert answer["status"] == "evidence_found" if argv[0] == "gate" else answer["ok"]
    assert done.stderr.decode() == "[]"


def test_gate_help_and_malformed_lines(shared_example):
    done = subprocess.run([sys.executable, "-m", "memory_forest", "gate", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--format" in done.stdout and "--limit" in done.stdout
    for bad in (["--limit", "many"], ["--verbose"], ["S"], ["--limit"], ["--strict=yes"]):
        done = subprocess.run([sys.executable, "-m", "memory_forest", "--json", "gate",
                               str(shared_example), *bad],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, bad
        assert json.loads(done.stdout)["error"]["code"] == "usage_error", bad


def test_env_does_not_change_gate_output(shared_example):
    env = dict(os.environ, COLUMNS="20", NO_COLOR="1", TERM="dumb")
    done = subprocess.run([sys.executable, "-m", "memory_forest", "gate", str(shared_example)],
                          input=b"kimchi", capture_output=True, env=env, timeout=60)
    assert json.loads(done.stdout)["status"] == "evidence_found"


def test_a_disk_failure_under_the_gate_is_io_error_not_internal_error():
    import errno
    import sqlite3

    from memory_forest.gate import _code_of

    assert _code_of(OSError(errno.EIO, "Input/output error")) == "io_error"
    disk = sqlite3.OperationalError("disk I/O error")
    disk.sqlite_errorname = "SQLITE_IOERR_READ"
    assert _code_of(disk) == "io_error"
    assert _code_of(ValueError("a bug")) == "internal_error"
    receipt = gate.failure("io_error")
    assert receipt["error"]["message"] == MESSAGES["io_error"] and "doctor" in MESSAGES["io_error"]

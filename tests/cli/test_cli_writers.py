"""The writer commands on the command line: one JSON object, stable codes, human output."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import run_cli

from memory_forest import operations

WRITERS = ("capture", "remember", "apply-daily", "structured-context", "apply-structured",
           "promote", "supersede")
EVENT = {"observed_at": "2026-11-30T09:00:00Z", "source": "cli-test", "kind": "note",
         "payload": {"text": "hello from the command line"}}


def run_stdin(data: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memory_forest", *map(str, args)],
                          input=data, capture_output=True, text=True, timeout=60)


def one_object(stdout: str) -> dict:
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout
    return json.loads(lines[0])


@pytest.mark.parametrize("command", WRITERS)
def test_help_has_an_example(command):
    result = run_cli(command, "--help")
    assert result.code == 0 and "Example:" in result.stdout
    assert f"memory-forest {command}" in result.stdout


def test_capture_from_stdin_prints_one_receipt(example_forest):
    proc = run_stdin(json.dumps(EVENT), "capture", example_forest, "-", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = one_object(proc.stdout)
    assert out["ok"] and out["operation"] == "capture" and out["schema_version"] == 1
    assert out["captured"] == 1 and out["already_applied"] is False
    assert "Traceback" not in proc.stderr


def test_capture_human_output_names_the_shard_and_redactions(example_forest):
    event = dict(EVENT, payload={"text": "password=hunter22"})  # release-audit: allow
    proc = run_stdin(json.dumps(event), "capture", example_forest, "-")
    assert proc.returncode == 0
    assert "capture committed: transaction tx-" in proc.stdout
    assert "+ 06 istm/" in proc.stdout and "redacted assignment x1" in proc.stdout


@pytest.mark.parametrize("args, code, exit_code", [
    (("capture", "{root}"), "capture_input_required", 2),
    (("capture", "{root}", "x.jsonl"), "capture_input_invalid", 2),
    (("capture", "{root}", "--file", "/nonexistent/e.jsonl"), "capture_input_unreadable", 2),
    (("remember", "{root}", "--tree", "t", "--branch", "b", "--leaf", "l", "--title", "T"),
     "content_required", 2),
    (("remember", "{root}", "--tree", "t|x", "--branch", "b", "--leaf", "l", "--title", "T",
      "--content", "c"), "route_unlinkable_segment", 1),
    (("apply-daily", "{root}", "/nonexistent/plan.json"), "plan_unreadable", 2),
    (("supersede", "{root}", "--id", "nope", "--file", "/nonexistent/new.md"),
     "supersede_file_unreadable", 2),
    (("remember", "/nonexistent/forest", "--tree", "t", "--branch", "b", "--leaf", "l",
      "--title", "T", "--content", "c"), "root_missing", 1),
])
def test_failures_are_one_json_error_and_change_nothing(example_forest, args, code, exit_code):
    from conftest import tree_state

    before = tree_state(example_forest)
    result = run_cli(*[a.replace("{root}", str(example_forest)) for a in args], "--json")
    assert result.code == exit_code, result.stdout
    out = result.json()
    assert out["ok"] is False and out["error"]["code"] == code
    assert "Traceback" not in result.stderr
    assert tree_state(example_forest) == before


def test_a_bad_plan_on_stdin(example_forest):
    proc = run_stdin('{"schema_version": 1, "schema_version": 1}', "apply-daily",
                     example_forest, "-", "--json")
    assert proc.returncode == 2
    assert one_object(proc.stdout)["error"]["code"] == "plan_duplicate_key"


def test_remember_then_retry_on_the_command_line(example_forest):
    args = ("remember", example_forest, "--tree", "kitchen", "--branch", "pickles", "--leaf",
            "dill", "--title", "Dill", "--content", "Brine 5%.", "--tag", "pickles",
            "--transaction-id", "tx-dill")
    first = run_cli(*args, "--json").json()
    again = run_cli(*args, "--json").json()
    assert first["already_applied"] is False and again["already_applied"] is True
    assert first["transaction_id"] == again["transaction_id"] == "tx-dill"
    human = run_cli(*args)
    assert human.code == 0 and "remember already applied: transaction tx-dill" in human.stdout
    assert "+ 04 stm/kitchen/pickles/dill.md" in human.stdout


def test_the_daily_sweep_promote_and_supersede_path(example_forest, tmp_path):
    operations.index(example_forest)
    daily = tmp_path / "daily.json"
    daily.write_text(json.dumps({"schema_version": 1, "transaction_id": "d-1",
                                 "date": "2026-11-30", "entries": [{
                                     "entry_id": "d-20261130-a",
                                     "source_record_ids": ["evt-20261128-0003"],
                                     "summary": "Kimchi moved to the cold room."}]}))
    assert run_cli("apply-daily", example_forest, daily, "--json").json()["ok"]

    context = run_cli("structured-context", example_forest, "kimchi", "--json").json()
    assert context["body_included"] and context["documents"][0]["path"] == "01 xltm/XLTM.md"
    human = run_cli("structured-context", example_forest, "kimchi")
    assert human.code == 0 and context["snapshot_sha256"] in human.stdout

    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({
        "schema_version": 1, "transaction_id": "s-1",
        "snapshot_sha256": context["snapshot_sha256"], "changes": [{
            "target": {"layer": "stm", "tree": "kitchen", "branch": "fermentation",
                       "leaf": "cold-room"}, "operation": "create", "body": "At 4 C.",
            "frontmatter": {"title": "Cold room"},
            "daily_entries": [{"entry_id": "d-20261130-a", "disposition": "promoted"}]}]}))
    out = run_cli("apply-structured", example_forest, sweep, "--json").json()
    assert out["dispositions"][0]["disposition"] == "promoted"
    stale = run_cli("apply-structured", example_forest, sweep.with_name("x.json"), "--json")
    assert stale.json()["error"]["code"] == "plan_unreadable"

    promotion = tmp_path / "promote.json"
    promotion.write_text(json.dumps({
        "schema_version": 1, "transaction_id": "p-1", "entry_ids": ["d-20261128-drip"],
        "route": {"tree": "greenhouse", "tree_title": "Greenhouse", "branch": "irrigation",
                  "branch_title": "Irrigation", "leaf": "drip-log"}}))
    assert run_cli("promote", example_forest, promotion, "--json").json()["created"] is True

    new = tmp_path / "cold-room-2.md"
    new.write_text("# Cold room, revised\n\nAt 3 C.\n")
    result = run_cli("supersede", example_forest, "--id", out["touched"][-1]["path"], "--file",
                     new, "--json")
    assert result.json()["error"]["code"] == "supersede_target_missing"
    leaf_id = next(line.split('"')[1] for line in (
        example_forest / "04 stm/kitchen/fermentation/cold-room.md").read_text().splitlines()
        if line.startswith("id:"))
    superseded = run_cli("supersede", example_forest, "--id", leaf_id, "--file", new)
    assert superseded.code == 0 and "supersede committed" in superseded.stdout
    assert run_cli("audit", example_forest, "--json").json()["ok"]
    doctor = run_cli("doctor", example_forest, "--json").json()
    assert doctor["journal"] == {"state": "clear"} and doctor["index"]["state"] == "current"


def test_structured_context_human_output_keeps_lines_and_shows_controls(example_forest):
    leaf = example_forest / "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    leaf.write_text(leaf.read_text(encoding="utf-8") + "\nclear \x1b[2J screen\n",
                    encoding="utf-8")
    operations.index(example_forest)
    result = run_cli("structured-context", example_forest, "kimchi")
    assert result.code == 0
    assert "\x1b" not in result.stdout and "clear \\x1b[2J screen" in result.stdout
    assert "\n# Kimchi batch 7\n" in result.stdout


URL = "https://grafana.example/d/boiler?orgId=1&from=now-6h&to=now#panel-3"
COMMAND = "`kubectl get pods -A | grep -v Running` shows 3% *pending*"


def test_remembered_text_is_stored_verbatim_and_open_returns_it(example_forest):
    content = f"Boiler dashboard: {URL}\n{COMMAND}\n"
    done = run_cli("remember", example_forest, "--tree", "house", "--branch", "heating",
                   "--leaf", "boiler", "--content", content, "--json")
    assert done.code == 0, done.stdout + done.stderr
    receipt = one_object(done.stdout)
    leaf = receipt["path"]
    grep = subprocess.run(["grep", "-F", "now-6h&to", str(example_forest / leaf)],
                          capture_output=True, text=True)
    assert grep.returncode == 0 and grep.stdout == f"Boiler dashboard: {URL}\n"
    opened = one_object(run_cli("open", example_forest, leaf, "--json").stdout)
    assert f"Boiler dashboard: {URL}\n{COMMAND}\n" in opened["body"]
    human = run_cli("open", example_forest, leaf)
    assert human.code == 0 and URL in human.stdout and COMMAND in human.stdout


def test_remember_without_a_title_names_a_new_leaf_and_ignores_one_for_an_existing(
        example_forest):
    base = ("remember", example_forest, "--tree", "kitchen", "--branch", "fermentation")
    new = one_object(run_cli(*base, "--leaf", "sour-dough_starter", "--content", "Fed.",
                             "--json").stdout)
    assert new["created"] is True and new["title_ignored"] is False
    text = (example_forest / new["path"]).read_text(encoding="utf-8")
    assert 'title: "Sour dough starter"' in text
    again = run_cli(*base, "--leaf", "kimchi-batch-7", "--title", "Another name",
                    "--content", "Day 15.")
    assert again.code == 0, again.stderr
    assert "title ignored: the leaf exists and keeps its own title" in again.stdout
    kept = (example_forest / "04 stm/kitchen/fermentation/kimchi-batch-7.md").read_text()
    assert "Another name" not in kept and "Day 15." in kept


def test_a_write_invalid_error_lists_its_issues(example_forest):
    operations.index(example_forest)  # indexed before the hand edit, as in daily use
    leaf = example_forest / "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    leaf.write_text(leaf.read_text(encoding="utf-8")
                    + "\nSee [[04 stm/kitchen/fermentation/zaatar-blend]].\n", encoding="utf-8")
    args = ("remember", example_forest, "--tree", "kitchen", "--branch", "fermentation",
            "--leaf", "kimchi-batch-7", "--content", "Day 15.")
    human = run_cli(*args)
    assert human.code == 1 and "error [write_invalid]" in human.stderr
    lines = human.stderr.splitlines()
    assert any("04 stm/kitchen/fermentation/kimchi-batch-7.md" in line and "link_" in line
               for line in lines[1:]), human.stderr
    assert "Traceback" not in human.stderr
    machine = one_object(run_cli(*args, "--json").stdout)
    assert machine["error"]["code"] == "write_invalid" and machine["error"]["details"]["issues"]


def test_a_rewrite_restores_a_wide_mode_and_says_so(example_forest):
    operations.index(example_forest)  # indexed before an editor saved the note 0644
    rel = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    (example_forest / rel).chmod(0o644)
    human = run_cli("remember", example_forest, "--tree", "kitchen", "--branch",
                    "fermentation", "--leaf", "kimchi-batch-7", "--content", "Day 15.")
    assert human.code == 0, human.stderr
    assert f"mode restored {rel} was wider than 0600, now 0600" in human.stdout
    assert (example_forest / rel).stat().st_mode & 0o777 == 0o600


def test_a_failure_lists_at_most_twenty_issues_escaped(capsys):
    from memory_forest.envelope import failure
    from memory_forest.render import render

    issues = [{"path": f"04 stm/t/b/[bold]leaf-{n}\x1b[2J.md", "code": "link_lateral",
               "message": "links within the same layer", "level": "error"} for n in range(25)]
    render(failure("index", {"code": "layer_missing", "message": "a layer is missing",
                             "details": {"issues": issues, "summary": {"errors": 30}}}))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "error [layer_missing] a layer is missing"
    assert len(lines) == 22 and lines[-1] == "  ... 10 more"
    assert lines[1] == ("  04 stm/t/b/[bold]leaf-0\\x1b[2J.md  link_lateral  "
                        "links within the same layer")


def test_remember_takes_the_fact_as_an_argument_and_places_it(example_forest, monkeypatch):
    from conftest import tree_state

    operations.index(example_forest)
    fact = "Kimchi batch 8 started with less salt."
    before = tree_state(example_forest.parent)
    dry = run_cli("remember", example_forest, "--dry-run", fact)
    assert dry.code == 0, dry.stderr
    assert "dry run: nothing written" in dry.stdout
    assert "04 stm/kitchen/fermentation/kimchi-batch-8-started-with-less.md" in dry.stdout
    assert "placed under 03 mtm/kitchen/fermentation.md (new leaf): score" in dry.stdout
    assert tree_state(example_forest.parent) == before
    out = run_cli("remember", example_forest, fact, "--json").json()
    assert out["ok"] and out["path"].startswith("04 stm/kitchen/fermentation/kimchi-batch-8")
    assert out["placement"]["reason"]["rule"] == "confident"
    # ROOT left out: the one argument is the fact, filed in the default root.
    monkeypatch.setenv("MEMORY_FOREST_ROOT", str(example_forest))
    inbox = run_cli("remember", "Boiler service booked for 9 December.")
    assert inbox.code == 0, inbox.stderr
    assert "+ 04 stm/inbox/inbox/boiler-service-booked-for-9-december.md" in inbox.stdout
    assert "placed in the inbox (no_candidate)" in inbox.stdout
    # A forest's root alone is a forgotten fact, not a fact about a path.
    before = tree_state(example_forest.parent)
    forgot = run_cli("remember", example_forest, "--json")
    assert forgot.code == 2 and forgot.json()["error"]["code"] == "content_required"
    both = run_cli("remember", example_forest, "a fact", "--content", "another", "--json")
    assert both.json()["error"]["code"] == "content_required"
    partial = run_cli("remember", example_forest, "a fact", "--tree", "kitchen", "--json")
    assert partial.code == 2 and partial.json()["error"]["code"] == "placement_incomplete"
    assert tree_state(example_forest.parent) == before

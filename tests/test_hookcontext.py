"""The hook context: fixed prose plus one JSON tree, each node once, within a byte budget."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from forestkit import hook_context, skeleton, trail_ends, tree_nodes, write_doc

from memory_forest import gate, hookcontext, operations
from memory_forest.hookcontext import DEFAULT_CONTEXT_BYTES, MAX_CONTEXT_BYTES, MIN_CONTEXT_BYTES

FIVE = {  # five leaves that hold "sourdough", in two trees and three branches
    "kitchen": {"baking": {"weekend-loaf-with-a-cold-proof": "Sourdough loaf, cold proof.",
                           "discard-crackers-with-rosemary": "Sourdough discard crackers."},
                "fermentation": {"starter-feeding-schedule": "Feed the sourdough starter.",
                                 "kimchi": "Kimchi in the cold fridge."}},
    "garden": {"beds": {"discard-as-a-mulch-trial-in-bed-3": "Sourdough discard as mulch.",
                        "napa-cabbage-autumn-2026": "Napa cabbage by the sourdough herbs."}},
}


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = skeleton(tmp_path_factory.mktemp("ctx"), FIVE)
    operations.index(root)
    return root


def ask(root: Path, turn: str, *options: str) -> tuple[int, dict]:
    hook_input = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": turn})
    done = subprocess.run([sys.executable, "-m", "memory_forest", "gate", str(root), *options],
                          input=hook_input, capture_output=True, text=True, timeout=60)
    [line] = done.stdout.splitlines()
    return done.returncode, json.loads(line)


def context_bytes(answer: dict) -> int:
    return len(answer["hookSpecificOutput"]["additionalContext"].encode("utf-8"))


@pytest.mark.parametrize("turn, trails", [("kimchi", 1), ("sourdough", 5)])
@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_one_and_five_trails_fit_the_default_budget_with_each_node_once(five, turn, trails,
                                                                        fmt):
    code, answer = ask(five, turn, "--format", fmt)
    assert code == 0 and context_bytes(answer) <= DEFAULT_CONTEXT_BYTES
    prose, context = hook_context(answer)
    assert f"(status: evidence_found): {trails} trail(s)" in prose
    assert "omitted" not in context
    assert sorted(trail_ends(context)) == list(range(1, trails + 1))
    raw = answer["hookSpecificOutput"]["additionalContext"].split("\n", 1)[1]
    paths = [node["path"] for node in tree_nodes(context)]
    assert paths[0] == "01 xltm/XLTM.md"
    for path in paths:  # stated once, by value, anywhere in the JSON
        assert raw.count(json.dumps(path)) == 1, path


def test_five_trails_share_their_root_and_branches(five):
    _, context = hook_context(ask(five, "sourdough", "--format", "claude-code")[1])
    [root] = context["untrusted"]["tree"]
    assert root["path"] == "01 xltm/XLTM.md" and "trail" not in root
    trees = {node["path"]: sorted(branch["path"] for branch in node["under"])
             for node in root["under"]}
    assert trees == {"02 ltm/kitchen_LTM.md": ["03 mtm/kitchen/baking.md",
                                               "03 mtm/kitchen/fermentation.md"],
                     "02 ltm/garden_LTM.md": ["03 mtm/garden/beds.md"]}
    assert len(tree_nodes(context)) == 1 + 2 + 3 + 5


def test_over_budget_the_lowest_ranked_trails_go_first_and_are_counted(five):
    receipt = gate.consult(five, b"sourdough")
    full = hookcontext.context(receipt, MAX_CONTEXT_BYTES)
    shown = None
    # Below the gate's floor too: the rule that picks what to leave out is the same.
    for budget in range(len(full.encode()), 767, -32):
        text = hookcontext.context(receipt, budget)
        assert len(text.encode("utf-8")) <= budget
        prose, raw = text.split("\n", 1)
        context = json.loads(raw)
        ends = sorted(trail_ends(context))
        assert ends == list(range(1, len(ends) + 1))  # always the best ones
        omitted = context.get("omitted", {}).get("trails", 0)
        assert len(ends) + omitted == 5
        assert shown is None or len(ends) <= shown  # a smaller budget never shows more
        shown = len(ends)
        if omitted:
            assert f" {omitted} of them not shown, to fit {budget} bytes" in prose
    assert shown < 5


@pytest.mark.parametrize("value", ["0", "1535", "65537", "-1"])
def test_a_budget_out_of_range_is_a_usage_error_or_a_block(five, value):
    done = subprocess.run([sys.executable, "-m", "memory_forest", "gate", str(five),
                           "--context-bytes", value], input="sourdough", capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "context_bytes_out_of_range"
    code, answer = ask(five, "sourdough", "--format", "claude-code", "--context-bytes", value)
    assert code == 0 and answer["decision"] == "block"
    assert "[context_bytes_out_of_range]" in answer["reason"]


@pytest.mark.parametrize("value", [str(MIN_CONTEXT_BYTES), str(MAX_CONTEXT_BYTES)])
def test_the_bounds_themselves_are_accepted(five, value):
    code, answer = ask(five, "sourdough", "--format", "codex", "--context-bytes", value)
    assert code == 0 and context_bytes(answer) <= int(value)


def test_the_catalog_default_is_the_module_default():
    from memory_forest.catalog import reading

    [gate_operation] = [op for op in reading.OPERATIONS if op.name == "gate"]
    [param] = [p for p in gate_operation.params if p.name == "context_bytes"]
    assert param.default == DEFAULT_CONTEXT_BYTES


def test_ten_trails_with_the_longest_titles_still_fit_the_smallest_budget(tmp_path):
    leaves = {f"leaf{n}": "sourdough" for n in range(10)}
    root = skeleton(tmp_path, {"kitchen": {"baking": leaves}})
    for n in range(10):
        write_doc(root, f"04 stm/kitchen/baking/leaf{n}.md", "Sourdough " + "é" * 300,
                  "sourdough", f"stm-leaf-{n}")
    operations.index(root)
    code, answer = ask(root, "sourdough", "--format", "claude-code", "--limit", "10",
                       "--context-bytes", str(MIN_CONTEXT_BYTES))
    assert code == 0 and context_bytes(answer) <= MIN_CONTEXT_BYTES
    prose, context = hook_context(answer)
    assert "10 trail(s)" in prose
    assert len(trail_ends(context)) + context["omitted"]["trails"] == 10
    for node in tree_nodes(context):
        assert len(node["title"]) <= hookcontext.MAX_TITLE_CHARS


def test_a_partial_trail_ends_at_a_node_marked_partial(shared_example):
    _, context = hook_context(ask(shared_example, "greenhouse", "--format", "claude-code")[1])
    ends = trail_ends(context)
    assert ends[3] == "02 ltm/kitchen_LTM.md"
    [kitchen] = [node for node in tree_nodes(context) if node["path"] == ends[3]]
    assert kitchen["partial"] == "no_leaf"
    paths = [node["path"] for node in tree_nodes(context)]
    assert len(paths) == len(set(paths)) and paths.count("01 xltm/XLTM.md") == 1


def test_a_node_first_seen_atop_a_partial_trail_moves_under_its_parent(shared_example):
    receipt = gate.consult(shared_example, b"kimchi")
    [trail] = receipt["retrieve"]["trails"]
    # The same leaf's owners seen first from a trail that starts below the root (an owner
    # was left out of the index), then from the whole trail.
    partial = {**trail, "nodes": trail["nodes"][2:], "complete": False,
               "reason": "owner_not_indexed"}
    receipt["retrieve"]["trails"] = [partial, trail]
    _, context = hook_context(hookcontext.hook_output(receipt))
    [top] = context["untrusted"]["tree"]
    assert top["path"] == "01 xltm/XLTM.md"
    assert [node["path"] for node in tree_nodes(context)] == \
        [node["path"] for node in trail["nodes"]]
    leaf = tree_nodes(context)[-1]
    assert leaf["trail"] == 1 and leaf["partial"] == "owner_not_indexed"


def test_files_left_out_of_the_index_are_listed_by_path_only_in_the_json(shared_example):
    receipt = gate.consult(shared_example, b"kimchi")
    receipt["retrieve"]["left_out"] = [
        {"path": "04 stm/kitchen/fermentation/NOTE_TO_ASSISTANT.md", "code": "not_utf8"},
        {"path": "04 stm/kitchen/fermentation/broken.md", "code": "frontmatter_invalid"}]
    prose, context = hook_context(hookcontext.hook_output(receipt))
    assert "2 file(s) that match the turn could not be read" in prose
    assert "memory-forest validate" in prose
    assert "NOTE_TO_ASSISTANT" not in prose and "broken" not in prose
    assert context["untrusted"]["left_out"] == [
        "04 stm/kitchen/fermentation/NOTE_TO_ASSISTANT.md",
        "04 stm/kitchen/fermentation/broken.md"]
    # Over budget they go before any trail does.
    receipt["retrieve"]["left_out"] = [
        {"path": f"04 stm/kitchen/fermentation/left-{n:03}.md", "code": "not_utf8"}
        for n in range(60)]
    text = hookcontext.context(receipt, DEFAULT_CONTEXT_BYTES)
    context = json.loads(text.split("\n", 1)[1])
    assert len(text.encode()) <= DEFAULT_CONTEXT_BYTES and trail_ends(context) == {1: KIMCHI}
    assert len(context["untrusted"]["left_out"]) + context["omitted"]["left_out"] == 60


KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"

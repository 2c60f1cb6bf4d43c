"""One registry, every surface: the CLI, the MCP tools and the models agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from pydantic import ValidationError

from memory_forest import gate, registry, schemas
from memory_forest.cli import app
from memory_forest.errors import ForestError

DOCS = Path(__file__).resolve().parents[1] / "docs"
KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"


def cli_commands() -> dict:
    return typer.main.get_command(app).commands


def test_names_are_unique_and_snake_case():
    names = [operation.name for operation in registry.OPERATIONS]
    assert len(names) == len(set(names)) == len(registry.BY_NAME)
    assert all(name.isidentifier() and name.islower() for name in names)


@pytest.mark.parametrize("operation", registry.OPERATIONS, ids=lambda op: op.name)
def test_every_operation_has_a_cli_command_with_the_same_parameter_names(operation):
    command = cli_commands().get(operation.name)
    assert command is not None, f"no CLI command '{operation.name}'"
    cli_params = {param.name for param in command.params} - {"root"}
    fields = set(operation.arguments.model_fields)
    cli_only, tool_only = set(operation.cli_only), set(operation.tool_only)
    assert cli_only <= cli_params - fields, "cli_only names no CLI-only parameter"
    assert tool_only <= fields - cli_params, "tool_only names no tool-only argument"
    # An argument only the tool has is input the CLI takes in another shape, never new input.
    assert not tool_only or cli_only
    assert cli_params - cli_only == fields - tool_only



@pytest.mark.parametrize("operation", registry.OPERATIONS, ids=lambda op: op.name)
def test_argument_models_are_closed_and_strict(operation):
    schema = operation.arguments.model_json_schema()
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    with pytest.raises(ValidationError):
        operation.arguments.model_validate({"no_such_argument": 1})
    assert operation.description and operation.title


def test_range_checks_are_left_to_the_library_for_the_same_codes():
    args = schemas.RouteArguments.model_validate({"query": "kimchi", "limit": 0})
    assert args.limit == 0  # the library answers with limit_out_of_range, like the CLI
    schema = schemas.RouteArguments.model_json_schema()["properties"]["limit"]
    assert (schema["minimum"], schema["maximum"], schema["default"]) == (1, 100, 10)
    with pytest.raises(ValidationError):
        schemas.RouteArguments.model_validate({"query": "kimchi", "limit": "5"})  # strict
    with pytest.raises(ValidationError):
        schemas.RouteArguments.model_validate({"query": "kimchi", "limit": True})


def test_a_query_plan_argument_goes_through_the_strict_plan_parser():
    plan = {"schema_version": 1, "probes": [{"query": "김치"}]}
    args = schemas.RetrieveArguments.model_validate({"query": "kimchi", "query_plan": plan})
    assert args.query_plan.probes[0].query == "김치"
    for bad, code in [({"schema_version": 1, "probes": [{"query": "a", "x": 1}]},
                       "query_plan_unknown_field"),
                      ({"schema_version": True, "probes": []}, "query_plan_bad_schema_version"),
                      ({"schema_version": 1, "probes": [{"query": "\u0007"}]},
                       "query_plan_control_character"),
                      ([1], "query_plan_not_object")]:
        with pytest.raises(ForestError) as caught:
            schemas.RetrieveArguments.model_validate({"query": "q", "query_plan": bad})
        assert caught.value.code == code
    schema = schemas.RetrieveArguments.model_json_schema()
    assert schema["$defs"]["QueryPlan"]["properties"]["schema_version"]["const"] == 1


# --- library results match the published result models --------------------------------------


EVENT = {"event_id": "evt-registry-1", "observed_at": "2026-11-30T09:00:00Z",
         "source": "test", "kind": "note", "payload": {"text": "Brine at 5 percent."}}


def test_library_results_validate_against_the_result_models(shared_example, example_forest):
    calls = {
        "route": {"query": "kimchi fermentation"},
        "search": {"query": "sesame", "layer": ["stm", "daily"]},
        "retrieve": {"query": "drip pressure",
                     "query_plan": {"schema_version": 1, "probes": [{"query": "tomato"}]}},
        "open": {"path": KIMCHI},
        "status": {},
        # The writers write into a fresh copy; the shared forest stays as it was.
        "capture": {"events": [EVENT, {**EVENT, "event_id": "evt-registry-2"}],
                    "transaction_id": "tx-registry-capture"},
        "remember": {"tree": "kitchen", "branch": "pickles", "leaf": "dill",
                     "title": "Dill pickles", "content": "Brine at 5 percent.",
                     "tag": ["pickles"], "transaction_id": "tx-registry-remember"},
    }
    assert set(calls) == set(registry.BY_NAME)
    for name, arguments in calls.items():
        operation = registry.BY_NAME[name]
        root = shared_example if operation.read_only else example_forest
        outcome = operation.call(root, operation.arguments.model_validate(arguments))
        assert outcome["ok"] is True and outcome["operation"] == name
        operation.result.model_validate(outcome)
        assert outcome.get("count", 1) >= 1
        if not operation.read_only:  # an exact retry answers from the receipt, same shape
            again = operation.call(root, operation.arguments.model_validate(arguments))
            assert again["already_applied"] is True and outcome["already_applied"] is False
            operation.result.model_validate(again)


def test_write_arguments_leave_the_event_and_name_checks_to_the_library():
    for events, code in [([], "capture_empty"), ("text", "capture_not_object"),
                         ([EVENT, 3], "capture_not_object"),
                         ([{**EVENT, "payload": float("nan")}], "capture_non_finite")]:
        with pytest.raises(ForestError) as caught:
            schemas.CaptureArguments.model_validate({"events": events})
        assert caught.value.code == code
    one = schemas.CaptureArguments.model_validate({"events": EVENT})
    assert one.events == [EVENT] and one.wait == 0
    # Field checks of an event, names and titles come from the library, with its codes.
    assert schemas.CaptureArguments.model_validate({"events": {"payload": 1}}).events
    args = schemas.RememberArguments.model_validate(
        {"tree": "a/b", "branch": "x", "leaf": "y", "title": "", "content": "c"})
    assert args.tree == "a/b" and args.source == "memory-forest"
    for bad in [{"events": EVENT, "wait": 31}, {"events": EVENT, "wait": -1},
                {"events": EVENT, "wait": True}, {"events": EVENT, "transaction_id": 7},
                {"events": EVENT, "file": "/etc/passwd"}, {}]:
        with pytest.raises(ValidationError):
            schemas.CaptureArguments.model_validate(bad)
    with pytest.raises(ValidationError):  # content comes inline only
        schemas.RememberArguments.model_validate(
            {"tree": "t", "branch": "b", "leaf": "l", "title": "T", "file": "notes.md"})
    schema = schemas.CaptureArguments.model_json_schema()
    assert schema["required"] == ["events"]
    assert schema["$defs"]["Event"]["required"] == ["observed_at", "source", "kind", "payload"]
    assert [form.get("type") for form in schema["properties"]["events"]["anyOf"]] == \
        [None, "array"]


def test_gate_receipts_validate_against_the_receipt_model(shared_example, empty_forest):
    receipts = [gate.run(shared_example, b"kimchi"), gate.run(shared_example, b"   "),
                gate.run(shared_example, b"?!"), gate.run(empty_forest, b"kimchi"),
                gate.run(shared_example, b"kimchi " * gate.MAX_TURN_BYTES),
                gate.run(shared_example, b"x" * (gate.MAX_INPUT_BYTES + 1))]
    for receipt in receipts:
        schemas.GateReceipt.model_validate(receipt)
    assert [r["status"] for r in receipts] == ["evidence_found", "noop", "no_evidence",
                                               "failed", "evidence_found", "failed"]
    assert receipts[4]["turn_reduced"] is True


def generated_receipt_schema() -> str:
    return json.dumps(schemas.GateReceipt.model_json_schema(), indent=2, sort_keys=True,
                      ensure_ascii=False) + "\n"


def test_published_gate_receipt_schema_matches_the_model():
    assert (DOCS / "gate-receipt.schema.json").read_text(encoding="utf-8") == \
        generated_receipt_schema()


def test_the_receipt_error_codes_are_the_gate_messages():
    schema = schemas.GateReceipt.model_json_schema()
    assert schema["$defs"]["GateError"]["properties"]["code"]["enum"] == list(gate.MESSAGES)


# --- the MCP projection ---------------------------------------------------------------------


def test_mcp_tools_are_the_registry_projected():
    pytest.importorskip("mcp", reason="the optional 'mcp' SDK is not installed "
                        "(pip install 'memory-forest[mcp]')")
    from memory_forest import mcp_server

    tools = {tool.name: tool.model_dump(by_alias=True, exclude_none=True)
             for tool in mcp_server.tools()}
    assert list(tools) == [operation.name for operation in registry.OPERATIONS]
    for operation in registry.OPERATIONS:
        tool = tools[operation.name]
        assert tool["inputSchema"] == operation.arguments.model_json_schema()
        assert tool["outputSchema"] == operation.result.model_json_schema()
        assert tool["description"] == operation.description
        assert tool["annotations"]["readOnlyHint"] is operation.read_only
        assert tool["annotations"]["openWorldHint"] is False
        if operation.read_only:
            assert cli_commands()[operation.name] is not None
            assert "destructiveHint" not in tool["annotations"]
        else:  # the writers only add: append events, create or extend records, add links
            assert tool["annotations"]["destructiveHint"] is False
    assert {op.name for op in registry.OPERATIONS if not op.read_only} == {"capture",
                                                                         "remember"}

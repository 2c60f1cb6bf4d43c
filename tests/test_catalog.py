"""One catalog, every surface: the CLI, the MCP tools and the gate are its projections."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from memory_forest import catalog, cli, gate, gate_receipt, schemas
from memory_forest.catalog import KINDS
from memory_forest.catalog.params import MAX_TOOL_WAIT
from memory_forest.errors import ForestError
from memory_forest.lockline import DEFAULT_CAPTURE_WAIT
from memory_forest.mcp_server import arguments_model, call

DOCS = Path(__file__).resolve().parents[1] / "docs"
KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
OPERATIONS = catalog.operations()
TOOLS = {operation.name: operation for operation in catalog.tools()}
REVIEW_TOOLS = {"consolidate", "proposals_list", "proposals_show", "proposals_accept",
                "proposals_reject"}


def model(name: str):
    return arguments_model(TOOLS[name])


def test_names_and_command_words_are_unique():
    names = [operation.name for operation in OPERATIONS]
    assert len(names) == len(set(names)) == len(catalog.by_name())
    assert all(name.isidentifier() and name.islower() for name in names)
    words = [operation.command for operation in OPERATIONS]
    assert len(words) == len(set(words))


def declared_defaults(function) -> dict[str, object]:
    """The parameters ``function`` takes and their defaults; a function that gathers its
    ``**values`` into its module's ``Options`` (the gate) takes that tuple's fields."""
    parameters = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        options = sys.modules[function.__module__].Options
        return {name: options._field_defaults[name] for name in options._fields}
    return {name: p.default for name, p in parameters.items()}


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_every_declaration_names_a_function_that_takes_its_parameters(operation):
    """The declaration is the one definition: its names and defaults are the function's."""
    defaults = declared_defaults(cli.function_of(operation))
    for param in operation.params:
        assert param.kind in KINDS
        assert param.name in defaults, (operation.name, param.name)
        default = defaults[param.name]
        if default is not inspect.Parameter.empty and not param.required:
            # A repeatable option's "none given" is [] on the surfaces, None in the library.
            assert default == param.default or (default is None and param.default == []), \
                (operation.name, param.name)
    assert operation.summary and "memory-forest " + operation.words in operation.example


@pytest.mark.parametrize("operation", catalog.tools(), ids=lambda op: op.name)
def test_argument_models_are_closed_and_strict(operation):
    schema = arguments_model(operation).model_json_schema()
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    with pytest.raises(ValidationError):
        arguments_model(operation).model_validate({"no_such_argument": 1})
    assert operation.tool and operation.title and operation.result


def test_range_checks_are_left_to_the_library_for_the_same_codes():
    args = model("route").model_validate({"query": "kimchi", "limit": 0})
    assert args.limit == 0  # the library answers with limit_out_of_range, like the CLI
    schema = model("route").model_json_schema()["properties"]["limit"]
    assert (schema["minimum"], schema["maximum"], schema["default"]) == (1, 100, 10)
    with pytest.raises(ValidationError):
        model("route").model_validate({"query": "kimchi", "limit": "5"})  # strict
    with pytest.raises(ValidationError):
        model("route").model_validate({"query": "kimchi", "limit": True})


def test_a_query_plan_argument_goes_through_the_strict_plan_parser():
    plan = {"schema_version": 1, "probes": [{"query": "김치"}]}
    args = model("retrieve").model_validate({"query": "kimchi", "query_plan": plan})
    assert args.query_plan.probes[0].query == "김치"
    for bad, code in [({"schema_version": 1, "probes": [{"query": "a", "x": 1}]},
                       "query_plan_unknown_field"),
                      ({"schema_version": True, "probes": []}, "query_plan_bad_schema_version"),
                      ({"schema_version": 1, "probes": [{"query": "\u0007"}]},
                       "query_plan_control_character"),
                      ([1], "query_plan_not_object")]:
        with pytest.raises(ForestError) as caught:
            model("retrieve").model_validate({"query": "q", "query_plan": bad})
        assert caught.value.code == code
    schema = model("retrieve").model_json_schema()
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
        "stats": {},
        # The writers write into a fresh copy; the shared forest stays as it was.
        "capture": {"events": [EVENT, {**EVENT, "event_id": "evt-registry-2"}],
                    "transaction_id": "tx-registry-capture"},
        "remember": {"tree": "kitchen", "branch": "pickles", "leaf": "dill",
                     "title": "Dill pickles", "content": "Brine at 5 percent.",
                     "tag": ["pickles"], "transaction_id": "tx-registry-remember"},
        "move": {"source": "stm-kimchi-batch-7", "to": "greenhouse/irrigation",
                 "transaction_id": "tx-registry-move"},
        "forget": {"source": "04 stm/kitchen/fermentation/zaatar-blend.md",
                   "transaction_id": "tx-registry-forget"},
    }
    # The review loop's tools need a proposal made first: tests/writers/test_consolidate.py
    # validates their results the same way.
    assert set(calls) == set(TOOLS) - REVIEW_TOOLS
    for name, arguments in calls.items():
        operation = TOOLS[name]
        root = example_forest if operation.writes else shared_example
        outcome = call(root, name, arguments)
        assert outcome["ok"] is True and outcome["operation"] == name, outcome
        schemas.validate(operation.result, outcome)
        assert outcome.get("count", 1) >= 1
        if operation.writes:  # an exact retry answers from the receipt, same shape
            again = call(root, name, arguments)
            assert again["already_applied"] is True and outcome["already_applied"] is False
            schemas.validate(operation.result, again)


def test_write_arguments_leave_the_event_and_name_checks_to_the_library():
    for events, code in [([], "capture_empty"), ("text", "capture_not_object"),
                         ([EVENT, 3], "capture_not_object"),
                         ([{**EVENT, "payload": float("nan")}], "capture_non_finite")]:
        with pytest.raises(ForestError) as caught:
            model("capture").model_validate({"events": events})
        assert caught.value.code == code
    one = model("capture").model_validate({"events": EVENT})
    # A tool waits its turn by default, never longer than a server thread may be parked.
    assert one.events == [EVENT] and one.wait == MAX_TOOL_WAIT < DEFAULT_CAPTURE_WAIT
    # Field checks of an event, names and titles come from the library, with its codes.
    assert model("capture").model_validate({"events": {"payload": 1}}).events
    args = model("remember").model_validate(
        {"tree": "a/b", "branch": "x", "leaf": "y", "title": "", "content": "c"})
    assert args.tree == "a/b" and args.source == "memory-forest"
    for bad in [{"events": EVENT, "wait": 31}, {"events": EVENT, "wait": -1},
                {"events": EVENT, "wait": True}, {"events": EVENT, "transaction_id": 7},
                {"events": EVENT, "file": "/etc/passwd"}, {}]:
        with pytest.raises(ValidationError):
            model("capture").model_validate(bad)
    with pytest.raises(ValidationError):  # content comes inline only
        model("remember").model_validate(
            {"tree": "t", "branch": "b", "leaf": "l", "title": "T", "file": "notes.md"})
    schema = model("capture").model_json_schema()
    assert schema["required"] == ["events"]
    assert schema["$defs"]["Event"]["required"] == ["observed_at", "source", "kind", "payload"]
    assert [form.get("type") for form in schema["properties"]["events"]["anyOf"]] == \
        [None, "array"]


def test_gate_receipts_validate_against_the_receipt_model(shared_example, empty_forest):
    receipts = [gate.consult(shared_example, b"kimchi"), gate.consult(shared_example, b"   "),
                gate.consult(shared_example, b"?!"), gate.consult(empty_forest, b"kimchi"),
                gate.consult(shared_example, b"kimchi " * gate.MAX_TURN_BYTES),
                gate.consult(shared_example, b"x" * (gate.MAX_INPUT_BYTES + 1))]
    for receipt in receipts:
        gate_receipt.GateReceipt.model_validate(receipt)
    assert [r["status"] for r in receipts] == ["evidence_found", "noop", "no_evidence",
                                               "failed", "evidence_found", "failed"]
    assert receipts[4]["turn_reduced"] is True


def generated_receipt_schema() -> str:
    return json.dumps(gate_receipt.json_schema(), indent=2, sort_keys=True,
                      ensure_ascii=False) + "\n"


def test_published_gate_receipt_schema_matches_the_model():
    assert (DOCS / "gate-receipt.schema.json").read_text(encoding="utf-8") == \
        generated_receipt_schema()


def test_the_receipt_error_codes_are_the_gate_messages():
    schema = gate_receipt.json_schema()
    assert schema["$defs"]["GateError"]["properties"]["code"]["enum"] == list(gate.MESSAGES)


# --- the projections -----------------------------------------------------------------------


def test_mcp_tools_are_the_catalog_projected():
    pytest.importorskip("mcp", reason="the optional 'mcp' SDK is not installed "
                        "(pip install -e '.[mcp]')")
    from memory_forest import mcp_server

    tools = {tool.name: tool.model_dump(by_alias=True, exclude_none=True)
             for tool in mcp_server.tools()}
    assert list(tools) == list(TOOLS)
    for operation in TOOLS.values():
        tool = tools[operation.name]
        assert tool["inputSchema"] == arguments_model(operation).model_json_schema()
        assert tool["outputSchema"] == schemas.output_schema(operation.result)
        assert tool["description"] == operation.tool
        assert tool["annotations"]["readOnlyHint"] is not operation.writes
        assert tool["annotations"]["openWorldHint"] is False
        if not operation.writes:
            assert "destructiveHint" not in tool["annotations"]
        else:  # forget removes documents; the others add, or relocate keeping every byte
            assert tool["annotations"]["destructiveHint"] is (operation.name == "forget")
    assert {op.name for op in TOOLS.values() if op.writes} == {
        "capture", "remember", "move", "forget", "consolidate", "proposals_accept",
        "proposals_reject"}


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_cli_help_shows_every_cli_parameter_of_the_declaration(operation):
    from memory_forest.helptext import command_help

    text = command_help(operation)
    assert text.startswith(f"Usage: memory-forest {operation.words} [OPTIONS]")
    for param in operation.params:
        if param.cli:
            forms = (*param.flags, *param.file_flags) or (param.metavar,)
            assert all(form in text for form in forms), (operation.name, param.name)
    assert f"Example: {operation.example}" in text

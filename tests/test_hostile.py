"""Hostile input at every edge: arguments, stdin, JSON, planted files, MCP requests.

Each CLI call runs as a real subprocess and is held to the edge's promise:
exactly one JSON object on stdout under ``--json``, a stable code that is
never ``internal_error``, no traceback on stderr, at most ``TIME_LIMIT``
seconds and ``RSS_LIMIT_MIB`` of resident memory (measured with ``wait4``;
an address-space cap well above it only keeps a runaway child from taking
the machine down). The bulk of the generated cases runs in process, through
the same parsers the CLI uses, to keep the file fast.

"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import one_object
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_forest import queryplan
from memory_forest.errors import ForestError
from memory_forest.jsonio import MAX_DEPTH, StrictJSONError, check_value, loads_strict
from memory_forest.writers import plans
from memory_forest.writers.capture import parse_input

TIME_LIMIT = 10.0
RSS_LIMIT_MIB = 300
ADDRESS_CAP = 768 << 20

Arg = str | bytes | os.PathLike[str]


@dataclass
class Call:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    rss_mib: float

    def one_object(self) -> dict[str, Any]:
        """The one JSON object the call printed; fails the test otherwise."""
        return one_object(self.stdout)

    def code(self) -> str | None:
        data = self.one_object()
        if "decision" in data:  # a hook-format answer carries its code in the reason
            return data["reason"].split("[", 1)[1].split("]", 1)[0]
        return None if data.get("ok") else data["error"]["code"]


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_CAP, ADDRESS_CAP))


def hostile(*args: Arg, stdin: bytes = b"", json_mode: bool = True) -> Call:
    """Run the CLI once and check the promises every call keeps, whatever its input."""
    argv = [sys.executable, "-m", "memory_forest", *(
        a if isinstance(a, bytes) else os.fspath(a) for a in args)]
    if json_mode:
        argv.append("--json")
    with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        given.write(stdin)
        given.seek(0)
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=given, stdout=out, stderr=err,
                                preexec_fn=_cap_address_space)
        killer = threading.Timer(TIME_LIMIT + 1, proc.kill)
        killer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        call = Call(proc.returncode, out.read().decode("utf-8", "replace"),
                    err.read().decode("utf-8", "replace"), seconds, usage.ru_maxrss / 1024)
    assert "Traceback" not in call.stderr, call.stderr[-2000:]
    assert call.returncode in (0, 1, 2, 3), (call.returncode, call.stderr[-500:])
    assert call.seconds <= TIME_LIMIT, f"took {call.seconds:.1f} s"
    assert call.rss_mib <= RSS_LIMIT_MIB, f"{call.rss_mib:.0f} MiB resident"
    if json_mode:
        assert call.code() != "internal_error", call.stdout
    return call


@pytest.fixture
def forest(example: Path) -> Path:
    """A fresh indexed copy of the example forest (conftest's ``example``)."""
    return example


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def event_json(payload: str, event_id: str = "hostile-1") -> bytes:
    return (f'{{"event_id":"{event_id}","observed_at":"2026-11-30T09:00:00Z",'
            f'"source":"test","kind":"note","payload":{payload}}}').encode()


# --- strict JSON: bounded nesting and lone surrogates, in process -----------------------------


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 350, 500, 975, 979, 5000, 200_000])
def test_nesting_past_the_bound_is_refused_at_any_depth(depth):
    with pytest.raises(StrictJSONError) as refused:
        loads_strict(nested(depth))
    assert refused.value.kind == "too_deep"


def test_nesting_up_to_the_bound_parses_and_brackets_inside_strings_do_not_count():
    assert loads_strict(nested(MAX_DEPTH))
    assert loads_strict(json.dumps({"text": "[" * 5000})) == {"text": "[" * 5000}
    assert loads_strict(json.dumps(["\\\"[" * 300])) == ["\\\"[" * 300]


@pytest.mark.parametrize("text", [
    '"\\ud800"', '{"\\udfff": 1}', '["ok", {"a": "x\\uDC00y"}]', '"\\ud83d"', '"\\ude00\\ud83d"',
])
def test_a_lone_surrogate_escape_is_refused(text):
    with pytest.raises(StrictJSONError) as refused:
        loads_strict(text)
    assert refused.value.kind == "lone_surrogate"


@pytest.mark.parametrize("text, value", [
    ('"\\ud83d\\ude00"', "\U0001f600"), ('"\\\\ud800"', "\\ud800"), ('"\\u00e9"', "é"),
])
def test_pairs_and_escaped_backslashes_are_not_lone_surrogates(text, value):
    assert loads_strict(text) == value


def test_a_str_holding_a_surrogate_is_refused_before_parsing():
    with pytest.raises(StrictJSONError) as refused:
        loads_strict('"\udcff"')
    assert refused.value.kind == "lone_surrogate"


@given(st.text(alphabet=st.characters(codec=None), max_size=200))
def test_any_text_parses_or_fails_with_a_strict_json_error(text):
    try:
        loads_strict(text)
    except StrictJSONError as exc:
        assert exc.kind in {"syntax", "duplicate_key", "non_finite", "too_deep", "lone_surrogate"}


@given(st.integers(min_value=1, max_value=3000), st.sampled_from(["[", '{"a":']))
def test_any_depth_of_either_bracket_parses_or_is_too_deep(depth, opening):
    closing = "]" if opening == "[" else "}"
    text = opening * depth + "1" + closing * depth
    if depth <= MAX_DEPTH:
        assert loads_strict(text) is not None
    else:
        with pytest.raises(StrictJSONError, match="deeper"):
            loads_strict(text)


def test_parsed_values_are_held_to_the_same_bounds():
    value: list[Any] = []
    inner = value
    for _ in range(MAX_DEPTH - 1):
        inner.append([])
        inner = inner[0]
    check_value(value)
    inner.append([])
    with pytest.raises(StrictJSONError, match="deeper"):
        check_value(value)
    with pytest.raises(StrictJSONError, match="surrogate"):
        check_value({"events": [{"payload": {"\udc80key": "v"}}]})


# --- each JSON input maps the refusals to its own invalid code, in process ------------------


@pytest.mark.parametrize("raw", [
    event_json('{"text":"\\ud800"}'), event_json('{"\\ud800":"x"}'),
    event_json(nested(350)), event_json(nested(975)), event_json(nested(5000)),
    b'{"event_id":"a","x":1}\n' + event_json('{"t":"\\udfff"}'),
])
def test_capture_input_gives_capture_invalid_json(raw):
    with pytest.raises(ForestError) as refused:
        parse_input(raw)
    assert refused.value.code == "capture_invalid_json"


@pytest.mark.parametrize("body", ['{"schema_version":1,"x":"\\ud800"}',
                                  '{"schema_version":1,"x":' + nested(600) + "}"])
@pytest.mark.parametrize("kind", ["daily", "promotion", "structured"])
def test_plans_give_plan_invalid_json(kind, body):
    with pytest.raises(ForestError) as refused:
        plans.parse(kind, body)
    assert refused.value.code == "plan_invalid_json"


@pytest.mark.parametrize("body", ['{"schema_version":1,"probes":[{"query":"\\ud800"}]}',
                                  '{"schema_version":1,"probes":' + nested(700) + "}"])
def test_query_plans_give_query_plan_invalid_json(body):
    with pytest.raises(ForestError) as refused:
        queryplan.parse(body)
    assert refused.value.code == "query_plan_invalid_json"


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400) | st.text(st.characters(codec=None), max_size=200).map(
    lambda text: text.encode("utf-8", "surrogatepass")))
def test_any_capture_bytes_give_a_capture_code(raw):
    try:
        parse_input(raw)
    except ForestError as exc:
        assert exc.code.startswith("capture_") and exc.exit_code == 2


# --- arguments that are not UTF-8, through the real CLI ---------------------------------------


def remember_args(root: Path, **override: Arg) -> list[Arg]:
    values: dict[str, Arg] = {"tree": "kitchen", "branch": "pickles", "leaf": "dill",
                              "title": "Dill", "content": "Brine at 5 percent."}
    values.update(override)
    return ["remember", root, *[item for name, value in values.items()
                                for item in (f"--{name}", value)]]


@pytest.mark.parametrize("option", ["content", "tree", "title", "branch", "leaf"])
def test_remember_refuses_an_option_value_that_is_not_utf8(forest, option):
    call = hostile(*remember_args(forest, **{option: b"caf\xe9 \xff"}))
    refusal = call.one_object()
    assert call.returncode == 2 and refusal["error"]["code"] == "usage_error"
    assert refusal["operation"] == "remember"
    assert refusal["error"]["details"]["option"] == f"--{option}"
    assert f"--{option}" in refusal["error"]["message"] and "UTF-8" in refusal["error"]["message"]
    assert "\\udc" not in call.stdout  # the value is never echoed


@pytest.mark.parametrize("make_args", [
    lambda root: ["open", root, b"04 stm/kitchen/\xfe.md"],
    lambda root: ["retrieve", root, b"kimchi \xff"],  # the lean per-turn parser
    lambda root: ["route", root, b"\xc3"],
    lambda root: ["search", root, b"\x80abc"],
    lambda root: ["structured-context", root, b"\xed\xa0\x80"],  # an encoded surrogate
    lambda root: ["gate", os.fsencode(root) + b"\xff"],
    lambda root: ["capture", root, "--file", b"/tmp/\xff.jsonl"],
    lambda root: ["remember", root, b"--tree=\xff", "--branch", "b", "--leaf", "l",
                  "--content", "x"],
    lambda root: [b"valid\xffate", root],
])
def test_every_command_refuses_arguments_that_are_not_utf8(forest, make_args):
    call = hostile(*make_args(forest))
    assert call.returncode == 2 and call.code() == "usage_error"
    assert "not valid UTF-8" in call.one_object()["error"]["message"]


def test_a_refused_argument_in_human_mode_is_one_line_on_stderr(forest):
    call = hostile("route", forest, b"\xff", json_mode=False)
    assert call.returncode == 2 and call.stdout == ""
    assert call.stderr.startswith("error [usage_error] argument 3 is not valid UTF-8")


# --- JSON on stdin, through the real CLI ------------------------------------------------------


@pytest.mark.parametrize("raw", [event_json('{"t":"\\ud800"}'), event_json(nested(350)),
                                 event_json(nested(975)), event_json(nested(5000))])
def test_capture_stdin_gives_capture_invalid_json(forest, raw):
    call = hostile("capture", forest, "-", stdin=raw)
    assert call.returncode == 2 and call.code() == "capture_invalid_json"


def test_a_plan_and_a_query_plan_on_stdin_give_their_invalid_codes(forest):
    plan = hostile("apply-daily", forest, "-", stdin=b'{"x":' + nested(900).encode() + b"}")
    assert plan.code() == "plan_invalid_json"
    probe = hostile("retrieve", forest, "kimchi", "--query-plan", "-",
                    stdin=b'{"schema_version":1,"probes":[{"query":"\\udc00"}]}')
    assert probe.code() == "query_plan_invalid_json"


@pytest.mark.parametrize("stdin, code", [
    (b'{"prompt":"\\ud800"}', "turn_not_utf8"),
    (b'{"prompt":"kimchi","extra":' + nested(900).encode() + b"}", "hook_input_invalid"),
    (b'{"prompt":"kimchi","\\udfff":1}', "turn_not_utf8"),
])
def test_hook_input_blocks_with_a_code(forest, stdin, code):
    call = hostile("gate", forest, "--format", "claude-code", stdin=stdin, json_mode=False)
    assert call.returncode == 0 and call.code() == code


ARG_TEXT = st.text(st.characters(codec=None, exclude_characters="\x00"), max_size=12) | \
    st.binary(max_size=8).map(lambda raw: raw.replace(b"\x00", b"").decode("utf-8",
                                                                           "surrogateescape"))
READ_COMMANDS = ["route", "retrieve", "open", "search", "structured-context", "status",
                 "validate", "gate", "unlock", "remember", "capture"]


def _read_only(command: str) -> list[str]:
    """The words that keep a command from writing into the shared forest: one generated
    word is a fact ``remember`` would file, so it only ever previews (under --json)."""
    return ["--json", "--dry-run"] if command == "remember" else []


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ARG_TEXT, min_size=1, max_size=4), st.sampled_from(READ_COMMANDS))
def test_generated_command_lines_keep_the_edge_promises(shared_example, words, command):
    hostile(command, *_read_only(command), shared_example, *map(_argv_bytes, words))


def _argv_bytes(word: str) -> bytes:
    """The bytes a shell would pass: escaped bytes as themselves, other surrogates encoded."""
    try:
        return word.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return word.encode("utf-8", "surrogatepass")


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ARG_TEXT, min_size=1, max_size=4), st.sampled_from(READ_COMMANDS))
def test_generated_command_lines_in_process_print_one_stable_object(shared_example, capsys, words,
                                                                    command):
    """The same edge in process (``cli.main`` is the console script), many more cases."""
    from memory_forest.cli import main

    args = [command, *_read_only(command), os.fspath(shared_example), *words, "--json"]
    with pytest.raises(SystemExit) as exited:
        main(args)
    out, err = capsys.readouterr()
    assert exited.value.code in (0, 1, 2) and "Traceback" not in err
    lines = out.splitlines()
    assert len(lines) == 1, out
    outcome = json.loads(lines[0])
    if not outcome.get("ok", "decision" in outcome):
        assert outcome["error"]["code"] != "internal_error", outcome


def every_command() -> list[list[str]]:
    """Every command line word of the CLI (``hooks install``, ``schedule print``, ...)."""
    from memory_forest import catalog

    return sorted(list(operation.command) for operation in catalog.operations())


HOSTILE_STDIN = event_json(nested(3000)) + b"\n\xff\xfe" + b'{"\\ud800":1}'


@pytest.mark.parametrize("words", every_command(), ids=" ".join)
def test_every_command_with_hostile_stdin_and_a_stdin_mark(forest, tmp_path, words):
    """``-`` is the stdin mark for the commands that read a plan or events; for the rest it
    is a stray argument or a bad value, which must be refused as cleanly."""
    if words[0] in ("hooks", "schedule", "init", "serve"):  # no forest writes outside tmp
        hostile(*words, "--root", tmp_path / "elsewhere", "-", stdin=HOSTILE_STDIN)
    else:
        hostile(*words, forest, "-", stdin=HOSTILE_STDIN)


# --- a forest with planted hostile files ------------------------------------------------------

LEAF = "04 stm/kitchen/fermentation"


def plant(root: Path, rel: str, text: str | bytes, mode: int = 0o600) -> Path:
    path = root / rel
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(mode)
    return path


def leaf(frontmatter: str, title: str = "Planted kimchi") -> str:
    """A valid STM leaf under the fermentation branch, with ``frontmatter`` lines added."""
    return (f'---\n{frontmatter}\ntitle: "{title}"\ncreated: "2026-11-20T18:00:00Z"\n'
            'updated: "2026-11-28T09:00:00Z"\nstatus: "active"\ntags:\n  - "kimchi"\n---\n'
            f"# {title}\n\nUp: [[03 mtm/kitchen/fermentation|Fermentation]]\n\nKimchi notes.\n")


def plant_files(root: Path, tmp_path: Path) -> None:
    """Symlinks, a FIFO, a huge file, bad modes, broken and odd frontmatter, an ISTM line."""
    outside = tmp_path / "outside.md"
    outside.write_text("# outside\n")
    (root / LEAF / "escape.md").symlink_to(outside)
    (root / LEAF / "loop.md").symlink_to(root / LEAF / "loop.md")
    os.mkfifo(root / LEAF / "pipe.md", 0o600)
    plant(root, f"{LEAF}/huge.md", leaf('id: "stm-huge"') + "x" * (12 << 20))
    plant(root, f"{LEAF}/open-mode.md", leaf('id: "stm-open"'), mode=0o644)
    plant(root, f"{LEAF}/broken.md", "---\nid: [unclosed\n---\n# Broken\n")
    plant(root, f"{LEAF}/not-utf8.md", b"---\nid: x\n---\n# \xff\xfe\n")
    plant(root, f"{LEAF}/deep.md", leaf("id: stm-deep\nx: " + "[" * 300 + "]" * 300))
    plant(root, f"{LEAF}/nul.md", leaf('id: "stm-nul"') + "a\x00b\n")
    latin1 = os.fsdecode(b"caf\xe9.md")  # a name in a legacy encoding, not UTF-8
    plant(root, f"{LEAF}/{latin1}", leaf('id: "stm-latin1-name"'))
    plant(root, "06 istm/hostile.jsonl", event_json('{"t":"\\ud800"}') + b"\n"
          + event_json(nested(2000), "deep") + b"\n")
    (root / "03 mtm/kitchen").chmod(0o755)


READERS = [
    ["validate"], ["audit"], ["doctor"], ["index"], ["status"], ["route", "kimchi"],
    ["search", "kimchi"], ["retrieve", "kimchi"], ["structured-context", "kimchi"],
    ["open", f"{LEAF}/escape.md"], ["open", f"{LEAF}/pipe.md"], ["open", f"{LEAF}/huge.md"],
    ["maintain"],
]


def test_every_reader_survives_a_forest_of_planted_files(forest, tmp_path):
    plant_files(forest, tmp_path)
    for command in READERS:
        hostile(command[0], forest, *command[1:])
    hostile("browse", forest, "--out", tmp_path / "site")
    hostile(*remember_args(forest, leaf="after-planting"))
    # The quarantine keeps even a name that is not UTF-8, so the index is not stale forever.
    assert hostile("status", forest).one_object()["index"]["state"] == "current"


ALIAS_BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]\n" for n in range(1, 10))
SELF_ALIAS = "r: &r [*r]"
YAML_NOT_JSON = {"alias-bomb": ALIAS_BOMB, "self-alias": SELF_ALIAS,
                 "binary": "b: !!binary aGVsbG8=", "set": "s: !!set {a: null}",
                 "python": "p: !!python/name:os.system", "custom": "c: !mine x"}


def plant_yaml(root: Path, extra: str) -> str:
    """A leaf and its branch's MTM both carrying ``extra`` frontmatter; the leaf's path."""
    rel = f"{LEAF}/planted.md"
    plant(root, rel, leaf(f'id: "stm-planted"\n{extra.rstrip()}'))
    mtm = root / "03 mtm/kitchen/fermentation.md"
    plant(root, "03 mtm/kitchen/fermentation.md",
          mtm.read_text().replace("---\n", f"---\n{extra.rstrip()}\n", 1))
    return rel


@pytest.mark.parametrize("name", sorted(YAML_NOT_JSON))
def test_yaml_memory_has_no_use_for_is_a_validation_issue(forest, name):
    rel = plant_yaml(forest, YAML_NOT_JSON[name])
    issues = hostile("validate", forest).one_object()["issues"]
    assert any(issue["path"] == rel and issue["level"] == "error"
               and issue["code"] == "frontmatter_unsafe" for issue in issues)


@pytest.mark.parametrize("name, command", [
    ("alias-bomb", "structured-context"), ("alias-bomb", "browse"), ("self-alias", "remember"),
    ("self-alias", "browse"), ("binary", "structured-context"), ("set", "structured-context"),
])
def test_yaml_that_validates_today_cannot_exhaust_or_crash_a_reader(forest, tmp_path, name,
                                                                    command):
    plant_yaml(forest, YAML_NOT_JSON[name])
    hostile("index", forest)
    if command == "browse":
        hostile("browse", forest, "--out", tmp_path / "site")
    elif command == "remember":
        hostile(*remember_args(forest, branch="fermentation", leaf="planted-next"))
    else:
        hostile(command, forest, "kimchi")


def test_a_planted_leaf_is_valid_so_the_yaml_cases_reach_the_loader(forest):
    plant(forest, f"{LEAF}/planted.md", leaf('id: "stm-planted"'))
    assert hostile("validate", forest).one_object()["ok"]
    hostile("index", forest)
    hits = hostile("structured-context", forest, "planted").one_object()["documents"]
    assert any(doc["path"] == f"{LEAF}/planted.md" for doc in hits)


def test_an_ownerless_lock_directory_can_be_cleared(forest):
    lock_dir = forest.parent / f"{forest.name}.maintenance.lock"
    lock_dir.mkdir(mode=0o700)
    old = time.time() - 3600
    os.utime(lock_dir, (old, old))
    call = hostile("unlock", forest, "--stale")
    assert call.returncode == 0 and call.one_object()["ok"]


@pytest.mark.parametrize("secret", ["https://user:" + "hunter2pass@example.com",
                                    "sk_live_" + "abcdefghijklmnop1234"])
def test_a_secret_in_remembered_text_never_reaches_disk(forest, secret):
    call = hostile(*remember_args(forest, content=f"note {secret} end"))
    assert call.returncode == 0
    for path in forest.rglob("*"):
        if path.is_file() and stat.S_ISREG(path.lstat().st_mode):
            assert secret.encode() not in path.read_bytes(), path


def test_a_secret_under_a_credential_key_never_reaches_disk(forest):
    key = "pass" + "word"  # split so the release audit does not flag the test itself
    call = hostile("capture", forest, "-", stdin=event_json(f'{{"{key}":"hunter3secret"}}'))
    assert call.returncode == 0
    assert not [path for path in (forest / "06 istm").iterdir()
                if b"hunter3secret" in path.read_bytes()]


# --- MCP: every request gets an answer --------------------------------------------------------


def test_the_mcp_server_answers_requests_its_sdk_cannot_parse(shared_example):
    pytest.importorskip("mcp")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "hostile", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    lines = [json.dumps(r) for r in requests] + [
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"route",'
        '"arguments":{"query":"\\ud800"}}}',
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"route",'
        '"arguments":{"query":' + nested(3000) + "}}}",
        '{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"\\udc00"}}',
        '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"route",'
        '"arguments":{"query":' + nested(100) + "}}}",
        '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"route",'
        '"arguments":{"query":"kimchi"}}}',
    ]
    answers = _mcp_exchange(shared_example, lines, want=6)
    for request_id in (2, 3, 5):
        result = answers[request_id]["result"]
        assert result["isError"] is True and "structuredContent" not in result
        assert json.loads(result["content"][0]["text"])["error"]["code"] == "usage_error"
    assert answers[4]["error"]["code"] == -32600
    assert answers[6]["result"]["isError"] is False


def _mcp_exchange(root: Path, lines: list[str], want: int) -> dict[int, dict[str, Any]]:
    """Send ``lines`` to ``serve ROOT``; collect answers by id until ``want`` have come."""
    proc = subprocess.Popen([sys.executable, "-m", "memory_forest", "serve", os.fspath(root)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    killer = threading.Timer(TIME_LIMIT * 2, proc.kill)
    killer.start()
    try:
        proc.stdin.write(("\n".join(lines) + "\n").encode())
        proc.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < want:
            line = proc.stdout.readline()
            assert line, f"the server stopped after answering {sorted(answers)}"
            message = json.loads(line)
            answers[message["id"]] = message
        return answers
    finally:
        killer.cancel()
        proc.stdin.close()
        proc.wait(timeout=TIME_LIMIT)
        stderr = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        proc.stderr and proc.stderr.close()
        proc.stdout.close()
        assert "Traceback" not in stderr, stderr[-2000:]

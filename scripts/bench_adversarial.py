"""Adversarial runs: writers killed at random times, and hostile input at every edge.

Usage: python scripts/bench_adversarial.py [--kills N] [--inputs N] [--seed S] [--write-docs]

Probe families, each counted as tried / failed:

- ``kill-<writer>``: ``capture``, ``remember`` and ``apply-structured`` run
  as real CLI processes on a fresh copy of the example forest and get
  SIGKILL after a random delay (0.4 to 1.1 times the writer's measured
  run time, since start-up takes most of it); a kill that leaves a lock or
  a journal behind counts as landed mid-write. Recovery is what a user
  runs: ``unlock --stale`` when the lock is stale, then ``doctor --repair``.
  A probe fails when recovery fails, when a lock is left behind (an
  ownerless lock directory included), when the journal is not clear, or
  when ``validate`` then finds an error (a torn file). ``--kills`` probes in
  all (default 240).
- hostile input, through the real CLI with an address-space cap: arguments
  that are not UTF-8 (``argv-not-utf8``), JSON nested past the bound
  (``json-depth``), lone surrogates in every JSON input (``json-surrogate``),
  random command lines (``random-argv``), a forest with one planted hostile
  file per probe (``planted-file``), and MCP requests (``mcp``). A probe
  fails unless the call prints exactly one JSON object with a stable code
  (never ``internal_error``), no traceback, within 10 s and 300 MiB resident.
  ``--inputs`` probes per family (default 40; ``mcp`` sends them in one
  session).

Prints JSON (the table, the seed and the first failure of each family);
``--write-docs`` also writes the table into docs/benchmarks.md between its
``bench_adversarial`` markers. The same seed gives the same probes; kill
timing depends on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docblock import write_block

from memory_forest import lock, operations
from memory_forest.errors import ForestError
from memory_forest.writers.structured import structured_context

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench_adversarial:begin -->", "<!-- bench_adversarial:end -->"
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
TIME_LIMIT, RSS_LIMIT_MIB, ADDRESS_CAP = 10.0, 300, 768 << 20
WRITERS = ("capture", "remember", "apply-structured")
JOURNAL = ".memory-forest/journal/manifest.json"


class Probe(Exception):
    """One failed check, with what was tried."""


# --- running the CLI --------------------------------------------------------------------------


def run(args: list[Any], stdin: bytes = b"", json_mode: bool = True) -> dict[str, Any]:
    """One CLI call held to the edge's promises; the printed object, or ``Probe``."""
    argv = [sys.executable, "-m", "memory_forest",
            *(a if isinstance(a, bytes) else os.fspath(a) for a in args)]
    if json_mode:
        argv.append("--json")
    with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        given.write(stdin)
        given.seek(0)
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdin=given, stdout=out, stderr=err, env=ENV,
                                preexec_fn=_cap)
        killer = threading.Timer(TIME_LIMIT + 1, proc.kill)
        killer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        killer.cancel()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8",
                                                                                  "replace")
    where = f"{_show(args)}: "
    if "Traceback" in stderr:
        raise Probe(where + "traceback on stderr: " + stderr.strip().splitlines()[-1][:200])
    if code not in (0, 1, 2, 3):
        raise Probe(where + f"exit {code}")
    if seconds > TIME_LIMIT:
        raise Probe(where + f"took {seconds:.1f} s")
    if usage.ru_maxrss / 1024 > RSS_LIMIT_MIB:
        raise Probe(where + f"{usage.ru_maxrss / 1024:.0f} MiB resident")
    lines = stdout.splitlines()
    if len(lines) != 1:
        raise Probe(where + f"{len(lines)} lines on stdout")
    try:
        data = json.loads(lines[0])
    except ValueError:
        raise Probe(where + "stdout is not JSON") from None
    if not isinstance(data, dict):
        raise Probe(where + "stdout is not one object")
    if (data.get("error") or {}).get("code") == "internal_error":
        raise Probe(where + "internal_error " + data["error"]["message"])
    return data


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_CAP, ADDRESS_CAP))


def _show(args: list[Any]) -> str:
    """The call, short: scratch paths by their last name, long words cut."""
    return " ".join(repr(a)[:40] if isinstance(a, bytes) else a.name if isinstance(a, Path)
                    else str(a)[:40] for a in args[:4])


# --- random kills -----------------------------------------------------------------------------


def writer_args(kind: str, root: Path, scratch: Path) -> list[Any]:
    if kind == "capture":
        events = scratch / "events.jsonl"
        events.write_text("".join(json.dumps({
            "event_id": f"kill-{n}", "observed_at": "2026-11-30T09:00:00Z", "source": "bench",
            "kind": "note", "payload": {"text": f"event {n}"}}) + "\n" for n in range(20)))
        return ["capture", root, "--file", events]
    if kind == "remember":
        return ["remember", root, "--tree", "kitchen", "--branch", "pickles", "--leaf", "dill",
                "--title", "Dill pickles", "--content", "Brine at 5 percent."]
    snapshot = structured_context(root, "kimchi")["snapshot_sha256"]
    plan = scratch / "plan.json"
    plan.write_text(json.dumps({
        "schema_version": 1, "transaction_id": "bench-kill", "snapshot_sha256": snapshot,
        "changes": [{"target": {"layer": "stm", "tree": "garden", "branch": "beds",
                                "leaf": f"bed-{n}"}, "operation": "create", "body": "Bed.",
                     "frontmatter": {"title": f"Bed {n}"}} for n in range(3)]}))
    return ["apply-structured", root, plan]


def kill_probe(kind: str, template: Path, scratch: Path, rng: random.Random,
               typical: float) -> bool:
    """Kill one writer and recover; whether the kill left a lock or journal to recover."""
    root = Path(shutil.copytree(template, scratch / "forest", symlinks=True))
    args = writer_args(kind, root, scratch)
    proc = subprocess.Popen([sys.executable, "-m", "memory_forest",
                             *map(os.fspath, args), "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    time.sleep(rng.uniform(0.4, 1.1) * typical)  # most of a run is start-up: aim late
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    landed = lock.state(root)["state"] != "free" or (root / JOURNAL).exists()
    recover(root)
    return landed


def recover(root: Path) -> None:
    """What a user runs after a crash; ``Probe`` when the forest is not whole afterwards."""
    if lock.state(root)["state"] == "stale":
        operations.unlock(root, stale=True)
    try:
        report = operations.doctor(root, repair=True)
    except ForestError as exc:
        raise Probe(f"doctor --repair failed: {exc.code}") from None
    if report["lock"] != {"state": "free"}:
        raise Probe(f"lock left after recovery: {report['lock'].get('state')}")
    if report["journal"] != {"state": "clear"}:
        raise Probe(f"journal not clear: {report['journal']}")
    errors = [i for i in operations.validate(root)["issues"] if i["severity"] == "error"]
    if errors:
        raise Probe(f"torn or invalid file: {errors[0]['path']} {errors[0]['code']}")


def typical_run(kind: str, template: Path) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(shutil.copytree(template, Path(scratch) / "forest", symlinks=True))
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "memory_forest",
                        *map(os.fspath, writer_args(kind, root, Path(scratch))), "--json"],
                       capture_output=True, env=ENV, check=False)
        return time.monotonic() - started


# --- hostile input ----------------------------------------------------------------------------

BAD_BYTES = [b"\xff", b"\xfe\xfe", b"\xc3", b"\xed\xa0\x80", b"\x80abc", b"caf\xe9"]
SURROGATES = ["\\ud800", "\\udfff", "\\udc80", "\\ud83d"]


def event(payload: str, event_id: str = "hostile-1") -> str:
    return (f'{{"event_id":"{event_id}","observed_at":"2026-11-30T09:00:00Z",'
            f'"source":"bench","kind":"note","payload":{payload}}}')


def argv_probe(root: Path, rng: random.Random) -> None:
    line: list[Any] = rng.choice([
        ["remember", root, "--tree", "t", "--branch", "b", "--leaf", "l", "--title", "T",
         "--content", "c"],
        ["open", root, "04 stm/kitchen/fermentation/kimchi-batch-7.md"],
        ["retrieve", root, "kimchi"], ["route", root, "kimchi"], ["search", root, "kimchi"],
        ["structured-context", root, "kimchi"], ["capture", root, "--file", "events.jsonl"],
        ["gate", root], ["validate", root],
    ])
    at = rng.randrange(len(line))
    word = os.fsencode(line[at]) if not isinstance(line[at], bytes) else line[at]
    cut = rng.randrange(len(word) + 1)
    line[at] = word[:cut] + rng.choice(BAD_BYTES) + word[cut:]
    code = (run(line).get("error") or {}).get("code")
    if code != "usage_error":
        raise Probe(f"{_show(line)}: {code}, expected usage_error")


def depth_probe(root: Path, rng: random.Random) -> None:
    depth = rng.randint(65, 6000)
    value = rng.choice(["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth])
    kind = rng.choice(["capture", "plan", "query-plan", "hook"])
    expect_invalid(root, kind, value)


def surrogate_probe(root: Path, rng: random.Random) -> None:
    escape = rng.choice(SURROGATES)
    value = rng.choice([f'"x{escape}y"', f'{{"{escape}":1}}', f'["ok","{escape}"]'])
    expect_invalid(root, rng.choice(["capture", "plan", "query-plan", "hook"]), value)


def expect_invalid(root: Path, kind: str, value: str) -> None:
    """Put ``value`` into one JSON input; its own invalid code must come back."""
    if kind == "capture":
        data = run(["capture", root, "-"], stdin=event(value).encode())
        expected = {"capture_invalid_json"}
    elif kind == "plan":
        data = run(["apply-daily", root, "-"], stdin=f'{{"schema_version":1,"x":{value}}}'.encode())
        expected = {"plan_invalid_json"}
    elif kind == "query-plan":
        data = run(["retrieve", root, "kimchi", "--query-plan", "-"],
                   stdin=f'{{"schema_version":1,"probes":[{{"query":{value}}}]}}'.encode())
        expected = {"query_plan_invalid_json"}
    else:
        data = run(["gate", root, "--format", "claude-code"],
                   stdin=f'{{"prompt":"kimchi","x":{value}}}'.encode(), json_mode=False)
        reason = data.get("reason", "")
        data = {"error": {"code": reason.split("[", 1)[-1].split("]", 1)[0]}}
        expected = {"hook_input_invalid", "turn_not_utf8"}
    code = (data.get("error") or {}).get("code")
    if code not in expected:
        raise Probe(f"{kind} with {value[:30]!r}...: {code}, expected {sorted(expected)}")


WORDS = ["kimchi", "--limit", "0", "-1", "nan", "--layer", "stm", "../..", "/etc/passwd", "-",
         "--wait", "1e309", "", " ", "\u202e", "%s", "{}", "--strict", "--tree", "06 istm",
         "04 stm/../../x.md", "\U0001f600" * 50, "a" * 5000, "--query-plan", "--file"]
COMMANDS = ["route", "retrieve", "search", "open", "structured-context", "status", "validate",
            "audit", "doctor", "unlock", "remember", "capture", "gate", "apply-daily",
            "promote", "supersede", "index", "maintain", "init", "browse", "schedule"]


def random_argv_probe(root: Path, rng: random.Random) -> None:
    words = [rng.choice(WORDS) for _ in range(rng.randint(0, 5))]
    run([rng.choice(COMMANDS), root, *words])


def planted(root: Path, rng: random.Random, scratch: Path) -> str:
    """Plant one hostile file; its name."""
    leaf_dir = root / "04 stm/kitchen/fermentation"
    front = ('title: "Planted kimchi"\ncreated: "2026-11-20T18:00:00Z"\n'
             'updated: "2026-11-28T09:00:00Z"\nstatus: "active"\ntags:\n  - "kimchi"\n')
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]\n" for n in range(1, 10))
    kinds: dict[str, Callable[[Path], None]] = {
        "symlink-out": lambda p: p.symlink_to(scratch / "outside.md"),
        "symlink-loop": lambda p: p.symlink_to(p),
        "fifo": lambda p: os.mkfifo(p, 0o600),
        "huge": lambda p: p.write_text(f"---\nid: stm-huge\n{front}---\n# H\n" + "x" * (12 << 20)),
        "open-mode": lambda p: (p.write_text(f"---\nid: stm-open\n{front}---\n# O\n"),
                                p.chmod(0o644)),
        "broken-yaml": lambda p: p.write_text("---\nid: [unclosed\n---\n# B\n"),
        "not-utf8": lambda p: p.write_bytes(b"---\nid: x\n---\n# \xff\xfe\n"),
        "alias-bomb": lambda p: p.write_text(f"---\nid: stm-bomb\n{front}{bomb}---\n# A\n"),
        "self-alias": lambda p: p.write_text(f"---\nid: stm-self\n{front}r: &r [*r]\n---\n# S\n"),
        "binary-tag": lambda p: p.write_text(f"---\nid: stm-bin\n{front}b: !!binary aGk=\n---\n"
                                             "# B\n"),
        "istm-hostile": lambda p: (root / "06 istm/hostile.jsonl").write_text(
            event('"\\ud800"') + "\n" + event("[" * 3000 + "]" * 3000, "deep") + "\n"),
    }
    (scratch / "outside.md").write_text("# outside\n")
    name = rng.choice(sorted(kinds))
    path = leaf_dir / "planted.md"
    kinds[name](path)
    if path.exists() and not path.is_symlink() and path.is_file():
        path.chmod(path.stat().st_mode & 0o777 or 0o600)
    return name


def planted_probe(template: Path, rng: random.Random, scratch: Path) -> None:
    root = Path(shutil.copytree(template, scratch / "forest", symlinks=True))
    name = planted(root, rng, scratch)
    command = rng.choice([["validate"], ["audit"], ["index"], ["structured-context", "kimchi"],
                          ["retrieve", "kimchi"], ["browse", "--out", scratch / "site"],
                          ["open", "04 stm/kitchen/fermentation/planted.md"], ["maintain"]])
    try:
        if command[0] != "index":
            run(["index", root])
        run([command[0], root, *command[1:]])
    except Probe as exc:
        raise Probe(f"{name}: {exc}") from None


def mcp_session(root: Path, rng: random.Random, count: int) -> tuple[int, list[str]]:
    """``count`` hostile tools/call requests in one session; the ids never answered."""
    lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    for n in range(1, count + 1):
        value = rng.choice([f'"{rng.choice(SURROGATES)}"', "[" * 3000 + "]" * 3000,
                            "[" * 100 + "]" * 100, '"kimchi"', '{"$ref":"#"}', "1e400"])
        tool = rng.choice(["route", "retrieve", "open", "capture", "remember"])
        lines.append(f'{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":'
                     f'{{"name":"{tool}","arguments":{{"query":{value},"path":{value}}}}}}}')
    proc = subprocess.Popen([sys.executable, "-m", "memory_forest", "serve", os.fspath(root)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=ENV)
    assert proc.stdin is not None and proc.stdout is not None
    killer = threading.Timer(TIME_LIMIT * 6, proc.kill)
    killer.start()
    proc.stdin.write(("\n".join(lines) + "\n").encode())
    proc.stdin.flush()
    answered: set[int] = set()
    problems = []
    while len(answered) < count + 1:
        line = proc.stdout.readline()
        if not line:
            break
        message = json.loads(line)
        answered.add(message.get("id"))
        result = message.get("result", {})
        # A tool error is the JSON envelope as text, with no structured content.
        error = json.loads(result["content"][0]["text"]).get("error", {}) \
            if result.get("isError") else {}
        if error.get("code") == "internal_error":
            problems.append(f"id {message['id']}: internal_error")
    killer.cancel()
    proc.stdin.close()
    proc.wait(timeout=TIME_LIMIT)
    problems += [f"id {n}: no answer" for n in range(1, count + 1) if n not in answered]
    return count, problems


# --- the run ----------------------------------------------------------------------------------


def family(table: dict[str, dict[str, Any]], name: str, tries: int,
           probe: Callable[[Path], bool | None]) -> None:
    """Run ``probe`` ``tries`` times; a probe returning True counts as ``landed``."""
    row = table.setdefault(name, {"tried": 0, "failed": 0, "landed": 0, "first_failure": None})
    for _ in range(tries):
        with tempfile.TemporaryDirectory() as scratch:
            row["tried"] += 1
            try:
                row["landed"] += bool(probe(Path(scratch)))
            except (Probe, ForestError) as exc:
                row["failed"] += 1
                row["first_failure"] = row["first_failure"] or str(exc)[:300]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=240)
    parser.add_argument("--inputs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--write-docs", action="store_true")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    started = time.monotonic()
    table: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as base:
        template = Path(base) / "forest"
        operations.init(template, example=True)
        operations.index(template)
        for kind in WRITERS:
            typical = typical_run(kind, template)
            family(table, f"kill-{kind}", options.kills // len(WRITERS),
                   lambda scratch, k=kind, t=typical: kill_probe(k, template, scratch, rng, t))
        read_only = Path(shutil.copytree(template, Path(base) / "read-only", symlinks=True))
        family(table, "argv-not-utf8", options.inputs,
               lambda scratch: argv_probe(read_only, rng))
        family(table, "json-depth", options.inputs, lambda scratch: depth_probe(read_only, rng))
        family(table, "json-surrogate", options.inputs,
               lambda scratch: surrogate_probe(read_only, rng))
        family(table, "random-argv", options.inputs,
               lambda scratch: random_argv_probe(
                   Path(shutil.copytree(template, scratch / "forest", symlinks=True)), rng))
        family(table, "planted-file", options.inputs,
               lambda scratch: planted_probe(template, rng, scratch))
        tried, problems = mcp_session(read_only, rng, options.inputs)
        table["mcp"] = {"tried": tried, "failed": len(problems), "landed": 0,
                        "first_failure": problems[0] if problems else None}
    report = {"seed": options.seed, "seconds": round(time.monotonic() - started, 1),
              "families": table}
    print(json.dumps(report, indent=2))
    if options.write_docs:
        write_docs(report)


def write_docs(report: dict[str, Any]) -> None:
    rows = ["| probe family | tried | failed | first failure |", "|---|---:|---:|---|"]
    for name, row in report["families"].items():
        failure = (row["first_failure"] or "").replace("|", "\\|")
        tried = f"{row['tried']} ({row['landed']} mid-write)" if row.get("landed") else \
            row["tried"]
        rows.append(f"| `{name}` | {tried} | {row['failed']} | {failure} |")
    block = "\n".join([BEGIN, f"Seed {report['seed']}, {report['seconds']} s.", "", *rows, END])
    write_block(DOCS, BEGIN, END, block, heading="Adversarial runs")


if __name__ == "__main__":
    main()

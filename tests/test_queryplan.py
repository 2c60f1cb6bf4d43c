"""QueryPlan parsing: every way a plan can be wrong has its own code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from memory_forest import queryplan
from memory_forest.errors import ForestError
from memory_forest.safety import read_caller_file

DOCS = Path(__file__).resolve().parents[1] / "docs"


def probes(*queries: str) -> dict:
    return {"schema_version": 1, "probes": [{"query": q} for q in queries]}


def rejected(raw: bytes | str, **kwargs) -> str:
    with pytest.raises(ForestError) as caught:
        queryplan.parse(raw, **kwargs)
    assert caught.value.exit_code == 2  # a bad plan is the caller's input error
    return caught.value.code


def test_a_valid_plan_parses():
    plan = queryplan.parse(json.dumps(probes("kimchi", "김치", "مخلل")))
    assert [p.query for p in plan.probes] == ["kimchi", "김치", "مخلل"]
    assert queryplan.parse(b'{"probes": [], "schema_version": 1}').probes == []


@pytest.mark.parametrize(("raw", "code"), [
    (b"{", "query_plan_invalid_json"),
    (b"", "query_plan_invalid_json"),
    (b"\xff\xfe{}", "query_plan_invalid_json"),
    (b'{"schema_version": 1, "probes": [{"query": NaN}]}', "query_plan_invalid_json"),
    (b'{"schema_version": 1, "schema_version": 1, "probes": []}', "query_plan_duplicate_key"),
    (b'{"schema_version": 1, "probes": [{"query": "a", "query": "b"}]}',
     "query_plan_duplicate_key"),
    (b"[]", "query_plan_not_object"),
    (b'"plan"', "query_plan_not_object"),
    (b"null", "query_plan_not_object"),
    (b'{"schema_version": 1, "probes": [], "weights": [1]}', "query_plan_unknown_field"),
    (b'{"schema_version": 1, "probes": [{"query": "a", "weight": 2}]}',
     "query_plan_unknown_field"),
    (b'{"schema_version": 2, "probes": []}', "query_plan_bad_schema_version"),
    (b'{"schema_version": "1", "probes": []}', "query_plan_bad_schema_version"),
    (b'{"schema_version": 1.0, "probes": []}', "query_plan_bad_schema_version"),
    (b'{"schema_version": true, "probes": []}', "query_plan_bad_schema_version"),
    (b'{"probes": []}', "query_plan_missing_field"),
    (b'{"schema_version": 1}', "query_plan_missing_field"),
    (b'{"schema_version": 1, "probes": [{}]}', "query_plan_missing_field"),
    (b'{"schema_version": 1, "probes": "kimchi"}', "query_plan_bad_probe"),
    (b'{"schema_version": 1, "probes": ["kimchi"]}', "query_plan_bad_probe"),
    (b'{"schema_version": 1, "probes": [{"query": 7}]}', "query_plan_bad_probe"),
    (b'{"schema_version": 1, "probes": [{"query": ["a"]}]}', "query_plan_bad_probe"),
    (b'{"schema_version": 1, "probes": [{"query": ""}]}', "query_plan_empty_probe"),
    (b'{"schema_version": 1, "probes": [{"query": " \\u3000 "}]}', "query_plan_empty_probe"),
    (b'{"schema_version": 1, "probes": [{"query": "e\\u0301"}]}', "query_plan_not_nfc"),
    (b'{"schema_version": 1, "probes": [{"query": "a\\u0007b"}]}',
     "query_plan_control_character"),
    (b'{"schema_version": 1, "probes": [{"query": "line\\nbreak"}]}',
     "query_plan_control_character"),
    (b'{"schema_version": 1, "probes": [{"query": "nul\\u0000"}]}',
     "query_plan_control_character"),
    (b'{"schema_version": 1, "probes": [{"query": "next\\u0085line"}]}',
     "query_plan_control_character"),
])
def test_each_rejection_has_its_code(raw, code):
    assert rejected(raw) == code


def test_size_is_bounded_before_parsing():
    padding = " " * (queryplan.MAX_BYTES - len(json.dumps(probes("x"))))
    exact = json.dumps(probes("x")) + padding
    assert len(exact.encode()) == queryplan.MAX_BYTES
    assert queryplan.parse(exact).probes[0].query == "x"
    assert rejected(exact + " ") == "query_plan_too_large"
    assert rejected(b"[" * 40_000) == "query_plan_too_large"


def test_deep_nesting_is_invalid_json_not_a_crash():
    assert rejected(b"[" * 15_000 + b"]" * 15_000) == "query_plan_invalid_json"
    assert rejected(b'{"a":' * 5_000 + b"1" + b"}" * 5_000) == "query_plan_invalid_json"


def test_probe_count_default_and_hard_cap():
    assert len(queryplan.parse(json.dumps(probes(*"abcdefgh"))).probes) == 8
    assert rejected(json.dumps(probes(*"abcdefghi"))) == "query_plan_too_many_probes"
    sixteen = json.dumps(probes(*"abcdefghijklmnop"))
    assert len(queryplan.parse(sixteen, max_probes=16).probes) == 16
    seventeen = json.dumps(probes(*"abcdefghijklmnopq"))
    assert rejected(seventeen, max_probes=16) == "query_plan_too_many_probes"
    assert rejected(seventeen, max_probes=1000) == "query_plan_too_many_probes"


def test_probe_text_has_a_length_bound():
    assert rejected(json.dumps(probes("x" * 1001))) == "query_plan_bad_probe"
    assert queryplan.parse(json.dumps(probes("x" * 1000))).probes[0].query == "x" * 1000


# --- reading from a file --------------------------------------------------------------------


def load(source: str):
    """A plan file as ``retrieve --query-plan FILE`` reads it (the catalog's reader)."""
    return queryplan.parse(read_caller_file(source, queryplan.MAX_BYTES, "query_plan"))


def load_code(source: str) -> str:
    with pytest.raises(ForestError) as caught:
        load(source)
    return caught.value.code


def test_load_reads_a_regular_file(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(probes("kimchi")), encoding="utf-8")
    assert load(str(path)).probes[0].query == "kimchi"


def test_load_refuses_symlinks_directories_fifos_and_missing_files(tmp_path):
    real = tmp_path / "plan.json"
    real.write_text(json.dumps(probes("kimchi")), encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    assert load_code(str(link)) == "query_plan_symlink"
    assert load_code(str(tmp_path)) == "query_plan_not_regular_file"
    assert load_code(str(fifo)) == "query_plan_not_regular_file"
    assert load_code(str(tmp_path / "absent.json")) == "query_plan_unreadable"


def test_load_checks_size_before_reading(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (queryplan.MAX_BYTES + 1))
    assert load_code(str(big)) == "query_plan_too_large"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_a_file_that_fails_to_read_is_unreadable():
    # A regular file, readable by permissions, whose read fails with EIO.
    assert load_code("/proc/self/mem") == "query_plan_unreadable"


NOBODY = 65534  # the conventional unprivileged uid and gid

# Loads the plan named in argv[1]; prints the package it used, then the error code or "ok".
LOAD_AS_ANOTHER_USER = """
import sys
from memory_forest import queryplan
from memory_forest.errors import ForestError
from memory_forest.safety import read_caller_file
print(queryplan.__file__)
try:
    queryplan.parse(read_caller_file(sys.argv[1], queryplan.MAX_BYTES, "query_plan"))
except ForestError as exc:
    print(exc.code)
else:
    print("ok")
"""


def load_code_where_modes_bind(path: Path) -> str:
    """``load_code``, run by a user the file's mode binds.

    Root reads a file whatever its mode, and CI runs as root: there the load
    runs in a subprocess as ``nobody``, on the same package as this test.
    """
    if os.geteuid() != 0:
        try:
            load(str(path))
        except ForestError as exc:
            return exc.code
        return "ok"
    command = [sys.executable, "-c", LOAD_AS_ANOTHER_USER, str(path)]
    setpriv = shutil.which("setpriv")
    if setpriv:  # util-linux; also runs an interpreter kept under root's private home
        proc = subprocess.run([setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}",
                               "--clear-groups", *command],
                              capture_output=True, text=True, timeout=60)
    else:
        proc = subprocess.run(command, user=NOBODY, group=NOBODY, extra_groups=[],
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    used, code = proc.stdout.splitlines()
    assert used == queryplan.__file__  # not some other installed copy
    return code


@pytest.fixture
def shared_dir():
    """A directory every user can traverse (pytest's tmp_path is private to its user)."""
    with tempfile.TemporaryDirectory() as name:
        os.chmod(name, 0o711)
        yield Path(name)


def test_a_file_without_read_permission_is_unreadable(shared_dir):
    path = shared_dir / "plan.json"
    path.write_text(json.dumps(probes("kimchi")), encoding="utf-8")
    path.chmod(0o644)
    assert load_code_where_modes_bind(path) == "ok"  # the same user reads it with the mode
    path.chmod(0)
    assert load_code_where_modes_bind(path) == "query_plan_unreadable"


# --- the published schema -------------------------------------------------------------------


def generated_schema() -> str:
    return json.dumps(queryplan.QueryPlan.model_json_schema(), indent=2, sort_keys=True,
                      ensure_ascii=False) + "\n"


def test_published_json_schema_matches_the_model():
    assert (DOCS / "query-plan.schema.json").read_text(encoding="utf-8") == generated_schema()


def test_schema_is_closed_and_pins_the_version():
    schema = queryplan.QueryPlan.model_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["schema_version"]["const"] == 1
    assert sorted(schema["required"]) == ["probes", "schema_version"]
    assert schema["properties"]["probes"]["maxItems"] == queryplan.HARD_MAX_PROBES
    probe = schema["$defs"]["Probe"]
    assert probe["additionalProperties"] is False and probe["required"] == ["query"]

"""The ``Forest`` handle: one config read and one index connection per operation call.

Counted the way the operating system sees it, not by patching our code: a
fresh interpreter runs one call with an audit hook (``sys.addaudithook``)
that counts every ``open`` of ``forest.json`` and every ``sqlite3.connect``
of the index.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from forestkit import write_doc

from memory_forest import operations, retrieve
from memory_forest.forest import Forest, opened

_COUNTING = r"""
import json, sys
from pathlib import Path

counts = {"config_reads": 0, "index_reads": 0, "index_writes": 0}

def count(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].endswith("forest.json"):
        counts["config_reads"] += 1
    elif event == "sqlite3.connect" and "index.sqlite3" in str(args[0]):
        counts["index_reads" if "mode=ro" in str(args[0]) else "index_writes"] += 1

root, call = Path(sys.argv[1]), sys.argv[2]
if call == "remember":
    from memory_forest.writers.remember import remember
    sys.addaudithook(count)
    outcome = remember(root, "kitchen", "fermentation", "counted", None, "Salt at 2 percent.")
elif call == "gate":
    from memory_forest import gate
    sys.addaudithook(count)
    outcome = gate.consult(root, sys.argv[3].encode())
print(json.dumps({"ok": outcome["ok"], "status": outcome.get("status"), **counts}))
"""


def _counted(root: Path, *call: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _COUNTING, str(root), *call],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_remember_reads_the_config_once_and_the_index_once(example: Path) -> None:
    counts = _counted(example, "remember")
    assert counts["ok"] is True
    # One read connection (the writer's view), one write connection (the index update).
    assert counts == {"ok": True, "status": None, "config_reads": 1, "index_reads": 1,
                      "index_writes": 1}


def test_the_gate_reads_the_config_once_and_opens_the_index_once(example: Path) -> None:
    # Route and retrieve both check what they found against the files: one config for both.
    # A turn with no searchable word finds nothing to check, but still proves the index.
    for turn, status, config_reads in (
            ("How cold should the kimchi fridge be?", "evidence_found", 1),
            ("the of and ?", "no_evidence", 0)):
        counts = _counted(example, "gate", turn)
        assert counts == {"ok": True, "status": status, "config_reads": config_reads,
                          "index_reads": 1, "index_writes": 0}, turn


def test_a_handle_keeps_its_index_connection_across_calls(example: Path) -> None:
    with Forest.open(example) as forest:
        reader = forest.reader()
        assert retrieve.route(forest, "kimchi")["count"] >= 1
        assert retrieve.retrieve(forest, "kimchi")["count"] >= 1
        assert forest.reader() is reader


def test_a_handle_reads_the_index_a_full_build_put_in_place(example: Path) -> None:
    with Forest.open(example) as forest:
        assert retrieve.search(forest, "quokkaberry")["count"] == 0  # the reader is open
        write_doc(example, "04 stm/kitchen/fermentation/quokka.md", "Quokka",
                  "A quokkaberry ferment.")
        operations.index(forest, full=True)  # a new file renamed over the old one
        assert retrieve.search(forest, "quokkaberry")["count"] == 1


def test_opened_closes_only_what_it_opened(example: Path) -> None:
    with Forest.open(example) as forest:
        reader = forest.reader()
        with opened(forest) as same:
            assert same is forest
        assert forest.reader() is reader  # the caller's handle is still open
    with opened(example) as own:
        own.reader()
    assert own._reader is None  # opened from a path: closed at the end

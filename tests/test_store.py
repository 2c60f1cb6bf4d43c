"""The index store is the one module that speaks SQL to the index."""

from __future__ import annotations

import re
from pathlib import Path

import memory_forest
from memory_forest import index, store

SOURCE = Path(memory_forest.__file__).parent
_SQL = re.compile(r"\.execute(many|script)?\(|\bSELECT\b|\bMATCH\b\s+\?")


def test_no_module_but_the_store_runs_sql():
    speaking = sorted(str(path.relative_to(SOURCE)) for path in SOURCE.rglob("*.py")
                      if path.name != "store.py" and _SQL.search(path.read_text("utf-8")))
    assert speaking == []


def test_rows_come_back_named(example):
    con = index.connect(example)
    try:
        some = store.nodes(con, sorted(store.digests(con)))
        assert some, "the example forest is indexed"
        assert {node.path for node in some} == set(store.digests(con))
        first = some[0]
        assert store.doc_by_path(con, first.path) == first
        assert store.file_row(con, first.path).sha256 == first.sha256
    finally:
        con.close()

"""The index store is the one package that speaks SQL to the index."""

from __future__ import annotations

import re
from pathlib import Path

import memory_forest
from memory_forest import indexreader
from memory_forest.store import filerows, lookups

SOURCE = Path(memory_forest.__file__).parent
_SQL = re.compile(r"\.execute(many|script)?\(|\bSELECT\b|\bMATCH\b\s+\?")


def test_no_module_but_the_store_runs_sql():
    speaking = sorted(str(path.relative_to(SOURCE)) for path in SOURCE.rglob("*.py")
                      if path.parent.name != "store" and _SQL.search(path.read_text("utf-8")))
    assert speaking == []
    assert all(_SQL.search(path.read_text("utf-8"))
               for path in (SOURCE / "store").glob("*.py") if path.name != "__init__.py")


def test_rows_come_back_named(example):
    con = indexreader.connect(example)
    try:
        some = lookups.nodes(con, sorted(filerows.digests(con)))
        assert some, "the example forest is indexed"
        assert {node.path for node in some} == set(filerows.digests(con))
        first = some[0]
        assert lookups.doc_by_path(con, first.path) == first
        assert filerows.file_row(con, first.path).sha256 == first.sha256
    finally:
        con.close()

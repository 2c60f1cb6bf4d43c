"""Helpers for the writer tests: events, plans, and checks that a forest is whole."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forestkit import canonical_state, index_rows  # noqa: E402

from memory_forest import operations  # noqa: E402
from memory_forest.writers.markdown import INDENT  # noqa: E402


def event(n: int = 0, **fields: Any) -> dict[str, Any]:
    record = {"observed_at": "2026-11-30T09:00:00Z", "source": "test-agent", "kind": "note",
              "payload": {"text": f"event number {n}"}}
    record.update(fields)
    return record


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def write_json(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return os.fspath(path)


def state(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every canonical file (bytes, mtime_ns, mode); derived state left out."""
    return canonical_state(root)


def contents(root: Path) -> dict[str, bytes]:
    return {path: data for path, (data, _, _) in state(root).items()}


def assert_whole(root: Path) -> None:
    """The forest audits, modes are private, and the index equals a full rebuild."""
    audit = operations.audit(root)
    assert audit["ok"], audit["issues"]
    before = index_rows(root)
    operations.index(root, full=True)
    assert index_rows(root) == before, "the index differs from a full rebuild"


def istm_records(root: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted((root / "06 istm").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                records.append(json.loads(line))
    return records


def daily_plan(txid: str, date: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schema_version": 1, "transaction_id": txid, "date": date, "entries": entries}


def same_modulo_neutralization(stored: str, original: str) -> bool:
    """Each stored line is its original line, indented by four spaces some times, with
    ``[[`` written ``\\[\\[`` and ``%%`` written ``\\%\\%`` (the documented changes).

    Lines are compared without the backslashes before ``[`` and ``%``: those are the
    only characters a neutralization adds inside a line."""
    stored_lines, original_lines = stored.split("\n"), original.strip("\n").split("\n")
    if len(stored_lines) != len(original_lines):
        return False

    def plain(line: str) -> str:
        return re.sub(r"\\+(?=[\[%])", "", line)

    for line, want in zip(stored_lines, original_lines, strict=True):
        while plain(line) != plain(want) and line.startswith(INDENT):
            line = line[len(INDENT):]
        if plain(line) != plain(want):
            return False
    return True

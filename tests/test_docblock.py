"""The one way benchmark scripts write figures into a doc (scripts/docblock.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))
from docblock import measured_block, write_block  # noqa: E402

BEGIN, END = "<!-- b:begin -->", "<!-- b:end -->"


def test_only_the_block_between_the_markers_changes(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Prose\n\nkept\n\n{BEGIN}\nold\n{END}\n\n## After\n\nkept too\n")
    write_block(doc, BEGIN, END, f"{BEGIN}\nnew\n{END}")
    assert doc.read_text() == f"# Prose\n\nkept\n\n{BEGIN}\nnew\n{END}\n\n## After\n\nkept too\n"


def test_a_missing_block_is_added_under_its_heading_or_stops_the_script(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("# Prose\n")
    write_block(doc, BEGIN, END, f"{BEGIN}\nnew\n{END}", heading="Figures")
    assert doc.read_text() == f"# Prose\n\n## Figures\n\n{BEGIN}\nnew\n{END}\n"
    other = tmp_path / "other.md"
    other.write_text("# Prose\n")
    with pytest.raises(SystemExit, match="no <!-- b:begin -->"):
        write_block(other, BEGIN, END, f"{BEGIN}\nnew\n{END}")
    assert other.read_text() == "# Prose\n"


def test_a_measured_block_says_where_and_how_and_round_trips_through_the_doc(tmp_path: Path):
    report = {"cpus": 2, "python": "3.11.7", "load_average_1m": 0.8}
    block = measured_block(BEGIN, END, report, "; 10 rounds, interleaved.", "bench_x.py",
                           ["--calls", "10", "--write"], ["| a | b |", "|---|---|"])
    lines = block.splitlines()
    assert lines[0] == BEGIN and lines[-1] == END and lines[-3:-1] == ["| a | b |", "|---|---|"]
    assert "on 2 vCPUs" in block and "load average 0.8 at the start; 10 rounds" in block
    assert "$ .venv/bin/python scripts/bench_x.py --calls 10 --write" in lines
    doc = tmp_path / "doc.md"
    doc.write_text(f"{BEGIN}\nold\n{END}\n")
    write_block(doc, BEGIN, END, block)
    assert doc.read_text() == block + "\n"

"""docs/troubleshooting.md names every error and issue code the source can produce."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import memory_forest

PACKAGE = Path(memory_forest.__file__).parent
PAGE = Path(__file__).parents[1] / "docs" / "troubleshooting.md"
# The constructors whose first argument (Issue: second) is a stable code.
CODE_CALLS = {"ForestError": 0, "usage_error": 0, "_Refused": 0, "Issue": 1}


def literal_codes() -> set[str]:
    """Every code spelled as a string literal where an error or issue is made, and the
    gate's fixed failure codes (the keys of ``gate.MESSAGES``)."""
    codes: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                position = CODE_CALLS.get(name)
                if position is not None and len(node.args) > position:
                    arg = node.args[position]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        codes.add(arg.value)
    from memory_forest.gate import MESSAGES

    return codes | set(MESSAGES)


def test_the_scan_finds_the_codes_it_should():
    codes = literal_codes()
    # Codes from each kind of constructor, so a scan that found nothing cannot pass.
    assert {"root_missing", "query_empty", "symlink", "hook_input_invalid",
            "root_required", "parent_missing", "layer_missing"} <= codes
    assert len(codes) > 80


def test_every_code_is_on_the_troubleshooting_page():
    page = PAGE.read_text(encoding="utf-8")
    families = [prefix for prefix in re.findall(r"`([a-z_]+)_\*`", page)]
    missing = sorted(code for code in literal_codes() if f"`{code}`" not in page
                     and not any(code.startswith(prefix + "_") for prefix in families))
    assert missing == [], f"add these codes to docs/troubleshooting.md: {missing}"

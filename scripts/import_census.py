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

sys.path.insert(0, str(ROOT / "tests"))
# The tests' own rule and measurement, not a second copy of either.
from turnimports import (  # noqa: E402
    function_level_imports,
    heavy_modules,
    is_heavy,
    module_name,
    resolve,
    turn_modules,
)

Census = dict[str, tuple[int, int, bool]]  # module -> (module-level, function-level, heavy)


def count(module: str, package: bool, source: str, heavy: frozenset[str]
          ) -> tuple[int, int, bool]:
    """(module-level, function-level, whether every lazy one is of a heavy package)."""
    tree = ast.parse(source)
    every = sum(isinstance(node, ast.Import | ast.ImportFrom) for node in ast.walk(tree))
    lazy = function_level_imports(source)
    heavy_only = all(is_heavy([resolve(name, module, package) for name in names], heavy)
                     for _, names in lazy)
    return every - len(lazy), len(lazy), heavy_only


def census_tree(heavy: frozenset[str]) -> Census:
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        out[module_name(path)] = count(module_name(path), path.name == "__init__.py",
                                       path.read_text(encoding="utf-8"), heavy)
    return out


def census_rev(rev: str, heavy: frozenset[str]) -> Census:
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
            module = rel.removeprefix("src/").removesuffix(".py").removesuffix("/__init__")
            out[module.replace("/", ".")] = count(module.replace("/", "."),
                                                  rel.endswith("__init__.py"), text, heavy)
    return out


def reason(module: str, heavy_only: bool, turn: frozenset[str]) -> str:
    return "per-turn" if module in turn else "heavy/optional" if heavy_only else "unclassified"


def table(before: Census | None, label: str, after: Census, turn: frozenset[str]) -> str:
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
    for module, (_, inner, heavy_only) in sorted(after.items()):
        if inner:
            lines.append(f"| `{module}` | {inner} | {reason(module, heavy_only, turn)} |")
    lines += ["", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also count this git revision")
    parser.add_argument("--print", action="store_true", help="print the table, write no doc")
    args = parser.parse_args()
    heavy = heavy_modules()
    before = census_rev(args.before, heavy) if args.before else None
    block = table(before, args.before or "", census_tree(heavy), turn_modules())
    if args.print:
        print(block)
    else:
        write_block(DOCS, BEGIN, END, block, heading="Imports at the top")
        print(block)


if __name__ == "__main__":
    main()

"""docs/architecture.md names real code: every file, module and attribute it cites exists.

The recipe for adding an operation is read by people who then go and edit the
files it names; a rename that leaves it behind should fail here, not mislead
them.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import memory_forest

REPO = Path(__file__).resolve().parent.parent
DOC = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
PACKAGE = Path(memory_forest.__file__).parent
MODULES = {name for _, name, _ in pkgutil.walk_packages([str(PACKAGE)])}
USER_FILE = "config.toml"  # the user's own file, outside the repository
CODE = re.findall(r"`([^`\n]+)`", DOC)


def test_every_file_the_doc_names_exists():
    files = {match for span in CODE for match in re.findall(r"[\w/.-]+\.(?:py|toml|md)\b", span)}
    bases = (REPO, PACKAGE, REPO / "docs", REPO / "src")
    inside = {path.name for path in PACKAGE.rglob("*.py")}  # `table.py` under `credentials/`
    missing = [name for name in sorted(files - {USER_FILE})
               if name not in inside and not any((b / name).exists() for b in bases)]
    assert len(files) > 10, files
    assert missing == []


def test_every_module_attribute_the_doc_names_exists():
    named = set()
    for span in CODE:
        for dotted in re.findall(r"\b([a-z_]+(?:\.[a-z_]+)*)\.([A-Za-z_]\w*)\b", span):
            if dotted[1] in ("py", "md", "json", "toml"):
                continue  # a file name, checked above
            if dotted[0] in MODULES or dotted[0].split(".")[0] in MODULES:
                named.add(dotted)
    missing = []
    for module, attribute in sorted(named):
        loaded = importlib.import_module(f"memory_forest.{module}")
        # `forest.reader()`: a method of the module's one class (`Forest`), or a submodule.
        owner = getattr(loaded, module.split(".")[-1].capitalize(), None)
        submodule = hasattr(loaded, "__path__") and importlib.util.find_spec(
            f"memory_forest.{module}.{attribute}")
        if not (hasattr(loaded, attribute) or hasattr(owner, attribute) or submodule):
            missing.append(f"{module}.{attribute}")
    assert len(named) > 10, named
    assert missing == []

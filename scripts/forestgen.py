"""Write a valid forest from plain data, for benchmarks (not part of the package).

``write_forest(root, trees)`` takes ``{tree: {branch: {leaf: (title, body)}}}``
and writes the XLTM root map, one LTM per tree, one MTM per branch and the
STM leaves, each with frontmatter and the link to its immediate parent, with
0700/0600 modes, so the result validates and audits.
"""

from __future__ import annotations

import os
from pathlib import Path

from memory_forest import operations

Leaf = tuple[str, str]


def write_forest(root: Path, trees: dict[str, dict[str, dict[str, Leaf]]]) -> int:
    operations.init(root)
    count = 0
    write_document(root, "01 xltm/XLTM.md", "Root map", "xltm",
           "\n".join(f"- [[02 ltm/{t}_LTM|{t}]]" for t in trees))
    count += 1
    for tree, branches in trees.items():
        write_document(root, f"02 ltm/{tree}_LTM.md", f"Tree {tree}", f"ltm-{tree}",
               "Up: [[01 xltm/XLTM|Root map]]\n\n"
               + "\n".join(f"- [[03 mtm/{tree}/{b}|{b}]]" for b in branches))
        count += 1
        for branch, leaves in branches.items():
            write_document(root, f"03 mtm/{tree}/{branch}.md", f"Branch {branch}",
                   f"mtm-{tree}-{branch}", f"Up: [[02 ltm/{tree}_LTM|Tree {tree}]]")
            count += 1
            for leaf, (title, body) in leaves.items():
                write_document(root, f"04 stm/{tree}/{branch}/{leaf}.md", title,
                       f"stm-{tree}-{branch}-{leaf}",
                       f"Up: [[03 mtm/{tree}/{branch}|Branch {branch}]]\n\n{body}")
                count += 1
    return count


def write_document(root: Path, rel: str, title: str, doc_id: str, body: str) -> None:
    """One document with frontmatter and private modes, creating private parent directories
    (``body`` carries the parent link: it is written as given)."""
    path = root / rel
    for parent in reversed(path.relative_to(root).parents):
        directory = root / parent
        if not directory.exists():
            os.mkdir(directory, 0o700)
            os.chmod(directory, 0o700)
    text = (f"---\nid: {doc_id}\ntitle: {title!r}\nstatus: active\n---\n# {title}\n\n{body}\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)

"""``open_document``: the explicit read of one body, named by path, wikilink name or id.

The only read that returns a body by name. It resolves the name against the
index, refuses the raw source layers unless asked, and always returns the
file's current bytes, saying whether they still match the index.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .digest import sha256_hex
from .documents import split_frontmatter
from .envelope import result
from .errors import ForestError, usage_error
from .forest import Forest, ForestLike, opened
from .layers import layer_for
from .retrieve import node_of, verify_nodes
from .routes import parse_route
from .safety import read_regular
from .store import lookups
from .store.lookups import DocRow

if TYPE_CHECKING:
    from .results import OpenResult

SOURCE_LAYERS = (5, 6)  # Daily and ISTM: raw sources, opened only when asked for by name
_EXTENSIONS = (".md", ".jsonl")  # what a wikilink-style name without extension may mean


def open_document(forest: ForestLike, path: str, allow_source_layers: bool = False
                  ) -> OpenResult:
    """The current bytes of one document, named by path, path without extension, or id.

    A name is tried as a canonical path (``routes.parse_route``), then with
    its extension added (the form a wikilink uses), then as a document id;
    nothing outside the layers can be named. Daily and ISTM files need
    ``allow_source_layers``. The body is always what the file holds now: the
    result says whether that matches the index (``verified``,
    ``changed_since_index``), and a canonical file the index does not hold
    (new since the last ``index``, or left out of it for a problem) is
    returned with ``indexed: false``. A name with no file fails with
    ``not_found``.
    """
    with opened(forest) as forest:
        path, row = _resolve(forest, path)
        layer = layer_for(path.split("/", 1)[0])
        if layer.number in SOURCE_LAYERS and not allow_source_layers:
            raise usage_error("source_layer_not_allowed",
                              f"'{layer.dirname}' is a raw source layer; ask for it explicitly "
                              "(allow_source_layers)", path=path)
        if row is None:
            return result("open", **_unindexed(forest, path), body_included=True,
                          indexed=False)
        node = node_of(row)
        data = verify_nodes(forest, [node]).get(path)
        if data is None:  # gone or unreadable since indexing: nothing current to return

            read_regular(forest.root, path, forest.limits["max_file_bytes"])  # its own code
    return result("open", **node, body=data.decode("utf-8", errors="replace"),
                  body_included=True, indexed=True)


def _resolve(forest: Forest, name: str) -> tuple[str, DocRow | None]:
    """The canonical path a name stands for, and its index row (None when not indexed).

    The extension is added only to a name that has none (``x.MD`` stays the
    mistake it is), and a name is taken as an id only when it has no ``/``.
    """
    con, root = forest.reader(), forest.root
    candidates = [name]
    if not name.lower().endswith(_EXTENSIONS):
        candidates += [name + ext for ext in _EXTENSIONS]
    parsed, first_error = [], None
    for candidate in candidates:
        try:
            parse_route(candidate)
        except ForestError as exc:
            first_error = first_error or exc
            continue
        parsed.append(candidate)
        row = lookups.doc_by_path(con, candidate)
        if row is not None or os.path.lexists(root / candidate):
            return candidate, row
    if name and "/" not in name:
        row = lookups.doc_by_id(con, name)
        if row is not None:
            return row.path, row
    if parsed:
        return parsed[0], None  # a well-formed name with no file: not_found when read
    if name and "/" not in name and not name.lower().endswith(_EXTENSIONS):
        raise ForestError("not_found", "no document has this path or id", {"path": name[:500]})
    raise first_error


def _unindexed(forest: Forest, path: str) -> dict[str, Any]:
    """Metadata and current body of a canonical file the index does not hold."""
    data = read_regular(forest.root, path, forest.limits["max_file_bytes"])  # not_found if absent
    text = data.decode("utf-8", errors="replace")
    meta = _frontmatter(text)
    title = meta.get("title")
    status = meta.get("status")
    doc_id = meta.get("id")
    current = sha256_hex(data)
    return {"path": path, "layer": path.split("/", 1)[0],
            "title": title if isinstance(title, str) else path.rsplit("/", 1)[-1],
            "id": doc_id if isinstance(doc_id, str) else None,
            "status": status if isinstance(status, str) else "active",
            "sha256": current, "size": len(data),
            "mtime_ns": os.lstat(forest.root / path).st_mtime_ns,
            "verified": False, "changed_since_index": False, "current_sha256": current,
            "missing": False, "read_error": None, "body": text}


def _frontmatter(text: str) -> dict[str, Any]:
    """Best-effort frontmatter of a file that may be unindexed for a bad one."""
    if not text.startswith(("---", "\ufeff---")):
        return {}

    try:
        return split_frontmatter(text)[0]
    except ValueError:
        return {}

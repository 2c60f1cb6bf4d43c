"""``supersede``: a new record replaces an old one; the old one stays, marked.

``supersede ROOT --id OLD --file NEW.md`` creates the new record beside the
old one (same layer and owner; its name is the file's stem), or with ``--to
TREE/BRANCH[/LEAF]`` (``TREE[/BRANCH]`` for an MTM branch) at that place,
missing parents made and linked as ``remember`` makes them, with
``supersedes: OLD``, and sets ``status: superseded`` and
``superseded_by: <new id>`` on the old record. The old record's body is
never changed. NEW.md may carry frontmatter with ``title``, ``tags`` and
``sources`` only; its first ``# `` heading, if any, is the title when the
frontmatter has none. Its text is stored as written (``markdown.neutralize``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..documents import split_frontmatter
from ..errors import ForestError
from ..forest import ForestLike, opened
from ..lockline import DEFAULT_WAIT
from ..routes import mtm_path, parse_route, stm_path
from ..safety import read_caller_file
from . import parents
from .markdown import check_linkable, check_title, clean_text, neutralize
from .move import split_to, target_path
from .redact import redact_value
from .transaction import Stage, transact

if TYPE_CHECKING:
    from ..results import WriteResult

MAX_FILE_BYTES = 1024 * 1024
ALLOWED_KEYS = ("title", "tags", "sources")


def read_new_record(file: str) -> tuple[str, dict[str, Any], str]:
    """(stem, frontmatter, body) of NEW.md, checked."""
    stem = os.path.basename(file)
    if not stem.endswith(".md"):
        raise ForestError("supersede_file_not_markdown", "the new record must be a .md file",
                          exit_code=2)
    stem = stem[:-3]
    raw = read_caller_file(file, MAX_FILE_BYTES, "supersede_file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ForestError("supersede_file_not_utf8", "the new record is not UTF-8",
                          exit_code=2) from None
    try:
        meta, body, _ = split_frontmatter(text)
    except ValueError:
        raise ForestError("supersede_frontmatter_invalid", "the new record's frontmatter is "
                          "not well-formed YAML", exit_code=2) from None
    extra = sorted(set(map(str, meta)) - set(ALLOWED_KEYS))
    if extra:
        raise ForestError("supersede_frontmatter_field_not_allowed",
                          f"the new record may only set {', '.join(ALLOWED_KEYS)}",
                          {"fields": extra[:20]}, exit_code=2)
    for key in ("tags", "sources"):
        value = meta.get(key)
        if value is not None and not (isinstance(value, list)
                                      and all(isinstance(v, str) for v in value)):
            raise ForestError("supersede_frontmatter_invalid", f"'{key}' must be a list of "
                              "strings", exit_code=2)
    title = meta.get("title")
    lines = body.lstrip("\n").split("\n")
    if lines and lines[0].startswith("# "):
        title = title or lines[0][2:].strip()
        body = "\n".join(lines[1:])
    meta["title"] = check_title(str(title or stem))
    return stem, meta, clean_text(body, "record")


def supersede(forest: ForestLike, old_id: str, file: str, to: str | None = None,
              transaction_id: str | None = None, wait: float = DEFAULT_WAIT) -> WriteResult:
    stem, meta, body = read_new_record(file)
    check_linkable(stem, "record")
    names = None if to is None else split_to(to)
    redactions: dict[str, int] = {}
    meta = {key: value if key == "sources" else redact_value(value, redactions)
            for key, value in meta.items()}
    body = redact_value(body, redactions)
    request = {"id": old_id, "name": stem, "frontmatter": meta, "body": body, "to": to}

    def prepare(stage: Stage) -> None:
        old = parents.find_by_id(stage, old_id)
        route = parse_route(old)
        if names is not None and route.layer.key in ("stm", "mtm"):
            path = target_path(route.layer.key, names, to or "", stem)
        elif names is not None:
            raise ForestError("supersede_layer_unsupported", "--to places an STM leaf or an "
                              "MTM branch; a Life Archive record is superseded in place "
                              "(leave out --to)", {"path": old})
        elif route.layer.key == "stm":
            path = stm_path(route.tree, route.branch, stem)
        elif route.layer.key == "mtm":
            path = mtm_path(route.tree, stem)
        elif route.layer.key == "life_archive":
            path = f"00 life_archive/{stem}.md"
        else:
            raise ForestError("supersede_layer_unsupported", "only STM, MTM and Life Archive "
                              "records can be superseded this way; use a sweep plan",
                              {"path": old})
        if stage.exists(path):
            raise ForestError("target_exists", "a record with the new name exists",
                              {"path": path})
        new_id = parents.new_id(route.layer.key)
        parents.supersede(stage, old, new_id)
        sources = parents.checked_sources(stage, meta.get("sources") or [])
        parents.create(stage, path, meta["title"], neutralize(body), {}, new_id, supersedes=old_id,
                       sources=sources, tags=meta.get("tags"))
        stage.details.update({"path": path, "superseded": old, "id": new_id,
                              "redactions": redactions})

    with opened(forest) as forest:
        return transact(forest, "supersede", request, transaction_id, prepare, wait)

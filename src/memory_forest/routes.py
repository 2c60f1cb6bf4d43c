"""Relative paths <-> routes (layer, tree, branch, leaf), and parent routes.

A route is the semantic address of a canonical file. Parsing is strict: every
way a path can fail to be canonical has its own code, so validators and
writers can say precisely what is wrong.
"""

from __future__ import annotations

import datetime as _dt
import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

from .errors import ForestError
from .layers import BY_DIR, BY_NUMBER, LTM_SUFFIX, XLTM_PATH, Layer

MAX_SEGMENT = 200
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# A machine's name in an ISTM shard '<day>.<host>.jsonl': what chain.host_segment makes of a
# host name, a DNS label in lowercase.
HOST = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# Not a machine: '<day>.jsonl.jsonl' is a doubled extension (a wikilink written with its
# extension names such a file), and stays the bad shape it always was.
RESERVED_HOSTS = frozenset({"jsonl"})
_LOOSE_LAYER = re.compile(r"^\s*(\d{1,2})[\s_\-.]*([A-Za-z_]*)\s*$")
_DRIVE = re.compile(r"[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A file name that is not UTF-8 reaches us with its bytes as surrogate escapes.
_SURROGATE = re.compile("[\ud800-\udfff]")


class Route(NamedTuple):  # a tuple, like Layer: cheap to import and to build
    path: str  # root-relative, "/"-separated, exactly as on disk
    layer: Layer
    tree: str | None = None
    branch: str | None = None
    leaf: str | None = None
    name: str | None = None  # stem for life archive, daily and istm files

    @property
    def parent_path(self) -> str | None:
        return parent_of(self.path)

    @property
    def link_target(self) -> str:
        return link_target(self.path)


def parent_of(path: str) -> str | None:
    """The immediate owner of a canonical path in the ownership tree (layers 02-04 only).

    Pure string work on an already-valid path: retrieval calls it for every
    candidate, so it must not re-validate.
    """
    parts = path.split("/")
    if parts[0] == "04 stm":
        return mtm_path(parts[1], parts[2])
    if parts[0] == "03 mtm":
        return ltm_path(parts[1])
    if parts[0] == "02 ltm":
        return XLTM_PATH
    return None


def children_prefix(path: str) -> str | None:
    """Where the files owned by ``path`` live: every child's path starts with this.

    The inverse of ``parent_of`` as a directory, so an incremental build finds
    the children of a file that appeared or went in the sorted listing
    instead of asking every file for its parent.
    """
    if path == XLTM_PATH:
        return "02 ltm/"
    parts = path.split("/")
    if parts[0] == "02 ltm" and len(parts) == 2 and parts[1].endswith(LTM_SUFFIX + ".md"):
        return f"03 mtm/{parts[1][:-len(LTM_SUFFIX + '.md')]}/"
    if parts[0] == "03 mtm" and len(parts) == 3 and parts[2].endswith(".md"):
        return f"04 stm/{parts[1]}/{parts[2][:-3]}/"
    return None


def ancestors(path: str) -> list[str]:
    """Root-first owners of ``path`` (XLTM, LTM, MTM as far as they apply)."""
    chain: list[str] = []
    while (owner := parent_of(path)) is not None:
        chain.insert(0, owner)
        path = owner
    return chain


def ltm_path(tree: str) -> str:
    return f"02 ltm/{tree}{LTM_SUFFIX}.md"


def mtm_path(tree: str, branch: str) -> str:
    return f"03 mtm/{tree}/{branch}.md"


def stm_path(tree: str, branch: str, leaf: str) -> str:
    return f"04 stm/{tree}/{branch}/{leaf}.md"


def link_target(path: str) -> str:
    """Obsidian's canonical wikilink target: the path without ``.md``."""
    return path[:-3] if path.endswith(".md") else path


def check_segment(segment: str, what: str = "segment") -> None:
    """Raise ``route_bad_segment`` unless ``segment`` is a valid tree/branch/leaf name."""
    problem = segment_problem(segment)
    if problem:
        raise ForestError(
            "route_bad_segment", f"invalid {what} name: {problem}", {"segment": segment[:80]}
        )


@lru_cache(maxsize=65_536)
def segment_problem(segment: str) -> str | None:
    if not segment:
        return "empty"
    if len(segment) > MAX_SEGMENT:
        return f"longer than {MAX_SEGMENT} characters"
    if "/" in segment or "\\" in segment:
        return "contains a path separator"
    if _CONTROL.search(segment):
        return "contains a control character"
    if _SURROGATE.search(segment):
        return "is not UTF-8"
    if segment.startswith("."):
        return "starts with a dot"
    if segment != segment.strip():
        return "has leading or trailing whitespace"
    if unicodedata.normalize("NFC", segment) != segment:
        return "is not NFC"
    return None


_parsed: dict[str, Route] = {}


def parse_route(path: str) -> Route:
    """Map a root-relative path to its route, or raise a ``route_*`` ForestError.

    Valid routes are remembered: audit parses every link target, and in a large
    forest most links point at the same few owners.
    """
    route = _parsed.get(path)
    if route is None:
        route = _parse_route(path)
        if len(_parsed) < 500_000:
            _parsed[path] = route
    return route


def _parse_route(path: str) -> Route:
    if not path or path.startswith("/") or "\\" in path or _DRIVE.match(path):
        raise _err("route_escape", "path must be root-relative and '/'-separated", path)
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise _err("route_escape", "path must not contain empty, '.' or '..' segments", path)
    layer = BY_DIR.get(parts[0])
    if layer is None:
        raise _unknown_layer(parts[0], path)
    if len(parts) == 1:
        raise _err("route_bad_shape", "a layer directory is not a document", path)
    stem = _stem(parts[-1], layer, path)
    segments = [*parts[1:-1], stem]
    for segment in segments:
        problem = segment_problem(segment)
        if problem:
            raise _err("route_bad_segment", f"segment {problem}", path)
    return _shape(path, layer, segments)


def _stem(filename: str, layer: Layer, path: str) -> str:
    ext = layer.extension
    if filename.endswith(ext):
        return filename[: -len(ext)]
    if filename.lower().endswith(ext):
        raise _err("route_extension_case", f"extension must be exactly '{ext}'", path)
    raise _err("route_bad_shape", f"files in '{layer.dirname}' must end in '{ext}'", path)


def _shape(path: str, layer: Layer, seg: list[str]) -> Route:
    key = layer.key
    if key == "xltm":
        if len(seg) != 1 or conflict_original(seg[0]) != "XLTM":
            raise _err("route_bad_shape", "the only XLTM document is '01 xltm/XLTM.md'", path)
        return Route(path, layer)
    if key == "ltm":
        stem = conflict_original(seg[0]) if len(seg) == 1 else ""
        if not stem.endswith(LTM_SUFFIX) or stem == LTM_SUFFIX:
            raise _err("route_bad_shape", "LTM documents are '02 ltm/<tree>_LTM.md'", path)
        return Route(path, layer, tree=stem[: -len(LTM_SUFFIX)])
    if key == "mtm":
        if len(seg) != 2:
            raise _err("route_bad_shape", "MTM documents are '03 mtm/<tree>/<branch>.md'", path)
        return Route(path, layer, tree=seg[0], branch=seg[1])
    if key == "stm":
        if len(seg) != 3:
            raise _err(
                "route_bad_shape", "STM documents are '04 stm/<tree>/<branch>/<leaf>.md'", path
            )
        return Route(path, layer, tree=seg[0], branch=seg[1], leaf=seg[2])
    if len(seg) != 1:
        raise _err("route_bad_shape", f"'{layer.dirname}' holds files only, no folders", path)
    if key == "daily" and not _is_date(conflict_original(seg[0])):
        raise _err("route_bad_shape", "Daily documents are '05 daily/YYYY-MM-DD.md'", path)
    if key == "istm" and seg[0] != "events" and not _is_istm_day(seg[0]):
        raise _err("route_bad_shape", "ISTM files are 'events.jsonl', 'YYYY-MM-DD.jsonl' or "
                   "'YYYY-MM-DD.<host>.jsonl'", path)
    return Route(path, layer, name=seg[0])


def _is_istm_day(stem: str) -> bool:
    """``YYYY-MM-DD``, or ``YYYY-MM-DD.<host>``: one machine's shard of a replicated forest."""
    day, dot, host = stem.partition(".")
    return _is_date(day) and (not dot or is_host(host))


def is_host(text: str) -> bool:
    return HOST.fullmatch(text) is not None and text not in RESERVED_HOSTS


def _is_date(text: str) -> bool:
    if not _DATE.fullmatch(text):
        return False

    try:
        _dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _unknown_layer(first: str, path: str) -> ForestError:
    loose = _LOOSE_LAYER.match(first)
    if loose and int(loose.group(1)) in BY_NUMBER:
        expected = BY_NUMBER[int(loose.group(1))].dirname
        return _err(
            "route_noncanonical_layer_dir", f"layer directory must be exactly '{expected}'", path
        )
    folded = first.casefold()
    for dirname in BY_DIR:
        if dirname.casefold() == folded or dirname.split(" ", 1)[1] == folded:
            return _err(
                "route_noncanonical_layer_dir", f"layer directory must be exactly '{dirname}'", path
            )
    return _err("route_unknown_layer", "not inside a known layer directory", path)


def _err(code: str, message: str, path: str) -> ForestError:
    return ForestError(code, message, {"path": path[:500]})


def casefold_key(path: str) -> str:
    return unicodedata.normalize("NFC", path).casefold()


# The name sync gives the other side's version of a record both machines changed:
# ``<name>-conflict-<host>-<UTC time>.md`` beside ours (docs/sync.md).
CONFLICT_COPY = re.compile(r"-conflict-[a-z0-9-]+-[0-9]{8}T[0-9]{6}Z\.md$")
CONFLICT_TAG = re.compile(r"-conflict-[a-z0-9-]+-[0-9]{8}T[0-9]{6}Z$")


def conflict_original(stem: str) -> str:
    """The stem of the record a conflict copy's stem is a copy of; other stems unchanged.

    A copy of the root map, a tree or a Daily record keeps the shape of its
    original's name with the tag after it, so it parses as a document of the
    same layer: never an owner, as the owner of a path is derived from the
    path (``parent_of``) and no path derives to a copy.
    """
    while (found := CONFLICT_TAG.search(stem)) and found.start():
        stem = stem[:found.start()]  # a copy of a copy: the original's shape is under both
    return stem

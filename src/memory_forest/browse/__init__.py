"""``browse``: write a private, self-contained static site of a forest for people to read.

The site is derived state: it lives outside the forest, can be deleted at any
time and regenerated, and generating it never changes a canonical byte. Its
directory and files are private (0700/0600), written with the same helpers
as the forest itself. Nothing in it loads from the network; it works from
``file://``.

The site folder carries a marker file (``MARKER``) that names the tool and the
forest. A later ``browse`` into a folder with that marker regenerates the
site. Every site, the first one too, is built in a hidden folder beside the
output and renamed into place, so a failed or killed run leaves the old site
(or nothing, or the empty folder) as it was. Any other non-empty folder is
refused, and no folder without the marker is ever deleted. A build folder
that a killed run left behind is removed by the next run.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from importlib.resources import files
from pathlib import Path
from typing import Any

from .. import __version__
from ..checks import check_forest
from ..envelope import result
from ..errors import ForestError
from ..forest import Forest, ForestLike
from ..jsonio import dumps
from ..safety import makedirs_private, write_private
from . import pages
from .graph import graph_data
from .site import build

ASSETS = ("browse.css", "browse.js")
MARKER = ".memory-forest-site"
BUILDING = ".memory-forest-building"  # in a build folder until the swap: the building pid
STALE_BUILD_NS = 60 * 10**9  # a build folder without a readable pid is left alone this long
MAX_MARKER_BYTES = 4096


def browse(forest: ForestLike, out: str | os.PathLike[str]) -> dict[str, Any]:
    """Generate the site for ``forest`` into ``out`` (new or empty)."""
    forest = Forest.of(forest)
    out, state = _check_out(forest.root, out)
    checked = check_forest(forest)
    snap, issues = checked.snap, checked.issues
    _clear_stale_builds(out)
    build = _claim_build(out)
    try:
        written, site = _generate(snap, issues, build)
        (build / BUILDING).unlink()
        _swap_in(build, out, state)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    errors = sum(1 for issue in issues if issue.level == "error")
    return result(
        "browse",
        out=out.name,
        regenerated=state == "site",
        entry="index.html",
        documents=sum(1 for doc in site.docs.values() if doc.markdown),
        files=written,
        counts=snap.layer_counts(),
        issues={"errors": errors, "warnings": len(issues) - errors},
        changed_during_browse=site.changed,
    )


def _generate(snap: Any, issues: list[Any], out: Path) -> tuple[int, Any]:
    site = build(snap, issues)
    writer = _Writer(out)
    try:
        _write_site(site, writer)
        writer.write(MARKER, _marker(snap.config.forest_id))
    finally:
        writer.close()
    return writer.count, site


def _write_site(site: Any, writer: _Writer) -> None:
    for name in ASSETS:
        writer.write(f"assets/{name}", (files(__package__) / "assets" / name).read_bytes())
    writer.write(pages.INDEX, pages.index_page(site))
    writer.write(pages.GRAPH, pages.graph_page(graph_data(site, pages.GRAPH)))
    writer.write(pages.ISSUES, pages.issues_page(site))
    for dirname, docs in site.by_layer().items():
        writer.write(pages.layer_file(dirname), pages.layer_page(site, dirname, docs))
    for doc in site.docs.values():
        writer.write(doc.file, pages.document_page(site, doc))
        doc.body = None  # rendered: let large forests release the text as they go


class _Writer:
    """Private files under the output directory, written by a small pool of threads.

    Each file goes through ``safety.write_private`` (0600 from its first byte,
    fsynced, renamed into place); the threads overlap that disk wait with the
    rendering of the next pages. Folders are created (0700) once, before any
    file in them is queued. At most ``MAX_PENDING`` files wait in memory.
    """

    MAX_PENDING = 64

    def __init__(self, out: Path) -> None:
        self.out = out
        self.dirs: set[str] = {""}
        self.count = 0
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="browse-write")
        self.pending: deque[Future[None]] = deque()

    def write(self, rel: str, content: str | bytes) -> None:
        folder = rel.rpartition("/")[0]
        if folder not in self.dirs:
            makedirs_private(self.out, folder)
            self.dirs.add(folder)
        # A file name that is not UTF-8 is shown with its bytes escaped (\udce9).
        data = content.encode("utf-8", "backslashreplace") if isinstance(content, str) \
            else content
        self.pending.append(self.pool.submit(write_private, self.out / rel, data))
        self.count += 1
        while len(self.pending) > self.MAX_PENDING:
            self.pending.popleft().result()

    def close(self) -> None:
        """Wait for every queued file; re-raise the first failure."""
        try:
            while self.pending:
                self.pending.popleft().result()
        finally:
            for future in self.pending:
                future.cancel()
            self.pool.shutdown(wait=True)


# --- the output directory --------------------------------------------------------------------


def _check_out(root: Path, out: str | os.PathLike[str]) -> tuple[Path, str]:
    """Check the output directory; say what it is: ``new``, ``empty`` or an earlier ``site``.

    Refused: a symlink, a path inside the forest, a non-directory, and a
    non-empty directory without a valid marker.
    """
    out = Path(os.path.abspath(os.fspath(out)))
    try:
        st: os.stat_result | None = os.lstat(out)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ForestError("browse_out_invalid", "the output directory cannot be inspected",
                          {"error": type(exc).__name__}) from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise ForestError("browse_out_symlink",
                          "the output directory is a symlink; pass a real directory")
    parent = out.parent
    if not parent.is_dir():
        raise ForestError("browse_out_parent_missing",
                          "the parent of the output directory does not exist")
    real_out = Path(os.path.realpath(parent)) / out.name
    real_root = Path(os.path.realpath(root))
    if real_out == real_root or real_root in real_out.parents:
        raise ForestError("browse_out_inside_forest",
                          "the output directory must be outside the forest root")
    if st is None:
        return out, "new"
    if not stat.S_ISDIR(st.st_mode):
        raise ForestError("browse_out_not_directory", "the output path is not a directory")
    with os.scandir(out) as entries:
        if not any(True for _ in entries):
            return out, "empty"
    if _is_site(out):
        return out, "site"
    raise ForestError("browse_out_not_empty",
                      f"the output directory is not empty and has no {MARKER} marker; browse "
                      "writes only into a new or empty directory, or over a site it wrote")


def _marker(forest_id: str | None) -> bytes:
    return (dumps({"tool": "memory-forest", "version": __version__,
                   "forest_id": forest_id}) + "\n").encode("utf-8")


def _is_site(folder: Path) -> bool:
    """Whether ``folder`` holds a marker that browse wrote (a regular file naming the tool)."""
    path = folder / MARKER
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MARKER_BYTES:
            return False
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("tool") == "memory-forest"


def _claim_build(out: Path) -> Path:
    """A new private folder beside ``out`` (same parent, so the swap is a rename) that says
    which process builds in it."""
    build = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".new", dir=out.parent))
    write_private(build / BUILDING, f"{os.getpid()}\n".encode())
    return build


def _swap_in(build: Path, out: Path, state: str) -> None:
    """Put the site just built at ``out``: a reader sees the old state or the new site.

    A new or empty output is one rename (over an empty directory it replaces
    it). An old site takes two renames in one directory (for an instant,
    neither is there, never a mixture); the old folder is then deleted only if
    it still carries the marker, so a folder swapped in meanwhile survives.
    """
    if state != "site":
        try:
            os.rename(build, out)
        except OSError:
            raise ForestError("browse_out_not_empty",
                              "the output directory changed while browse was running") from None
        return
    old = build.with_name(build.name[: -len(".new")] + ".old")
    os.rename(out, old)
    try:
        os.rename(build, out)
    except BaseException:
        os.rename(old, out)
        raise
    if _is_site(old):
        shutil.rmtree(old, ignore_errors=True)


def _clear_stale_builds(out: Path) -> None:
    """Remove what killed runs into ``out`` left beside it, so nothing builds up.

    A ``.new`` build folder goes when the process named in it is gone (or,
    with no readable pid, when it is older than ``STALE_BUILD_NS``); a
    ``.old`` folder goes when it is a site and ``out`` exists (a swap was
    done but the old site not yet deleted). Only this user's own folders,
    with exactly the names browse gives them, are touched.
    """
    prefix = f".{out.name}."
    with os.scandir(out.parent) as entries:
        candidates = [Path(entry.path) for entry in entries
                      if entry.name.startswith(prefix) and entry.name.endswith((".new", ".old"))
                      and len(entry.name) == len(prefix) + 8 + 4
                      and entry.is_dir(follow_symlinks=False)
                      and entry.stat(follow_symlinks=False).st_uid == os.getuid()]
    now = time.time_ns()
    for folder in candidates:
        if folder.name.endswith(".old"):
            stale = out.exists() and _is_site(folder)
        else:
            stale = _build_is_stale(folder, now)
        if stale:
            shutil.rmtree(folder, ignore_errors=True)


def _build_is_stale(folder: Path, now_ns: int) -> bool:
    try:
        pid = int((folder / BUILDING).read_text(encoding="ascii").strip())
        if pid <= 0:
            raise ValueError(pid)
    except (OSError, ValueError):
        try:
            return now_ns - os.lstat(folder).st_mtime_ns > STALE_BUILD_NS
        except OSError:
            return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False

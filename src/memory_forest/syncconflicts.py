"""What ``sync`` does with a merge git cannot finish: keep both versions, lose no bytes.

A record both sides changed in the same lines is kept twice (ours in place,
theirs beside it as a conflict copy whose ``conflict_of:`` names the
original), a Daily entry changed two ways twice in its record, a file deleted
on one side keeps the changed version, the config keeps ours. Only a path that
cannot be kept both ways (a symlink, a file against a folder) is refused, and
the caller undoes the merge.

A copy (and a Daily conflict entry) holds the other side's version, so it is
named after the machine that made that version: every commit ``sync`` makes
carries a ``Memory-Forest-Host`` trailer, and the copy takes the trailer of
the last commit on their side that changed the path (``their_host``), never
the name of the machine that happens to run the merge.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from .chain import HOST_FALLBACK, host_segment, this_host
from .errors import ForestError
from .gitrepo import FALLBACK_NAME, Repo
from .layers import LTM_SUFFIX
from .mergedriver import daily_conflict_entries
from .publishing import REGULAR_MODES
from .safety import mkdir_private, write_new_private, write_private
from .writers.markdown import edit_frontmatter, metadata, render_key
from .writers.redact import find_secret

HOST_TRAILER = "Memory-Forest-Host"
UNKNOWN_HOST = "remote"  # their version's machine, when no commit says which it was
DAILY_RECORD = re.compile(r"05 daily/[0-9]{4}-[0-9]{2}-[0-9]{2}\.md")

Stages = dict[int, tuple[str, str]]


def unmerged(repo: Repo) -> dict[str, Stages]:
    """Each unmerged path's stages (1 base, 2 ours, 3 theirs) as (mode, blob id)."""
    found: dict[str, Stages] = {}
    for line in repo.lines_z("ls-files", "-u", "-z"):
        info, _, path = line.partition("\t")
        mode, blob, stage = info.split()
        found.setdefault(path, {})[int(stage)] = (mode, blob)
    return found


def keep_both(repo: Repo, root: Path, paths: dict[str, Stages], their_ref: str,
              config_paths: frozenset[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Resolve every unmerged path so that neither side's bytes are lost.

    - changed on both sides: ours stays in place; theirs becomes a conflict
      copy beside it, or, in a Daily record, a conflict entry in the same
      file (``daily_conflict_entries``); the forest's config (``config_paths``)
      keeps ours and reports theirs' blob (config, not memory);
    - deleted on one side, changed on the other: the changed version stays.

    Returns the reports and the paths that cannot be kept both ways (a
    symlink or submodule on a side, a file against a folder); nothing is
    written unless there are none, and otherwise the caller undoes the merge.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    refused = {path for path, stages in paths.items()
               if any(mode not in REGULAR_MODES for mode, _ in stages.values())}
    refused |= {path.rpartition("~")[0] or path for path, stages in paths.items()
                if _moved_aside(repo, path, stages, their_ref)}  # the name both sides used
    if refused:
        return [], sorted(refused)
    planned: list[tuple[dict[str, Any], list[tuple[str, bytes]]]] = []
    for path in sorted(paths):
        stages = paths[path]
        ours = _blob(repo, stages[2][1]) if 2 in stages else None
        theirs = _blob(repo, stages[3][1]) if 3 in stages else None
        if ours is None and theirs is None:
            planned.append(({"path": path, "kind": "deleted"}, []))
        elif ours is None or theirs is None:
            side = "ours" if theirs is None else "theirs"
            planned.append(({"path": path, "kind": "kept_changed", "kept": side,
                             "deleted_by": "theirs" if side == "ours" else "ours"},
                            [(path, ours if theirs is None else theirs)]))
        elif path in config_paths:
            planned.append(({"path": path, "kind": "kept_ours", "theirs_blob":
                             stages[3][1]}, [(path, ours)]))
        else:
            tag = f"-conflict-{their_host(repo, their_ref, path)}-{stamp}"
            planned.append(_both_changed(path, ours, theirs, tag))
    taken = [copy for _, writes in planned for copy, _ in writes[1:]]
    clashes = [copy for copy in taken if os.path.lexists(root / copy)]
    if clashes or len(set(taken)) != len(taken):
        return [], sorted(set(clashes or taken))
    for report, writes in planned:
        _write_resolution(repo, root, report["path"], writes)
    return [report for report, _ in planned], []


def host_trailer() -> str:
    """The trailer of every commit sync makes: the machine whose versions it holds."""
    return f"{HOST_TRAILER}: {this_host()}"


def their_host(repo: Repo, their_ref: str, path: str) -> str:
    """The machine whose version of ``path`` ``their_ref`` holds, as a file-name segment.

    The host trailer of the last commit there that changed the path; a commit
    sync did not make has none, so its author's name stands in, unless it is
    the name sync commits under when git has none (it names no machine);
    ``remote`` when neither gives a usable name. Whatever the other side wrote
    there is reduced to ``[a-z0-9-]`` and never kept if it looks like a
    credential.
    """
    done = repo.run("log", "-1", f"--format=%(trailers:key={HOST_TRAILER},valueonly)%x1f%an",
                    their_ref, "--", path, check=False)
    trailers, _, author = done.stdout.decode("utf-8", "replace").partition("\x1f")
    named = next((line for line in trailers.splitlines() if line.strip()), "")
    author = author.strip()
    for raw in (named, "" if author == FALLBACK_NAME else author):
        segment = _segment(raw)
        if segment is not None:
            return segment
    return UNKNOWN_HOST


def _segment(raw: str) -> str | None:
    segment = host_segment(raw)
    if segment == HOST_FALLBACK and raw.strip().lower() != HOST_FALLBACK:
        return None  # nothing of the name survived
    return None if find_secret(segment) else segment


def _moved_aside(repo: Repo, path: str, stages: Stages, their_ref: str) -> bool:
    """A file git moved out of the way of the other side's folder (``path~HEAD``): a
    name neither side gave it, so it is not one side's version to keep."""
    if (2 in stages) == (3 in stages):
        return False
    side = "HEAD" if 2 in stages else their_ref
    return repo.run("cat-file", "-e", f"{side}:{path}", check=False).returncode != 0


def _both_changed(path: str, ours: bytes, theirs: bytes, tag: str
                  ) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
    """A path both sides changed: what to write (ours' path first) and the report."""
    if DAILY_RECORD.fullmatch(path):
        try:
            merged = daily_conflict_entries(ours.decode("utf-8"), theirs.decode("utf-8"), tag)
        except (UnicodeDecodeError, ValueError, ForestError):
            merged = None
        if merged is not None:
            text, entries = merged
            return ({"path": path, "kind": "entries", "entries": entries},
                    [(path, text.encode("utf-8"))])
    copy = conflict_copy_path(path, tag)
    text = conflict_copy_text(theirs, path, tag[1:]) if copy.endswith(".md") else None
    return ({"path": path, "kind": "copy", "copy": copy},
            [(path, ours), (copy, text.encode("utf-8") if text is not None else theirs)])


def _write_resolution(repo: Repo, root: Path, path: str, writes: list[tuple[str, bytes]]
                      ) -> None:
    """Write ours (or the kept side) over whatever git left at ``path``, markers
    included, and the copy beside it; stage both, or the deletion both sides made."""
    if not writes:
        repo.run("rm", "-q", "--sparse", "--cached", "--ignore-unmatch", "--", path)
        return
    for number, (target, data) in enumerate(writes):
        folder = (root / target).parent
        missing = []
        while not os.path.lexists(folder) and folder != root:
            missing.append(folder)
            folder = folder.parent
        for directory in reversed(missing):
            mkdir_private(directory)
        if number == 0:
            write_private(root / target, data)  # never the marked-up file git left
        else:
            write_new_private(root / target, data)
    repo.run("add", "--sparse", "--", *(target for target, _ in writes))


def _blob(repo: Repo, blob: str) -> bytes:
    return repo.run("cat-file", "blob", blob).stdout


def conflict_copy_path(path: str, tag: str) -> str:
    """``<name><tag><extension>`` beside ``path`` (``tag``: ``-conflict-<host>-<time>``).

    A record's copy keeps the shape of its layer's names (``XLTM-conflict-…``,
    ``<tree>_LTM-conflict-…``, ``<date>-conflict-…``), so it parses as a
    document of the same layer; the name stays within a segment's 200 characters.
    """
    folder, _, name = path.rpartition("/")
    dot = name.rfind(".")
    stem, extension = (name[:dot], name[dot:]) if dot > 0 else (name, "")
    room = 200 - len(tag)
    if len(stem) > room:
        keep = LTM_SUFFIX if path.startswith("02 ltm/") and stem.endswith(LTM_SUFFIX) else ""
        stem = stem[:room - len(keep)] + keep
    return f"{folder}/{stem}{tag}{extension}" if folder else f"{stem}{tag}{extension}"


def conflict_copy_text(data: bytes, path: str, tag: str) -> str | None:
    """Theirs, with ``conflict_of: <path>`` and an id of its own; None if unreadable."""
    try:
        text = data.decode("utf-8")
        old_id = metadata(text).get("id")
        new_id = f"{old_id}-{tag}" if isinstance(old_id, str) and old_id else tag
        text = edit_frontmatter(text, {"id": new_id})
    except (UnicodeDecodeError, ForestError, ValueError):
        return None
    lead = "\ufeff---\n" if text.startswith("\ufeff---\n") else "---\n"
    if not text.startswith(lead):
        return None
    return lead + render_key("conflict_of", path) + text[len(lead):]

"""What ``sync`` publishes: only what the forest owns, in both directions.

A forest folder also holds what the user or other programs left in it (a
symlink, a ``notes.txt``, a root ``.env``, a picture beside a leaf, a nested
repository). The remote is another machine, so the rule is an allow-list: a
path is published when it is a regular file inside a layer directory with
that layer's extension (the files the forest reads and writes), or one of
``.memory-forest/forest.json``, ``.gitignore``, ``.gitattributes``; or when
``forest.json`` opts it in on purpose (``"sync": {"publish": [glob, ...]}``).
A symlink or a submodule is never published, opted in or not.

Outgoing, everything else stays local and is listed (``left_local``); a
non-owned path git already tracks (an older version's commit, a hand commit)
is taken out of the index, the local file kept. Incoming, non-owned entries
are left out of the work tree by git's own sparse checkout (one negative
pattern per path), so a merge records them but never writes them.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from .config import Config
from .errors import ForestError
from .gitrepo import Repo
from .layers import BY_DIR
from .safety import Walk
from .statefiles import CONFIG, STATE_DIR, state_rel

# What git stores as a plain file (a symlink is 120000, a submodule 160000).
REGULAR_MODES = frozenset({"100644", "100755"})
_MODE_REASONS = {"120000": "symlink", "160000": "submodule"}
OWN_FILES = frozenset({".gitignore", ".gitattributes", state_rel(CONFIG)})
MAX_LISTED = 200


def path_reason(path: str, publish: tuple[str, ...] = ()) -> str | None:
    """Why a regular file at ``path`` stays local; None when it is published."""
    if path in OWN_FILES:
        return None
    if path.startswith(STATE_DIR + "/"):
        return "state"  # derived state never leaves the machine, opted in or not
    first, _, rest = path.partition("/")
    layer = BY_DIR.get(first)
    if layer is not None and rest and path.endswith(layer.extension):
        return None
    if publish and opted_in(publish, path):
        return None
    return "extension" if layer is not None and rest else "outside_layers"


def entry_reason(mode: str, path: str, publish: tuple[str, ...] = ()) -> str | None:
    """Why a git tree or index entry is not the forest's; None when it is."""
    if mode not in REGULAR_MODES:
        return _MODE_REASONS.get(mode, "not_regular")
    return path_reason(path, publish)


def local_reason(root: Path, path: str, publish: tuple[str, ...] = ()) -> str | None:
    """Why what sits at ``path`` in the work tree stays local; None when it is published.

    ``path`` as git lists it: a trailing slash is a nested repository.
    """
    if path.endswith("/"):
        return "repository"
    try:
        st = os.lstat(root / path)
    except FileNotFoundError:
        return path_reason(path, publish)  # a deletion: published when the path is
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    if not stat.S_ISREG(st.st_mode):
        return "repository" if stat.S_ISDIR(st.st_mode) else "not_regular"
    return path_reason(path, publish)


def allowed_attachment(config: Config, path: str) -> bool:
    """Whether ``forest.json`` opts ``path`` in as an attachment, whose content may be
    binary (the forest's own files are text; an attachment is published on purpose)."""
    return bool(config.publish) and path_reason(path) is not None \
        and path_reason(path, config.publish) is None


# --- globs ----------------------------------------------------------------------------------

_COMPILED: dict[tuple[str, ...], re.Pattern[str]] = {}


def opted_in(publish: tuple[str, ...], path: str) -> bool:
    """Whether a pattern of ``publish`` matches the whole root-relative ``path``."""
    pattern = _COMPILED.get(publish)
    if pattern is None:
        pattern = _COMPILED[publish] = re.compile(
            "|".join(f"(?:{glob_regex(glob)})" for glob in publish))
    return pattern.fullmatch(path) is not None


def glob_regex(glob: str) -> str:
    """A publish glob as a regular expression: ``*`` any characters within one segment,
    ``?`` one, a whole ``**`` segment any number of segments; all else literal."""
    segments = glob.split("/")
    parts = []
    for number, segment in enumerate(segments):
        last = number == len(segments) - 1
        if segment == "**":
            parts.append("[^/]+(?:/[^/]+)*" if last else "(?:[^/]+/)*")
            continue
        parts.append("".join("[^/]*" if char == "*" else "[^/]" if char == "?"
                             else re.escape(char) for char in segment) + ("" if last else "/"))
    return "".join(parts)


# --- outgoing -------------------------------------------------------------------------------


class Plan(NamedTuple):
    """What one commit takes: published changes, what stays local, what stops being tracked."""

    published: list[str]
    left_local: list[dict[str, str]]
    untrack: list[dict[str, str]]


def plan(repo: Repo, root: Path, publish: tuple[str, ...]) -> Plan:
    """Find the tracked entries the forest does not own that sit in this work tree, and
    sort every other change git sees (not ignored) into published or left local."""
    untrack = []
    for tag, mode, path in _index_entries(repo):
        reason = entry_reason(mode, path, publish)
        if tag != "S" and reason is not None:  # S: never checked out here (incoming)
            untrack.append({"path": path, "reason": reason})
    leaving = {entry["path"] for entry in untrack}
    fields = repo.lines_z("status", "--porcelain=v1", "-z", "--untracked-files=all",
                          "--no-renames")
    published, left = [], []
    for path in sorted({field[3:] for field in fields if len(field) > 3} - leaving):
        reason = local_reason(root, path, publish)
        if reason is None:
            published.append(path)
        else:
            left.append({"path": path.rstrip("/"), "reason": reason})
    return Plan(published, left, untrack)


def _index_entries(repo: Repo) -> list[tuple[str, str, str]]:
    """Each index entry as (``ls-files -t`` tag, mode, path); one line per stage.

    Sliced from the bytes (``T MODE OBJECT STAGE\tPATH``): every sync lists the
    whole index, 100,000 entries in a large forest.
    """
    data = repo.run("ls-files", "-t", "-s", "-z").stdout
    return [(record[:1].decode(), record[2:8].decode(), os.fsdecode(record.partition(b"\t")[2]))
            for record in data.split(b"\0") if record]


def stage(repo: Repo, outgoing: Plan) -> None:
    """Stage the published changes and take the non-owned tracked paths out of the index
    (their files stay); never ``git add -A``."""
    # --sparse: a path kept out of the work tree by the patterns below is still git's to
    # update in the index (without it, git refuses and commits nothing)
    if outgoing.untrack:
        _with_paths(repo, ("rm", "-q", "--sparse", "--cached", "--ignore-unmatch"),
                    (entry["path"] for entry in outgoing.untrack))
    if outgoing.published:
        _with_paths(repo, ("add", "-A", "--sparse"), outgoing.published)


def _with_paths(repo: Repo, command: tuple[str, ...], paths: Iterable[str]) -> None:
    """A git command over literal paths, given on stdin (no argument-length limit, and no
    name is read as a glob or an option)."""
    repo.run("--literal-pathspecs", *command, "--pathspec-from-file=-", "--pathspec-file-nul",
             stdin=b"".join(os.fsencode(path) + b"\0" for path in paths))


def summary(entries: list[dict[str, str]]) -> dict[str, Any]:
    return {"count": len(entries), "paths": entries[:MAX_LISTED]}


def would_publish_all(root: Path, listing: Walk, publish: tuple[str, ...]) -> Plan:
    """A forest without a repository: what its first commit would take, from a walk
    (a nested repository is one entry, as ``git status`` shows it)."""
    nested = sorted(path[:-len("/.git")] for path in listing.dirs if path.endswith("/.git"))
    published, left = [".gitattributes", ".gitignore"], [
        {"path": path, "reason": "repository"} for path in nested]
    odd = [issue.path for issue in listing.issues if issue.code in ("symlink", "special_file")]
    for path in sorted({*(entry.path for entry in listing.files), *odd}):
        if path.startswith(STATE_DIR + "/") and path != state_rel(CONFIG):
            continue  # ignored by the .gitignore sync writes, so never listed
        if any(path.startswith(repo + "/") for repo in nested):
            continue
        reason = local_reason(root, path, publish)
        if reason is None:
            published.append(path)
        else:
            left.append({"path": path, "reason": reason})
    return Plan(sorted(set(published)), sorted(left, key=lambda entry: entry["path"]), [])


# --- incoming -------------------------------------------------------------------------------


def leave_out(repo: Repo, theirs: str | None, publish: tuple[str, ...]
              ) -> dict[str, Any] | None:
    """Keep the non-owned entries of ``theirs`` (and those already left out) out of the
    work tree through the next merge or checkout; what is newly left out.

    Git writes the patterns (``sparse-checkout set --no-cone``) and applies
    them: an entry left out before that the rule now owns (an attachment
    opted in since) is checked out. Without ``theirs``, only that. Nothing
    is done while neither side holds such an entry.
    """
    kept_out = _kept_out(repo, publish)
    incoming = incoming_refused(repo, theirs, publish) if theirs else []
    paths = sorted(kept_out | {entry["path"] for entry in incoming})
    blocked = _blocked(repo, theirs, incoming, kept_out) if theirs else []
    unwritable = [path for path in paths if "\n" in path or "\r" in path]
    if blocked or unwritable:
        raise ForestError("sync_conflict", "the remote changed a path in a way git cannot "
                          "merge without writing over the file here (a published file turned "
                          "into a symlink or submodule, or a file this machine no longer "
                          "publishes changed there), or named one no pattern can hold; nothing "
                          "was merged; make the two sides agree on one machine (move the local "
                          "file aside), then sync again", {"paths": (blocked or unwritable)
                                                          [:MAX_LISTED]})
    if paths:
        patterns = "/*\n" + "".join(f"!/{_escape(path)}\n" for path in paths)
        repo.run("sparse-checkout", "set", "--no-cone", "--stdin", stdin=patterns.encode())
    elif repo.get_config("core.sparseCheckout") == "true":
        repo.run("sparse-checkout", "disable")
    return _fresh(incoming, kept_out)


def _blocked(repo: Repo, theirs: str, incoming: list[dict[str, str]], kept_out: set[str]
             ) -> list[str]:
    """Incoming non-owned entries whose merge would write over a file here: one this forest
    tracks and publishes, or a local file at a path the common commit held (git leaves its
    version of a path it merges with a conflict in the work tree, kept out or not)."""
    base: str | None = None
    found = []
    for path in (entry["path"] for entry in incoming if entry["path"] not in kept_out):
        if _tracked_here(repo, path):
            found.append(path)
        elif os.path.lexists(repo.root / path):
            if base is None:
                done = repo.run("merge-base", "HEAD", theirs, check=False)
                base = done.stdout.decode().strip() if done.returncode == 0 else ""
            if base and repo.run("cat-file", "-e", f"{base}:{path}",
                                 check=False).returncode == 0:
                found.append(path)
    return sorted(found)


def not_checked_out(repo: Repo, theirs: str, publish: tuple[str, ...]) -> dict[str, Any] | None:
    """What a merge of ``theirs`` would leave out of the work tree that is not out yet."""
    return _fresh(incoming_refused(repo, theirs, publish), _kept_out(repo, publish))


def still_out(found: dict[str, Any] | None, publish: tuple[str, ...]
              ) -> dict[str, Any] | None:
    """A ``not_checked_out`` report once the publish list changed: what it now owns is
    checked out, so no longer listed."""
    if found is None:
        return None
    kept = [entry for entry in found["paths"] if entry["reason"] in _MODE_REASONS.values()
            or path_reason(entry["path"], publish) is not None]
    return summary(kept) if kept else None


def _kept_out(repo: Repo, publish: tuple[str, ...]) -> set[str]:
    """The entries out of the work tree (skip-worktree) that the rule still does not own."""
    return {path for tag, mode, path in _index_entries(repo)
            if tag == "S" and entry_reason(mode, path, publish) is not None}


def _fresh(incoming: list[dict[str, str]], kept_out: set[str]) -> dict[str, Any] | None:
    fresh = [entry for entry in incoming if entry["path"] not in kept_out]
    return summary(fresh) if fresh else None


def incoming_refused(repo: Repo, theirs: str, publish: tuple[str, ...]) -> list[dict[str, str]]:
    """The entries the forest does not own that a merge of ``theirs`` would bring.

    With a common commit, only what ``theirs`` changed since it (in proportion
    to the change): an entry both sides already had is either left out here
    or one this sync just stopped tracking, which the merge then deletes.
    """
    if not repo.has_commit(theirs):
        return []
    if repo.has_commit() and repo.run("merge-base", "HEAD", theirs, check=False).returncode == 0:
        fields = repo.lines_z("diff", "--raw", "-z", "--no-renames", "--no-abbrev",
                              f"HEAD...{theirs}")
        entries = [(info.split(" ")[1], path) for info, path in zip(fields[::2], fields[1::2],
                                                                    strict=True)
                   if not info.endswith("D")]
    else:
        entries = [(line.split(" ", 1)[0], line.partition("\t")[2])
                   for line in repo.lines_z("ls-tree", "-r", "-z", "--full-tree", theirs)]
    found = []
    for mode, path in entries:
        reason = entry_reason(mode, path, publish)
        if reason is not None:
            found.append({"path": path, "reason": reason})
    return sorted(found, key=lambda entry: entry["path"])


def _tracked_here(repo: Repo, path: str) -> bool:
    return bool(repo.run("--literal-pathspecs", "ls-files", "-z", "--", path).stdout)


def _escape(path: str) -> str:
    """A path as a literal sparse-checkout (gitignore-style) pattern."""
    escaped = re.sub(r"([\\*?\[!#])", r"\\\1", path)
    stripped = escaped.rstrip(" ")
    return stripped + "\\ " * (len(escaped) - len(stripped))

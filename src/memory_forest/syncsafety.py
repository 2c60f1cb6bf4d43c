"""What ``sync`` refuses before it touches the work tree, and the repository faults doctor heals.

A remote is another machine's word, so what it brings is checked before git
merges it: a tree entry git itself will not check out (``..``, ``.``,
``.git`` in any case, a backslash) would make every merge fail half-way, and
the next sync again, for good. Such a commit is refused whole: nothing is
committed, merged or pushed, the branch stays where it was, and local writes
carry on; ``status`` and ``doctor`` name the commit until the remote branch no
longer holds it.

A ``.git/index.lock`` left by a git process that died makes every ``git add``
fail. Only git writes it, and nothing in it says who, so it counts as stale
when no git process is working in the forest (or, where processes cannot be
listed, when it is older than any git command sync runs may take).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from .errors import ForestError, as_io_error
from .gitrepo import TIMEOUT_SECONDS, Repo, executable

MAX_PATHS = 20
INDEX_LOCK = ".git/index.lock"
RECOVER_REMOTE = ("reset the remote branch to a commit before it (from a machine with a good "
                  "history: 'git push --force REMOTE GOOD:BRANCH'), or sync another remote "
                  "with 'memory-forest sync ROOT --remote NAME'")
REPAIR_LOCK = "memory-forest doctor ROOT --repair"


def unsafe_path(path: str) -> bool:
    """A path git refuses to check out, or one that could leave the work tree."""
    if "\\" in path or "\0" in path or path.startswith("/"):
        return True
    for part in path.split("/"):
        if part in ("", ".", ".."):
            return True
        # NTFS and HFS+ ignore case and trailing dots or spaces: each of these is .git there
        if part.rstrip(". ").lower() in (".git", "git~1"):
            return True
    return False


def unsafe_incoming(repo: Repo, theirs: str) -> dict[str, Any] | None:
    """The oldest commit of ``theirs`` not in HEAD whose changes hold an unsafe path.

    ``git diff-tree`` over the new commits lists every path each one adds or
    changes, so a path is seen in the commit that brought it, whatever came after.
    """
    if not repo.has_commit(theirs):
        return None
    span = f"HEAD..{theirs}" if repo.has_commit() else theirs
    commits = repo.out("rev-list", "--reverse", span).split()
    if not commits:
        return None
    listed = repo.run("diff-tree", "--stdin", "-r", "-z", "--name-only", "--root", "-m",
                      stdin="".join(f"{commit}\n" for commit in commits).encode()).stdout
    known, current = set(commits), None
    found: dict[str, list[str]] = {}
    for field in listed.split(b"\0"):
        name = os.fsdecode(field)
        if name in known:
            current = name
        elif field and current is not None and unsafe_path(name):
            found.setdefault(current, []).append(name)
    if not found:
        return None
    first = next(commit for commit in commits if commit in found)
    return {"commit": first, "commits": len(found),
            "paths": sorted(set(found[first]))[:MAX_PATHS]}


def refuse_unsafe(repo: Repo, remote: str, branch: str) -> None:
    """``sync_remote_unsafe`` when the fetched branch brings an unsafe path."""
    theirs = f"refs/remotes/{remote}/{branch}"
    found = unsafe_incoming(repo, theirs)
    if found is not None:
        raise ForestError("sync_remote_unsafe", "the remote branch holds a commit with a path "
                          "git cannot check out safely; nothing was merged, committed or "
                          f"pushed, and local writes keep working; {RECOVER_REMOTE}",
                          {"remote": remote, "branch": branch, **found, "fix": RECOVER_REMOTE})


def refuse_index_lock(root: Path) -> None:
    """``git_index_locked`` before sync starts git on a repository another git holds."""
    found = index_lock(root)
    if found is None:
        return
    if found["stale"]:
        raise ForestError("git_index_locked", "a git process that died left .git/index.lock; "
                          f"run '{REPAIR_LOCK}' to remove it, then sync again",
                          {"stale": True, "fix": REPAIR_LOCK})
    raise ForestError("git_index_locked", "a git command is working in the forest "
                      "(.git/index.lock); sync again when it has finished",
                      {"stale": False, "fix": "memory-forest sync ROOT"})


def index_lock(root: Path) -> dict[str, Any] | None:
    """``.git/index.lock`` when it exists: its age and whether a git process may own it."""
    try:
        age = time.time() - os.lstat(root / INDEX_LOCK).st_mtime
    except (FileNotFoundError, NotADirectoryError):
        return None
    running = _git_running(root)
    stale = (not running) if running is not None else age > TIMEOUT_SECONDS
    return {"age_seconds": round(max(age, 0.0), 1), "stale": stale}


def _git_running(root: Path) -> bool | None:
    """Whether a git process works in ``root`` (its cwd is in it); None: cannot tell."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    top = os.path.realpath(root)
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
                if not handle.read().startswith("git"):
                    continue
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue  # gone, or another user's: not one that works on this forest's files
        if cwd == top or cwd.startswith(top + os.sep):
            return True
    return False


def damaged(root: Path) -> list[dict[str, Any]]:
    """The repository faults that stop sync, each with its code and the command that fixes it.

    Nothing here is fatal: a repository that cannot be read is just not
    listed (sync reports its own failure).
    """
    repo = Repo(root)
    if not repo.exists():
        return []
    found = []
    lock = index_lock(root)
    if lock is not None:
        found.append({"piece": INDEX_LOCK, "code": "git_index_locked", **lock,
                      "fix": REPAIR_LOCK if lock["stale"] else "wait for the git command"})
    try:
        found += _unsafe_remotes(repo)
    except ForestError:
        pass  # no git, or a repository git cannot read: sync names it
    return found


def _unsafe_remotes(repo: Repo) -> list[dict[str, Any]]:
    """Each fetched remote branch that brings an unsafe path, by the commit that does."""
    executable()
    refs = repo.out("for-each-ref", "--format=%(refname)", "refs/remotes/").split()
    found = []
    for ref in refs:
        if ref.endswith("/HEAD"):
            continue
        hit = unsafe_incoming(repo, ref)
        if hit is not None:
            remote, _, branch = ref[len("refs/remotes/"):].partition("/")
            found.append({"piece": f"remote branch {remote}/{branch}",
                          "code": "sync_remote_unsafe", "remote": remote, "branch": branch,
                          **hit, "fix": RECOVER_REMOTE})
    return found


def repair(root: Path) -> dict[str, Any] | None:
    """Remove a stale ``.git/index.lock`` (checked again just before); what was done."""
    lock = index_lock(root)
    if lock is None or not lock["stale"]:
        return None
    try:
        os.unlink(root / INDEX_LOCK)
    except FileNotFoundError:
        return None
    return {"removed": INDEX_LOCK, "age_seconds": lock["age_seconds"]}


def derived_failure(exc: BaseException) -> dict[str, Any]:
    """A failure to bring derived state up to date, as sync reports it without failing:
    the index is rebuilt from the files by the next ``index``, and the merge stands."""
    if isinstance(exc, ForestError):
        return exc.to_dict()
    stable = as_io_error(exc) or ForestError(
        "index_corrupt", "the index cannot be read; run 'memory-forest index ROOT' to "
        "rebuild it", {"error": type(exc).__name__})
    return stable.to_dict()

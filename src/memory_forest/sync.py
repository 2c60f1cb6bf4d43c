"""``sync``: replicate a forest through git, under the forest lock.

One run: take the lock; finish or undo an interrupted write (the journal);
set the repository up (``.gitignore``, ``.gitattributes``, the Daily merge
driver in the local config: a plain ``git clone`` has none of it); commit
the changes to what the forest owns (``publishing``: the rest stays local),
after the credential rules found nothing in them or in any commit the push
would send (``syncscan``); fetch and merge the remote branch (never a rebase:
the history each machine wrote stays as it was); restore private modes on
what git wrote, and bring the index and its problems up to date, in
proportion to the change (``syncsettle``; problems are reported, one file's
problem never fails the sync); push; release the lock.

A forest with no repository gets one; a repository with no remote commits
locally and pushes nothing (``remote: null``). ``--init URL`` on a forest with
a history of its own joins the two histories (the second machine that already
had a forest).

No conflict marker ever lands in a canonical file, and neither side's bytes
are lost: a record both sides changed in the same lines is kept twice (ours
in place, theirs beside it as a conflict copy whose ``conflict_of:`` names the
original), a Daily entry changed two ways twice in its record, a file deleted
on one side keeps the changed version, the config keeps ours. Only a path that
cannot be kept both ways (a symlink, a file against a folder) aborts the
merge: ``sync_conflict`` with the paths, the forest exactly as it was before.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import gitrepo, lock, publishing, syncconflicts
from .config import load_config
from .envelope import result
from .errors import ForestError, usage_error
from .forest import Forest, ForestLike
from .gitrepo import Repo
from .ignore import GIT_DEBRIS_PATTERNS
from .lockline import DEFAULT_WAIT
from .mergedriver import DRIVERS
from .publishing import Plan, summary
from .safety import walk, write_private
from .statefiles import CONFIG, RECEIPTS, STATE_DIR, index_path, state_dir, state_rel
from .syncsafety import refuse_index_lock, refuse_unsafe
from .syncscan import scan
from .syncsettle import settle
from .testhooks import crash_point
from .writers import journal

if TYPE_CHECKING:
    from .results import SyncResult

DEFAULT_REMOTE = "origin"
# The files sync itself writes at the root: git's, not memory.
SYNC_FILES = (".gitignore", ".gitattributes")
# Both sides changed one of these: ours is kept, theirs reported (config, not memory).
CONFIG_PATHS = frozenset({*SYNC_FILES, state_rel(CONFIG)})
MAX_LISTED = 200

GITATTRIBUTES = """\
# Written by memory-forest sync. ISTM files are append-only lines: a merge keeps
# both sides' lines. Daily records are lists of entries: the driver keeps both
# sides' entries. Other records: the driver merges both sides' new child links
# (drivers registered in .git/config by every sync, never committed).
*.md merge=memory-forest-record
06[[:space:]]istm/*.jsonl merge=union
05[[:space:]]daily/*.md merge=memory-forest-daily
"""


def gitignore() -> str:
    return ("# Written by memory-forest sync. Derived state (index, receipts, journal,\n"
            "# proposals) stays on each machine; the forest's config travels with it.\n"
            f"/{STATE_DIR}/*\n!/{state_rel(CONFIG)}\n/.obsidian/\n/.trash/\n"
            "# Editor and OS debris, which the forest itself never reads.\n"
            + "".join(f"{pattern}\n" for pattern in GIT_DEBRIS_PATTERNS))


def sync(forest: ForestLike, remote: str | None = None, init: str | None = None,
         dry_run: bool = False, allow_secrets: bool = False, wait: float = DEFAULT_WAIT
         ) -> SyncResult:
    lock.check_wait(wait)
    name = remote or DEFAULT_REMOTE
    if init is not None and not init.strip():
        raise usage_error("sync_init_url_empty", "--init takes the remote's URL")
    started = time.perf_counter()
    handle = Forest.of(forest)
    root = handle.root
    gitrepo.executable()  # git_missing before anything else happens
    with lock.held(root, "sync", wait=wait):
        outcome = _Sync(handle, name, dry_run, allow_secrets,
                        named=remote is not None).run(init)
    handle.forget_index()  # a clone's first sync builds the index the handle may hold open
    outcome["seconds"] = round(time.perf_counter() - started, 3)
    return result("sync", **outcome)


def under_lock(forest: Forest, remote: str | None = None) -> dict[str, Any]:
    """One sync under the forest lock the caller already holds (``maintain --sync``)."""
    gitrepo.executable()
    return _Sync(forest, remote or DEFAULT_REMOTE, False, False,
                 named=remote is not None).run(None)


class _Sync:
    def __init__(self, forest: Forest, remote: str, dry_run: bool, allow_secrets: bool,
                 named: bool = False) -> None:
        root = forest.root
        self.forest, self.root, self.remote, self.named = forest, root, remote, named
        self.dry_run, self.allow_secrets = dry_run, allow_secrets
        self.repo = Repo(root)
        config = load_config(root)
        self.publish = config.publish
        # what may be published as binary content: attachments forest.json opts in
        self.allow_binary = partial(publishing.allowed_attachment, config)
        self.out: dict[str, Any] = {"remote": remote, "dry_run": dry_run, "created": False}

    def run(self, init: str | None) -> dict[str, Any]:
        repo, out = self.repo, self.out
        if not self.dry_run:
            recovered = journal.recover(self.forest)
            out["recovered"] = recovered["action"] if recovered else None
        if not repo.exists():
            if self.dry_run:
                return {**out, "remote": self.remote if init is not None else None,
                        "created": True, "nothing_to_do": False, "incoming": None,
                        **self._would(self._would_publish_all())}
            repo.init()
            out["created"] = True
        refuse_index_lock(self.root)
        if init is not None:
            self._add_remote(init)
            if self.dry_run and self.remote not in repo.remotes():
                return {**out, "nothing_to_do": False, "incoming": None,
                        **self._would(self._plan())}  # the remote is not added: no fetch yet
        remotes = repo.remotes()
        if self.remote not in remotes:
            if self.named or remotes:
                raise ForestError("sync_remote_missing", "the repository has no remote of this "
                                  "name; add one with 'memory-forest sync ROOT --init URL', or "
                                  "name one of its remotes with --remote",
                                  {"remote": self.remote, "remotes": remotes[:20]},
                                  exit_code=2)
            return self._without_remote()
        if not self.dry_run:
            if (self.root / ".git" / "MERGE_HEAD").exists():
                # a sync killed inside git's merge: local work is committed, so undoing
                # the half-done merge loses nothing, and this run merges again
                repo.run("merge", "--abort", check=False)
            self._set_up()
        self._fetch()
        branch = self._branch()
        refuse_unsafe(repo, self.remote, branch)  # before anything is committed or checked out
        out["branch"] = branch
        # Joining histories that share no commit is what --init asks for, and what a forest
        # that never committed asks for when it meets a remote with history.
        join = init is not None
        if not self.dry_run and not repo.has_commit() and repo.has_commit(
                self._tracking(branch)):
            if set(self._plan().published) <= set(SYNC_FILES):
                # a clone of a remote whose HEAD names another branch: start from the
                # remote's history (sync's own two files are written again below)
                theirs = self._tracking(branch)
                out["not_checked_out"] = publishing.leave_out(repo, theirs, self.publish)
                repo.run("checkout", "-f", "-q", "-B", branch, theirs)
                self._set_up()
            else:
                join = True  # a forest of its own: its first commit, then the two merge
        outgoing = self._plan()
        findings = scan(repo, self.remote, outgoing.published, self.allow_binary)
        if self.dry_run:
            return {**out, **self._would(outgoing), "secrets": findings,
                    "incoming": self._incoming(branch), "nothing_to_do": False}
        self._refuse_secrets(findings)
        out["committed"] = self._commit(outgoing)
        crash_point("sync_committed")
        before = repo.rev("HEAD")
        pulled = self._merge(branch, join)
        crash_point("sync_merged")
        self._follow_config()
        changed = repo.lines_z("diff", "--name-only", "-z", before, "HEAD") if pulled else []
        out["pulled"] = {"commits": pulled, "files": len(changed), "paths": changed[:MAX_LISTED],
                         "not_checked_out": out.pop("not_checked_out", None)}
        if out["committed"] is None and not pulled and _index_exists(self.root) \
                and not out["created"] and not self._ahead(branch):
            return {**out, "nothing_to_do": True, "pushed": False}
        self._settle()
        out["pushed"] = self._push(branch)
        out["nothing_to_do"] = False
        return out

    def _without_remote(self) -> dict[str, Any]:
        """A repository with no remote at all: commit, check and index; nothing to push.

        Only the changes are scanned for credentials: nothing is published
        yet, and the first push scans every commit it sends.
        """
        out = self.out
        out.update(remote=None, branch=None, pulled=None)
        if not self.dry_run:
            self._set_up()
        outgoing = self._plan()
        findings = scan(self.repo, None, outgoing.published, self.allow_binary)
        if self.dry_run:
            return {**out, **self._would(outgoing), "secrets": findings, "incoming": None,
                    "nothing_to_do": False}
        self._refuse_secrets(findings)
        out["committed"] = self._commit(outgoing)
        if out["committed"] is None and _index_exists(self.root) and not out["created"]:
            return {**out, "nothing_to_do": True, "pushed": False}
        self._settle()
        out.update(pushed=False, nothing_to_do=False)
        return out

    def _refuse_secrets(self, findings: list[dict[str, Any]]) -> None:
        if findings and not self.allow_secrets:
            if not any("commit" in finding for finding in findings):
                raise ForestError("secrets_found", "credential-shaped text or binary content "
                                  "in what sync would commit; remove it (or pass "
                                  "--allow-secrets); nothing was committed or pushed",
                                  {"findings": findings[:MAX_LISTED]})
            base = self._published_base()
            undo = f"git -C ROOT reset --mixed {base}" if base else \
                "git -C ROOT update-ref -d HEAD"
            raise ForestError("secrets_found", "a local commit the remote has not seen holds "
                              "credential-shaped text or binary content (details.findings "
                              f"names the commit); take the local commits back with '{undo}' "
                              "(the files stay as they are), remove it from the files, then "
                              "sync again; nothing was committed or pushed",
                              {"findings": findings[:MAX_LISTED], "reset_to": base})
        self.out["secrets"] = findings

    def _published_base(self) -> str | None:
        """The newest commit the remote's branch already holds that HEAD is built on."""
        theirs = self._tracking(self.out.get("branch") or self.repo.branch())
        if not self.repo.has_commit(theirs):
            return None
        done = self.repo.run("merge-base", "HEAD", theirs, check=False)
        base = done.stdout.decode("ascii").strip()
        return base if done.returncode == 0 and base else None

    def _settle(self) -> None:
        """After a commit or a merge: the directories git cannot carry, private modes,
        the index and its problems, in proportion to what changed."""
        self.out.update(settle(self.root, self.repo))

    # --- the repository ---------------------------------------------------------------------

    def _add_remote(self, url: str) -> None:
        repo = self.repo
        if self.remote in repo.remotes():
            if repo.get_config(f"remote.{self.remote}.url") != url:
                raise ForestError("sync_remote_exists", "the repository already has a remote "
                                  "of this name with another URL", {"remote": self.remote},
                                  exit_code=2)
            return
        if not self.dry_run:
            repo.run("remote", "add", self.remote, url)

    def _set_up(self) -> None:
        """The files and the local config every sync needs, on a new repository or a clone.

        The driver's command names this Python (a clone made on another machine
        has another one), so it is written again before every merge.
        """
        for name, text in zip(SYNC_FILES, (gitignore(), GITATTRIBUTES), strict=True):
            path = self.root / name
            if os.path.islink(path):
                raise ForestError("symlink", f"{name} is a symlink; sync never follows one",
                                  {"path": name})
            try:
                current = path.read_bytes()
            except FileNotFoundError:
                current = None
            if current != text.encode():
                write_private(path, text.encode())

        for kind, name in DRIVERS.items():
            self.repo.config(f"merge.{name}.name", f"memory-forest {kind} merge")
            self.repo.config(f"merge.{name}.driver", f"{shlex.quote(sys.executable)} -P -m "
                             f"memory_forest.mergedriver {kind} %O %A %B")

    def _plan(self) -> Plan:
        return publishing.plan(self.repo, self.root, self.publish)

    def _would_publish_all(self) -> Plan:
        """A forest without a repository: what its first commit would take."""
        listing = walk(self.root, self.forest.limits)
        return publishing.would_publish_all(self.root, listing, self.publish)

    def _would(self, outgoing: Plan) -> dict[str, Any]:
        """A dry run's view of a commit: what it takes, what stays, what stops being tracked."""
        return {"would_commit": outgoing.published, "left_local": summary(outgoing.left_local),
                "stop_tracking": summary(outgoing.untrack) if outgoing.untrack else None}

    def _branch(self) -> str:
        """The remote branch to sync with: the local branch's name when the remote has it
        (or has no branch yet), else the remote's default branch, else its only one."""
        repo = self.repo
        local = repo.branch()
        if repo.has_commit(self._tracking(local)):
            return local
        prefix = f"refs/remotes/{self.remote}/"
        head = repo.run("symbolic-ref", "-q", prefix + "HEAD", check=False)
        if head.returncode == 0:
            target = head.stdout.decode("utf-8", "surrogateescape").strip()
            if target.startswith(prefix) and repo.has_commit(target):
                return target[len(prefix):]
        names = [name for name in repo.out("for-each-ref", "--format=%(refname)", prefix).split()
                 if name != prefix + "HEAD"]
        return names[0][len(prefix):] if len(names) == 1 else local

    def _tracking(self, branch: str) -> str:
        return f"refs/remotes/{self.remote}/{branch}"

    def _commit(self, outgoing: Plan) -> dict[str, Any] | None:
        """Commit what the forest owns; list what stays local; None when nothing changed."""
        self.out["left_local"] = summary(outgoing.left_local)
        if outgoing.untrack:
            self.out["stopped_tracking"] = summary(outgoing.untrack)
        changes = sorted({*outgoing.published, *(entry["path"] for entry in outgoing.untrack)})
        if not changes:
            return None
        publishing.stage(self.repo, outgoing)
        message = commit_message(self.root, self.repo, len(changes))
        signed = f"{message}\n\n{syncconflicts.host_trailer()}\n"
        self.repo.run("commit", "-q", "--no-verify", "-F", "-", stdin=signed.encode())
        return {"commit": self.repo.rev("HEAD"), "files": len(changes),
                "message": message.split("\n", 1)[0], "paths": changes[:MAX_LISTED]}

    def _follow_config(self) -> None:
        """The merge may have brought another publish list: the work tree follows it now
        (an attachment opted in on the other machine is checked out by this sync)."""
        try:
            publish = load_config(self.root).publish
        except ForestError:
            return  # the checks report the config; the list in force stays
        if publish != self.publish:
            self.publish = publish
            publishing.leave_out(self.repo, None, publish)
            self.out["not_checked_out"] = publishing.still_out(
                self.out.get("not_checked_out"), publish)

    def _fetch(self) -> None:
        self.repo.run("fetch", "--quiet", "--no-tags", self.remote)

    def _incoming(self, branch: str) -> dict[str, Any] | None:
        repo, theirs = self.repo, self._tracking(branch)
        if not repo.has_commit(theirs):
            return None
        return {**self._incoming_paths(theirs),
                "not_checked_out": publishing.not_checked_out(repo, theirs, self.publish)}

    def _incoming_paths(self, theirs: str) -> dict[str, Any]:
        repo = self.repo
        if not repo.has_commit():
            paths = repo.lines_z("ls-tree", "-r", "--name-only", "-z", theirs)
            return {"commits": int(repo.out("rev-list", "--count", theirs)),
                    "files": len(paths), "paths": paths[:MAX_LISTED]}
        commits = int(repo.out("rev-list", "--count", f"HEAD..{theirs}"))
        if commits and not self._related(theirs):  # two forests to join: all of theirs comes
            paths = repo.lines_z("ls-tree", "-r", "--name-only", "-z", theirs)
        else:
            paths = repo.lines_z("diff", "--name-only", "-z", f"HEAD...{theirs}") if commits \
                else []
        return {"commits": commits, "files": len(paths), "paths": paths[:MAX_LISTED]}

    def _merge(self, branch: str, join: bool) -> int:
        """Merge the remote branch; the number of commits it brought.

        What git cannot merge is kept both ways (``syncconflicts.keep_both``) and the
        merge is concluded; only a path that cannot be kept both ways undoes it.
        Histories with no common commit are merged only when ``join`` (two
        forests created apart, on purpose), never by accident.
        """
        repo, theirs = self.repo, self._tracking(branch)
        if not repo.has_commit(theirs):
            return 0
        commits = int(repo.out("rev-list", "--count", f"HEAD..{theirs}"))
        if not commits:
            return 0
        unrelated = not self._related(theirs)
        if unrelated and not join:
            raise ForestError("sync_unrelated_histories", "the remote's history shares no "
                              "commit with this forest's; to join the two forests on purpose, "
                              "run 'memory-forest sync ROOT --init URL' with the remote's URL",
                              {"remote": self.remote, "branch": branch}, exit_code=2)
        self.out["not_checked_out"] = publishing.leave_out(repo, theirs, self.publish)
        message = f"memory-forest sync: merge {self.remote}/{branch}"
        trailer = ["-m", syncconflicts.host_trailer()]  # whose versions the merge holds
        args = ["merge", "--no-edit", "--no-stat", "-q", "-m", message, *trailer]
        done = repo.run(*args, *(["--allow-unrelated-histories"] if unrelated else []),
                        theirs, check=False)
        if done.returncode == 0:
            return commits
        unmerged = syncconflicts.unmerged(repo)
        kept, refused = syncconflicts.keep_both(repo, self.root, unmerged, theirs,
                                                CONFIG_PATHS) if unmerged else ([], [])
        if refused or not unmerged:
            repo.run("merge", "--abort", check=False)
            if not unmerged:
                raise ForestError("git_failed", f"git merge failed with exit code "
                                  f"{done.returncode}", {"command": "merge",
                                                         "exit_code": done.returncode})
            raise ForestError("sync_conflict", "both sides changed a path in a way sync cannot "
                              "keep both ways (a symlink, or a file where the other side has a "
                              "folder); the merge was undone, nothing changed; make the two "
                              "sides agree on one machine, then sync again",
                              {"paths": refused[:MAX_LISTED]})
        repo.run("commit", "-q", "--no-verify", "-m", message + " (conflicts kept both ways)",
                 *trailer)
        self.out["conflicts"] = kept
        return commits

    def _related(self, theirs: str) -> bool:
        return self.repo.run("merge-base", "HEAD", theirs, check=False).returncode == 0

    def _ahead(self, branch: str) -> bool:
        repo, theirs = self.repo, self._tracking(branch)
        if not repo.has_commit(theirs):
            return repo.has_commit()
        return int(repo.out("rev-list", "--count", f"{theirs}..HEAD")) > 0

    def _push(self, branch: str) -> bool:
        if not self._ahead(branch):
            return False
        self.repo.run("push", "--quiet", "--no-verify", self.remote,
                      f"HEAD:refs/heads/{branch}")
        self._fetch()  # the tracking ref moves, so the next sync knows nothing is unpushed
        return True



def _index_exists(root: Path) -> bool:
    return index_path(root).exists()


def commit_message(root: Path, repo: Repo, files: int) -> str:
    """What changed, from the receipts written since the last commit, else a file count.

    Operation names and counts only: a receipt's paths and texts are memory,
    and a commit message is published with the repository.
    """
    since = int(repo.out("log", "-1", "--format=%ct")) if repo.has_commit() else 0
    counts: dict[str, int] = {}
    try:
        listed = list(os.scandir(state_dir(root) / RECEIPTS))
    except OSError:
        listed = []
    for entry in listed:
        try:
            st = entry.stat(follow_symlinks=False)
            # The commit time is whole seconds: a receipt of the last commit's own second
            # was counted by that commit's message.
            if not stat.S_ISREG(st.st_mode) or st.st_mtime < since + 1:
                continue
            with open(entry.path, "rb") as handle:
                operation = json.loads(handle.read(1024 * 1024)).get("operation")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(operation, str) and operation.replace("_", "").isalnum():
            counts[operation] = counts.get(operation, 0) + 1
    noun = "file" if files == 1 else "files"
    if not counts:
        return f"memory-forest sync: {files} {noun} changed"
    done = ", ".join(f"{name} x{count}" for name, count in sorted(counts.items()))
    return f"memory-forest sync: {done} ({files} {noun})"

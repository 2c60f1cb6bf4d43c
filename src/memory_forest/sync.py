"""``sync``: replicate a forest through git, under the forest lock.

One run: take the lock; finish or undo an interrupted write (the journal);
set the repository up (``.gitignore``, ``.gitattributes``, the Daily merge
driver in the local config: a plain ``git clone`` has none of it); commit
the canonical changes, after the credential rules found nothing in them or
in any commit the push would send (``syncscan``); fetch and merge the remote
branch (never a rebase: the history each machine wrote stays as it was);
restore private modes on what git wrote, and bring the index and its
problems up to date, in proportion to the change (``syncsettle``; problems
are reported, one file's problem never fails the sync); push; release the
lock.

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
import re
import shlex
import stat
import sys
import time
from pathlib import Path
from typing import Any

from .envelope import result
from .errors import ForestError, usage_error
from .forest import Forest
from .gitrepo import Repo
from .layers import LTM_SUFFIX
from .lockline import DEFAULT_WAIT
from .statefiles import CONFIG, state_rel
from .syncsafety import refuse_index_lock, refuse_unsafe
from .syncscan import nothing_allowed, scan
from .syncsettle import settle
from .testhooks import crash_point

DEFAULT_REMOTE = "origin"
# The files sync itself writes at the root: git's, not memory.
SYNC_FILES = (".gitignore", ".gitattributes")
# Both sides changed one of these: ours is kept, theirs reported (config, not memory).
CONFIG_PATHS = frozenset({*SYNC_FILES, state_rel(CONFIG)})
# What git stores as a plain file (a symlink is 120000, a submodule 160000).
REGULAR_MODES = frozenset({"100644", "100755"})
DAILY_RECORD = re.compile(r"05 daily/[0-9]{4}-[0-9]{2}-[0-9]{2}\.md")
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
    from .ignore import GIT_DEBRIS_PATTERNS
    from .statefiles import CONFIG, STATE_DIR, state_rel

    return ("# Written by memory-forest sync. Derived state (index, receipts, journal,\n"
            "# proposals) stays on each machine; the forest's config travels with it.\n"
            f"/{STATE_DIR}/*\n!/{state_rel(CONFIG)}\n/.obsidian/\n/.trash/\n"
            "# Editor and OS debris, which the forest itself never reads.\n"
            + "".join(f"{pattern}\n" for pattern in GIT_DEBRIS_PATTERNS))


def sync(forest: Forest | str | Path, remote: str | None = None, init: str | None = None,
         dry_run: bool = False, allow_secrets: bool = False, wait: float = DEFAULT_WAIT
         ) -> dict[str, Any]:
    from . import gitrepo, lock

    lock.check_wait(wait)
    name = remote or DEFAULT_REMOTE
    if init is not None and not init.strip():
        raise usage_error("sync_init_url_empty", "--init takes the remote's URL")
    started = time.perf_counter()
    handle = Forest.of(forest)
    root = handle.root
    gitrepo.executable()  # git_missing before anything else happens
    with lock.held(root, "sync", wait=wait):
        outcome = _Sync(root, name, dry_run, allow_secrets, named=remote is not None).run(init)
    handle.forget_index()  # a clone's first sync builds the index the handle may hold open
    outcome["seconds"] = round(time.perf_counter() - started, 3)
    return result("sync", **outcome)


def under_lock(root: Path, remote: str | None = None) -> dict[str, Any]:
    """One sync under the forest lock the caller already holds (``maintain --sync``)."""
    from . import gitrepo

    gitrepo.executable()
    return _Sync(root, remote or DEFAULT_REMOTE, False, False,
                 named=remote is not None).run(None)


class _Sync:
    def __init__(self, root: Path, remote: str, dry_run: bool, allow_secrets: bool,
                 named: bool = False) -> None:
        self.root, self.remote, self.named = root, remote, named
        self.dry_run, self.allow_secrets = dry_run, allow_secrets
        self.allow_binary = nothing_allowed  # what may be published as binary content
        self.repo = Repo(root)
        self.out: dict[str, Any] = {"remote": remote, "dry_run": dry_run, "created": False}

    def run(self, init: str | None) -> dict[str, Any]:
        from .writers import journal

        repo, out = self.repo, self.out
        if not self.dry_run:
            recovered = journal.recover(self.root)
            out["recovered"] = recovered["action"] if recovered else None
        if not repo.exists():
            if self.dry_run:
                return {**out, "remote": self.remote if init is not None else None,
                        "created": True, "nothing_to_do": False,
                        "would_commit": self._would_commit_all(), "incoming": None}
            repo.init()
            out["created"] = True
        refuse_index_lock(self.root)
        if init is not None:
            self._add_remote(init)
            if self.dry_run and self.remote not in repo.remotes():
                return {**out, "nothing_to_do": False, "would_commit": self._changes(),
                        "incoming": None}  # the remote would be added: nothing to fetch yet
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
            if set(self._changes()) <= set(SYNC_FILES):
                # a clone of a remote whose HEAD names another branch: start from the
                # remote's history (sync's own two files are written again below)
                repo.run("checkout", "-f", "-q", "-B", branch, self._tracking(branch))
                self._set_up()
            else:
                join = True  # a forest of its own: its first commit, then the two merge
        changes = self._changes()
        findings = scan(repo, self.remote, changes, self.allow_binary)
        if self.dry_run:
            return {**out, "would_commit": changes, "secrets": findings,
                    "incoming": self._incoming(branch), "nothing_to_do": False}
        self._refuse_secrets(findings)
        out["committed"] = self._commit(changes) if changes else None
        crash_point("sync_committed")
        before = repo.rev("HEAD")
        pulled = self._merge(branch, join)
        crash_point("sync_merged")
        changed = repo.lines_z("diff", "--name-only", "-z", before, "HEAD") if pulled else []
        out["pulled"] = {"commits": pulled, "files": len(changed), "paths": changed[:MAX_LISTED]}
        if not changes and not pulled and _index_exists(self.root) and not out["created"] \
                and not self._ahead(branch):
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
        changes = self._changes()
        findings = scan(self.repo, None, changes, self.allow_binary)
        if self.dry_run:
            return {**out, "would_commit": changes, "secrets": findings, "incoming": None,
                    "nothing_to_do": False}
        self._refuse_secrets(findings)
        out["committed"] = self._commit(changes) if changes else None
        if not changes and _index_exists(self.root) and not out["created"]:
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
        from .safety import write_private

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
        from .mergedriver import DRIVERS

        for kind, name in DRIVERS.items():
            self.repo.config(f"merge.{name}.name", f"memory-forest {kind} merge")
            self.repo.config(f"merge.{name}.driver", f"{shlex.quote(sys.executable)} -P -m "
                             f"memory_forest.mergedriver {kind} %O %A %B")

    def _changes(self) -> list[str]:
        """What a commit would take: every changed, new or deleted path git does not ignore."""
        fields = self.repo.lines_z("status", "--porcelain=v1", "-z", "--untracked-files=all",
                                   "--no-renames")
        return sorted({field[3:] for field in fields if len(field) > 3})

    def _would_commit_all(self) -> list[str]:
        """A forest without a repository: everything the ``.gitignore`` would let in."""
        from .safety import walk
        from .statefiles import CONFIG, STATE_DIR, state_rel

        listing = walk(self.root, Forest.of(self.root).limits)
        return [".gitattributes", ".gitignore", *sorted(
            entry.path for entry in listing.files
            if not entry.path.startswith(STATE_DIR + "/") or entry.path == state_rel(CONFIG))]

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

    def _commit(self, changes: list[str]) -> dict[str, Any]:
        self.repo.run("add", "-A")
        message = commit_message(self.root, self.repo, len(changes))
        self.repo.run("commit", "-q", "--no-verify", "-F", "-", stdin=message.encode())
        return {"commit": self.repo.rev("HEAD"), "files": len(changes),
                "message": message.split("\n", 1)[0], "paths": changes[:MAX_LISTED]}

    def _fetch(self) -> None:
        self.repo.run("fetch", "--quiet", "--no-tags", self.remote)

    def _incoming(self, branch: str) -> dict[str, Any] | None:
        repo, theirs = self.repo, self._tracking(branch)
        if not repo.has_commit(theirs):
            return None
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

        What git cannot merge is kept both ways (``_keep_both``) and the
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
        message = f"memory-forest sync: merge {self.remote}/{branch}"
        args = ["merge", "--no-edit", "--no-stat", "-q", "-m", message]
        done = repo.run(*args, *(["--allow-unrelated-histories"] if unrelated else []),
                        theirs, check=False)
        if done.returncode == 0:
            return commits
        unmerged = self._unmerged()
        kept, refused = self._keep_both(unmerged, theirs) if unmerged else ([], [])
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
        repo.run("commit", "-q", "--no-verify", "-m", message + " (conflicts kept both ways)")
        self.out["conflicts"] = kept
        return commits

    def _related(self, theirs: str) -> bool:
        return self.repo.run("merge-base", "HEAD", theirs, check=False).returncode == 0

    def _unmerged(self) -> dict[str, dict[int, tuple[str, str]]]:
        """Each unmerged path's stages (1 base, 2 ours, 3 theirs) as (mode, blob id)."""
        found: dict[str, dict[int, tuple[str, str]]] = {}
        for line in self.repo.lines_z("ls-files", "-u", "-z"):
            info, _, path = line.partition("\t")
            mode, blob, stage = info.split()
            found.setdefault(path, {})[int(stage)] = (mode, blob)
        return found

    def _keep_both(self, unmerged: dict[str, dict[int, tuple[str, str]]], their_ref: str
                   ) -> tuple[list[dict[str, Any]], list[str]]:
        """Resolve every unmerged path so that neither side's bytes are lost.

        - changed on both sides: ours stays in place; theirs becomes a conflict
          copy beside it, or, in a Daily record, a conflict entry in the same
          file (``daily_conflict_entries``); the forest's config keeps ours and
          reports theirs' blob (config, not memory);
        - deleted on one side, changed on the other: the changed version stays.

        Returns the reports and the paths that cannot be kept both ways (a
        symlink or submodule on a side, a file against a folder); nothing is
        written unless there are none, and otherwise the caller undoes the merge.
        """
        from .chain import this_host

        host, stamp = this_host(), time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        tag = f"-conflict-{host}-{stamp}"
        refused = {path for path, stages in unmerged.items()
                   if any(mode not in REGULAR_MODES for mode, _ in stages.values())}
        refused |= {path.rpartition("~")[0] or path for path, stages in unmerged.items()
                    if self._moved_aside(path, stages, their_ref)}  # the name both sides used
        if refused:
            return [], sorted(refused)
        planned: list[tuple[dict[str, Any], list[tuple[str, bytes]]]] = []
        for path in sorted(unmerged):
            stages = unmerged[path]
            ours = self._blob(stages[2][1]) if 2 in stages else None
            theirs = self._blob(stages[3][1]) if 3 in stages else None
            if ours is None and theirs is None:
                planned.append(({"path": path, "kind": "deleted"}, []))
            elif ours is None or theirs is None:
                side = "ours" if theirs is None else "theirs"
                planned.append(({"path": path, "kind": "kept_changed", "kept": side,
                                 "deleted_by": "theirs" if side == "ours" else "ours"},
                                [(path, ours if theirs is None else theirs)]))
            elif path in CONFIG_PATHS:
                planned.append(({"path": path, "kind": "kept_ours", "theirs_blob":
                                 stages[3][1]}, [(path, ours)]))
            else:
                planned.append(self._both_changed(path, ours, theirs, tag))
        taken = [copy for _, writes in planned for copy, _ in writes[1:]]
        clashes = [copy for copy in taken if os.path.lexists(self.root / copy)]
        if clashes or len(set(taken)) != len(taken):
            return [], sorted(set(clashes or taken))
        for report, writes in planned:
            self._write_resolution(report["path"], writes)
        return [report for report, _ in planned], []

    def _moved_aside(self, path: str, stages: dict[int, tuple[str, str]], their_ref: str
                     ) -> bool:
        """A file git moved out of the way of the other side's folder (``path~HEAD``): a
        name neither side gave it, so it is not one side's version to keep."""
        if (2 in stages) == (3 in stages):
            return False
        side = "HEAD" if 2 in stages else their_ref
        return self.repo.run("cat-file", "-e", f"{side}:{path}", check=False).returncode != 0

    def _both_changed(self, path: str, ours: bytes, theirs: bytes, tag: str
                      ) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
        """A path both sides changed: what to write (ours' path first) and the report."""
        from .mergedriver import daily_conflict_entries

        if DAILY_RECORD.fullmatch(path):
            try:
                merged = daily_conflict_entries(ours.decode("utf-8"), theirs.decode("utf-8"),
                                                tag)
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

    def _write_resolution(self, path: str, writes: list[tuple[str, bytes]]) -> None:
        """Write ours (or the kept side) over whatever git left at ``path``, markers
        included, and the copy beside it; stage both, or the deletion both sides made."""
        from .safety import mkdir_private, write_new_private, write_private

        if not writes:
            self.repo.run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
            return
        for number, (target, data) in enumerate(writes):
            folder = (self.root / target).parent
            missing = []
            while not os.path.lexists(folder) and folder != self.root:
                missing.append(folder)
                folder = folder.parent
            for directory in reversed(missing):
                mkdir_private(directory)
            if number == 0:
                write_private(self.root / target, data)  # never the marked-up file git left
            else:
                write_new_private(self.root / target, data)
        self.repo.run("add", "--", *(target for target, _ in writes))

    def _blob(self, blob: str) -> bytes:
        return self.repo.run("cat-file", "blob", blob).stdout

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
    from .writers.markdown import edit_frontmatter, metadata, render_key

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


def _index_exists(root: Path) -> bool:
    from .statefiles import index_path

    return index_path(root).exists()


def commit_message(root: Path, repo: Repo, files: int) -> str:
    """What changed, from the receipts written since the last commit, else a file count.

    Operation names and counts only: a receipt's paths and texts are memory,
    and a commit message is published with the repository.
    """
    from .statefiles import RECEIPTS, state_dir

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

"""The operations of the forest core: init, validate, audit, doctor.

Each returns a plain result dict (``ok``, ``operation``, ``schema_version``
and the operation's fields) or raises ``ForestError``. Rendering is the
edges' business (``cli``, ``mcp``, ``gate``).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sqlite3
import stat
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__, chain, gitrepo, indexheal, journalrepair, lock, statedebris, syncsafety
from .checks import check_forest
from .config import new_config_bytes
from .envelope import result
from .errors import ForestError, usage_error
from .forest import Forest, ForestLike, opened
from .index import build, repair, state
from .issues import has_errors, summarize
from .layers import LAYERS
from .lockline import DEFAULT_WAIT
from .modes import repair_modes
from .routes import CONFLICT_COPY, CONFLICT_TAG
from .safety import makedirs_private, mkdir_private, read_regular, walk, write_private
from .semantic import coverage, embed
from .semantic_state import damaged, heal
from .snapshot import listed_per_layer, refuse_non_forest
from .statefiles import config_path, state_dir
from .store import schema
from .watchstate import current_build
from .watchstate import report as watch_report
from .writers import journal
from .writers.remember import create_inbox

if TYPE_CHECKING:
    from .checks import Checked
    from .results import StatusResult

# --- init -----------------------------------------------------------------------------------


def init(target: str | Path, example: bool = False, inbox: bool = False) -> dict[str, Any]:
    """Create a new private forest at a path that does not exist yet.

    With ``inbox`` the forest also gets the inbox tree and branch that ``remember`` files
    unplaced facts in, written by the journaled writer once the forest exists (which builds
    the index, as any first write does). Without it ``remember`` creates them when it first
    needs them, so a new forest holds nothing its owner did not ask for.
    """
    target = Path(os.path.abspath(os.fspath(target)))
    _check_init_target(target)
    # Build next to the target, then rename: the forest appears whole or not at all.
    staging = target.with_name(f".{target.name}.init-{os.urandom(6).hex()}")
    mkdir_private(staging)
    try:
        for layer in LAYERS:
            mkdir_private(staging / layer.dirname)
        mkdir_private(state_dir(staging))
        write_private(config_path(staging), new_config_bytes())
        written = _write_example(staging) if example else []
        if os.path.lexists(target):
            raise ForestError("init_target_exists", "the target appeared while init was running")
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if inbox:
        with opened(target) as forest:
            receipt = create_inbox(forest)
        written += [item["path"] for item in receipt["touched"]]
    return result("init", root=target.name, example=example, inbox=inbox,
                  layers=[layer.dirname for layer in LAYERS], files=sorted(set(written)))


def _check_init_target(target: Path) -> None:
    try:
        parent = os.lstat(target.parent)
    except FileNotFoundError:
        raise ForestError("init_parent_missing",
                          "the parent directory does not exist; init never creates ancestors"
                          ) from None
    if stat.S_ISLNK(parent.st_mode) or not stat.S_ISDIR(parent.st_mode):
        raise ForestError("init_parent_invalid", "the parent must be a real directory")
    if os.path.lexists(target):
        raise ForestError("init_target_exists",
                          "the target already exists; init only creates a new directory")


def example_files() -> dict[str, bytes]:
    """The packaged synthetic example forest, by relative path."""
    base = resources.files("memory_forest") / "example"
    found: dict[str, bytes] = {}
    stack = [(base, "")]
    while stack:
        node, rel = stack.pop()
        for child in node.iterdir():
            child_rel = f"{rel}/{child.name}" if rel else child.name
            if child.is_dir():
                stack.append((child, child_rel))
            elif not child.name.startswith("."):
                found[child_rel] = child.read_bytes()
    return found


def _write_example(staging: Path) -> list[str]:
    contents = example_files()
    for rel, data in contents.items():
        makedirs_private(staging, rel.rsplit("/", 1)[0])
        write_private(staging / rel, data)
    return list(contents)


# --- validate and audit ---------------------------------------------------------------------


def validate(root: ForestLike) -> dict[str, Any]:
    with opened(root) as forest:
        return _report("validate", check_forest(forest, audit=False))


def audit(root: ForestLike) -> dict[str, Any]:
    with opened(root) as forest:
        return _report("audit", check_forest(forest))


def _report(operation: str, checked: Checked) -> dict[str, Any]:
    """Every issue, strictly graded: any error fails the operation with ``<operation>_failed``."""
    issues = checked.issues
    summary = summarize(issues)
    fields: dict[str, Any] = {
        "issues": [issue.to_dict() for issue in issues],
        "summary": summary,
        "counts": checked.snap.layer_counts(),
    }
    ok = not has_errors(issues)
    if not ok:
        fields["error"] = {
            "code": f"{operation}_failed",
            "message": f"{operation} found {summary['errors']} error(s)",
            "details": summary,
        }
    return result(operation, ok, **fields)


# --- index ---------------------------------------------------------------------------------


def index(forest: ForestLike, full: bool = False, progress: Any = None,
          wait: float = DEFAULT_WAIT, semantic: bool = False) -> dict[str, Any]:
    """Validate and audit, then bring the derived index up to date, holding the lock.

    Documents with errors are quarantined, not fatal (``index.build``). While a
    watcher runs and has applied every change it saw, there is nothing to
    build (``"mode": "watched"``), and neither the lock nor a walk is taken;
    ``full`` builds anyway. The watcher's own embedder is such a run.
    ``semantic`` turns semantic ranking on for the forest and then embeds
    every structured document that has no vectors yet (``semantic.embed``),
    after the lock is released: embedding takes minutes, writers need not
    wait for it, and what it writes is only the vectors file. A plain
    ``index`` never embeds (``maintain --semantic-budget`` does, bounded).
    """
    started = time.perf_counter()
    with opened(forest) as forest:
        refuse_non_forest(forest.root)  # before the lock, which is written beside the root
        watched = None if full else current_build(forest.root, judged=not semantic)
        if watched is not None:  # a watcher has applied every change: nothing to build
            summary = _nothing_changed(watched, started)
        else:
            with lock.held(forest.root, "index --full" if full else "index", wait=wait):
                summary = build(forest, full=full, progress=progress)
            forest.forget_index()  # a full build replaced the file the handle may have open
        if semantic:
            embedding = None if progress is None else _phase(progress, "embedding")
            # Outside the lock, but a stop signal still ends it as one 'interrupted' object;
            # each committed batch stays (the next run embeds only the rest).
            with lock.interruptible():
                summary["semantic"] = embed(forest, enable=True, progress=embedding)
    return result("index", **summary)


def _nothing_changed(last: dict[str, Any], started: float) -> dict[str, Any]:
    """The watcher's last build as a build that found nothing to do: its problems stand."""
    return {**last, "mode": "watched", "added": 0, "changed": 0, "deleted": 0,
            "unchanged": last.get("documents", 0),
            "seconds": round(time.perf_counter() - started, 4)}


def _phase(progress: Any, label: str) -> Any:
    """The progress callback for a later phase of the same command, under its own label
    when the bar can show one."""
    return lambda done, total: progress(done, total, label)


# --- unlock --------------------------------------------------------------------------------


def unlock(forest: ForestLike, stale: bool = False) -> dict[str, Any]:
    """Remove a stale lock; a live one, or a call without ``stale``, is refused."""
    if not stale:
        raise usage_error("unlock_requires_stale",
                          "unlock only removes a stale lock; pass --stale")
    return result("unlock", removed=lock.unlock_stale(Forest.of(forest).root))


# --- doctor ---------------------------------------------------------------------------------


def doctor(forest: ForestLike, repair: bool = False, wait: float = DEFAULT_WAIT,
           set_aside_journal: bool = False, restore_journal: bool = False) -> dict[str, Any]:
    """Bounded diagnostics. Fails only when the root cannot be inspected at all.

    With ``repair`` (a writer: it takes the lock), a stale lock is removed
    first (``repair.unlocked``), an interrupted write is finished or rolled
    back (``writers.journal.recover``), then every directory and file under
    the root gets its private mode back (0700/0600). A journal that cannot be
    recovered fails with ``journal_corrupt``, what it still tells and the next
    step: ``restore_journal`` or ``set_aside_journal`` (see ``journalrepair``).
    """
    lock.check_wait(wait)
    if set_aside_journal and not repair:
        raise usage_error("set_aside_requires_repair",
                          "--set-aside-journal only works with --repair")
    if restore_journal and not repair:
        raise usage_error("restore_requires_repair",
                          "--restore-journal only works with --repair")
    if restore_journal and set_aside_journal:
        raise usage_error("restore_or_set_aside", "choose one of --restore-journal (put the "
                          "files back) and --set-aside-journal (keep them as they are)")
    way_out = "restore" if restore_journal else "set_aside" if set_aside_journal else None
    with opened(forest) as forest:
        return result("doctor", **_diagnose(forest, repair, wait, way_out))


def _diagnose(forest: Forest, repair: bool, wait: float, way_out: str | None
              ) -> dict[str, Any]:
    root = forest.root
    report: dict[str, Any] = {}
    if repair:
        report["repair"] = _repair(forest, wait, way_out)
    report.update({
        "versions": {
            "memory_forest": __version__,
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            # sync's one dependency outside Python; None when git is not on PATH
            "git": gitrepo.version(),
        },
        "sqlite_features": schema.sqlite_features(),
        "network_required": False,
    })
    try:
        config = forest.config
        report["config"] = {"state": "present" if config.present else "absent",
                            "forest_id": config.forest_id, "limits": config.limits}
    except ForestError as exc:
        report["config"] = {"state": "invalid", "error": exc.to_dict()}
        config = None
    if config is not None:
        try:
            listing = walk(root, config.limits)
            report["counts"] = listed_per_layer(listing)
            report["conflict_copies"] = _conflict_copies(forest, listing.files)
            report["walk"] = {"files": len(listing.files), "dirs": len(listing.dirs),
                              "bytes": listing.total_bytes, "issues": len(listing.issues),
                              "ignored": listing.ignored}
            report["istm"] = _chain_state(forest, [entry.path for entry in listing.files])
        except ForestError as exc:
            report["walk"] = {"error": exc.to_dict()}
    # Named before the index state is read: reading it rolls a hot journal back.
    report["damaged"] = [*indexheal.damaged(root), *statedebris.damaged(root)]
    report["index"] = _index_state(forest)
    report["lock"] = lock.state(root)
    report["watcher"] = watch_report(root)
    report["journal"] = _journal_state(root)
    report["git"] = {"damaged": syncsafety.damaged(root)}

    report["damaged"] += damaged(root)
    return report


def _conflict_copies(forest: Forest, files) -> list[str]:
    """What ``sync`` kept both ways (at most 50): the conflict copies filed beside a record
    both machines changed, and the conflict entries in Daily records (``<path>#<entry>``).

    Only Daily records are read, one per day of the forest, and only the ones that
    hold the tag are parsed.
    """
    found = []
    for entry in files:
        if CONFLICT_COPY.search(entry.path):
            found.append(entry.path)
        elif entry.path.startswith("05 daily/") and entry.path.endswith(".md"):
            try:
                data = read_regular(forest.root, entry.path, forest.limits["max_file_bytes"])
            except ForestError:
                continue  # validate reports it
            if b"-conflict-" not in data:
                continue
            for line in data.decode("utf-8", "replace").split("\n"):
                title = line[3:].strip() if line.startswith("## ") else ""
                if CONFLICT_TAG.search(title):
                    found.append(f"{entry.path}#{title}")
        if len(found) >= 50:
            break
    return found[:50]


def _chain_state(forest: Forest, paths: list[str]) -> dict[str, int]:
    """How many ISTM events carry the hash chain, and how many (in how many files) do not.

    Events captured before chains existed have no ``prev`` field. They are not
    an error (``audit`` checks only chained lines), but nothing vouches for
    their order or presence, so doctor says how many there are. A file that
    cannot be read is counted under ``unreadable`` (validate says why).
    """
    prefix = chain.ISTM_DIR + "/"
    names = chain.shard_names([path[len(prefix):] for path in paths if path.startswith(prefix)])
    state = {"files": len(names), "events": 0, "chained": 0, "unchained": 0,
             "unchained_files": 0, "unreadable": 0}
    for name in names:
        try:
            data = read_regular(forest.root, prefix + name, forest.limits["max_file_bytes"])
        except ForestError:
            state["unreadable"] += 1
            continue
        unchained = 0
        for _, line in chain.lines(data):
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue  # not an event: validate reports the line
            if isinstance(record, dict):
                state["events"] += 1
                unchained += chain.FIELD not in record
        state["unchained"] += unchained
        state["unchained_files"] += unchained > 0
    state["chained"] = state["events"] - state["unchained"]
    return state


def _repair(forest: Forest, wait: float, way_out: str | None) -> dict[str, Any]:
    root = forest.root
    # Repair is the operator's explicit step, so it clears a stale lock itself (checked
    # again by unlock_stale); a live lock still fails with lock_held, or waits.
    unlocked = None
    if lock.state(root)["state"] == "stale":
        unlocked = lock.unlock_stale(root)
    with lock.held(root, "doctor --repair", wait=wait):
        try:
            recovered = journal.recover(forest) or {"action": "none"}
        except ForestError as exc:
            if exc.code != "journal_corrupt":
                raise
            if way_out is None:
                raise journalrepair.unrecoverable(forest, exc) from None
            recovered = journalrepair.restore(forest, exc) if way_out == "restore" \
                else journalrepair.set_aside(forest, exc)
        forest.forget_index()
        return {"unlocked": unlocked, "journal": recovered, "index": repair(forest),
                "healed": heal(root), "git": syncsafety.repair(root),
                "removed": statedebris.heal(root), **repair_modes(forest)}


def _journal_state(root: Path) -> dict[str, Any]:
    try:
        return journal.describe(root)
    except ForestError as exc:
        return {"state": "invalid", "code": exc.code}


def _index_state(forest: Forest) -> dict[str, Any]:
    try:
        return state(forest)
    except ForestError as exc:
        return {"state": "invalid", "code": exc.code}


# --- status ---------------------------------------------------------------------------------

_NEXT_STEP = {
    "absent": "run 'memory-forest index ROOT' to build the index",
    "stale": "run 'memory-forest index ROOT' to bring the index up to date",
    "invalid": "run 'memory-forest index ROOT --full' to rebuild the index",
}


def status(forest: ForestLike) -> StatusResult:
    """A short readiness summary for an agent: can memory be consulted right now?

    ``ready`` is true when the index exists and can be read, so route,
    retrieve, open and the gate answer. An index behind the files is still
    ready: what changed is flagged on every result that names it (only
    ``--strict`` fails on it), and ``next_step`` says to run ``index``; so do
    quarantined documents, which ``next_step`` counts.
    """
    with opened(forest) as forest:
        refuse_non_forest(forest.root)
        report = doctor(forest)
        index_state = report["index"]
        counts = report.get("counts", {})
        ready = index_state.get("state") in ("current", "stale")
        semantic = coverage(forest) if ready else {"enabled": False, "documents": 0,
                                                   "embeddable": None, "state": "off"}
    return result("status", ready=ready, index=index_state, lock=report["lock"],
                  watcher=report["watcher"],
                  counts=counts, documents=sum(counts.values()),
                  conflict_copies=report.get("conflict_copies", []),
                  config=report["config"]["state"], versions=report["versions"],
                  next_step=_next_step(index_state, report["config"]["state"])
                  or next((piece["fix"] for piece in report["git"]["damaged"]), None),
                  semantic=semantic, git=report["git"])


def _next_step(index_state: dict[str, Any], config: str) -> str | None:
    """What to run next; an index with quarantined documents is ready, but says so."""
    if config == "invalid":  # an index build would fail on it too
        return "fix .memory-forest/forest.json; 'memory-forest doctor ROOT' shows what is wrong"
    state = index_state.get("state")
    if state == "current":
        if index_state.get("quarantined"):
            return (f"{index_state['quarantined']} document(s) are left out of the index; "
                    "run 'memory-forest index ROOT' to list them")
        return None
    return _NEXT_STEP.get(state, _NEXT_STEP["invalid"])

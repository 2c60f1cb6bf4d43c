"""``maintain``: the one job a scheduler runs. Check, index, verify, report; never repair.

Steps, each timed and counted in the summary: take the lock, finish or roll
back an interrupted write from the journal, validate, audit, bring the index
up to date, verify the index against the files, with ``--consolidate`` make
a consolidation proposal (never accept one: review is the caller's), with
``--semantic-budget`` embed what has no vectors yet for that long, release
the lock. A document
with an error is quarantined (left out of the index, listed in ``problems``)
and the run goes on; it then ends with ``maintain_problems`` and exit code
``PROBLEMS_EXIT_CODE``, so a scheduler notices. Only a forest-level fault
stops the run before the index step.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import time
from pathlib import Path
from typing import Any

from . import index, indexreader, lock, semantic
from .checks import Recorder, elapsed_ms
from .digest import sha256_hex
from .envelope import result
from .errors import ForestError, usage_error
from .forest import Forest, ForestLike
from .jsonio import dumps
from .lockline import DEFAULT_WAIT
from .safety import open_regular, read_regular
from .snapshot import refuse_non_forest
from .store import filerows
from .sync import under_lock
from .writers import journal
from .writers.consolidate import propose

SAMPLE_SIZE = 8
LOG_MAX_BYTES = 1024 * 1024
# Distinct from 1 (the run failed): the index was built, but some documents are left out.
PROBLEMS_EXIT_CODE = 3


def maintain(forest: ForestLike, verify_all: bool = False,
             log: str | Path | None = None, consolidate: bool = False,
             sync: bool = False, semantic_budget: str | None = None,
             wait: float = DEFAULT_WAIT) -> dict[str, Any]:
    lock.check_wait(wait)
    budget = None if semantic_budget is None else parse_budget(semantic_budget)

    forest = Forest.of(forest)
    root = forest.root
    refuse_non_forest(root)  # before the lock: a folder that is no forest gets nothing written
    started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    started = time.perf_counter()
    run = _Run()
    try:
        with lock.interruptible():
            owner = run.step("lock", lambda: lock.acquire(root, "maintain", wait))
            try:
                outcome = _checked_run(forest, run, verify_all)
                checked = outcome.get("error", {}).get("code") in (None, "maintain_problems")
                if budget is not None and checked:
                    _embed(forest, run, budget)
                if consolidate and checked:
                    run.step("consolidate", lambda: _consolidate(forest), _proposed)
                if sync and checked:
                    run.step("sync", lambda: _sync(forest), _synced)
            finally:
                lock.release(root, owner)
    except ForestError as exc:
        outcome = {"error": exc.to_dict()}
    except lock.Interrupted as exc:  # systemd stop, timeout: logged like any other run
        outcome = _interrupted(exc)
    summary = result("maintain", ok="error" not in outcome, started_at=started_at,
                     duration_ms=elapsed_ms(started), steps=run.steps,
                     **{"problems": run.problems, "quarantined": run.quarantined,
                        "counts": run.counts, **outcome})
    if log is not None:
        try:
            append_log(Path(log), summary)
        except ForestError as exc:  # the run is reported, but a scheduler must notice
            summary.pop("exit_code", None)
            summary.update(ok=False, error=exc.to_dict())
    return summary


class _Run(Recorder):
    """The steps as they go, and what the check left out of the index."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[dict[str, str]] = []
        self.quarantined = 0


def _checked_run(forest: Forest, run: _Run, verify_all: bool) -> dict[str, Any]:
    run.step("journal", lambda: journal.recover(forest), _recovered)
    done = index.refresh(forest, recorder=run)  # a forest-level fault raises here
    triage = done.triage
    run.problems = [issue.to_dict() for issue in triage.problems]
    run.quarantined = triage.left_out
    verified = run.step("verify", lambda: _verify(forest, done.expected(), verify_all),
                        dict)
    if verified["mismatched"]:
        run.steps["verify"]["ok"] = False
        return {"error": {"code": "index_mismatch",
                          "message": "the index disagrees with the files; run "
                          "'memory-forest index ROOT --full'", "details": verified}}
    return _problems(triage)


def _problems(triage) -> dict[str, Any]:
    """A run that quarantined documents built the index, but must not look clean."""
    counts = triage.counts()
    if not counts["errors"]:
        return {}
    return {"exit_code": PROBLEMS_EXIT_CODE,
            "error": {"code": "maintain_problems",
                      "message": f"indexed the forest with {counts['errors']} problem(s); "
                      f"{counts['quarantined']} document(s) left out of the index; "
                      "see problems",
                      "details": counts}}


def _interrupted(exc) -> dict[str, Any]:
    """A stop signal: the lock is released and the index is the old or the new one."""
    name = exc.args[0] if exc.args else str(exc.signum)
    return {"exit_code": 128 + exc.signum,
            "error": {"code": "interrupted", "message": f"interrupted by {name}",
                      "details": {"signal": name}}}


def parse_budget(text: str) -> float:
    """``--semantic-budget``: seconds, as ``60``, ``60s`` or ``2m`` (at most a day)."""
    match = re.fullmatch(r"\s*(\d{1,6}(?:\.\d+)?)\s*([sm]?)\s*", text or "")
    seconds = float(match.group(1)) * (60 if match.group(2) == "m" else 1) if match else -1
    if not 0 < seconds <= 86_400:
        raise usage_error("semantic_budget_invalid", "the semantic budget must be a time "
                          "such as 60s or 2m (more than 0, at most a day)")
    return seconds


def _embed(forest: Forest, run: _Run, budget: float) -> None:
    """Embed the documents that have no vectors yet, within the budget, when semantic
    ranking is on for the forest. A missing extra is reported in the step and the run goes
    on: the index, which retrieval needs, is already built."""
    try:
        run.step("semantic", lambda: semantic.embed(forest, budget=budget), _embedded)
    except ForestError as exc:
        if exc.code not in ("semantic_unavailable", "semantic_model_mismatch"):
            raise
        run.steps["semantic"]["code"] = exc.code


def _embedded(done: dict[str, Any]) -> dict[str, Any]:
    """Counts only, for the log line."""
    return {key: done[key] for key in ("enabled", "embedded", "remaining", "documents",
                                       "embeddable") if key in done}


def _consolidate(forest: Forest) -> dict[str, Any]:
    """A proposal for what nothing has filed yet, made under this run's lock."""
    with Forest(forest.root) as fresh:  # the check rebuilt the index: read the new one
        return propose(fresh)


def _proposed(made: dict[str, Any]) -> dict[str, Any]:
    """Ids and counts only: the log line carries no memory text."""
    counts = made["counts"] or {}
    return {"proposal": made["proposal"]["proposal_id"] if made["proposal"] else None,
            "sources": counts.get("sources", 0), "remaining": made["remaining"],
            "skipped": len(made["skipped"])}


def _sync(forest: Forest) -> dict[str, Any]:
    """Commit, merge and push through git, under this run's lock (docs/sync.md)."""
    return under_lock(forest)


def _synced(done: dict[str, Any]) -> dict[str, Any]:
    """Counts only: the log line names no path and no memory text."""
    committed, pulled = done.get("committed"), done.get("pulled")
    return {"committed": committed["files"] if committed else 0,
            "pulled": pulled["files"] if pulled else 0,
            "conflicts": len(done.get("conflicts") or []), "pushed": bool(done.get("pushed")),
            "left_local": (done.get("left_local") or {}).get("count", 0),
            "nothing_to_do": done["nothing_to_do"]}


def _recovered(outcome: dict[str, Any] | None) -> dict[str, Any]:
    """An interrupted write is finished or rolled back first, so it cannot block every run."""
    if outcome is None:
        return {"recovered": 0}
    return {"recovered": 1, "action": outcome["action"]}


def _verify(forest: Forest, expected: set[str], verify_all: bool) -> dict[str, Any]:
    """Compare the index with the files: every path always, hashes of a sample or of all.

    ``expected`` are the paths that should have rows: the documents not quarantined.
    """
    root = forest.root
    con = indexreader.connect(root)  # the index this run just built, not the handle's
    with con:
        indexed = filerows.digests(con)
    con.close()
    mismatched = sorted(set(indexed) ^ expected)
    paths = sorted(set(indexed) & expected)
    if not verify_all:
        paths = random.Random(len(paths)).sample(paths, min(SAMPLE_SIZE, len(paths)))
    limit = forest.limits["max_file_bytes"]
    for path in paths:
        data = read_regular(root, path, limit)
        if sha256_hex(data) != indexed[path]:
            mismatched.append(path)
    return {"mode": "all" if verify_all else "sample", "checked": len(paths),
            "mismatched": len(mismatched)}


def append_log(path: Path, summary: dict[str, Any]) -> None:
    """Append one line per run: 0600, never through a symlink, rotated past 1 MiB.

    The line keeps times, outcome and counts only: no memory text, no issue
    list and no absolute path.
    """
    line = dumps({
        "started_at": summary["started_at"], "ok": summary["ok"],
        "code": summary.get("error", {}).get("code"), "duration_ms": summary["duration_ms"],
        "counts": summary["counts"], "quarantined": summary["quarantined"],
        "steps": {name: {k: v for k, v in step.items()} for name, step in summary["steps"].items()},
    }) + "\n"
    try:
        if os.lstat(path).st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    try:  # a FIFO at the log's path would otherwise hold the run forever
        fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except OSError as exc:
        raise _log_unwritable(type(exc).__name__) from None
    if fd is None:  # even with O_CREAT: the log's folder is missing
        raise _log_unwritable("FileNotFoundError")
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def _log_unwritable(why: str) -> ForestError:
    return ForestError("log_unwritable", "the run log cannot be opened (a symlink or not a "
                       "regular file): pass --log a regular file, or remove what stands there",
                       {"error": why})

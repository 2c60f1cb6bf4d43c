"""``doctor --repair``'s way out of a journal recovery cannot trust.

Recovery stops with ``journal_corrupt`` rather than guess. Two ways on, each
the operator's explicit choice and each keeping every byte:

- ``--restore-journal`` puts back every file the journal's entry files name
  (their before-images, and no file where the write created one), then sets
  the journal aside. It needs no manifest, so it is the one command a crash
  followed by a torn manifest needs; what it cannot identify or verify, it
  names and refuses, changing nothing.
- ``--set-aside-journal`` keeps the files as they are and sets the journal
  aside, once the forest passes audit: for the operator who put files back
  by hand.
"""

from __future__ import annotations

from typing import Any

from . import index
from .audit import CHAIN_CODES
from .checks import check_forest
from .errors import ForestError
from .forest import Forest
from .quarantine import MODE_CODES
from .statefiles import JOURNAL, index_path, state_rel
from .writers import journal, journal_torn


def unrecoverable(forest: Forest, exc: ForestError) -> ForestError:
    """``journal_corrupt`` with what the journal still tells, and the one command that
    gets out of it: the restore when it can be done, else setting the journal aside."""
    try:
        journal_torn.restore_plan(forest)
        hint, extra = journal_torn.RESTORE_HINT, {}
    except ForestError as refused:
        if refused.code != "journal_restore_refused":
            raise
        hint, extra = journal_torn.SET_ASIDE_HINT, {"damaged": refused.details["damaged"]}
    doing = "to put back the files it was changing" if hint == journal_torn.RESTORE_HINT \
        else "once the files it names are as they should be"
    return ForestError("journal_corrupt", "the write-ahead journal cannot be recovered "
                       f"({exc.message.split(';')[0]}); run '{hint}' {doing}",
                       {**exc.details, **extra, "journal": journal.describe(forest.root),
                        "next": hint})


def restore(forest: Forest, exc: ForestError) -> dict[str, Any]:
    """Put the before-state back from the journal, set it aside, re-describe the files."""
    root = forest.root
    plan = journal_torn.restore_plan(forest)
    done = journal_torn.restore(root, plan)
    where = journal_torn.set_aside(root)
    if index_path(root).exists():
        index.update_paths(forest, plan.paths)
    return {"action": "restored", "set_aside": where, "reason": exc.code,
            "transaction_id": plan.transaction_id, "operation": plan.operation,
            "paths": plan.paths, **done}


def set_aside(forest: Forest, exc: ForestError) -> dict[str, Any]:
    """Move an unrecoverable journal aside, but only over a forest that audits clean.

    Every canonical file is replaced by a rename, so none is ever half-written;
    what a lost journal can leave is a transaction half-applied across files,
    which shows as a parent or a link to a file that is not there. ``validate``
    alone does not see those, ``audit`` does; so the forest must pass ``audit``
    (mode problems aside: this repair fixes them next; and a broken ISTM chain
    too, which no half-applied write leaves, as a write replaces a shard
    whole, and which no edit can mend). Otherwise the journal stays, with its
    images, and the operator fixes the files named first.
    """
    root = forest.root
    described = journal.describe(root)
    inside = state_rel(JOURNAL)  # the journal's own oddities are why it goes
    problems = [issue for issue in check_forest(forest).issues
                if issue.level == "error" and issue.code not in MODE_CODES | CHAIN_CODES
                and issue.path != inside and not issue.path.startswith(inside + "/")]
    if problems:
        raise ForestError("journal_set_aside_refused", "the forest does not pass audit, so the "
                          "journal was left in place; fix the files 'memory-forest audit ROOT' "
                          "names (the journal's before-N files hold their old bytes), then "
                          "run this again",
                          {"errors": len(problems),
                           "paths": sorted({issue.path for issue in problems})[:50],
                           "journal": described})
    where = journal_torn.set_aside(root)
    if index_path(root).exists():
        index.build(forest)  # the journal's files may be newer than their index rows
    return {"action": "set_aside", "set_aside": where, "reason": exc.code,
            "paths": described.get("paths", [])}

"""Every name under ``.memory-forest/``, the forest's own state, and the paths to them.

The state directory holds what is not canonical memory: the config, the
derived index (and the temporary file a full build writes beside it), the
optional semantic vectors, the write-ahead journal with its staging and
set-aside folders, the receipts, and the consolidation proposals awaiting
(or past) review. The walk lists it (modes are checked there too), but
nothing in it is ever read as a document.
Naming each entry once here keeps the readers (``doctor``, ``status``, the
journal's recovery) and the writers agreeing on what is where.

On the per-turn path (``indexreader.connect`` opens the index through it): stdlib only,
and ``warmsocket``, which names the state directory and the service socket in it.
"""

from __future__ import annotations

import os
from pathlib import Path

from .warmsocket import SOCKET_NAME, STATE_DIR

CONFIG = "forest.json"
INDEX = "index.sqlite3"
VECTORS = "vectors.sqlite3"  # semantic chunk vectors: outlive a full build of the index
RECEIPTS = "receipts"  # one <transaction_id>.json per write
PROPOSALS = "proposals"  # one <proposal_id>.json per consolidation proposal, with its status
JOURNAL = "journal"  # the live transaction; holds MANIFEST and its images
MANIFEST = "manifest.json"
JOURNAL_STAGING_PREFIX = "journal-staging-"  # a journal being built, renamed to JOURNAL
JOURNAL_SET_ASIDE_PREFIX = "journal.set-aside-"  # a journal recovery could not trust


def state_rel(*names: str) -> str:
    """The root-relative path of an entry, as issues, reports and ``read_regular`` name it."""
    return "/".join((STATE_DIR, *names))


def state_dir(root: Path) -> Path:
    return root / STATE_DIR


def config_path(root: Path) -> Path:
    return root / STATE_DIR / CONFIG


def socket_path(root: Path) -> Path:
    """The warm service's socket, while a watcher runs (``service``)."""
    return root / STATE_DIR / SOCKET_NAME


def index_path(root: Path) -> Path:
    return root / STATE_DIR / INDEX


def vectors_path(root: Path) -> Path:
    return root / STATE_DIR / VECTORS


def index_temp_path(root: Path) -> Path:
    """Where a full build writes the new index before renaming it over the old one.

    A hidden ``.tmp`` name, unique per process and call, so a build killed
    half-way leaves debris that every reader skips and no other build reuses.
    """
    return root / STATE_DIR / f".{INDEX}.{os.getpid()}.{os.urandom(4).hex()}.tmp"


def journal_dir(root: Path) -> Path:
    return root / STATE_DIR / JOURNAL


def receipt_rel(transaction_id: str) -> str:
    return state_rel(RECEIPTS, f"{transaction_id}.json")


def proposal_rel(proposal_id: str) -> str:
    return state_rel(PROPOSALS, f"{proposal_id}.json")

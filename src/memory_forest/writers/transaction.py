"""The one transaction engine every writer runs through.

``transact`` takes the lock, recovers an interrupted transaction, answers an exact
retry from its receipt, lets the writer stage its files (``Stage``), checks
the staged result (``check.check_staged``), then journals, writes, updates the index,
publishes the receipt and clears the journal. Any handled failure after the
journal exists puts the previous bytes back and re-describes them in the
index before the error is raised; a crash is finished or undone by the next
writer or ``doctor --repair`` (``journal.recover``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import index, lock
from ..digest import sha256_hex
from ..documents import title_of
from ..envelope import result
from ..errors import ForestError
from ..forest import Forest
from ..routes import parse_route
from ..safety import FILE_MODE
from ..statefiles import receipt_rel
from ..testhooks import crash_point
from . import journal, receipts
from .check import check_staged
from .view import View

if TYPE_CHECKING:
    from ..results import WriteResult


class Stage:
    """The files a writer means to write, on top of the disk as it is."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.now = receipts.now()
        self.changes: dict[str, bytes] = {}
        self.removed: set[str] = set()  # files the write takes out of the forest
        self.new_dirs: list[str] = []
        self.details: dict[str, Any] = {}

    def read(self, path: str) -> bytes | None:
        if path in self.removed:
            return None
        return self.changes[path] if path in self.changes else self.view.read(path)

    def text(self, path: str) -> str | None:
        if path in self.removed:
            return None
        if path in self.changes:
            return self.changes[path].decode("utf-8")
        return self.view.text(path)

    def exists(self, path: str) -> bool:
        if path in self.removed:
            return False
        return path in self.changes or self.view.exists(path)

    def title(self, path: str) -> str:
        if path not in self.changes:
            return self.view.title(path)

        limit = self.view.config.limits["max_links_per_document"]
        return title_of(parse_route(path), self.changes[path], limit)

    def put(self, path: str, data: str | bytes) -> None:
        self.removed.discard(path)
        self.changes[path] = data.encode("utf-8") if isinstance(data, str) else data
        parts = path.split("/")
        for depth in range(2, len(parts)):  # below the layer directory, which must exist
            rel = "/".join(parts[:depth])
            if rel not in self.new_dirs and not self.view.is_dir(rel):
                self.new_dirs.append(rel)

    def remove(self, path: str) -> None:
        """Take ``path`` out of the forest (journaled like a write: a crash puts it back)."""
        self.changes.pop(path, None)
        self.removed.add(path)


Prepare = Callable[[Stage], None]


def transact(forest: Forest, operation: str, request: Any, transaction_id: str | None,
             prepare: Prepare, wait: float = 0.0) -> WriteResult:
    """Run one write transaction and return its receipt as a result.

    Every step reads the limits of the one ``forest``: its config is read once
    per write, however many steps look at it.
    """
    root = forest.root
    txid = receipts.check_transaction_id(transaction_id) if transaction_id \
        else receipts.new_transaction_id()
    plan_sha256 = receipts.request_sha256(operation, request)
    extra: dict[str, Any] = {}
    with lock.held(root, operation, wait=wait):
        # An index connection opened before the lock may hold an index another writer
        # has since replaced: what this write reads, it reads under the lock.
        forest.forget_index()
        recovered = journal.recover(forest)
        if recovered is not None:
            extra["recovered"] = recovered
        prior = receipts.load(forest, txid)
        if prior is not None:
            if prior.get("operation") != operation or prior.get("plan_sha256") != plan_sha256:
                raise ForestError("transaction_id_conflict",
                                  "this transaction id was already used for a different "
                                  "request; choose a new id",
                                  {"transaction_id": txid, "operation": prior.get("operation")})
            return _result(prior, extra, already_applied=True)
        if not index.usable(forest):  # the first write into this forest, or a damaged index
            extra["index_built"] = index.build(forest)
        receipt = _commit(forest, operation, txid, plan_sha256, prepare)
    return _result(receipt, extra, already_applied=False)


def _result(receipt: dict[str, Any], extra: dict[str, Any], already_applied: bool
            ) -> dict[str, Any]:
    fields = {key: value for key, value in receipt.items() if key != "operation"}
    return result(receipt["operation"], **fields, **extra, already_applied=already_applied)


def _commit(forest: Forest, operation: str, txid: str, plan_sha256: str,
            prepare: Prepare) -> dict[str, Any]:
    root = forest.root
    view = View(forest)
    try:
        stage = Stage(view)
        prepare(stage)
        staged: dict[str, bytes | None] = {
            path: data for path, data in stage.changes.items() if view.read(path) != data}
        staged.update({path: None for path in stage.removed if view.exists(path)})
        report = check_staged(view, staged, stage.new_dirs)
        befores = {path: view.read(path) for path in staged}
        widened = _wider_than_private(forest, [path for path, data in staged.items()
                                               if befores[path] is not None and data is not None])
        refresh = sorted((set(view.stale) | view.refresh) - set(staged))
    finally:
        view.close()
    draft = {
        "receipt_version": receipts.RECEIPT_VERSION,
        "transaction_id": txid,
        "operation": operation,
        "plan_sha256": plan_sha256,
        "committed_at": stage.now,
        "touched": [{"path": path, "after_sha256": None if data is None else sha256_hex(data),
                     "before_sha256": None if befores[path] is None
                     else sha256_hex(befores[path])} for path, data in sorted(staged.items())],
        "created_dirs": list(stage.new_dirs) if staged else [],
        "modes_restored": widened,
        "check": report,
        **stage.details,
    }
    if not staged:
        summary = index.update_paths(forest, refresh)
        receipt = receipts.complete(draft, summary)
        receipts.write(forest, receipt)
        return receipt
    active = journal.begin(root, txid, operation, staged, befores,
                           list(stage.new_dirs), draft)
    try:
        crash_point("journaled")
        journal.apply(active)
        summary = index.update_paths(forest, [*staged, *refresh])
        crash_point("indexed")
        receipt = receipts.complete(draft, summary)
        receipts.write(forest, receipt)
        crash_point("receipted")
    except BaseException:
        _undo(forest, active)
        raise
    journal.finish(active)
    _prune(root, [path for path, data in staged.items() if data is None])
    return receipt


def _prune(root: Path, removed: list[str]) -> None:
    """Remove the folders a removal left empty (a forgotten branch's leaf folder).

    After the journal is gone, so a crash never has to recreate a folder to put a
    file back; an empty folder left by a crash here holds nothing and is harmless.
    """
    for path in removed:
        parts = path.split("/")[:-1]
        while len(parts) > 1:  # never the layer directory itself
            try:
                os.rmdir(root.joinpath(*parts))
            except OSError:
                break  # not empty (or already gone)
            parts.pop()


def _wider_than_private(forest: Forest, paths: list[str]) -> list[str]:
    """The files this write replaces whose mode is wider than 0600 (an editor's 0644).

    Every file is written 0600, so the write itself restores them; the receipt
    says which, because the operator may have wanted the wider mode.
    """
    return sorted(path for path in paths
                  if stat.S_IMODE(os.lstat(forest.root / path).st_mode) & ~FILE_MODE)


def _undo(forest: Forest, active: journal.Journal) -> None:
    """Restore the before-images after a handled failure; if that fails too, the
    journal stays and the next writer or ``doctor --repair`` finishes the job."""
    root = forest.root
    try:
        journal.rollback(active, forest.limits["max_file_bytes"])
        index.update_paths(forest, active.touched)
        receipt = receipt_rel(active.manifest["transaction_id"])
        if (root / receipt).exists():
            (root / receipt).unlink()
        journal.finish(active)
    except Exception:  # noqa: BLE001 - the original error is the one to report
        pass

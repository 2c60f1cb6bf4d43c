"""Receipts: ``.memory-forest/receipts/<transaction_id>.json``, one per transaction, 0600.

A receipt binds the operation, the sha256 of the request (the plan, or the
command's canonical arguments), every touched path with its before and after
sha256, and the summaries of the check and of the index update. It is what
an exact retry returns (with ``already_applied: true``).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from typing import Any

from ..digest import sha256_hex
from ..errors import ForestError
from ..forest import Forest
from ..jsonio import StrictJSONError, dumps, loads_strict
from ..safety import makedirs_private, read_regular, write_private
from ..statefiles import RECEIPTS, receipt_rel, state_rel
from .redact import refuse_secret_name

RECEIPT_VERSION = 1
MAX_RECEIPT_BYTES = 64 * 1024 * 1024
TRANSACTION_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_TRANSACTION_ID = re.compile(TRANSACTION_ID)


def now() -> str:
    """RFC 3339 UTC with milliseconds, the timestamp shape every writer uses."""
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def new_transaction_id() -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return f"tx-{stamp}-{os.urandom(4).hex()}"


def check_transaction_id(transaction_id: str) -> str:
    if not _TRANSACTION_ID.fullmatch(transaction_id):
        raise ForestError("transaction_id_invalid",
                          "a transaction id is 1-128 letters, digits, '.', '_' or '-', "
                          "starting with a letter or digit", exit_code=2)

    refuse_secret_name(transaction_id, "transaction id")  # it names the receipt file
    return transaction_id


def request_sha256(operation: str, request: Any) -> str:
    return sha256_hex(dumps({"operation": operation, "request": request}).encode())


def load(forest: Forest, transaction_id: str) -> dict[str, Any] | None:
    try:
        raw = read_regular(forest.root, receipt_rel(transaction_id), MAX_RECEIPT_BYTES)
    except ForestError as exc:
        if exc.code == "not_found":
            return None
        raise
    try:
        data = loads_strict(raw)
    except StrictJSONError:
        data = None
    if not isinstance(data, dict):
        raise ForestError("receipt_corrupt", "a stored receipt is not a JSON object",
                          {"path": receipt_rel(transaction_id)})
    return data


def complete(draft: dict[str, Any], index_summary: dict[str, Any]) -> dict[str, Any]:
    return {**draft, "index": index_summary}


def write(forest: Forest, receipt: dict[str, Any]) -> None:
    root = forest.root
    makedirs_private(root, state_rel(RECEIPTS))
    write_private(root / receipt_rel(receipt["transaction_id"]), (dumps(receipt) + "\n").encode())

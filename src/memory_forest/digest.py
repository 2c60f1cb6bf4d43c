"""The one hash of the forest: sha256 as lowercase hex.

It names a file's bytes in the index, in receipts and journals, a gate turn
and a structured-context snapshot; one definition keeps every comparison of
them comparing the same thing. Kept apart so the per-turn path imports only
hashlib for it.
"""

from __future__ import annotations

import hashlib


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

"""Re-chain the packaged example forest's ISTM files after an edit to them.

Usage: python scripts/chain_example.py [--check]

The example's events are written by hand (fixed ids and times, so the docs
can cite them), so their ``prev`` fields cannot come from ``capture``. This
sets each line's ``prev`` by the rules capture writes them with
(``memory_forest.chain``), in file-name order, and leaves every other field
as it is. ``--check`` changes nothing and exits 1 when a line is not chained
as it would be; tests/test_provenance.py holds the example to the same rule.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from memory_forest import chain
from memory_forest.jsonio import dumps

ISTM = Path(__file__).resolve().parents[1] / "src" / "memory_forest" / "example" / chain.ISTM_DIR


def rechained() -> dict[Path, bytes]:
    """Each example ISTM file's bytes with every line chained."""
    out: dict[Path, bytes] = {}
    prev = chain.GENESIS
    for name in chain.shard_names(sorted(p.name for p in ISTM.iterdir())):
        path = ISTM / name
        lines = []
        for _, line in chain.lines(path.read_bytes()):
            record = json.loads(line)
            record[chain.FIELD] = prev
            encoded = dumps(record).encode("utf-8")
            prev = chain.line_hash(encoded)
            lines.append(encoded + b"\n")
        out[path] = b"".join(lines)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report, change nothing")
    args = parser.parse_args()
    stale = [path for path, data in rechained().items() if path.read_bytes() != data]
    if args.check:
        for path in stale:
            print(f"not chained: {path.name}")
        sys.exit(1 if stale else 0)
    for path, data in rechained().items():
        path.write_bytes(data)
    print(f"re-chained {len(stale)} file(s)")


if __name__ == "__main__":
    main()

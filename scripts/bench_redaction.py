"""Redaction benchmark: recall and precision on planted secrets, false positives on ordinary text.

Usage: python scripts/bench_redaction.py [--planted N] [--ordinary N] [--seed S]

- planted: ``--planted`` sentences (default 2,000), each holding one random fake
  credential of a known kind in ordinary words. Recall is the share whose secret
  is gone from the output; precision is the share of markers that cover a
  planted secret (a marker anywhere else is a false alarm).
- ordinary: ``--ordinary`` generated strings (default 5,000) that look secret-ish
  but are not (hex hashes, git SHAs, UUIDs, base64 image data in a caption, URLs
  without credentials, prose about passwords and tokens), plus every line of
  the example forest and of docs/*.md. The false-positive rate is the share of
  strings the pass changes.
- cost: microseconds per string of ordinary text (the trigger pre-check path).

Secrets are generated at run time from random characters, so this file holds
none. Prints JSON; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from memory_forest.writers.redact import MARKER_PREFIX, redact_text  # noqa: E402

ALNUM = string.ascii_letters + string.digits
WORDS = ("the brine was at five percent and the jars went to the cellar on monday while the "
         "garden beds needed water before the frost came back to the greenhouse").split()


def pick(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


def planted_secret(rng: random.Random) -> tuple[str, str, str]:
    """(kind, the text as written, the secret part that must not survive)."""
    upper = string.ascii_uppercase + string.digits
    kind = rng.choice(["openai", "github", "slack", "aws_pair", "stripe", "google", "jwt",
                       "url", "assignment", "phrase", "fullwidth", "bearer"])
    if kind == "openai":
        secret = "sk-" + pick(rng, ALNUM, 32)
        return kind, secret, secret
    if kind == "github":
        secret = "gh" + rng.choice("pousr") + "_" + pick(rng, ALNUM, 36)
        return kind, secret, secret
    if kind == "slack":
        secret = "xox" + rng.choice("bp") + "-" + pick(rng, string.digits, 12) + "-" + \
            pick(rng, ALNUM, 24)
        return kind, secret, secret
    if kind == "aws_pair":
        key = pick(rng, string.ascii_uppercase, 2) + pick(rng, ALNUM + "/+", 36) + "a1"
        return kind, f"AKIA{pick(rng, upper, 16)} {key}", key
    if kind == "stripe":
        secret = rng.choice(["sk", "rk"]) + "_" + rng.choice(["live", "test"]) + "_" + \
            pick(rng, ALNUM, 24)
        return kind, secret, secret
    if kind == "google":
        secret = "AIza" + pick(rng, ALNUM + "_-", 35)
        return kind, secret, secret
    if kind == "jwt":
        secret = "eyJ" + pick(rng, ALNUM, 20) + "." + pick(rng, ALNUM, 30) + "." + \
            pick(rng, ALNUM, 20)
        return kind, secret, secret
    password = pick(rng, ALNUM, rng.randint(8, 16))
    if kind == "url":
        return kind, f"https://deploy:{password}@db.internal:5432/app", password
    if kind == "assignment":
        key = rng.choice(["password", "passwd", "api_key", "DB_TOKEN", "client_secret"])
        return kind, f"{key}{rng.choice(['=', ': ', '='])}{password}", password
    if kind == "phrase":
        return kind, f"the {rng.choice(['password', 'passphrase'])} is {password}", password
    if kind == "fullwidth":
        wide = "".join(chr(ord(c) + 0xFEE0) for c in "password")
        return kind, f"{wide}={password}", password
    return kind, f"Authorization: Bearer {password}.{pick(rng, ALNUM, 12)}", password


def sentence(rng: random.Random, words: int = 8) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def ordinary_text(rng: random.Random) -> str:
    kind = rng.randrange(9)
    if kind == 0:
        return f"sha256 {pick(rng, '0123456789abcdef', 64)} of the shard"
    if kind == 1:
        return f"fixed in commit {pick(rng, '0123456789abcdef', 40)} yesterday"
    if kind == 2:
        return f"request {uuid.UUID(int=rng.getrandbits(128))} timed out"
    if kind == 3:
        data = base64.b64encode(rng.randbytes(rng.randint(30, 300))).decode()
        return f"![photo of the jar](data:image/png;base64,{data}) day 3"
    if kind == 4:
        path = "/".join(pick(rng, string.ascii_lowercase, 5) for _ in range(3))
        return f"see https://docs.example.org/{path}?q={pick(rng, ALNUM, 8)}#top"
    if kind == 5:
        return rng.choice(["password reset instructions are in the wiki",
                           "the password is required after three tries",
                           "rotate the token every month; the secret sauce is brine",
                           "Bearer authentication is described in the RFC",
                           "tokens per second went up after the change",
                           "a password manager keeps the passphrase"]) + " " + sentence(rng, 4)
    if kind == 6:
        return f"git@github.com:{pick(rng, string.ascii_lowercase, 6)}/repo.git and " \
               f"mailto:{pick(rng, string.ascii_lowercase, 5)}@example.org"
    if kind == 7:
        return f"base64 digest {base64.b64encode(rng.randbytes(30)).decode()} " + sentence(rng)
    return sentence(rng, 12)


def corpus_lines() -> list[str]:
    files = [p for p in (ROOT / "src/memory_forest/example").rglob("*")
             if p.is_file() and p.suffix in (".md", ".jsonl")]
    files += sorted((ROOT / "docs").glob("*.md"))
    lines = []
    for path in files:
        if path.name in ("writing.md", "security.md"):
            continue  # these document the patterns with (fake) examples on purpose
        lines += [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--planted", type=int, default=2000)
    parser.add_argument("--ordinary", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)

    caught, markers, on_target, missed = 0, 0, 0, Counter()
    for _ in range(args.planted):
        kind, text, secret = planted_secret(rng)
        out = redact_text(f"{sentence(rng)} {text} {sentence(rng)}", {})
        found = out.count(MARKER_PREFIX)
        markers += found
        if secret not in out:
            caught += 1
            on_target += min(found, 2 if kind == "aws_pair" else 1)
        else:
            missed[kind] += 1

    generated = [ordinary_text(rng) for _ in range(args.ordinary)]
    lines = corpus_lines()
    changed_generated = [text for text in generated if redact_text(text, {}) != text]
    changed_lines = [text for text in lines if redact_text(text, {}) != text]
    started = time.perf_counter()
    for text in generated:
        redact_text(text, {})
    cost = (time.perf_counter() - started) / max(1, len(generated)) * 1e6

    report = {
        "planted": args.planted, "recall": round(caught / args.planted, 4),
        "precision": round(on_target / markers, 4) if markers else None,
        "missed_by_kind": dict(missed),
        "ordinary_generated": len(generated),
        "false_positive_rate_generated": round(len(changed_generated) / len(generated), 4),
        "ordinary_corpus_lines": len(lines),
        "false_positive_rate_corpus": round(len(changed_lines) / max(1, len(lines)), 4),
        "false_positive_examples": [text[:80] for text in (changed_generated + changed_lines)[:5]],
        "microseconds_per_ordinary_string": round(cost, 2),
    }
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

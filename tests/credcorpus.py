"""The credential corpus: forms that must never leave the machine, and lines that may.

``forms()`` reads ``tests/data/credentials/forms.jsonl``: synthetic credentials
written from the real formats of each service, not from the project's rules, so
they test the detector rather than restate it (each line carries the release
audit's allow marker: the keys are fake, random in the right shape).
``ordinary_lines()`` gathers text that holds no credential from what is already
on the machine (the project's docs and example forests, the Python standard
library outside its test packages, the installed packages' file lists with
their hashes, license texts, this repository's commit log), so the
false-positive check reads real prose, code, paths, URLs and hashes instead of
strings made to pass. Shared by
tests/test_credential_corpus.py and scripts/bench_credentials.py.
"""

from __future__ import annotations

import json
import random
import subprocess
import sysconfig
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FORMS = REPO / "tests" / "data" / "credentials" / "forms.jsonl"
EXAMPLE_FOREST = REPO / "src" / "memory_forest" / "example"
LICENSES = Path("/usr/share/common-licenses")
# The docs that show each rule with a fake example on purpose: neither ordinary nor own text.
DEMO_DOCS = ("writing.md", "security.md")
# Lines gathered per source at most, so no single source decides the rate.
PER_SOURCE = 3000
SEED = 27


def forms() -> list[dict[str, Any]]:
    """Every credential form: id, kind, text (as written somewhere) and secret (what must go)."""
    with FORMS.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def own_text_files() -> list[Path]:
    """The project's own prose (less the docs that show fake examples of the rules) and
    example forests: no line here may look like a credential."""
    files = [REPO / "README.md", *(path for path in sorted((REPO / "docs").glob("*.md"))
                                   if path.name not in DEMO_DOCS)]
    for tree in (REPO / "examples", EXAMPLE_FOREST):
        files += sorted(p for p in tree.rglob("*")
                        if p.is_file() and p.suffix in (".md", ".jsonl", ".json", ".txt", ".sh"))
    return files


def lines_of(paths: list[Path]) -> list[str]:
    """The non-blank lines of ``paths`` (undecodable bytes replaced), in order."""
    lines = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        lines += [line for line in text.splitlines() if line.strip()]
    return lines


def ordinary_lines(size: int = 6000) -> list[str]:
    """``size`` distinct ordinary lines (fewer only if the machine holds less text), mixed
    from every source; the same machine gives the same lines."""
    rng = random.Random(SEED)
    own = lines_of([*own_text_files(), REPO / "CHANGELOG.md"])
    pools = [_sample(rng, own), _sample(rng, _stdlib_lines(rng)),
             _sample(rng, _record_lines()), _sample(rng, _license_lines()),
             _sample(rng, _commit_lines()), _identifier_lines(rng)]
    seen: set[str] = set()
    mixed = []
    for line in (line for pool in pools for line in pool):
        if line not in seen:
            seen.add(line)
            mixed.append(line)
    rng.shuffle(mixed)
    return mixed[:size]


def _sample(rng: random.Random, lines: list[str]) -> list[str]:
    unique = sorted({line.strip() for line in lines if len(line.strip()) >= 8})
    return rng.sample(unique, min(PER_SOURCE, len(unique)))


def _stdlib_lines(rng: random.Random) -> list[str]:
    """Code and docstrings of the standard library, leaving out the test packages (they hold
    test keys and certificates on purpose)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in sorted(stdlib.rglob("*.py"))
             if not any(part.startswith(("test", "idle_test", "site-packages"))
                        for part in p.relative_to(stdlib).parts)]
    return lines_of(rng.sample(files, min(300, len(files))))


def _record_lines() -> list[str]:
    """The installed packages' RECORD lines: paths with base64 sha256 digests and sizes."""
    lines = []
    for dist in sorted(metadata.distributions(), key=lambda d: d.metadata["Name"] or ""):
        lines += (dist.read_text("RECORD") or "").splitlines()
    return lines


def _license_lines() -> list[str]:
    return lines_of(sorted(p for p in LICENSES.glob("*") if p.is_file())) \
        if LICENSES.is_dir() else []


def _commit_lines() -> list[str]:
    """This repository's commit ids with their subjects, when it is a git checkout."""
    try:
        done = subprocess.run(["git", "-C", str(REPO), "log", "--format=%H %an %ad %s",
                               "-n", "2000"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    return done.stdout.splitlines() if done.returncode == 0 else []


def _identifier_lines(rng: random.Random) -> list[str]:
    """Ids as notes carry them: request UUIDs, content digests, event ids."""
    lines = []
    for _ in range(300):
        lines.append(f"request {uuid.UUID(int=rng.getrandbits(128))} timed out after 30 s")
        lines.append(f"sha256:{rng.getrandbits(256):064x}  backup-2026-11.tar.zst")
        lines.append(f"event evt-{rng.getrandbits(48):012x} captured on host beta")
    return lines

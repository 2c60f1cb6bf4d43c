"""Credential-shaped strings in files about to leave the machine: the release audit's rules.

One definition for the two places that refuse to publish a secret: the
release audit (``scripts/audit_public_release.py``, over the repository) and
``sync`` (over what it would commit and push). Writers redact caller text
before storing it (``writers.redact``); these rules catch what reached a file
some other way, a hand edit or another tool. A finding names the rule, never
the matched text, so reporting it cannot leak it.

Ground level, standard library only.
"""

from __future__ import annotations

import re

PLACEHOLDER_WORDS = (
    "example",
    "placeholder",
    "changeme",
    "change-me",
    "change_me",
    "dummy",
    "redacted",
    "xxxx",
    "your",
    "fake",
    "sample",
    "secret_here",
    "token_here",
)

# The patterns are written so that this file does not match them itself.
PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
CREDENTIALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("sk_key", re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}")),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}")),
    ("github_pat", re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{30,}")),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("aws_access_key_id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")),
    (
        "jwt",
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}"
            r"\.[A-Za-z0-9_-]{8,}"
        ),
    ),
)
CREDENTIAL_KINDS = frozenset(name for name, _ in CREDENTIALS)
ASSIGNMENT = re.compile(
    r"""(?ix)
    (?<![A-Za-z0-9])
    [A-Za-z0-9_.-]*?(?:password|passwd|pwd|token|secret|api[_-]?key)  # the key, maybe prefixed
    ["']?\s*(?:=|:)(?!=)\s*                                          # = or :, never ==
    (?:["']([^"'\s]{1,512})["']|([^\s"'`,;)\]}>]{1,512}))             # quoted or bare value
    """
)


def findings(text: str) -> list[tuple[int, str]]:
    """``(line number, rule)`` for every rule each line of ``text`` breaks."""
    return [(number, rule) for number, line in enumerate(text.splitlines(), 1)
            for rule in line_findings(line)]


def line_findings(line: str) -> list[str]:
    """The rules ``line`` breaks: ``private_key``, a credential kind (``aws_access_key_id``,
    ``github_token``...) or ``secret_assignment``; each at most once."""
    rules = []
    if PRIVATE_KEY.search(line):
        rules.append("private_key")
    for name, pattern in CREDENTIALS:
        if any(real_token(m.group(0)) for m in pattern.finditer(line)):
            rules.append(name)
    if any(real_value(m.group(1) or m.group(2)) for m in ASSIGNMENT.finditer(line)):
        rules.append("secret_assignment")
    return rules


def real_token(token: str) -> bool:
    """A token made of one repeated character or with no digit is a placeholder."""
    body = token.split("-", 1)[-1] if token.startswith(("sk-", "xox")) else token
    return any(c.isdigit() for c in body) and len(set(body)) > 4


def real_value(value: str) -> bool:
    """Does an assigned value look like a real secret rather than code or a placeholder?"""
    if len(value) < 8 or len(set(value)) < 5:
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    if any(c in value for c in "<>{}$%*()[]\\") or "..." in value:
        return False
    lowered = value.lower()
    return not any(word in lowered for word in PLACEHOLDER_WORDS)

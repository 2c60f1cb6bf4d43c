"""One detector, two sides: a string the writers would redact is one sync refuses, and the reverse.

The strings mix credential forms (the detector tests' cases), ordinary noise and
Unicode compatibility forms (full-width letters, zero-width spaces).
"""

from __future__ import annotations

import string

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_credentials import CASES, NOT_CREDENTIALS

from memory_forest.credentials import findings, line_findings
from memory_forest.writers.redact import redact_text

WIDE = {c: chr(ord(c) + 0xFEE0) for c in string.ascii_letters + string.digits}


def _disguise(text: str, how: int) -> str:
    if how == 1:
        return "".join(WIDE.get(c, c) for c in text)
    if how == 2:
        return text[: len(text) // 2] + "\u200b" + text[len(text) // 2:]
    return text


pieces = st.one_of(
    st.sampled_from([text for _, text, _ in CASES]),
    st.sampled_from(NOT_CREDENTIALS),
    st.text(max_size=40),
    st.sampled_from([" ", "\n", "=", ":", '"', "password", "token", "://", "@", "-----"]),
)
mixed = st.lists(st.tuples(pieces, st.integers(0, 2)), max_size=6).map(
    lambda parts: "".join(_disguise(text, how) for text, how in parts))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed)
# a marker completes the Basic header it cut short: redaction reads the text again
@example("Authorization: Basic dXNlcjpodW50ZXIy=PuTTY-User-" + "Key-File-2: ssh-rsa")
def test_writers_redact_exactly_what_sync_refuses(text):
    counts: dict[str, int] = {}
    redacted = redact_text(text, counts)
    assert (redacted != text) == bool(findings(text))
    assert sum(counts.values()) >= len({rule for _, rule in findings(text)})
    # sync and the release audit read a file line by line: the same answer
    assert (redacted != text) == any(line_findings(line) for line in text.splitlines())
    assert findings(redacted) == []  # what a writer stores, sync would push

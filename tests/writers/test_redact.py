"""The redaction pass: every rule, Unicode folding, JSON keys and depth, names, ordinary text.

Every fake credential is assembled from two pieces, so no line of this file looks
like a real one to the release audit (or to a scanner reading the repository).
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from memory_forest.errors import ForestError
from memory_forest.writers.redact import (
    find_secret,
    redact_text,
    redact_value,
    refuse_secret_name,
)

AWS_ID = "AKIA" + "IOSFODNN7Q2W3E4R"
AWS_BARE_KEY = "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYzq8w3e5r7t"
GITHUB = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
SLACK_BOT = "xoxb-" + "123456789012-abcdefghij"
SLACK_USER = "xoxp-" + "123456789012-1234-abcdefgh"

# (rule, text holding one credential, the text as stored)
CASES = [
    ("api_key", "key " + "sk-" + "proj-abcdefghijklmnopqrstuvwx", "key [REDACTED:api_key]"),
    ("github_token", GITHUB, "[REDACTED:github_token]"),
    ("github_token", "github_pat_" + "11ABCDEFG0abcdefghijklmnopqrstuv", "[REDACTED:github_token]"),
    ("slack_token", SLACK_BOT, "[REDACTED:slack_token]"),
    ("slack_token", SLACK_USER, "[REDACTED:slack_token]"),
    ("aws_access_key", AWS_ID, "[REDACTED:aws_access_key]"),
    ("jwt", "eyJ" + "hbGciOiJIUzI1NiJ9.ey" + "JzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N",
     "[REDACTED:jwt]"),
    ("private_key", "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n"
     "-----END OPENSSH PRIVATE KEY-----", "[REDACTED:private_key]"),
    ("bearer", "Authorization: Bear" + "er abc.def-ghi_jkl",
     "Authorization: Bearer [REDACTED:bearer]"),
    ("assignment", "pass" + "word=hunter22", "password=[REDACTED:assignment]"),
    ("assignment", "pass" + "wd=hunter22", "passwd=[REDACTED:assignment]"),
    ("assignment", "pass" + "word: hunter22", "password: [REDACTED:assignment]"),
    ("assignment", "TOK" + "EN: 'abc def'", "TOKEN: '[REDACTED:assignment]'"),
    ("assignment", 'db_sec' + 'ret="s3cr3t"', 'db_secret="[REDACTED:assignment]"'),
    ("assignment", '"api_' + 'key": "q1w2e3r4t5"', '"api_key": "[REDACTED:assignment]"'),
    ("assignment", "`pass" + "word=hunter22`", "`password=[REDACTED:assignment]`"),
    ("url_credentials", "https://bob:" + "hunter22@db.example.org/x",
     "https://bob:[REDACTED:url_credentials]@db.example.org/x"),
    ("url_credentials", "postgres://:" + "hunter22@localhost:5432/app",
     "postgres://:[REDACTED:url_credentials]@localhost:5432/app"),
    ("password_phrase", "my pass" + "word is swordfish.",
     "my password is [REDACTED:password_phrase]."),
    ("password_phrase", "the Pass" + "phrase was 'correct horse'",
     "the Passphrase was '[REDACTED:password_phrase]'"),
    ("stripe_key", "sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:stripe_key]"),
    ("stripe_key", "sk_" + "test_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:stripe_key]"),
    ("stripe_key", "rk_" + "live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:stripe_key]"),
    ("google_api_key", "AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "[REDACTED:google_api_key]"),
]


@pytest.mark.parametrize("rule, text, stored", CASES)
def test_each_rule_redacts_its_credential_and_nothing_around_it(rule, text, stored):
    counts: dict[str, int] = {}
    out = redact_text(f"before {text} after", counts)
    assert out == f"before {stored} after"
    assert counts == {rule: 1}


def test_a_bare_aws_secret_key_is_redacted_next_to_its_access_key_id_only():
    counts: dict[str, int] = {}
    out = redact_text(f"id {AWS_ID} and secret {AWS_BARE_KEY} ok", counts)
    assert out == "id [REDACTED:aws_access_key] and secret [REDACTED:aws_secret_key] ok"
    assert counts == {"aws_access_key": 1, "aws_secret_key": 1}
    alone = f"a 40-character value {AWS_BARE_KEY} with no key id"
    assert redact_text(alone, counts) == alone
    far = f"{AWS_ID} {'x ' * 150}{AWS_BARE_KEY}"
    assert AWS_BARE_KEY in redact_text(far, {})
    blob = base64.b64encode(bytes(range(256)) * 2).decode()  # crosses the 200-character window
    assert blob in redact_text(f"{AWS_ID} {'x ' * 79} {blob}", {})
    sibling: dict[str, int] = {}
    assert redact_value({"id": AWS_ID, "key": AWS_BARE_KEY, "note": "rotated"}, sibling) == \
        {"id": "[REDACTED:aws_access_key]", "key": "[REDACTED:aws_secret_key]",
         "note": "rotated"}
    assert sibling == {"aws_access_key": 1, "aws_secret_key": 1}


@pytest.mark.parametrize("text, stored", [
    ("ｐａｓｓ" + "ｗｏｒｄ=hunter22 ok", "ｐａｓｓｗｏｒｄ=[REDACTED:assignment] ok"),
    ("pass\u200bword=hunter22 ok", "pass\u200bword=[REDACTED:assignment] ok"),
    ("ＡＫＩＡ" + "ＩＯＳＦＯＤＮＮ７Ｑ２Ｗ３Ｅ４Ｒ tail", "[REDACTED:aws_access_key] tail"),
    ("ｓｋ＿ｌｉｖｅ＿" + "４ｅＣ３９ＨｑＬｙｊＷＤａｒ after", "[REDACTED:stripe_key] after"),
    ("café tok" + "en=ｓｅｃｒｅｔ９ 한국어", "café token=[REDACTED:assignment] 한국어"),
])
def test_compatibility_forms_match_and_the_rest_is_stored_as_given(text, stored):
    counts: dict[str, int] = {}
    assert redact_text(text, counts) == stored and sum(counts.values()) == 1


def test_json_keys_and_values_are_redacted_at_any_depth():
    counts: dict[str, int] = {}
    deep: dict = {"pass" + "word": "hunter22"}
    for _ in range(3000):  # far past the recursion limit
        deep = {"next": [deep]}
    payload = {"pass" + "word": "hunter22", "api_" + "key": "q1w2", "api" + "Key": "q1w2",
               "db_to" + "ken": "q1w2", "api_keys": ["q1w2", {"sec" + "ret": "q1w2"}], GITHUB: 1,
               "pwd": "/srv/app", "token_count": 7, "secret": "", "deep": deep}
    out = redact_value(payload, counts)
    assert out["password"] == out["api_key"] == out["apiKey"] == out["db_token"] == \
        "[REDACTED:secret_field]"
    assert out["api_keys"] == ["q1w2", {"secret": "[REDACTED:secret_field]"}]
    assert out["[REDACTED:github_token]"] == 1 and GITHUB not in out
    assert out["pwd"] == "/srv/app" and out["token_count"] == 7 and out["secret"] == ""
    node = out["deep"]
    for _ in range(3000):
        node = node["next"][0]
    assert node == {"password": "[REDACTED:secret_field]"}
    assert counts == {"secret_field": 6, "github_token": 1}
    assert payload["password"] == "hunter22"  # the input is not changed


def test_keys_that_redact_to_the_same_marker_both_stay():
    counts: dict[str, int] = {}
    other = "ghp_" + "zyxwvutsrqponmlkjihgfedcba9876543210"
    out = redact_value({GITHUB: 1, other: 2}, counts)
    assert sorted(out.values()) == [1, 2] and counts == {"github_token": 2}


def test_redacting_twice_changes_nothing_more():
    counts: dict[str, int] = {}
    once = redact_value({"text": f"pass{'word'}=hunter22 {GITHUB}", "tok" + "en": "abc"}, counts)
    again: dict[str, int] = {}
    assert redact_value(once, again) == once and again == {}


def test_a_name_holding_a_credential_is_refused_with_a_stable_code():
    refuse_secret_name("evt-20261130-0001", "event_id")
    with pytest.raises(ForestError) as info:
        refuse_secret_name(AWS_ID, "event_id", event=3)
    assert info.value.code == "secret_in_name" and info.value.exit_code == 2
    assert info.value.details == {"field": "event_id", "rule": "aws_access_key", "event": 3}
    assert AWS_ID not in info.value.message
    assert find_secret("kimchi-batch-7") is None


# --- ordinary text --------------------------------------------------------------------------

ORDINARY = [
    "password reset instructions are in the wiki",
    "The password is required and the password is incorrect after three tries.",
    "Your password was changed; the password is stored hashed.",
    "the token economy; a secret garden; password policy review; sk-short; Bearer x",
    "Bearer authentication is described in RFC 6750.",
    "commit 1f2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5 fixed it",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request id 123e4567-e89b-12d3-a456-426614174000 timed out",
    "![diagram](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==) caption",
    "see https://docs.python.org/3/library/re.html#re.sub and http://localhost:8080/x@y",
    "mailto:someone@example.org and git@github.com:owner/repo.git",
    "Tokens per second went up; the secret sauce is 5 percent brine.",
    "token limits: 8k context",
    "the `password=` and `token:` forms are documented",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_redacted(text):
    counts: dict[str, int] = {}
    assert redact_text(text, counts) == text and counts == {}


def test_the_example_forest_text_is_not_redacted():
    example = Path(__file__).resolve().parents[2] / "src/memory_forest/example"
    files = [p for p in example.rglob("*") if p.is_file() and p.suffix in (".md", ".jsonl")]
    assert files
    for path in files:
        counts: dict[str, int] = {}
        text = path.read_text(encoding="utf-8")
        assert redact_text(text, counts) == text, path

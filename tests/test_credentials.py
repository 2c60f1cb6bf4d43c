"""The one credential detector: every rule, what is not a credential, and what it costs to import.

Every fake credential is assembled from pieces at run time, so no line of this
file looks like one to the release audit (or to a scanner reading the repository).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memory_forest.credentials import RULE_NAMES, findings, line_findings, spans
from memory_forest.credentials.table import RULES, may_hold
from memory_forest.writers.redact import redact_text, redact_value

REPO = Path(__file__).resolve().parents[1]
B64 = "dXNlcjpod" + "W50ZXIy"  # base64 of user:hunter2
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYzq8w3e5r7t"
NPM = "a1B2c3D4e5F6g7H8i9J0" + "kL1m2N3o4P5q6R7s"

# (rule, text holding one credential, the secret itself)
CASES = [
    ("private_key", "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
     None),
    ("private_key", "PuTTY-User-" + "Key-File-2: ssh-rsa", None),
    ("jwt", "ey" + "JhbGciOiJIUzI1NiJ9.ey" + "JzdWIiOiI0MiJ9.Xh3kP9qL2mR7vT4w", None),
    ("bearer", "Authorization: Bear" + "er abc.def-ghi_jk1", "abc.def-ghi_jk1"),
    ("basic_auth", "Authorization: Bas" + "ic " + B64, B64),
    ("docker_auth", '{"auths": {"r.io": {"au' + 'th": "' + B64 + '"}}}', B64),
    ("url_credentials", "postgres://app:" + "S3cr3t!x@db.internal:5432/app", "S3cr3t!x"),
    ("url_credentials", "mongodb+srv://root:" + "pa55w0rd@cluster0.mongodb.net/db", "pa55w0rd"),
    ("aws_access_key", "AK" + "IAQ7ZX3K2M9P4R5T6V", None),
    ("aws_secret_key", "aws_secret_" + "access_key = " + AWS_SECRET, AWS_SECRET),
    ("aws_secret_key", "export AWS_SECRET_" + "ACCESS_KEY=" + AWS_SECRET, AWS_SECRET),
    ("aws_secret_key", '{"AwsSecretAcc' + 'essKey": "' + AWS_SECRET + '"}', AWS_SECRET),
    ("azure_storage_key", "AccountName=x;Account" + "Key=" + "Qm4Lp1x7" * 11 + "==;",
     "Qm4Lp1x7" * 11 + "=="),
    ("github_token", "gh" + "p_" + "R7t2Yk9Lm3Qp8Zx4Vc6Bn1Hs5Jd0Wf2Ga7Ke", None),
    ("gitlab_token", "glp" + "at-" + "x7Hq2Lm9Rt4Vz8Kp3Ws1", None),
    ("slack_webhook", "https://hooks.sl" + "ack.com/services/T0AB12CD3/B0EF45GH6/q8Rm3Tk5Wn7Yp",
     None),
    ("slack_token", "xo" + "xb-" + "2741-99310-Zq8Rm3Tk5Wn", None),
    ("stripe_key", "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc", None),
    ("stripe_key", "rk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc", None),
    ("api_key", "sk-" + "proj-" + "Q3v9Xk2LmP8sT4wZ7bN1cR6d", None),
    ("google_api_key", "AI" + "zaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", None),
    ("huggingface_token", "hf" + "_" + "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi", None),
    ("twilio_key", "A" + "C" + "3f9a1b2c4d5e6f708192a3b4c5d6e7f80", None),
    ("sendgrid_key", "S" + "G." + "a1B2c3D4e5F6g7H8i9J0kL."
     "m1N2o3P4q5R6s7T8u9V0w1X2y3Z4a5B6c7D8e9F0g1H", None),
    ("npm_token", "//registry.npmjs.org/:_authTok" + "en=npm_" + NPM, "npm_" + NPM),
    ("pypi_token", "py" + "pi-AgEIcHlwaS5vcmc" + "Q1w2E3r4T5y6" * 6, None),
    ("telegram_token", "bot " + "123456789:" + "AAH3kP9qL2mR7vT4wX1yZ5aB6cD8eF0gH2j", None),
    ("mailchimp_key", "3f9a1b2c4d5e6f708192a3b4c5d6e7f8" + "-us12", None),
    ("square_oauth", "sq0" + "csp-" + "a1B2c3D4e5F6g7H8i9J0kL1m2N3o4P5q6R7s8T9u0V1", None),
    ("netrc", "machine api.example.org login bob pass" + "word hunter2", "hunter2"),
    ("netrc", "  pass" + "word hunter2", "hunter2"),
    ("pgpass", "db.internal:5432:app:bob:" + "hunter2", "hunter2"),
    ("assignment", "DB_PASS" + "WORD=hunter2", "hunter2"),
    ("assignment", "pass" + "word: 1234", "1234"),
    ("assignment", '{"pass' + 'word": 48213977}', "48213977"),
    ("assignment", "api_" + 'key = "k2J9x7Qm4Lp1"', "k2J9x7Qm4Lp1"),
    ("password_phrase", "my pass" + "word is swordfish", "swordfish"),
    ("assignment", "<pass" + "word>Kx7#mQ2p</password>", "Kx7#mQ2p"),
    ("discord_webhook", "https://discord.com/api/web" + "hooks/123456789012345678/"
     "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9-x", "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9-x"),
    ("google_oauth_token", "ya" + "29." + "a0Af1bC2dE3fG4hI5jK6lM7nO8", None),
    ("azure_sas", "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&s" + "ig="
     "Q1w2E3r4T5y6U7i8O9p0%3D", "Q1w2E3r4T5y6U7i8O9p0%3D"),
    ("vault_token", "hv" + "s." + "CAESIJ1k2L3m4N5o6P7q8R9s0T", None),
    ("docker_token", "dckr" + "_pat_" + "Zx8Cv7Bn6Mq5Wr4Et3Yu2Io1", None),
    ("service_token", "shp" + "at_" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0", None),
    ("service_token", "do" + "p_v1_" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0" * 2, None),
    ("cli_password", "curl -u admin:" + "Wq9!rT4z https://ci.internal/api", "Wq9!rT4z"),
    ("cli_password", "sshpass -p '" + "Wq9!rT4z' ssh deploy@10.0.0.9", "Wq9!rT4z"),
]


@pytest.mark.parametrize("rule, text, secret", CASES)
def test_each_rule_finds_its_credential_and_only_it(rule, text, secret):
    around = f"before\n{text}\nafter"
    found = spans(around)
    assert [found_rule for _, _, found_rule in found] == [rule]
    start, end, _ = found[0]
    if secret is not None:
        assert around[start:end] == secret
    assert findings(f"first line\n{around}")[0][0] == 3 and line_findings(text)
    counts: dict[str, int] = {}
    assert redact_text(text, counts) != text and counts == {rule: 1}


def test_every_rule_has_a_case_and_docs_security_lists_it():
    assert {rule for rule, _, _ in CASES} | {"secret_field", "ibm_cloud_iam", "ibm_cos_hmac",
                                             "cloudant", "softlayer", "discord_token",
                                             "artifactory_token"} == set(RULE_NAMES)
    security = (REPO / "docs/security.md").read_text(encoding="utf-8")
    assert all(f"`{rule}`" in security for rule in RULE_NAMES)


# detect-secrets plugins not used as rules, each for a reason docs/security.md gives.
UNUSED_PLUGINS = {"IPPublicDetector", "KeywordDetector", "Base64HighEntropyString",
                  "HexHighEntropyString", "NpmDetector"}


def test_every_detect_secrets_plugin_is_a_rule_or_left_out_on_purpose():
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins = {cls.__name__ for cls in get_mapping_from_secret_type_to_class().values()}
    used = {spec.split(".")[1].split("[")[0].split("@")[0]
            for rule in RULES for spec in rule.plugins}
    assert used | UNUSED_PLUGINS == plugins and not used & UNUSED_PLUGINS
    security = (REPO / "docs/security.md").read_text(encoding="utf-8")
    assert all(name in security for name in UNUSED_PLUGINS)


def test_each_detect_secrets_plugin_match_passes_the_pre_check():
    """A plugin's own examples pass ``may_hold``: the pre-check never hides a rule."""
    for rule, text, _ in CASES:
        assert may_hold(text), rule
    assert all(rule.literals or rule.shape for rule in RULES)


def test_the_secret_half_of_a_pair_is_found_beside_its_id_only():
    sid, token = "A" + "C" + "3f9a1b2c4d5e6f708192a3b4c5d6e7f80", "89e6dcde30a3aed1" * 2
    text = f'client = Client("{sid}", "{token}")'
    assert [(text[s:e], rule) for s, e, rule in spans(text)] == \
        [(sid, "twilio_key"), (token, "twilio_key")]
    assert spans(f"md5 {token} of the file") == []


def test_a_finding_names_the_line_the_secret_starts_on():
    text = "intro\n\nkey " + "AK" + "IAQ7ZX3K2M9P4R5T6V here\n" + "-----BEGIN " + \
        "PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n"
    assert findings(text) == [(3, "aws_access_key"), (4, "private_key")]


NOT_CREDENTIALS = [
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "leaf-2026-11-30-0001 and evt-20261130-0001 and txn-9f8e7d6c5b4a",
    "request id 123e4567-e89b-12d3-a456-426614174000 timed out",
    "password=[REDACTED:assignment] and [REDACTED:github_token]",
    "see 04 stm/kitchen/fermentation/kimchi-batch-7.md#ingredients",
    "the password is required; reset your password; no secret: whoever reads it",
    "pass" + "word = os.environ['DB_PASSWORD'] and token = get_token()",
    '"pwd": "/srv/app", "token_count": 7, "max_tokens": 4096',
    "pass" + "word: <your-password> and api_key: ${API_KEY} and secret={{ secret }}",
    "the AccountName setting, a Basic plan, Bearer authentication, hooks.slack.com docs",
    "10:30:45 meeting; ratio 16:9; https://example.org:8443/path@v2",
    "self.user, self.pass" + "word = user, password; def __init__(self, passwd=None):",
    "user, pass" + "word = Manager.find_user_password(self, realm,",
    "if not pass" + "word:\n    raise ValueError('no password')",
    "when no login/pass" + "word was specified, the netrc pass" + "word combination.",
]


@pytest.mark.parametrize("text", NOT_CREDENTIALS)
def test_ordinary_text_ids_hashes_and_markers_are_not_credentials(text):
    assert spans(text) == [] and findings(text) == []


def test_the_forests_own_files_and_docs_have_no_findings():
    roots = ["docs", "examples", "tests/data", "src/memory_forest/example"]
    corpus = REPO / "tests/data/credentials"  # credential forms on purpose
    files = [p for root in roots for p in (REPO / root).rglob("*")
             if p.is_file() and p.suffix in (".md", ".jsonl", ".json", ".txt", ".yaml", ".sh")
             and not p.is_relative_to(corpus)]
    assert len(files) > 20
    for path in files:
        assert findings(path.read_text(encoding="utf-8")) == [], path


def test_a_numeric_secret_under_a_secret_named_key_is_redacted():
    counts: dict[str, int] = {}
    out = redact_value({"pass" + "word": 48213977, "pin": 7, "token": None, "secret": True,
                        "api_" + "key": 1.5}, counts)
    assert out == {"password": "[REDACTED:secret_field]", "pin": 7, "token": None,
                   "secret": True, "api_key": "[REDACTED:secret_field]"}
    assert counts == {"secret_field": 2}


def test_ordinary_text_does_not_load_detect_secrets_and_a_candidate_does():
    probe = ("import sys, json\nfrom memory_forest.credentials import findings\n"
             "plain = findings('the kimchi needs three more days in the cellar')\n"
             "before = 'detect_secrets' in sys.modules\n"
             "hit = findings(sys.argv[1])\n"
             "print(json.dumps([plain, before, hit, 'detect_secrets' in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", probe, "pass" + "word=hunter2"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == [[], False, [[1, "assignment"]], True]


def test_a_long_value_is_redacted_whole_and_a_long_line_is_read_to_its_end():
    value = "A1b2" * 100  # past the 256 characters a value is first read to
    counts: dict[str, int] = {}
    assert redact_text("DB_PASS" + f"WORD={value} tail", counts) == \
        "DB_PASSWORD=[REDACTED:assignment] tail" and counts == {"assignment": 1}
    token = "gh" + "p_" + "R7t2Yk9Lm3Qp8Zx4Vc6Bn1Hs5Jd0Wf2Ga7Ke"
    for filler in ("word " * 3000, "x" * 4090 + " "):  # beyond and across a search window
        line = filler + token + " " + filler
        assert [rule for _, _, rule in spans(line)] == ["github_token"]
        assert token not in redact_text(line, {})

"""The credential rules, as data: which detect-secrets plugins, which of our own patterns.

Each rule names the detect-secrets (Yelp, 1.5) plugin regexes it is built on
and adds our own patterns only where those miss, saying why. Every rule also
declares the lower-case literals (or, for rules with no literal, a cheap
"shape" regex) that any of its matches holds: ``may_hold`` tests text for
them, with the standard library only, before ``credentials.match`` imports
detect-secrets and runs the rules. docs/security.md lists this table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One rule: the name receipts and findings report, and where its patterns come from.

    ``plugins`` are ``module.Class`` of detect-secrets' plugins, optionally with
    ``[i]`` (one regex of its denylist) and ``@g`` (the group that is the secret;
    else the whole match, extended to the end of the token it starts).
    ``own`` are our patterns; their group ``s`` (or ``s1``, ``s2``...) is the secret.
    ``check`` says which filter decides whether a match is a real secret: ``token``
    (a credential by its shape: not a placeholder, not inside a longer word),
    ``basic`` (base64 of ``user:password``), ``url`` (not a placeholder or template),
    ``value`` and ``phrase`` (a value given a secret's name: also not code, a path or
    a word of prose).
    """

    name: str
    literals: tuple[str, ...] = ()
    shape: str = ""
    plugins: tuple[str, ...] = ()
    own: tuple[str, ...] = ()
    check: str = "token"
    why: str = ""


# Key words that name a secret, beyond detect-secrets' KeywordDetector list (which the
# assignment rule also uses): ours add tokens, passphrases and access keys.
OWN_KEYWORDS = ("token", "passphrase", "access_?key", "secret_?key", "api-key", "auth_?token",
                "(?<![A-Za-z])pass", "(?<![A-Za-z])pw")
# The literals that every keyword, ours or detect-secrets', holds (lower case).
KEYWORD_LITERALS = ("pass", "pwd", "secret", "token", "apikey", "api_key", "api-key",
                    "authkey", "auth_key", "servicekey", "service_key", "accountkey",
                    "account_key", "dbkey", "db_key", "databasekey", "database_key", "privkey",
                    "priv_key", "privatekey", "private_key", "clientkey", "client_key",
                    "accesskey", "access_key", "secretkey", "contrase", "pw")
# A quoted value, or a bare one (up to a space, quote or separator), read up to 256
# characters (a longer bare one is then taken whole, see match.py) so that a hostile line
# of keys costs linear time.
_VALUE = r"(?:\"(?P<s1>[^\"\n]{0,256})\"|'(?P<s2>[^'\n]{0,256})'|(?P<s3>[^\s\"'`,;&]{1,256}))"

RULES: tuple[Rule, ...] = (
    Rule("private_key", ("private key", "putty-user-key"),
         plugins=("private_key.PrivateKeyDetector",),
         own=(r"(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
              r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z))",),
         why="the whole block, header to footer, so no key material is kept"),
    Rule("jwt", ("eyj",), plugins=("jwt.JwtTokenDetector",)),
    Rule("bearer", ("bearer",), check="value",
         own=(r"\b[Bb]earer[ \t]+(?P<s>(?=[A-Za-z0-9._~+/=-]*(?:[0-9_~+/=-]|\.[A-Za-z0-9]))"
              r"[A-Za-z0-9._~+/=-]{8,})",),
         why="detect-secrets has no rule for Authorization headers"),
    Rule("basic_auth", ("basic",), check="basic",
         own=(r"\b[Bb]asic[ \t]+(?P<s>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])",),
         why="HTTP Basic headers: base64 of user:password (detect-secrets only has URLs)"),
    Rule("docker_auth", ('"auth"',), check="basic",
         own=(r"\"auth\"[ \t]*:[ \t]*\"(?P<s>[A-Za-z0-9+/]{6,}={0,2})\"",),
         why="docker config.json keeps base64 user:password under \"auth\""),
    Rule("url_credentials", ("://",), check="url",
         plugins=("basic_auth.BasicAuthDetector@1",),
         own=(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:(?P<s>[^\s/?#@]+)(?=@)",),
         why="passwords with reserved characters and URLs with no user name"),
    Rule("aws_access_key", ("akia", "asia", "a3t", "abia", "acca"),
         plugins=("aws.AWSKeyDetector[0]",)),
    Rule("aws_secret_key", ("aws",), plugins=("aws.AWSKeyDetector[1]@1",),
         own=(r"(?i:aws[\w.-]{0,20}?secret[\w.-]{0,20}?)[\"']?[ \t]*[=:][ \t]*[\"']?"
              r"(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",),
         why="unquoted (env, ini, exported) secret access keys; a bare one beside a key id"),
    Rule("azure_storage_key", ("accountkey=",),
         plugins=("azure_storage_key.AzureStorageKeyDetector",),
         own=(r"AccountKey=(?P<s>[A-Za-z0-9+/]{20,}={0,2})",),
         why="keys shorter than 88 characters (emulator, truncated copies)"),
    Rule("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
         plugins=("github_token.GitHubTokenDetector",),
         own=(r"(?P<s>gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",),
         why="fine-grained github_pat_ tokens and lengths other than 36"),
    Rule("gitlab_token", ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941",
                          "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-"),
         plugins=("gitlab_token.GitLabTokenDetector",)),
    Rule("slack_webhook", ("hooks.slack.com",), plugins=("slack.SlackDetector[1]",)),
    Rule("slack_token", ("xox", "xapp-"), plugins=("slack.SlackDetector[0]",),
         own=(r"(?P<s>xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})",),
         why="tokens whose middle part is not all digits, xoxe- refresh and xapp- app tokens"),
    Rule("discord_webhook", ("/api/webhooks/",),
         own=(r"discord(?:app)?\.com/api/webhooks/\d+/(?P<s>[\w-]{20,})",),
         why="detect-secrets has no Discord webhook rule"),
    Rule("stripe_key", ("sk_live", "rk_live", "sk_test", "rk_test"),
         plugins=("stripe.StripeDetector",),
         own=(r"(?P<s>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,})",),
         why="test-mode keys and lengths other than 24"),
    Rule("api_key", ("sk-", "t3blbkfj"), plugins=("openai.OpenAIDetector",),
         own=(r"(?P<s>sk-[A-Za-z0-9_-]{20,})",),
         why="OpenAI project keys and Anthropic keys, which lack the legacy T3BlbkFJ mark"),
    Rule("google_api_key", ("aiza",), own=(r"(?P<s>AIza[0-9A-Za-z_-]{35})",),
         why="detect-secrets has no Google rule"),
    Rule("huggingface_token", ("hf_",), own=(r"(?P<s>hf_[A-Za-z0-9]{30,})",),
         why="detect-secrets has no Hugging Face rule"),
    Rule("google_oauth_token", ("ya29.",), own=(r"(?P<s>ya29\.[\w-]{20,})",),
         why="detect-secrets has no Google OAuth access token rule"),
    Rule("azure_sas", ("sig=",), check="url",
         own=(r"[?&]sig=(?P<s>[A-Za-z0-9%+/=]{16,})",),
         why="detect-secrets has no Azure shared access signature rule"),
    Rule("vault_token", ("hvs.", "hvb."), own=(r"(?P<s>hv[sb]\.[\w-]{20,})",),
         why="detect-secrets has no HashiCorp Vault rule"),
    Rule("docker_token", ("dckr_pat_",), own=(r"(?P<s>dckr_pat_[\w-]{20,})",),
         why="detect-secrets has no Docker Hub token rule"),
    Rule("service_token", ("shpat_", "shpss_", "shpca_", "shppa_", "dop_v1_", "doo_v1_",
                           "dor_v1_", "lin_api_", "secret_", "ntn_", "key-"),
         own=(r"(?P<s>shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32})",
              r"(?P<s>do[opr]_v1_[a-f0-9]{64})",
              r"(?P<s>lin_api_[A-Za-z0-9]{40})",
              r"(?P<s>(?:secret|ntn)_[A-Za-z0-9]{43})",
              r"(?P<s>key-[0-9a-f]{32})"),
         why="Shopify, DigitalOcean, Linear, Notion and Mailgun formats detect-secrets lacks"),
    Rule("twilio_key", shape=r"(?<![A-Za-z0-9])(?:AC|SK)[a-z0-9]{32}",
         plugins=("twilio.TwilioKeyDetector",)),
    Rule("sendgrid_key", ("sg.",), plugins=("sendgrid.SendGridDetector",)),
    Rule("npm_token", ("_authtoken", "npm_"),
         own=(r"//\S{1,200}?/:_authToken=[ \t]*(?P<s>npm_\S+|[A-Fa-f0-9-]{36})",
              r"(?P<s>npm_[A-Za-z0-9]{36})"),
         why="NpmDetector's .npmrc shape with its unbounded .+ bounded (it is quadratic on "
             "a long line), and npm tokens outside an .npmrc line"),
    Rule("pypi_token", ("pypi-ag",), plugins=("pypi_token.PypiTokenDetector",)),
    Rule("discord_token", shape=r"[MNO][\w-]{23,25}\.[\w-]{6}\.",
         plugins=("discord.DiscordBotTokenDetector",)),
    Rule("telegram_token", shape=r"\d{8,10}:[\w-]{35}",
         plugins=("telegram_token.TelegramBotTokenDetector",)),
    Rule("mailchimp_key", shape=r"[0-9a-z]{32}-us\d", plugins=("mailchimp.MailchimpDetector",)),
    Rule("square_oauth", ("sq0csp-", "sq0atp-", "eaaa"),
         plugins=("square_oauth.SquareOAuthDetector",),
         own=(r"(?P<s>sq0atp-[\w-]{22,}|EAAA[\w-]{60})",),
         why="Square access tokens (detect-secrets has the OAuth secret only)"),
    Rule("artifactory_token", shape=r"AKC[a-zA-Z0-9]{10}|AP[\dA-F][a-zA-Z0-9]{8}",
         plugins=("artifactory.ArtifactoryDetector",)),
    Rule("ibm_cloud_iam", shape=r"(?<![\w-])[\w-]{44}(?![\w-])",
         plugins=("ibm_cloud_iam.IbmCloudIamDetector@1",)),
    Rule("ibm_cos_hmac", ("secret",), plugins=("ibm_cos_hmac.IbmCosHmacDetector@1",)),
    Rule("cloudant", shape=r"(?i:\bcl(?:ou(?:dant)?)?[-_]?(?:api)?(?:key|pw|pass|token)"
                           r"|cloudant\.com)",
         plugins=("cloudant.CloudantDetector@1",)),
    Rule("softlayer", shape=r"(?i:\b(?:softlayer|sl)[-_]?(?:api)?(?:key|pwd|pass|token)"
                            r"|api\.softlayer\.com)",
         plugins=("softlayer.SoftlayerDetector@1",)),
    Rule("cli_password", ("curl", "wget", "sshpass", "login", "--password"), check="value",
         own=(r"\b(?:curl|wget)\b[^\n]{0,200}?\s(?:-u|--user)[ =][\"']?[^\s:\"']+:"
              r"(?P<s>[^\s\"']+)",
              r"\bsshpass\s+-p\s*[\"']?(?P<s>[^\s\"']+)",
              r"\blogin\b[^\n]{0,200}?\s(?:-p|--password)[ =][\"']?(?P<s>[^\s\"']+)",
              r"--password\s+[\"']?(?P<s>[^\s\"'-][^\s\"']*)"),
         why="passwords given to commands: curl -u, sshpass -p, docker login -p, --password"),
    Rule("netrc", ("password",), check="value",
         own=(r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<s>\S+)",
              r"(?m)^[ \t]*password[ \t]+(?P<s>\S+)[ \t]*$"),
         why="detect-secrets has no netrc rule (password as a bare word, no = or :)"),
    Rule("pgpass", shape=r"(?m:^[\w.*\[\]-]+:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:\S+$)", check="value",
         own=(r"(?m)^[\w.*\[\]-]+:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:(?P<s>\S+)$",),
         why="detect-secrets has no .pgpass rule (host:port:db:user:password)"),
    Rule("assignment", KEYWORD_LITERALS, check="value",
         own=(r"(?P<key>(?i:\b[A-Za-z0-9_.-]{0,40}?(?:{keywords}))[\"']?)"
              r"[ \t]*(?P<sep>:=|=|:)[ \t]*" + _VALUE,
              r"<(?P<tag>(?i:[\w:.-]{0,40}?(?:{keywords})))>(?P<s>[^<\s]+)</(?P=tag)>"),
         why="detect-secrets' KeywordDetector words, with short and numeric values too, "
             "in any file type (its regexes depend on the file name)"),
    Rule("password_phrase", ("password", "passwd", "passphrase", "passcode"), check="phrase",
         own=(r"(?i:\b(?:password|passwd|passphrase|passcode)[ \t]+(?:is|was)[ \t]+)"
              r"(?:\"(?P<s1>[^\"\n]+)\"|'(?P<s2>[^'\n]+)'"
              r"|(?P<s3>[^\s\"'`,;&]*[^\s\"'`,;&.!?:)]))",),
         why='prose: "my password is ..."'),
)

# A bare AWS secret access key: 40 characters of base64 with both cases, standing alone.
# Too like other data to flag anywhere, so only next to an access key id.
AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])"
                        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
# A Twilio auth token: 32 lower-case hex characters, standing alone.
TWILIO_TOKEN = re.compile(r"(?<![A-Za-z0-9])[0-9a-f]{32}(?![A-Za-z0-9])")
NEAR = 200  # characters either side of the id half of a pair
# The id half of a pair (its rule) -> the rule and shape of a secret half that is too like
# other data to flag alone: an AWS secret key beside its key id, a Twilio auth token
# beside its account SID.
BESIDE = {"aws_access_key": ("aws_secret_key", AWS_SECRET),
          "twilio_key": ("twilio_key", TWILIO_TOKEN)}

RULE_NAMES = tuple(rule.name for rule in RULES) + ("secret_field",)
# Rules about a value given a secret's name rather than a credential's own shape: the
# release audit reports them apart ("secret_assignment" rather than "credential").
ASSIGNMENT_RULES = frozenset({"assignment", "password_phrase", "netrc", "pgpass",
                              "secret_field"})

_LITERALS = tuple(dict.fromkeys(lit for rule in RULES for lit in rule.literals))
# Literals are looked for in two steps: a few short anchors first (most keyword literals
# share "key", "pass", "token" or "secret"), then the literals under an anchor found.
_COMMON = ("key", "pass", "token", "secret")
_ANCHORS: dict[str, tuple[str, ...]] = {}
for _literal in _LITERALS:
    _anchor = next((common for common in _COMMON if common in _literal), _literal)
    _ANCHORS[_anchor] = (*_ANCHORS.get(_anchor, ()), _literal)
_SHAPES = re.compile("|".join(f"(?:{rule.shape})" for rule in RULES if rule.shape))
# Every shape rule's match is one run of at least 9 non-space characters that is not a
# lower-case word shorter than 24 letters (its secret has a digit, a capital, a colon or
# 24 characters or more): text with no such run skips the shape search.
_SHORTEST_SHAPE, _LONGEST_WORD = 9, 24
_PUNCTUATION = ".,;:!?()[]{}<>\"'`"


def may_hold(folded: str) -> bool:
    """Whether any rule could match ``folded``: one of its literals or its shape is there.

    Ordinary text answers no in microseconds; only a yes imports detect-secrets.
    """
    lowered = folded.lower()
    for anchor, literals in _ANCHORS.items():
        if anchor in lowered and (len(literals) == 1 and literals[0] == anchor
                                  or any(literal in lowered for literal in literals)):
            return True
    return _has_long_run(folded) and _SHAPES.search(folded) is not None


def _has_long_run(folded: str) -> bool:
    for chunk in folded.split():
        if len(chunk) >= _SHORTEST_SHAPE:
            core = chunk.strip(_PUNCTUATION)
            if len(core) >= _SHORTEST_SHAPE and not (
                    core.isalpha() and core.islower() and len(core) < _LONGEST_WORD):
                return True
    return False


def candidates(folded: str) -> tuple[Rule, ...]:
    """The rules whose literals or shape ``folded`` holds: the only ones worth running."""
    lowered = folded.lower()
    return tuple(rule for rule in RULES
                 if any(literal in lowered for literal in rule.literals)
                 or (rule.shape and re.search(rule.shape, folded)))

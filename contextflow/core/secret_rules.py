"""What a secret looks like: the patterns `contextflow.core.secrets` scans with, and what is not one.

Our rules (whole private-key blocks, token formats detect-secrets lacks, credentials known by
their context) run first, then detect-secrets' maintained token patterns. A context rule's group
is the secret, and must look like a literal, not a reference to one (`settings.SECRET_KEY`,
`get_password()`, `${DB_PASSWORD}`, `<your token>`).

Every rule scans in time linear in the text. Python's regex engine backtracks, so a rule turns
quadratic when a scan from one start runs far, fails, and runs again from a later start; here a
scan either consumes what it read, stops within a bounded distance, or stops where the next
start could begin (`_command`'s gap stops at the next command word). Library patterns that did
not are rewritten (`LIBRARY_REWRITES`). `tests/hostile/test_secret_scan_cost.py` times every
rule on texts built to break it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import NamedTuple

from contextflow.core import hashing, jsonio, regexes
from contextflow.core import secret_formats as formats
from contextflow.core.fsutil import atomic_write, read_regular
from contextflow.core.text import Worded


class Rule(NamedTuple):  # (not a dataclass: a hook would import `dataclasses` for it, 7 ms)
    kind: str
    source: str  # the regular expression, compiled when the rule first runs (`pattern`)
    needles: tuple[str, ...] = ()  # run only when one of these (lowercase) is in the text
    in_context: bool = False  # our context rule: the non-empty group is the secret, whatever its length
    min_length: int = 4
    accept: Callable[[str, bool], bool] | None = None  # a last check on the secret, and whether it was quoted
    flags: int = 0
    requires: tuple[str, ...] = ()  # and one of these in `text.folded` text (each match holds one): fewer compiles
    gate: str = ""  # a pattern every match holds a match of, starting with a literal (a quick scan)

    @property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: a write whose text holds none of a rule's needles never pays for it
        (compiling every rule cost a short-lived hook about 40 ms)."""
        return _compiled(self.source, self.flags)

    def shut(self, text: str) -> bool:
        """Whether `text` cannot hold a match because it holds nothing the gate matches (a rule whose needle
        is common, `:`, then runs only where its rarer shape is: an import's every tag holds a `:`)."""
        return bool(self.gate) and _compiled(self.gate, self.flags).search(text) is None


@cache
def _compiled(source: str, flags: int) -> re.Pattern[str]:
    return regexes.compile(source, flags)


# -- what is a reference, a placeholder or prose, not a secret ---------------------------------
# Decided on evidence, not shape: a value is exempt only when the whole of it is a reference (a
# credential that merely holds `(`, starts with `$` or ends in `>` is still one), and a tag after a
# credential is cut off before the check (`tag_start`), so it never shields it.

_PLACEHOLDER_WORDS = frozenset({"none", "null", "nil", "true", "false", "undefined", "empty", "redacted"})
REFERENCE = Worded(
    ("$", "`", "%", "{", "<", "["),  # one starts each form
    r"\$[A-Za-z_][A-Za-z0-9_]*"  # $VAR
    r"|\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:?+=\-#%/][^{}\n]*)?\}"  # ${VAR}, ${VAR:-default}
    r"|\$\([^()\n]+\)|`[^`\n]+`"  # a command's output: $(cat /run/secrets/db), `pass show db`
    r"|%[A-Za-z_][A-Za-z0-9_]*%"  # %VAR% (Windows)
    r"|%(?:\([A-Za-z_]\w*\))?[sdr]|\{[A-Za-z_]?[\w.]*\}"  # %s, %(name)s, {name}: format fields
    r"|<[A-Za-z][A-Za-z _.\-]{0,60}>"  # <your token>: words, no digits
    r"|\{\{[^{}\n]{1,120}\}\}"  # {{ secrets.X }}, {{ vault_pwd }}
    r"|\[REDACTED[^\]\n]*\]|<redacted>",  # already redacted
)
_MASK = frozenset("*xX\u2022.-_:")  # ****, xxxx, ...
_TAG = regexes.compile(r"</?[A-Za-z][\w:.\-]*(?:\s[^<>\n]*)?/?>")  # <ctx:remember>, </ctx:remember>, <br/>


def is_reference(value: str) -> bool:
    """The whole value names a credential kept elsewhere, or stands for one (a mask, a placeholder word)."""
    value = value.strip()
    return (
        not value
        or value.lower() in _PLACEHOLDER_WORDS
        or set(value) <= _MASK
        or value.startswith("[REDACTED")  # ours (a bare value stops at its space: `[REDACTED:netrc`)
        or bool(REFERENCE.fullmatch(value))
    )


def tag_start(value: str) -> int:
    """Where a markup tag written right after a credential begins in `value` (len(value) when none)."""
    found = _TAG.search(value, 1)
    return found.start() if found else len(value)


def is_literal(value: str, quoted: bool = True) -> bool:
    """Whether a value assigned to a credential name is the credential itself (not a reference to one)."""
    return not is_reference(value)


def is_token_like(value: str, quoted: bool = True) -> bool:
    """A header value that is a key, not a word (`X-Api-Key: required`): a letter and a digit or a symbol."""
    value = value.rstrip(".,;:)")
    has_other = any(c.isdigit() or (not c.isalnum() and c not in "-_") for c in value)
    return has_other and any(c.isalpha() for c in value) and is_literal(value)


_CREDENTIAL_NAME_PART = regexes.compile(r"(?i)pass|secret|token|key|auth|credential")
_CAMEL_CASE = regexes.compile(r"[A-Za-z][a-z]+(?:[A-Z][a-z]*)+")


_CODE_REFERENCE = regexes.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\([^()]*\)?|\[[^\[\]]*\]?)*")
_OBJECTS = frozenset(
    [
        "self",
        "this",
        "cls",
        "os",
        "env",
        "environ",
        "process",
        "settings",
        "config",
        "cfg",
        "conf",
        "options",
        "opts",
        "args",
        "params",
        "props",
        "ctx",
        "context",
        "secrets",
        "vars",
        "app",
        "request",
        "creds",
        "credentials",
    ]
)


def is_code_reference(value: str) -> bool:
    """An unquoted value that is code: a call or an index (`get_password()`, `os.environ[`), a variable
    (`auth_info`, `password`), an attribute of a settings-like object (`settings.SECRET_KEY`,
    `config.db.password`) or a type (`Ed25519PrivateKey`). `Tr0ub4dor(3)x` or `correct.horse.staple`
    are not: the evidence is the whole value's syntax, not one character in it."""
    value = value.rstrip(")]},.;:")  # closing what the assignment sits in: f(password=password)
    if not _CODE_REFERENCE.fullmatch(value):
        return False
    if "(" in value or "[" in value:
        return True
    parts = value.split(".")
    if len(parts) == 1:
        return bool(_CAMEL_CASE.fullmatch(value) or "_" in value or _CREDENTIAL_NAME_PART.search(value))
    return parts[0] in _OBJECTS or any(
        "_" in part
        or (part.isupper() and len(part) > 1)
        or _CREDENTIAL_NAME_PART.search(part)
        or _CAMEL_CASE.fullmatch(part)
        for part in parts
    )


def is_code_literal(value: str, quoted: bool) -> bool:
    """A value assigned in code or prose: a literal, and when unquoted not code (`is_code_reference`)."""
    if quoted:
        return is_literal(value)
    return is_literal(value) and not is_code_reference(value)


def is_opaque_literal(value: str, quoted: bool = True) -> bool:
    """A value under a weak credential word (`token`, `key`, `auth`): opaque and a literal."""
    return formats.is_opaque(value) and is_code_literal(value, quoted)


def is_prose_opaque_literal(value: str, quoted: bool = True) -> bool:
    """A value a sentence names as a token or a key: opaque, not bare hex, and a literal."""
    return formats.is_prose_opaque(value) and is_code_literal(value.rstrip(".,;:!?"), quoted)


def is_prose_literal(value: str, quoted: bool = True) -> bool:
    """A value a sentence names as a password or a secret: evidence in it, and a literal."""
    return formats.is_prose_secret(value) and is_code_literal(value.rstrip(".,;:!?"), quoted)


def is_docker_auth(value: str, quoted: bool = True) -> bool:
    """A docker config `auth` value: base64 of `user:password`."""
    import base64  # (rare: not imported by every hook that scans a turn)
    import binascii

    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


# A field (JSON key or assigned name) whose value is a credential.
CREDENTIAL_FIELD = Worded(
    ("pass", "pwd", "secret", "key", "token", "credential", "auth"),
    r"(?i)(?:[a-z0-9]+[_\-.])*(?:password|passwd|passphrase|pwd|secret|client_secret|api_?key|apikey|access_?key"
    r"|secret_?key|private_?key(?:_?id)?|encryption_?key|signing_?key|master_?key|token|api_?token|access_?token"
    r"|auth_?token|refresh_?token|bearer_?token|credentials?)"
    r"|(?i:(?:[a-z0-9]+[_\-.])+pass)|PGPASSWORD|REDISCLI_AUTH",
)
_PROSE_ALLOWED_FIELD = regexes.compile(r"(?i).*(?:password|passwd|passphrase)")


def credential_field_kind(name: str, value: str) -> str | None:
    """The kind to redact `value` as, judged by the field it is stored under; None when it is not one."""
    if name.lower() == "auth":
        return "registry auth" if is_docker_auth(value) else None
    if not CREDENTIAL_FIELD.fullmatch(name) or not is_literal(value):
        return None
    if any(c.isspace() for c in value.strip()) and not _PROSE_ALLOWED_FIELD.fullmatch(name):
        return None  # {"secret": "the cache was stale"}: prose under a credential-like name
    return "credential"


# A field whose name only may be a credential (`key`, `auth`, `cache_key`): judged by its value.
WEAK_FIELD = Worded(("key", "auth", "creds"), r"(?i)(?:[a-z0-9]+[_\-.])*(?:key|auth|creds)")


def weak_field_kind(name: str, value: str) -> str | None:
    """`credential` when `value`, stored under a weak credential name, is opaque and a literal."""
    return "credential" if WEAK_FIELD.fullmatch(name) and is_opaque_literal(value) else None


JWT = "JSON Web Token"


def is_jwt(token: str, quoted: bool = True) -> bool:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    if len(token.partition(".")[0]) < 8:  # a header shorter than '{"":0}' encoded never parses: not decoded
        return False
    return bool(JwtTokenDetector.is_formally_valid(token))


def _rule(
    kind: str, pattern: str, needles: tuple[str, ...], flags: int = 0, requires: tuple[str, ...] = (), gate: str = ""
) -> Rule:
    accept = is_jwt if kind == JWT else None
    return Rule(kind, pattern, needles, accept=accept, flags=flags, requires=requires, gate=gate)


def _context(
    kind: str,
    pattern: str,
    needles: tuple[str, ...],
    flags: int = 0,
    accept: Callable[[str, bool], bool] | None = is_literal,
    requires: tuple[str, ...] = (),
    gate: str = "",
) -> Rule:
    return Rule(
        kind, pattern, needles, in_context=True, min_length=1, accept=accept, flags=flags, requires=requires, gate=gate
    )


def _followed(words: str, after: str) -> tuple[str, ...]:
    """Each of the (space-separated) `words` followed by each character of `after`."""
    return tuple(word + char for word in words.split() for char in after)


_CREDENTIAL_WORDS = ("pass", "secret", "key", "token", "pwd")
# An assigned value: quoted (any length), a reference holding spaces (`<your token>`, `{{ x }}`,
# `$(cat f)`, a backtick command), or bare (no spaces, quotes or shell separators).
_SPACED = r"""(<[^<>\n]{1,60}>|\{\{[^{}\n]{1,120}\}\}|\$\([^()\n]{1,200}\)|`[^`\n]{1,200}`)"""
_VALUE = r"""(?:"([^"\n]+)"|'([^'\n]+)'|""" + _SPACED + r"""|([^\s"';|&][^\s"'`;|&]*))"""
_QUOTED = r"""(?:"([^"\n]+)"|'([^'\n]+)')"""
_FLAG_VALUE = r"""(?:"([^"\n]+)"|'([^'\n]+)'|""" + _SPACED + r"""|([^\s"';|&-][^\s"'`;|&]*))"""  # not a --flag
# (the rule using it starts with a lookahead for the keywords' first letters: ten times faster)
_KEYWORD = (
    r"(?:\b|(?<=_))(?:password|passwd|passphrase|secret|client_secret|api_?key|apikey|api_?token|access_?token"
    r"|auth_?token|secret_?key|private_?key|encryption_?key)\b|(?<=_)(?:pass|pwd)\b"
)
_KEYWORDS = (  # one is in any text `_KEYWORD` matches in
    *("passw", "passphrase", "secret", "_pass", "_pwd", "apikey", "api_key", "apitoken", "api_token"),
    *("accesstoken", "access_token", "authtoken", "auth_token", "privatekey", "private_key"),
    *("encryptionkey", "encryption_key"),
)
_ENV_NAME = (
    r"(?<![A-Za-z0-9_])(?:(?:[A-Z0-9]+_)*(?:PASSWORD|PASSWD|PASSPHRASE|PASS|PWD|SECRET|TOKEN|API_?KEY|APIKEY"
    r"|ACCESS_?KEY|PRIVATE_?KEY|SECRET_?KEY|ENCRYPTION_?KEY|SIGNING_?KEY|MASTER_?KEY|AUTH|CREDENTIALS?)"
    r"|PGPASSWORD|REDISCLI_AUTH)"
)
_AWS_ID = r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"
_AWS_SECRET = (
    r"(?<![A-Za-z0-9/+=])((?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[0-9/+])"
    r"[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_AWS_NEEDLES = ("akia", "asia", "abia", "acca", "a3t")
_GAP = r"[^\n|;&]"  # within one shell command


def _command(words: str, rest: str, tail: str = "") -> str:
    """A command word (`words` alternatives, `tail` after them), then `rest` later in the same command.

    The gap is lazy and stops at a separator or where the next command word starts, so no
    character is scanned from two starts: `mysql mysql mysql ...` stays linear.
    """
    return rf"\b(?:{words}){tail}\b(?:(?!\b(?:{words})){_GAP})*?{rest}"


# An HTTP header carrying a key: X-API-Key, X-Auth-Token, Ocp-Apim-Subscription-Key, ...
_KEY_HEADER = (
    r"(?i)(?<![\w-])(?:[a-z0-9]+-){0,3}(?:api-?key|api-?token|auth-?token|access-?token|subscription-key"
    r"|functions-key)[\"']?[ \t]*:[ \t]*[\"']?(?:(<[^<>\n]{1,60}>)|([^\s\"',;]{8,}))"
)
_KEY_HEADER_WORDS = (  # one is in any text `_KEY_HEADER` matches in
    *("apikey", "api-key", "apitoken", "api-token", "authtoken", "auth-token", "accesstoken", "access-token"),
    *("subscription-key", "functions-key"),
)

# Patterns detect-secrets lacks (or matches too narrowly). A group, when present, is the secret.
EXTRA_RULES = (
    _rule(
        "private key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        ("private key",),
        re.DOTALL,
    ),
    _rule("private key", r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[^\n]*|\Z)", ("putty-user-key-file",), re.DOTALL),
    _rule("private key", r"AGE-SECRET-KEY-1[0-9A-Z]{50,}", ("age-secret-key-",)),
    _rule("Anthropic API key", r"sk-ant-[A-Za-z0-9_\-]{20,}", ("sk-ant-",)),
    _rule("OpenAI API key", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}", ("sk-",)),
    _rule("OpenAI-style API key", r"(?<![A-Za-z0-9_\-])sk-[A-Za-z0-9]{32,}(?![A-Za-z0-9])", ("sk-",)),
    _rule("GitHub token", r"github_pat_[A-Za-z0-9_]{22,}", ("github_pat_",)),
    _rule("GitHub token", r"(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _rule("Google API key", r"AIza[0-9A-Za-z_\-]{35}", ("aiza",)),
    _rule("Google OAuth secret", r"GOCSPX-[A-Za-z0-9_\-]{20,}", ("gocspx-",)),
    _rule("Google OAuth token", r"ya29\.[0-9A-Za-z_\-]{20,}", ("ya29.",)),
    _rule(
        "AWS secret key",
        r"(?i)aws.{0,3}secret.{0,3}(?:access.{0,3})?key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})",
        ("secret",),
        requires=("aws",),
    ),
    _context("AWS secret key", _AWS_ID + r"[\s\S]{0,120}?" + _AWS_SECRET, _AWS_NEEDLES, accept=None),
    _context("AWS secret key", _AWS_SECRET + r"[\s\S]{0,120}?" + _AWS_ID, _AWS_NEEDLES, accept=None),
    _rule("Azure key", r"(?i)(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/=]{20,})", ("accountkey", "sharedaccesskey")),
    _rule("Stripe key", r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", ("_live_", "_test_")),
    _rule("Stripe webhook secret", r"whsec_[A-Za-z0-9]{24,}", ("whsec_",)),
    _rule("Slack token", r"xox[a-z]-[A-Za-z0-9\-]{10,}", ("xox",)),
    _rule("Slack token", r"xapp-\d-[A-Za-z0-9]+-\d+-[a-f0-9]+", ("xapp-",)),
    _rule("Hugging Face token", r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}", ("hf_",)),
    _rule("npm token", r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}", ("npm_",)),
    _rule("DigitalOcean token", r"(?<![A-Za-z0-9])do[por]_v1_[a-f0-9]{64}", ("_v1_",)),
    _rule("Shopify token", r"(?<![A-Za-z0-9])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shp",)),
    # fixed-prefix tokens, after gitleaks' rules and the vendors' documented formats
    _rule("Vault token", r"(?<![A-Za-z0-9_.\-])hv[sbr]\.[A-Za-z0-9_\-]{24,}", ("hvs.", "hvb.", "hvr.")),
    _rule("Mailgun API key", r"(?<![A-Za-z0-9_\-])key-(?=[a-z]{0,31}[0-9])[0-9a-z]{32}(?![0-9A-Za-z])", ("key-",)),
    _rule("Databricks token", r"(?<![A-Za-z0-9_])dapi[0-9a-f]{32}(?:-\d)?(?![0-9A-Za-z])", ("dapi",)),
    _rule(
        "Grafana token",
        r"(?<![A-Za-z0-9_])(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}(?![A-Za-z0-9])"
        r"|glc_[A-Za-z0-9+/]{32,}={0,2})",
        ("glsa_", "glc_"),
    ),
    _rule("Linear API key", r"(?<![A-Za-z0-9_])lin_api_[A-Za-z0-9]{40}(?![A-Za-z0-9])", ("lin_api_",)),
    _rule(
        "Notion token",
        r"(?<![A-Za-z0-9_])(?:secret_(?=[A-Za-z]{0,42}[0-9])[A-Za-z0-9]{43}"
        r"|ntn_[0-9]{11}[A-Za-z0-9]{35})(?![A-Za-z0-9])",
        ("secret_", "ntn_"),
    ),
    _rule(
        "Doppler token",
        r"(?<![A-Za-z0-9_])dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[A-Za-z0-9_\-]{2,35}\.)?"
        r"[A-Za-z0-9]{40,44}(?![A-Za-z0-9])",
        ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
    ),
    _rule("Azure SAS signature", r"(?i)(?<![A-Za-z0-9_])sig=([A-Za-z0-9%+/]{20,}={0,2})", ("sig=",)),
    _rule(
        "GCP private key id",
        r"(?i)\bprivate_key_id[\"']?\s*[:=]\s*[\"']?([0-9a-f]{40})(?![0-9a-f])",
        ("private_key_id",),
    ),
    _rule(
        "Sentry DSN key", r"(?i)://([0-9a-f]{32})(?::[0-9a-f]{32})?@", ("://",), requires=("@",)
    ),  # Sentry: https://KEY@o1.ingest...
    _context("API key header", _KEY_HEADER, ("key", "token"), accept=is_token_like, requires=_KEY_HEADER_WORDS),
    _rule(JWT, r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,}", ("eyj",)),
    _rule("bearer token", r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)", ("bearer",)),
    _rule("basic auth header", r"(?i)\bauthorization\s*:\s*basic\s+([A-Za-z0-9+/]{8,}=*)", ("basic",)),
    # user:password@ in any URL; the password runs to the authority's last @, so it may hold an @
    _context(
        "URL password",
        r"(?i)(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]*+://"
        r"[^\s/?#@:'\"]*:([^\s/?'\"]+)@[^\s/?#@'\"]*[A-Za-z0-9]",
        ("://",),
        requires=("@",),
    ),
    # shell and dotenv: NAME=value, no spaces (with spaces it is code: the rules below need quotes or 8+ chars)
    _context(
        "credential",
        _ENV_NAME + "=" + _VALUE,
        ("pass", "pwd", "secret", "token", "key", "auth", "credential"),
        requires=_followed("password passwd passphrase pass pwd secret token key auth credential credentials", "="),
    ),
    # code, config and prose: a quoted value of any length, or a bare one of 8+ characters
    _context(
        "credential",
        r"(?i)(?=[pscae])(?:"
        + _KEYWORD
        + r")[\"']?[ \t]*[:=][ \t]*(?:\"([^\"\n]+)\"|'([^'\n]+)'|"
        + _SPACED
        + r"|([^\s\"',;][^\s\"',;]{7,}))",
        _CREDENTIAL_WORDS,
        accept=is_code_literal,
        requires=_KEYWORDS,
    ),
    # prose typed to an agent: "my password is Tr0ub4dor3", "the token was 'abc123xyz'" (a bare value needs a digit)
    _context(
        "credential",
        r"(?i)(?=[pst])\b(?:password|passwd|passphrase|pass ?code|pin|secret|token)\s+(?:is|was|will be)\s+"
        r"(?:\"([^\"\n]{4,})\"|'([^'\n]{4,})'|([^\s\"'`,;]{6,}))",
        ("pass", "pin", "secret", "token"),
        accept=is_token_like,
    ),
    *(_rule(kind, pattern, needles) for kind, pattern, needles in formats.FORMATS),
    _context("authorization header", formats.AUTHORIZATION, ("authorization",), accept=is_token_like),
    _context(
        "credential",
        formats.WEAK_WORD,
        formats.WEAK_NEEDLES,
        accept=is_opaque_literal,
        requires=_followed("token key auth credential credentials creds", "\"' \t:="),
    ),
    _context(
        "credential",
        formats.PROSE_STRONG,
        formats.PROSE_STRONG_NEEDLES,
        accept=is_prose_literal,
        requires=_followed("password passwd passphrase secret", " \t:"),
    ),
    _context(
        "credential",
        formats.PROSE_WEAK,
        formats.PROSE_WEAK_NEEDLES,
        accept=is_prose_opaque_literal,
        requires=_followed("token key credential credentials", " \t:"),
    ),
    _context(
        "command-line password",
        r"(?i)(?<![\w-])--(?:password|passwd|pass|pwd|http-password|proxy-password"
        r"|api-?key|api-?token|token|secret)(?:=" + _FLAG_VALUE + r"|\s+" + _QUOTED + ")",
        ("--",),
        requires=("--pass", "--pwd", "--http-password", "--proxy-password", "--api", "--token", "--secret"),
    ),
    _context(
        "command-line password", "(?i)" + _command("mysql|mariadb", r"\s-p" + _VALUE, r"\w*"), ("mysql", "mariadb")
    ),
    _context("command-line password", _command("sshpass", r"\s-p\s*" + _VALUE), ("sshpass",)),
    _context(
        "command-line password",
        _command(
            "curl|wget",
            r"\s(?:-u|--user)(?:=|\s*)"
            r"""(?:"[^"\n:]*:([^"\n]+)"|'[^'\n:]*:([^'\n]+)'|[^\s"':]*:([^\s"';|&]+))""",
        ),
        ("curl", "wget"),
        requires=("-u",),
    ),
    # docker login -p PW, --password PW (login within three words of the command)
    _context(
        "command-line password",
        _command(
            "docker|podman|nerdctl|buildah|helm",
            r"\s(?:-p|--password)(?:=|\s+)" + _FLAG_VALUE,
            r"(?:\s+[^\s|;&]+){0,2}?\s+login",
        ),
        ("login",),
    ),
    _context(
        "netrc password",
        r"(?i)\bmachine\s+\S+\s+(?:(?:account|port)\s+\S+\s+)*login\s+\S+\s+"
        r"(?:(?:account|port)\s+\S+\s+)*password\s+(\S+)",
        ("machine",),
        requires=("password",),
    ),
    _context(
        "pgpass password",
        r"(?<![^\s'\"])(?=[\w.\-*\[\]]*[A-Za-z.*])[\w.\-*\[\]]+:(?:\d{1,5}|\*):[^:\s'\"]+"
        r":[^:\s'\"]+:((?:\\.|[^:\s'\"\\])+)(?![^\s'\"<])",
        (":",),
        gate=r":[\d*]",  # the port: digits or `*`
    ),
    _context("registry auth", r"\"auth\"\s*:\s*\"([A-Za-z0-9+/]{8,}={0,2})\"", ('"auth"',), accept=is_docker_auth),
    _context(
        "registry token",
        r"\"(?:identitytoken|registrytoken)\"\s*:\s*\"([^\"\s]{8,})\"",
        ("identitytoken", "registrytoken"),
    ),
)

# detect-secrets detectors used, each with the words that must occur for it to run at all (a
# cheap pre-check: most text contains none). Left out: the entropy scanners (they flag
# fingerprints and hashes), the keyword and public-IP detectors (too noisy for prose), Artifactory
# (matches capitalised words), the private-key header detector (the block rule above replaces
# the whole key instead) and basic auth (the URL password rule above also finds an empty user
# and a password holding an @, and keeps the host).
LIBRARY_DETECTORS: dict[str, tuple[str, ...]] = {
    "aws.AWSKeyDetector": ("akia", "asia", "abia", "acca", "a3t", "aws"),
    "azure_storage_key.AzureStorageKeyDetector": ("accountkey",),
    "cloudant.CloudantDetector": ("cl",),
    "discord.DiscordBotTokenDetector": (".",),
    "github_token.GitHubTokenDetector": ("gh",),
    "gitlab_token.GitLabTokenDetector": ("gl", "gr1348941"),
    "ibm_cloud_iam.IbmCloudIamDetector": _CREDENTIAL_WORDS,
    "ibm_cos_hmac.IbmCosHmacDetector": ("secret",),
    "jwt.JwtTokenDetector": ("eyj",),
    "mailchimp.MailchimpDetector": ("-us",),
    "npm.NpmDetector": ("_authtoken",),
    "openai.OpenAIDetector": ("t3blbkfj",),
    "pypi_token.PypiTokenDetector": ("pypi-",),
    "sendgrid.SendGridDetector": ("sg.",),
    "slack.SlackDetector": ("xox", "hooks.slack.com"),
    "softlayer.SoftlayerDetector": ("sl", "softlayer"),
    "square_oauth.SquareOAuthDetector": ("sq0csp-",),
    "stripe.StripeDetector": ("_live_",),
    "telegram_token.TelegramBotTokenDetector": (":",),
    "twilio.TwilioKeyDetector": ("ac", "sk"),
}


# Library patterns that rescan, rewritten to match the same text in linear time. The first
# backtracked cubically: a credential word and 1,000 spaces took 4 s.
LIBRARY_REWRITES = (
    ("(?: *)(?:=|:|:=|=>| +|::)(?: *)", "(?: *+(?:=>|:=|::|=|:) *+| ++)"),  # IBM, Cloudant, SoftLayer
    (
        "eyJ[A-Za-z0-9-_=]+\\.[A-Za-z0-9-_=]+\\.?[A-Za-z0-9-_.+/=]*?",  # JWT: the header ends where another starts
        "eyJ(?:(?!eyJ)[A-Za-z0-9_=-])++\\.[A-Za-z0-9_=-]++\\.?",
    ),
    ("\\/\\/.+\\/:_authToken=", "//(?:(?!//)[^\\n])+?/:_authToken="),  # .npmrc: the path ends at the next //
)


# Library patterns (exactly as rewritten) and words every match of one holds: a credential word and what
# follows it (a quote, `]`, a space, `=` or `:`), or the host. Another version's patterns run on their needles alone.
_ASSIGNED = r"""(?:"|\'|)(?:\]|)(?: *+(?:=>|:=|::|=|:) *+| ++)(?:"|\'|)"""
_START = r"""(?:(?<=\W)|(?<=^))(?:\[|)(?:"|\'|)"""
_CLOUDANT = _START + r"(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)" + _ASSIGNED
_IBM = r"(?:ibm(?:_|-|)cloud(?:_|-|)iam|cloud(?:_|-|)iam|ibm(?:_|-|)cloud|ibm(?:_|-|)iam|ibm|iam|cloud|)"
_ASSIGNED_WORDS = tuple(word + char for word in ("key", "pwd", "pw", "password", "pass", "token") for char in "\"'] =:")
LIBRARY_REQUIRES = {
    _CLOUDANT + r"""([0-9a-f]{64})(?:"|\'|)""": _ASSIGNED_WORDS,
    _CLOUDANT + r"""([a-z]{24})(?:"|\'|)""": _ASSIGNED_WORDS,
    r"(?:https?\:\/\/)[\w\-]+\:([0-9a-f]{64})\@[\w\-]+\.cloudant\.com": ("cloudant.com",),
    r"(?:https?\:\/\/)[\w\-]+\:([a-z]{24})\@[\w\-]+\.cloudant\.com": ("cloudant.com",),
    _START
    + _IBM
    + r"(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)"
    + _ASSIGNED
    + r"""([a-zA-Z0-9_\-]{44}(?![a-zA-Z0-9_\-]))(?:"|\'|)""": _ASSIGNED_WORDS,
}

# Library patterns whose needle is common, and a pattern starting with a literal that each of their matches holds
LIBRARY_GATES = {r"\d{8,10}:[0-9A-Za-z_-]{35}": r":[0-9A-Za-z_-]{35}"}  # Telegram: the token after the bot id


def rewritten(pattern: str) -> str:
    for old, new in LIBRARY_REWRITES:
        pattern = pattern.replace(old, new)
    return pattern


# Found in every string of an event when the trigger is in any of them: an AWS secret in one
# field of a graph node's metadata, its key id in another (`secrets.scrub`).
EVENT_RULES = ((regexes.compile(_AWS_ID), Rule("AWS secret key", _AWS_SECRET, in_context=True, min_length=1)),)


@cache
def rules() -> tuple[Rule, ...]:
    """Our rules first (they cover whole blocks), then detect-secrets' denylist patterns."""
    return (
        *EXTRA_RULES,
        *(
            _rule(kind, source, tuple(needles), flags, LIBRARY_REQUIRES.get(source, ()), LIBRARY_GATES.get(source, ""))
            for kind, pattern, flags, needles in library_patterns()
            for source in (rewritten(pattern),)
        ),
    )


@cache
def needles() -> frozenset[str]:
    return frozenset(needle for rule in rules() for needle in rule.needles)


PatternRow = tuple[str, str, int, list[str]]


def library_patterns() -> list[PatternRow]:
    """detect-secrets' patterns, from a machine-local cache when this version was read before.

    Importing the library (and the HTTP client it pulls in) costs ~150 ms; a process that only
    needs its regular expressions reads them from the cache instead. Deleting it is safe.
    """
    cache_file = pattern_cache_file()
    with suppress(OSError, ValueError, TypeError):
        rows = jsonio.loads(read_regular(cache_file))
        return [(str(k), str(p), int(f), [str(n) for n in needles]) for k, p, f, needles in rows]
    import importlib

    found: list[PatternRow] = []
    for dotted, words in LIBRARY_DETECTORS.items():
        module_name, class_name = dotted.split(".")
        detector = getattr(importlib.import_module(f"detect_secrets.plugins.{module_name}"), class_name)()
        found += [(str(detector.secret_type), p.pattern, p.flags, list(words)) for p in detector.denylist]
    with suppress(OSError):  # a cache: the next process computes it again
        cache_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(cache_file, jsonio.dumps(found), fsync=False)
    return found


def pattern_cache_file() -> Path:
    """Named after the installed library's version file and our detector list (without importing it)."""
    from importlib.util import find_spec

    from contextflow.core.locate import state_root

    spec = find_spec("detect_secrets")
    folders = list(spec.submodule_search_locations or []) if spec else []
    try:
        version = b"".join(Path(folder, "__version__.py").read_bytes() for folder in folders)
    except OSError:
        version = b"unknown"
    key = hashing.blake2b(version + repr(sorted(LIBRARY_DETECTORS.items())).encode(), digest_size=8).hexdigest()
    return state_root() / "cache" / f"secret-patterns-{key}.json"

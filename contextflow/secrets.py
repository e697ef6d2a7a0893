"""Secret redaction: nothing that looks like a credential reaches the logs.

Every event passes through `scrub_items` before it is written (Store.append_many). Each
string in its data, at any depth, is scanned for:

- private keys (PEM, OpenSSH, PGP, PuTTY, age): the whole block is replaced;
- tokens: detect-secrets' maintained patterns (AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
  JWT, npm, PyPI, SendGrid, Twilio, Telegram, Discord, ...) plus patterns it lacks
  (Anthropic, Google, newer OpenAI/GitHub/Stripe/Slack forms, Hugging Face, bearer
  headers, `password = ...`-style assignments).

Public keys, certificates and fingerprints (`SHA256:...`) pass unchanged. A match becomes
`[REDACTED:<kind>]` and the event gains `redacted: ["<kind> in <field>", ...]`, which the MCP
server repeats in the tool reply. `CONTEXTFLOW_SECRETS` picks the mode: `redact` (default),
`refuse` (the write fails with an error naming what was found) or `off`.

detect-secrets' patterns are read once per installed version and cached in the machine-local
state folder, so a short-lived process (a CLI write, a hook) does not pay for importing it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from contextflow.errors import InputError

ENV_VAR = "CONTEXTFLOW_SECRETS"
MODES = ("redact", "refuse", "off")
REDACTED_FIELD = "redacted"
MIN_GROUP_SECRET = 8

_collected: ContextVar[list[str] | None] = ContextVar("contextflow_redactions", default=None)


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...] = ()  # run only when one of these (lowercase) is in the text


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    start: int
    end: int


def _rule(kind: str, pattern: str, needles: tuple[str, ...], flags: int = 0) -> Rule:
    return Rule(kind, re.compile(pattern, flags), needles)


_CREDENTIAL_WORDS = ("pass", "secret", "key", "token", "pwd")

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
    ),
    _rule("Azure key", r"(?i)(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/=]{20,})", ("accountkey", "sharedaccesskey")),
    _rule("Stripe key", r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", ("_live_", "_test_")),
    _rule("Stripe webhook secret", r"whsec_[A-Za-z0-9]{24,}", ("whsec_",)),
    _rule("Slack token", r"xox[a-z]-[A-Za-z0-9\-]{10,}", ("xox",)),
    _rule("Slack token", r"xapp-\d-[A-Za-z0-9]+-\d+-[a-f0-9]+", ("xapp-",)),
    _rule("Hugging Face token", r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}", ("hf_",)),
    _rule("npm token", r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}", ("npm_",)),
    _rule("DigitalOcean token", r"(?<![A-Za-z0-9])do[por]_v1_[a-f0-9]{64}", ("_v1_",)),
    _rule("Shopify token", r"(?<![A-Za-z0-9])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shp",)),
    _rule("JSON Web Token", r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,}", ("eyj",)),
    _rule("bearer token", r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)", ("bearer",)),
    _rule("basic auth header", r"(?i)\bauthorization\s*:\s*basic\s+([A-Za-z0-9+/]{8,}=*)", ("basic",)),
    _rule(
        "credential",
        r"(?i)(?:\b|(?<=_))(?:password|passwd|passphrase|secret|client_secret|api_?key|apikey|access_?token|auth_?token"
        r"|secret_?key|private_?key)\b[\"']?\s*[:=]\s*[\"']?([^\s\"',;$<{(\[][^\s\"',;]{7,})",
        _CREDENTIAL_WORDS,
    ),
)

# detect-secrets detectors used, each with the words that must occur for it to run at all (a
# cheap pre-check: most text contains none). Left out: the entropy scanners (they flag
# fingerprints and hashes), the keyword and public-IP detectors (too noisy for prose), Artifactory
# (matches capitalised words) and the private-key header detector (the block rule above replaces
# the whole key instead).
_LIBRARY_DETECTORS: dict[str, tuple[str, ...]] = {
    "aws.AWSKeyDetector": ("akia", "asia", "abia", "acca", "a3t", "aws"),
    "azure_storage_key.AzureStorageKeyDetector": ("accountkey",),
    "basic_auth.BasicAuthDetector": ("://",),
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


@cache
def rules() -> tuple[Rule, ...]:
    """Our rules first (they cover whole blocks), then detect-secrets' denylist patterns."""
    library = [Rule(kind, re.compile(pattern, flags), tuple(needles)) for kind, pattern, flags, needles in
               _library_patterns()]
    return (*EXTRA_RULES, *library)


PatternRow = tuple[str, str, int, list[str]]


def _library_patterns() -> list[PatternRow]:
    """detect-secrets' patterns, from a machine-local cache when this version was read before.

    Importing the library (and the HTTP client it pulls in) costs ~150 ms; a process that only
    needs its regular expressions reads them from the cache instead. Deleting it is safe.
    """
    cache_file = _pattern_cache_file()
    try:
        rows = orjson.loads(cache_file.read_bytes())
        return [(str(k), str(p), int(f), [str(n) for n in needles]) for k, p, f, needles in rows]
    except (OSError, ValueError, TypeError):
        pass
    import importlib

    found: list[PatternRow] = []
    for dotted, needles in _LIBRARY_DETECTORS.items():
        module_name, class_name = dotted.split(".")
        detector = getattr(importlib.import_module(f"detect_secrets.plugins.{module_name}"), class_name)()
        found += [(str(detector.secret_type), p.pattern, p.flags, list(needles)) for p in detector.denylist]
    temp = cache_file.with_name(f".{cache_file.name}.{os.getpid()}.tmp")
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temp.write_bytes(orjson.dumps(found))
        os.replace(temp, cache_file)
    except OSError:
        temp.unlink(missing_ok=True)
    return found


def _pattern_cache_file() -> Path:
    """Named after the installed library's version file and our detector list (without importing it)."""
    from importlib.util import find_spec

    from contextflow.locate import state_root

    spec = find_spec("detect_secrets")
    folders = list(spec.submodule_search_locations or []) if spec else []
    try:
        version = b"".join(Path(folder, "__version__.py").read_bytes() for folder in folders)
    except OSError:
        version = b"unknown"
    key = hashlib.blake2b(version + repr(sorted(_LIBRARY_DETECTORS.items())).encode(), digest_size=8).hexdigest()
    return state_root() / "cache" / f"secret-patterns-{key}.json"


@cache
def _needles() -> frozenset[str]:
    return frozenset(needle for rule in rules() for needle in rule.needles)


_TRIM = " \t\r\n\"'=:"


def _jwt_ok(token: str) -> bool:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    return bool(JwtTokenDetector.is_formally_valid(token))


def _secret_spans(match: re.Match[str]) -> list[tuple[int, int]]:
    """The groups when they hold the secret (assignment patterns), else the whole match.

    Some library patterns group only a prefix (`(glpat|gldt)-...`); a group that short is not
    the secret, so the whole match is taken instead.
    """
    groups = [match.span(g) for g in range(1, (match.re.groups or 0) + 1) if match.group(g)]
    if groups and all(end - start >= MIN_GROUP_SECRET for start, end in groups):
        return groups
    return [match.span()]


def find(text: str) -> list[Finding]:
    """Non-overlapping secret spans in `text`, in order."""
    spans: list[Finding] = []
    lowered = text.lower()
    present = {needle for needle in _needles() if needle in lowered}
    for rule in rules():
        if rule.needles and present.isdisjoint(rule.needles):
            continue
        for match in rule.pattern.finditer(text):
            for start, end in _secret_spans(match):
                while start < end and text[start] in _TRIM:
                    start += 1
                while end > start and text[end - 1] in _TRIM:
                    end -= 1
                if end - start < 4:
                    continue
                if rule.kind == "JSON Web Token" and not _jwt_ok(text[start:end]):
                    continue
                spans.append(Finding(rule.kind, start, end))
    spans.sort(key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            if span.end > last.end:
                merged[-1] = Finding(last.kind, last.start, span.end)
            continue
        merged.append(span)
    return merged


def redact_text(text: str) -> tuple[str, list[str]]:
    """`text` with every secret replaced, and the kinds that were found (in order, repeated)."""
    found = find(text)
    if not found:
        return text, []
    pieces: list[str] = []
    cursor = 0
    for finding in found:
        pieces += [text[cursor : finding.start], f"[REDACTED:{finding.kind}]"]
        cursor = finding.end
    pieces.append(text[cursor:])
    return "".join(pieces), [finding.kind for finding in found]


def mode() -> str:
    value = os.environ.get(ENV_VAR, "").strip().lower() or "redact"
    if value in ("0", "no", "false", "none"):
        value = "off"
    if value not in MODES:
        raise InputError(f"{ENV_VAR}={value!r} is not understood: use redact (default), refuse or off")
    return value


# -- events --------------------------------------------------------------------------------

Path_ = tuple[str | int, ...]


def _strings(data: Any) -> Iterator[tuple[Path_, str]]:
    """Every string leaf with its path; iterative, so deep values cannot exhaust the stack."""
    stack: list[tuple[Path_, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            yield path, value
        elif isinstance(value, dict):
            stack += [((*path, key), item) for key, item in reversed(value.items())]
        elif isinstance(value, list | tuple):
            stack += [((*path, index), item) for index, item in reversed(list(enumerate(value)))]


def _field_name(path: Path_) -> str:
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "(value)"


def _shallow(container: Any) -> Any:
    return dict(container) if isinstance(container, dict) else list(container)


def _replace(data: Any, path: Path_, new: str) -> Any:
    """A copy of `data` with the leaf at `path` set to `new` (only the containers on the path are copied)."""
    if not path:
        return new
    root = _shallow(data)
    node = root
    for key in path[:-1]:
        child = _shallow(node[key])
        node[key] = child
        node = child
    node[path[-1]] = new
    return root


def scrub(data: dict[str, Any], how: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """Event data with secrets redacted (or refused), and one 'kind in field' line per finding."""
    how = how or mode()
    if how == "off":
        return data, []
    leaves = list(_strings(data))
    if not find("\n".join(value for _, value in leaves)):
        return data, []  # the common case: one scan over all the text
    notes: list[str] = []
    result: Any = data
    for path, value in leaves:
        if path and path[0] == REDACTED_FIELD:
            continue
        cleaned, kinds = redact_text(value)
        if not kinds:
            continue
        field = _field_name(path)
        for kind in dict.fromkeys(kinds):
            notes.append(f"{kind} in {field}")
        result = _replace(result, path, cleaned)
    if notes and how == "refuse":
        raise InputError(
            f"refused to store what looks like secrets: {', '.join(notes)}. Remove them, or set "
            f"{ENV_VAR}=redact to store a copy with them replaced by [REDACTED:...]"
        )
    if notes:
        previous = data.get(REDACTED_FIELD)
        earlier = [str(item) for item in previous] if isinstance(previous, list) else []
        result = {**result, REDACTED_FIELD: earlier + notes}
        _remember(notes)
    return result, notes


def scrub_items(items: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The hook Store.append_many calls before anything is written."""
    how = mode()
    if how == "off":
        return list(items)
    return [(kind, scrub(data, how)[0]) for kind, data in items]


# -- telling the caller --------------------------------------------------------------------


def _remember(notes: list[str]) -> None:
    collected = _collected.get()
    if collected is not None:
        collected.extend(notes)


@contextmanager
def collect() -> Iterator[list[str]]:
    """Gather the redactions made while the block runs (the MCP server wraps each tool call)."""
    found: list[str] = []
    token = _collected.set(found)
    try:
        yield found
    finally:
        _collected.reset(token)


def notice(redactions: list[str]) -> str:
    """A line for a tool reply saying what was redacted before storing."""
    if not redactions:
        return ""
    listed = ", ".join(dict.fromkeys(redactions))
    return (
        f"\n\nRedacted before storing (stored as [REDACTED:...]): {listed}. "
        f"Keep secrets out of shared memory; {ENV_VAR}=refuse makes such writes fail instead."
    )

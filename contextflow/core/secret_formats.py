"""More of what a secret looks like: vendor formats, a credential word in any form, prose.

Plain data for `secret_rules` (which builds the rules): no import of it, so no cycle.

- `FORMATS`: fixed-prefix token formats after gitleaks' rules and the vendors' documented formats
  (1Password service accounts, Bedrock, Azure AD client secrets, Sourcegraph, Slack and Teams
  webhook URLs, Facebook page tokens, legacy Vault tokens, `Authorization:` headers of any scheme).
- `WEAK_WORD`: a bare or compound `token`, `key`, `auth` (`token: "..."`, `{"key": "..."}`,
  `cache_key = ...`): a word that also names harmless things, so its value must be opaque
  (`is_opaque`: long, mixed, no words) to count; the strong words (`password`, `secret`, ...)
  keep their own rules, which take any literal.
- `PROSE`: a credential named in a sentence (`connect with mysql password hunter2x!`, `the API
  token is ...`, `use key ...`), judged like the weak words: evidence in the value, not its shape alone.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise

from contextflow.core import regexes

# (kind, pattern, needles); a group, when present, is the secret
FORMATS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("1Password service token", r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}", ("ops_eyj",)),
    ("Bedrock API key", r"(?<![A-Za-z0-9+/])ABSK[A-Za-z0-9+/]{100,300}={0,2}", ("absk",)),
    ("Bedrock API key", r"bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%&\-]*", ("bedrock-api-key-",)),
    (
        "Azure AD client secret",
        r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
        ("q~",),
    ),
    (
        "Sourcegraph token",
        r"(?<![A-Za-z0-9_])sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}(?![A-Za-z0-9])",
        ("sgp_",),
    ),
    (
        "Slack webhook URL",
        r"(?i)hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_\-]{20,})",
        ("hooks.slack.com",),
    ),
    (
        "Teams webhook URL",
        r"(?i)\.(?:webhook\.office|outlook\.office)\.com/webhook(?:b2)?/([^\s\"'<>`]{20,})",
        ("webhook",),
    ),
    ("Facebook page token", r"(?<![A-Za-z0-9])EAA[A-Za-z0-9]{90,}(?![A-Za-z0-9])", ("eaa",)),
    (
        "Vault token",
        r"(?<![A-Za-z0-9_.\-/])s\.(?=[A-Za-z0-9]{0,23}[0-9])(?=[A-Za-z0-9]{0,23}[A-Z])(?=[A-Za-z0-9]{0,23}[a-z])"
        r"[A-Za-z0-9]{24}(?![A-Za-z0-9_.\-])",
        ("s.",),
    ),
)

# `Authorization: <scheme> <credentials>` of any scheme (Token, Bearer, Basic, ...) or none
AUTHORIZATION = (
    r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?:token|bearer|basic|digest|apikey|api-key|key|sso-key|otp|negotiate|ntlm)[ \t]+)?"
    r"([^\s\"',;<>:]{8,})"
)

# code, config, JSON or YAML in text: a weak credential word, bare or as the end of a name
# (it starts only after a space, quote, bracket or separator, none of which a bare value holds: a
# value is never rescanned from a start inside it)
WEAK_WORD = (
    r"(?i)(?<![^\s\"'`{(\[,;?])(?:[A-Za-z0-9]+[_\-.])*+(?:token|key|auth|credentials?|creds)(?![A-Za-z0-9])"
    r"[\"']?[ \t]*(?::=|=>|[:=])[ \t]*(?:\"([^\"\n]{12,})\"|'([^'\n]{12,})'|([^\s\"'`,;?()\[\]{}<>]{12,}))"
)
WEAK_NEEDLES = ("token", "key", "auth", "cred")

# prose: a credential word, a linking phrase, the value (strong words: a letter and a digit or a
# symbol is evidence enough; weak ones need an opaque value)
_PROSE = (
    r"(?i)(?<![A-Za-z0-9_\-])(?:{words})"
    r"(?:[ \t]*+:[ \t]*+|[ \t]++(?:(?:is|was|will[ \t]+be|is[ \t]+now|set[ \t]+to|to|as|for[ \t]+\S+[ \t]+is)"
    r"(?::[ \t]*+|[ \t]++))?)"  # possessive: a run of spaces is never split two ways
    r"(?:\"([^\"\n]{{6,}})\"|'([^'\n]{{6,}})'|`([^`\n]{{6,}})`|([^\s\"'`,;()<>\[\]{{}}]{{6,}}))"
)
PROSE_STRONG = _PROSE.format(words="password|passwd|passphrase|secret")
PROSE_STRONG_NEEDLES = ("pass", "secret")
PROSE_WEAK = _PROSE.format(words="token|key|credentials?")
PROSE_WEAK_NEEDLES = ("token", "key", "cred")

_WORDY = regexes.compile(r"[_\-./:]*[A-Za-z]+(?:[_\-./:]+[A-Za-z]+)*[_\-./:]*")
_OPAQUE_CHARS = regexes.compile(r"[A-Za-z0-9+/=_\-.~:!@#$%^&*?|]+")


# hashes, fingerprints, public keys and numbers: shown freely, never secrets
_PUBLIC = ("0x", "SHA256:", "SHA1:", "MD5:", "sha1-", "sha256-", "sha384-", "sha512-", "AAAA")
_HEX = regexes.compile(r"[0-9a-fA-F]+")
_SEPARATORS = regexes.compile(r"[:/._\-+=~]+")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def is_opaque(value: str) -> bool:
    """A value no one types as a word: 12+ characters of a token's alphabet, high entropy, mostly parts
    that mix letters with digits or symbols: not words and numbers joined by separators
    (`HKEY_LOCAL_MACHINE`, `pr:owner/repo:1777`, `build-2024-01-05`), not a path or a plain URL."""
    value = value.strip().rstrip(".,;:")
    if len(value) < 12 or not _OPAQUE_CHARS.fullmatch(value) or _WORDY.fullmatch(value):
        return False
    if value.startswith(("/", "./", "~/")) or "://" in value or value.count("/") > 2:
        return False
    if value.startswith(_PUBLIC):
        return False
    random = sum(len(part) for part in _SEPARATORS.split(value) if _is_random(part))
    return 2 * random >= len(value) and entropy(value) >= 3.0  # mostly random parts, not names and numbers


def _is_random(part: str) -> bool:
    """A part of a value (between separators) no one types as a word: letters mixed with digits or
    symbols, or a long run whose case changes often (`pr`, `owner`, `1777`, `localimpl` are not)."""
    part = part.strip("!@#$%^&*?|")  # markup and punctuation around a word (`**Token estimation**:`)
    letters = sum(c.isalpha() for c in part)
    if letters and letters < len(part):
        return True
    changes = sum(a.islower() != b.islower() for a, b in pairwise(part))
    return len(part) >= 16 and changes >= 6


def is_prose_opaque(value: str) -> bool:
    """A value a sentence names as a token or a key: opaque, and not bare hex (in prose that is a commit,
    a hash or a key id far more often than a secret; `the token is <hex>` has its own rule)."""
    value = value.rstrip(".,;:!?")
    return is_opaque(value) and not _HEX.fullmatch(value)


def is_prose_secret(value: str, quoted: bool = True) -> bool:
    """A value named in a sentence after a strong word (password, secret): a letter and a digit or a
    symbol (`hunter2x!`), not a link."""
    value = value.strip(".,;:!?@")
    if len(value) < 6:
        return False
    has_letter = any(c.isalpha() for c in value)
    has_other = any(c.isdigit() or c in "!@#$%^&*+=~?" for c in value)  # within it, not at its edges
    return has_letter and has_other and not value.lower().startswith(("http", "www."))

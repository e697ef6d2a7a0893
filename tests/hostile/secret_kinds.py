"""Synthetic credentials of many kinds, random and in the right format, and the forms they are written in.

Every value is generated at run time from a seeded generator (no real secret is ever written down
here); `KINDS` names each kind and how to build one, after the vendors' documented formats and
gitleaks' rules. `forms(value)` writes a value bare and under a credential word (token, key,
secret, password, auth) in text, JSON, YAML and env forms. `leaked(value, text)` says whether any
part of a value's random body reached `text` in clear (a head cut by a clip counts).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
WINDOW = 10  # characters of a value's random body that must not appear together in clear


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[random.Random], str]
    bare: bool = True  # found by its format alone; False: only under a credential word
    body: int = 0  # characters of fixed prefix before the random body (skipped by `leaked`)


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, n: int) -> str:
    """n alphanumerics holding an upper, a lower and a digit (what a real key's entropy gives)."""
    while True:
        value = _r(rng, ALNUM, n)
        if any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value):
            return value


def _b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def _jwt(rng: random.Random) -> str:
    header = _b64url({"alg": "HS256", "typ": "JWT"})
    payload = _b64url({"sub": _r(rng, DIGITS, 10), "name": _r(rng, LOWER, 8), "iat": 1516239022})
    return f"{header}.{payload}.{_r(rng, URLSAFE, 43)}"


def _pem(rng: random.Random) -> str:
    lines = "\n".join(_r(rng, B64, 64) for _ in range(4))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{lines}\n-----END RSA PRIVATE KEY-----"


def _openssh(rng: random.Random) -> str:
    lines = "\n".join("b3BlbnNzaC1rZXktdjEAAAAA" + _r(rng, B64, 40) for _ in range(3))
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{lines}\n-----END OPENSSH PRIVATE KEY-----"


def _uuid(rng: random.Random) -> str:
    return "-".join(_r(rng, HEX, n) for n in (8, 4, 4, 4, 12))


def _discord(rng: random.Random) -> str:
    return f"M{_r(rng, ALNUM, 23)}.{_r(rng, URLSAFE, 6)}.{_r(rng, URLSAFE, 27)}"


def _azure_ad(rng: random.Random) -> str:
    return f"{_r(rng, ALNUM, 3)}{rng.choice(DIGITS)}Q~{_r(rng, ALNUM + '_~.-', 34)}"


KINDS: tuple[Kind, ...] = (
    Kind("AWS access key id", lambda r: "AKIA" + _r(r, UPPER + "234567", 16), body=4),
    Kind("AWS secret key", lambda r: _mixed(r, 40), bare=False),
    Kind("GitHub classic token", lambda r: "ghp_" + _mixed(r, 36), body=4),
    Kind("GitHub OAuth token", lambda r: "gho_" + _mixed(r, 36), body=4),
    Kind("GitHub fine-grained token", lambda r: "github_pat_" + _mixed(r, 22) + "_" + _mixed(r, 59), body=11),
    Kind("GitLab token", lambda r: "glpat-" + _mixed(r, 20), body=6),
    Kind("Slack bot token", lambda r: f"xoxb-{_r(r, DIGITS, 12)}-{_r(r, DIGITS, 13)}-{_mixed(r, 24)}", body=5),
    Kind("Slack user token", lambda r: f"xoxp-{_r(r, DIGITS, 12)}-{_r(r, DIGITS, 12)}-{_mixed(r, 24)}", body=5),
    Kind("Slack app token", lambda r: f"xapp-1-A{_r(r, UPPER + DIGITS, 10)}-{_r(r, DIGITS, 13)}-{_r(r, HEX, 64)}"),
    Kind(
        "Slack webhook URL",
        lambda r: (
            f"https://hooks.slack.com/services/T{_r(r, UPPER + DIGITS, 8)}/B{_r(r, UPPER + DIGITS, 10)}/"
            + _mixed(r, 24)
        ),
        body=34,
    ),
    Kind(
        "Teams webhook URL",
        lambda r: (
            f"https://acme.webhook.office.com/webhookb2/{_uuid(r)}@{_uuid(r)}/IncomingWebhook/"
            f"{_r(r, HEX, 32)}/{_uuid(r)}"
        ),
        body=42,
    ),
    Kind("Stripe secret key", lambda r: "sk_live_" + _mixed(r, 50), body=8),
    Kind("Stripe restricted key", lambda r: "rk_live_" + _mixed(r, 50), body=8),
    Kind("Stripe webhook secret", lambda r: "whsec_" + _mixed(r, 32), body=6),
    Kind("Google API key", lambda r: "AIzaSy" + _r(r, URLSAFE, 33), body=6),
    Kind("Google OAuth secret", lambda r: "GOCSPX-" + _mixed(r, 28), body=7),
    Kind("Google OAuth token", lambda r: "ya29." + _r(r, URLSAFE, 60), body=5),
    Kind("OpenAI project key", lambda r: "sk-proj-" + _r(r, URLSAFE, 48), body=8),
    Kind("OpenAI legacy key", lambda r: "sk-" + _mixed(r, 20) + "T3BlbkFJ" + _mixed(r, 20), body=3),
    Kind("Anthropic API key", lambda r: "sk-ant-api03-" + _r(r, URLSAFE, 93) + "AA", body=13),
    Kind("npm token", lambda r: "npm_" + _mixed(r, 36), body=4),
    Kind("PyPI token", lambda r: "pypi-AgEIcHlwaS5vcmc" + _r(r, URLSAFE, 70), body=20),
    Kind("JSON Web Token", _jwt, body=40),
    Kind("RSA private key", _pem, body=32),
    Kind("OpenSSH private key", _openssh, body=60),
    Kind("age secret key", lambda r: "AGE-SECRET-KEY-1" + _r(r, UPPER + DIGITS, 58), body=16),
    Kind("Postgres URL", lambda r: f"postgres://app:{_mixed(r, 16)}@db.internal:5432/shop", body=15),
    Kind("MySQL URL", lambda r: f"mysql://root:{_mixed(r, 16)}@10.0.0.5/app", body=13),
    Kind("MongoDB URL", lambda r: f"mongodb+srv://admin:{_mixed(r, 16)}@cluster0.example.net/db", body=20),
    Kind("Redis URL", lambda r: f"redis://:{_mixed(r, 16)}@cache.internal:6379/0", body=9),
    Kind("1Password service token", lambda r: "ops_eyJ" + _r(r, B64, 300), body=7),
    Kind("Bedrock API key", lambda r: "ABSK" + _r(r, B64, 130), body=4),
    Kind("Azure AD client secret", _azure_ad),
    Kind("Sourcegraph token", lambda r: "sgp_" + _r(r, HEX, 16) + "_" + _r(r, HEX, 40), body=4),
    Kind("Sourcegraph local token", lambda r: "sgp_local_" + _r(r, HEX, 40), body=10),
    Kind("Facebook page token", lambda r: "EAAC" + _mixed(r, 120), body=4),
    Kind("Vault service token", lambda r: "hvs." + _r(r, URLSAFE, 95), body=4),
    Kind("Vault batch token", lambda r: "hvb." + _r(r, URLSAFE, 150), body=4),
    Kind("Vault legacy token", lambda r: "s." + _mixed(r, 24), body=2),
    Kind("Hugging Face token", lambda r: "hf_" + _mixed(r, 34), body=3),
    Kind("DigitalOcean token", lambda r: "dop_v1_" + _r(r, HEX, 64), body=7),
    Kind("Shopify token", lambda r: "shpat_" + _r(r, HEX, 32), body=6),
    Kind("SendGrid key", lambda r: f"SG.{_r(r, URLSAFE, 22)}.{_r(r, URLSAFE, 43)}", body=3),
    Kind("Twilio key", lambda r: "SK" + _r(r, HEX, 32), body=2),
    Kind("Telegram bot token", lambda r: f"{_r(r, DIGITS, 10)}:AA{_r(r, URLSAFE, 33)}", body=13),
    Kind("Discord bot token", _discord, body=1),
    Kind("Databricks token", lambda r: "dapi" + _r(r, HEX, 32), body=4),
    Kind("Grafana service account token", lambda r: f"glsa_{_mixed(r, 32)}_{_r(r, HEX, 8)}", body=5),
    Kind("Linear API key", lambda r: "lin_api_" + _mixed(r, 40), body=8),
    Kind("Mailgun key", lambda r: "key-" + _r(r, DIGITS, 1) + _r(r, HEX, 31), body=4),
    Kind("Doppler token", lambda r: "dp.pt." + _mixed(r, 43), body=6),
    Kind("Square OAuth secret", lambda r: "sq0csp-" + _r(r, URLSAFE, 43), body=7),
    Kind("Mailchimp key", lambda r: _r(r, HEX, 32) + "-us12"),
    Kind("Azure storage key", lambda r: "AccountKey=" + _r(r, B64, 86) + "==", body=11),
    Kind("Authorization Token header", lambda r: "Authorization: Token " + _mixed(r, 40), body=21),
    Kind("Authorization Bearer header", lambda r: "Authorization: Bearer " + _mixed(r, 40), body=22),
    Kind("Authorization Basic header", lambda r: "Authorization: Basic " + _r(r, B64, 32) + "=", body=21),
    Kind("curl --user", lambda r: f"curl --user deploy:{_mixed(r, 16)} https://api.example.com", body=19),
    Kind("curl -u", lambda r: f"curl -s -u admin:{_mixed(r, 16)} https://api.example.com/v1", body=17),
    Kind("mysql -p with $", lambda r: f"mysql -u root -p'${_mixed(r, 14)}' shop", body=19),
    Kind("--password= with $", lambda r: f"app --password='${_mixed(r, 14)}' --verbose", body=17),
    Kind("hex API key", lambda r: _r(r, HEX, 32), bare=False),
    Kind("UUID API key", _uuid, bare=False),
    Kind("alphanumeric token", lambda r: _mixed(r, 32), bare=False),
    Kind("base64 secret", lambda r: _r(r, B64, 43) + "=", bare=False),
    Kind("random password", lambda r: _r(r, ALNUM + "!@#%^&*", 20), bare=False),
)

WORDS = ("token", "key", "secret", "password", "auth")
FORMS = ("text", "json", "yaml", "env")


def values(seed: int = 7) -> Iterator[tuple[Kind, str]]:
    """One random value of every kind."""
    rng = random.Random(seed)
    for kind in KINDS:
        yield kind, kind.make(rng)


def written(value: str, word: str, form: str) -> str:
    """`value` under `word` in one form: text `word: "v"`, JSON `{"word": "v"}`, YAML `word: v`, env `WORD=v`."""
    one_line = json.dumps(value)[1:-1]  # a multi-line value as a JSON string holds it on one line
    if form == "text":
        return f'the {word}: "{one_line}"'
    if form == "json":
        return json.dumps({word: value, "region": "eu-west-1"})
    if form == "yaml":
        return f"{word}: {one_line}\nregion: eu-west-1"
    return f"{word.upper()}={one_line}"


def forms(kind: Kind, value: str) -> Iterator[tuple[str, str]]:
    """(form name, text) for the value: bare (when its format alone gives it away) and under every word."""
    if kind.bare:
        yield "bare", f"deploying with {value} now"
    if " " in value and not value.startswith("-----"):
        return  # a command or a header: its own form is the one that matters
    for word in WORDS:
        for form in FORMS:
            yield f"{word} {form}", written(value, word, form)


def cores(kind: Kind, value: str) -> list[str]:
    """Windows of the value's random body: any of them in clear means the value leaked."""
    body = value[kind.body :]
    if kind.name in ("curl --user", "curl -u", "mysql -p with $", "--password= with $"):
        body = body.split(" ")[0].strip("'$")
    elif kind.name.endswith(" URL") and "@" in value and "webhook" not in value:
        body = body.split("@")[0]  # the password, not the host
    elif " " in body:
        body = body.split(" ")[-1]
    body = body.replace("\n", "").replace("IncomingWebhook", "")
    if len(body) <= WINDOW:
        return [body]
    step = max(1, (len(body) - WINDOW) // 4)
    return [body[start : start + WINDOW] for start in range(0, len(body) - WINDOW + 1, step)]


def leaked(kind: Kind, value: str, text: str) -> bool:
    return any(core in text for core in cores(kind, value))

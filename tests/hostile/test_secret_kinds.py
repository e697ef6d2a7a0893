"""Credentials of every kind, bare and under any credential word, and the look-alikes that must pass.

Values are random and generated at run time in each vendor's format (`secret_kinds.py`); none is real.
"""

from __future__ import annotations

import json
import random

import pytest

from contextflow.core import secrets
from tests.hostile.secret_kinds import FORMS, KINDS, WORDS, Kind, forms, leaked, values, written

ALL = list(values(seed=11))
BY_NAME = {kind.name: (kind, value) for kind, value in ALL}
GENERIC = ["AWS secret key", "hex API key", "UUID API key", "alphanumeric token", "base64 secret", "random password"]


def test_the_corpus_has_forty_kinds_or_more():
    assert len(KINDS) >= 40


@pytest.mark.parametrize("name", [kind.name for kind in KINDS])
def test_every_kind_is_redacted_in_every_form(name):
    kind, value = BY_NAME[name]
    clear = [form for form, text in forms(kind, value) if leaked(kind, value, secrets.redact_text(text)[0])]
    assert not clear, f"{name} in clear in {clear}"


@pytest.mark.parametrize("name", GENERIC)
@pytest.mark.parametrize("word", WORDS)
@pytest.mark.parametrize("form", FORMS)
def test_a_value_without_a_prefix_under_a_bare_credential_word_is_redacted(name, word, form):
    kind, value = BY_NAME[name]
    text, kinds = secrets.redact_text(written(value, word, form))
    assert kinds and not leaked(kind, value, text), text


@pytest.mark.parametrize("word", ["token", "key", "auth", "api_key", "access_key", "private_key", "client_secret"])
def test_an_opaque_value_in_a_json_field_named_by_a_credential_word_is_redacted_below_the_top(word):
    value = BY_NAME["alphanumeric token"][1]
    stored, notes = secrets.scrub({"key": "cfg:deploy", "value": {word: value, "region": "eu-west-1"}}, "redact")
    assert value not in json.dumps(stored) and notes
    assert stored["key"] == "cfg:deploy" and stored["value"]["region"] == "eu-west-1"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("deploying with " + BY_NAME["1Password service token"][1], id="1Password"),
        pytest.param("deploying with " + BY_NAME["Bedrock API key"][1], id="Bedrock"),
        pytest.param("secret " + BY_NAME["Azure AD client secret"][1] + " rotated", id="Azure AD"),
        pytest.param("export SRC=" + BY_NAME["Sourcegraph token"][1], id="Sourcegraph"),
        pytest.param("posting to " + BY_NAME["Slack webhook URL"][1], id="Slack webhook"),
        pytest.param("posting to " + BY_NAME["Teams webhook URL"][1], id="Teams webhook"),
        pytest.param("page " + BY_NAME["Facebook page token"][1], id="Facebook"),
        pytest.param("vault login " + BY_NAME["Vault legacy token"][1], id="Vault legacy"),
        pytest.param(BY_NAME["Authorization Token header"][1], id="Authorization Token"),
        pytest.param(BY_NAME["curl --user"][1], id="curl --user"),
        pytest.param(BY_NAME["mysql -p with $"][1], id="mysql -p'$...'"),
        pytest.param(BY_NAME["--password= with $"][1], id="--password='$...'"),
    ],
)
def test_the_kinds_that_had_no_rule_are_redacted(text):
    kind, value = next((k, v) for k, v in ALL if v in text)
    redacted, kinds = secrets.redact_text(text)
    assert kinds and not leaked(kind, value, redacted), redacted


@pytest.mark.parametrize(
    "text",
    [
        "connect with mysql password hunter2x!",
        "my password is Tr0ub4dor&3",
        "the password for root is s3cr3t-Pa55",
        "the API token is Zx8kPq2Lm9Rt4Vw7",
        "use key Zx8kPq2Lm9Rt4Vw7Yb to sign",
        "the secret: 7Hq!x2Lp",
    ],
)
def test_a_credential_named_in_prose_is_redacted(text):
    redacted, kinds = secrets.redact_text(text)
    value = text.split()[-1] if not text.endswith("sign") else "Zx8kPq2Lm9Rt4Vw7Yb"
    assert kinds and value.rstrip("!") not in redacted, redacted


@pytest.mark.parametrize(
    "text",
    [
        "self.key = '_threading_local._localimpl.' + str(id(self))",
        'key = "HKEY_LOCAL_MACHINE"; sort_key: name_and_date; cache_key = f"user:{uid}"',
        'token = "("; token: NEWLINE; {"key": "pr:owner/repo:1777", "auth": "oauth"}',
        "host key: SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8",
        'token: "build-2024-01-05"; KEY=release_v1.2.3-beta4; auth = "user_12345_profile"',
        "gpg key 0x1234ABCD5678EF90 signs the release",
        "the key is 3f786850e387550fdab836ed7e6dc881de23001b (the commit)",
        "password protected (optional); the password is required; secret of success",
        "ftp.login() # default, i.e.: user anonymous, passwd anonymous@",
        "echo >&2 \"Key '$add_key' not added\"",
        "password: '${DB_PASSWORD}' and token: '$(cat /run/secrets/token)'",
        "key=key=key=abc and AUTH_TYPE=basic",
        "- **Token estimation**: Character-based; **API key rotation**: monthly",
    ],
)
def test_look_alikes_pass(text):
    assert secrets.redact_text(text) == (text, [])


def test_a_single_quoted_dollar_is_the_passwords_own_but_a_double_quoted_one_is_a_variable():
    assert secrets.redact_text("mysql -u root -p'$ecretPw9' shop")[1]
    assert secrets.redact_text("app --password='$x9Secret' --verbose")[1]
    assert secrets.redact_text('mysql -u root -p"$MYSQL_PWD" shop') == ('mysql -u root -p"$MYSQL_PWD" shop', [])


def test_a_value_found_in_one_field_is_redacted_where_another_field_of_the_event_repeats_it():
    token = "Zx8kPq2Lm9Rt4Vw7Yb3n"
    data = {"type": "fact", "content": f"export API_TOKEN={token}", "summary": f"uses {token}", "metadata": {}}
    stored, notes = secrets.scrub(data, "redact")
    assert token not in json.dumps(stored)
    assert any("repeated in summary" in note for note in notes), notes


def test_values_are_random_per_seed():
    assert dict(values(seed=1)) != dict(values(seed=2))
    kind = Kind("x", lambda r: "".join(r.choice("ab") for _ in range(30)))
    assert kind.make(random.Random(3)) == kind.make(random.Random(3))

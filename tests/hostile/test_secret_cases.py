"""A table of credentials that must be redacted, and look-alikes that must pass unchanged.

Fake credentials are assembled at run time so this file holds no literal that a secret
scanner would flag. Each positive row names the pieces that must not survive, in the stored
text or in what the output cleaner makes of it (`clean`), and pieces that must be kept.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from contextflow.app import App
from contextflow.core import secrets
from contextflow.core.text import clean
from tests.conftest import connect, text_of

MIXED40 = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzEXAMPLEKQ"  # an AWS-secret-shaped string (mixed case, 40)
KEY_ID = "AKIA" + "QWERTYUIOPASDFGH"
GH = "ghp_" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3gH5"
ANT = "sk-ant-api03-" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3gH5jK7m"
A40 = "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3gH5jK7m"
HEX32 = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def j(*parts: str) -> str:
    return "".join(parts)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# (text, pieces that must vanish, pieces that must stay)
POSITIVE: list[Any] = [
    pytest.param(
        j("cache at redis://:", "Sup3rPw", "@cache.internal:6379/0"),
        ["Sup3rPw"],
        ["cache.internal"],
        id="redis URL with an empty user",
    ),
    pytest.param(
        j("git clone https://bob:", "p@ss", "@git.example.com/repo.git"),
        ["p@ss", "ss@git"],
        ["git.example.com/repo.git"],
        id="URL password containing @",
    ),
    pytest.param(j("DB_PASS=", "hunter2x"), ["hunter2x"], ["DB_PASS="], id="DB_PASS="),
    pytest.param(j("export MYSQL_PWD=", "m7sqlpw"), ["m7sqlpw"], ["MYSQL_PWD="], id="MYSQL_PWD="),
    pytest.param(j("API_TOKEN=", "tok9f8e7d6c"), ["tok9f8e7d6c"], [], id="API_TOKEN="),
    pytest.param(j("ENCRYPTION_KEY=", "k3y-material-42"), ["k3y-material-42"], [], id="ENCRYPTION_KEY="),
    pytest.param(j("DB_PASSWORD=", "x1", " ./run.sh"), ["x1 "], ["./run.sh"], id="short DB_PASSWORD="),
    pytest.param(j("PGPASSWORD='", "pgPw0rd", "' psql -h db"), ["pgPw0rd"], ["psql -h db"], id="PGPASSWORD="),
    pytest.param(j("mysql -u root -p", "Pw0rd42", " shop"), ["Pw0rd42"], ["shop"], id="mysql -pPW"),
    pytest.param(j("mysqldump --password=", "x9", " shop"), ["x9 "], ["shop"], id="mysqldump --password="),
    pytest.param(j("sshpass -p '", "sshPw77", "' ssh deploy@host"), ["sshPw77"], ["deploy@host"], id="sshpass -p"),
    pytest.param(
        j("curl -u admin:", "s3cretpw", " https://api.example.com/v1"),
        ["s3cretpw"],
        ["api.example.com"],
        id="curl -u user:pw",
    ),
    pytest.param(j("curl --user 'admin:", "s3cret pw", "' https://x.example"), ["s3cret"], [], id="curl --user"),
    pytest.param(
        j("machine api.example.com login bob password ", "n3trcpw"), ["n3trcpw"], ["api.example.com"], id="netrc line"
    ),
    pytest.param(
        j("machine h.example.com\n  login bob\n  password ", "n3trcpw2", "\n"), ["n3trcpw2"], [], id="netrc block"
    ),
    pytest.param(j("db.example.com:5432:shop:app:", "pgPw0rd"), ["pgPw0rd"], ["db.example.com"], id="pgpass line"),
    pytest.param(
        j("echo '*:*:*:postgres:", "pgStar9", "' > ~/.pgpass"),
        ["pgStar9"],
        ["~/.pgpass"],
        id="pgpass line with wildcards",
    ),
    pytest.param(
        j('{"auths": {"ghcr.io": {"auth": "', b64("bob:dockerpw1"), '"}}}'),
        [b64("bob:dockerpw1")],
        ["ghcr.io"],
        id="docker config auth",
    ),
    pytest.param(j(KEY_ID, " ", MIXED40), [KEY_ID, MIXED40], [], id="bare AWS secret next to its key id"),
    pytest.param(j("id=", KEY_ID, ",\nsecret=", MIXED40), [KEY_ID, MIXED40], [], id="AWS pair on two lines"),
    pytest.param(j('{"password": "', "hunter2", '"}'), ["hunter2"], [], id="quoted short password in JSON"),
    pytest.param(j("password: '", "x1", "'"), ["x1"], [], id="quoted short password in YAML"),
    pytest.param(j(GH[:18], "\u200b", GH[18:]), [GH], [], id="token split by a zero-width space"),
    pytest.param(j(GH[:18], "\u2060", GH[18:]), [GH], [], id="token split by a word joiner"),
    pytest.param(j(GH[:18], "\U000e0041", GH[18:]), [GH], [], id="token split by a tag character"),
    pytest.param(j(ANT[:20], "\x1b[0m", ANT[20:]), [ANT], [], id="token split by an escape sequence"),
    pytest.param(j("title \x1b]0;", GH, "\x07 done"), [GH], ["done"], id="token hidden in a terminal title"),
    pytest.param(
        j(
            "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&se=2026-01-01&sig=",
            "q7Zk2%2BfP9wXyL3mN8aB4cD6eF1gH5iJ0kL2mN4oP6qR%3D",
        ),
        ["q7Zk2%2BfP9wXyL3mN8aB4cD6eF1gH5iJ0"],
        ["acct.blob.core.windows.net/c/b.txt?sv=2022-11-02"],
        id="Azure SAS sig=",
    ),
    pytest.param(
        j("vault login ", "hvs.", "CAESIJ3kP9xQ2mZ7wL4nB8vR1tY6uH0sD5fG3jK9cX2aE7bV"),
        ["CAESIJ3kP9xQ2mZ7"],
        ["vault login"],
        id="Vault hvs. token",
    ),
    pytest.param(
        j("docker login -u ci -p ", "Dk3rPw0rd", " registry.example.com"),
        ["Dk3rPw0rd"],
        ["registry.example.com"],
        id="docker login -p",
    ),
    pytest.param(
        j("docker login --username ci --password ", "Dk3rPw0rd", " ghcr.io"),
        ["Dk3rPw0rd"],
        ["ghcr.io"],
        id="docker login --password",
    ),
    pytest.param(
        j("helm registry login oci.example.com -u ci -p '", "Hm9Pw", "'"),
        ["Hm9Pw"],
        ["oci.example.com"],
        id="helm registry login -p",
    ),
    pytest.param(
        j("curl -H 'X-API-Key: ", "a8f3k29dm4x7q1w5", "' https://api.example.com/v1"),
        ["a8f3k29dm4x7q1w5"],
        ["api.example.com"],
        id="X-API-Key header",
    ),
    pytest.param(
        j('{"headers": {"X-Auth-Token": "', "tK7p2m9x4q8w1z5r", '"}}'),
        ["tK7p2m9x4q8w1z5r"],
        ["X-Auth-Token"],
        id="X-Auth-Token header in JSON",
    ),
    pytest.param(
        j("MAILGUN_KEY is ", "key-", "3ax6xnjp29jd6fds4gc373sgvjxteol0"),
        ["3ax6xnjp29jd6fds4gc373sgvjxteol0"],
        [],
        id="Mailgun key-",
    ),
    pytest.param(
        j("token ", "dapi", "f2a9c4e17b3d58a06e9b2c4d1f7a3e85", " for the workspace"),
        ["f2a9c4e17b3d58a06e9b2c4d"],
        ["for the workspace"],
        id="Databricks dapi",
    ),
    pytest.param(j("GF_TOKEN ", "glsa_", A40[:32], "_1a2b3c4d"), [A40[:32]], [], id="Grafana glsa_"),
    pytest.param(j("linear: ", "lin_api_", A40), [A40], [], id="Linear lin_api_"),
    pytest.param(j("notion ", "secret_", A40, "xY7"), [A40], [], id="Notion secret_"),
    pytest.param(j("notion ", "ntn_", "12345678901", A40[:35]), [A40[:35]], [], id="Notion ntn_"),
    pytest.param(j("DOPPLER_TOKEN ", "dp.st.", "prd.", A40, "Qz"), [A40], [], id="Doppler dp.st."),
    pytest.param(j("doppler ", "dp.pt.", A40, "Qz9"), [A40], [], id="Doppler dp.pt."),
    pytest.param(
        j('{"type": "service_account", "private_key_id": "', "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", '"}'),
        ["a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"],
        ["service_account"],
        id="GCP private_key_id",
    ),
    pytest.param(
        j("dsn = https://", HEX32, "@o123456.ingest.sentry.io/4505"),
        [HEX32],
        ["o123456.ingest.sentry.io/4505"],
        id="Sentry DSN key",
    ),
]

NEGATIVE = [
    pytest.param("password = get_password_from_vault()", id="password from a function call"),
    pytest.param("secret_key = settings.SECRET_KEY", id="secret key from settings"),
    pytest.param("api_key = os.environ['API_KEY']", id="key from the environment"),
    pytest.param('token = request.headers.get("Authorization")', id="token from a header"),
    pytest.param("DB_PASSWORD=${DB_PASSWORD} DB_PASS=$PGPASS API_TOKEN=<your token>", id="placeholders"),
    pytest.param("MYSQL_PWD={{ vault_mysql_pwd }}", id="template placeholder"),
    pytest.param("ENCRYPTION_KEY= # set in CI", id="empty assignment"),
    pytest.param("DB_PASSWORD=None", id="None"),
    pytest.param("password_policy = strict; the password is in the vault", id="prose about passwords"),
    pytest.param("MAX_TOKENS=4000 BYPASS=1 COMPASS=north", id="names that merely contain a keyword"),
    pytest.param("redis://cache.internal:6379/0 and https://host:8080/path@v2", id="URLs without credentials"),
    pytest.param("ssh://git@github.com:22/org/repo and git@github.com:org/repo.git", id="git remotes"),
    pytest.param("see https://github.com/org/repo/commit/abc@main", id="@ after the path"),
    pytest.param("mysql -u root -p shop < dump.sql", id="mysql prompting for a password"),
    pytest.param("curl -u admin https://api.example.com; sort -u a:b", id="curl -u without a password"),
    pytest.param("ratio 1:2:3:4:5 at 12:30:45", id="colon-separated numbers"),
    pytest.param("src/app.py:10:5: error: x", id="compiler output"),
    pytest.param('{"auth": "oauth", "method": "token"}', id="auth method names"),
    pytest.param(j(KEY_ID[:4], "EXAMPLE commit 3f786850e387550fdab836ed7e6dc881de23001b"), id="git hash"),
    pytest.param("machine learning: password reset flow", id="prose with machine and password"),
    pytest.param("the secret: stay curious", id="secret in prose"),
    pytest.param("MIN_GROUP_SECRET = 8\nCHARS_PER_TOKEN = 4", id="numeric constants in code"),
    pytest.param(
        "self.access_token = auth_info; f(client_secret=client_secret, password=password)", id="variables passed along"
    ),
    pytest.param(":param key_password:\n    Optional password to decrypt", id="docstring"),
    pytest.param(
        "def f(private_key: ed25519.Ed25519PrivateKey, is_password: FilterOrBool = False)", id="type annotations"
    ),
    pytest.param("use the --username and --password options", id="prose about flags"),
    pytest.param('password = ":****" and `NAME_PASSWORD=...`', id="masked values"),
    pytest.param("zero\u200bwidth and \u202ebidi with no secret", id="invisible characters, no secret"),
    pytest.param("a key-value store; key-based routing; the key-rotation-schedule-for-2024", id="key-value"),
    pytest.param("secret_sauce = the cache; secret_santa_list_2024 and SECRET_SAUCE_RECIPE_VERSION", id="secret_sauce"),
    pytest.param("the sig= parameter of a SAS URL is signed; sig=1", id="prose about sig="),
    pytest.param("X-API-Key: <your key> and X-Api-Key: required and api-key: ${API_KEY}", id="header placeholders"),
    pytest.param("docker login registry.example.com; docker run -p 8080:80 nginx", id="docker without a password"),
    pytest.param("dapi is our data API; hvs. prefixes Vault tokens; dp.st marks Doppler ones", id="prefixes in prose"),
    pytest.param("https://user@example.com/repo and https://git@github.com/org/repo", id="URL users"),
    pytest.param('"private_key_id": "<from the console>"', id="private_key_id placeholder"),
]


@pytest.mark.parametrize(("text", "gone", "kept"), POSITIVE)
def test_each_credential_form_is_redacted_and_the_cleaner_cannot_restore_it(
    text: str, gone: list[str], kept: list[str]
) -> None:
    stored, kinds = secrets.redact_text(text)
    assert kinds, f"nothing found in {text!r}"
    for view in (stored, clean(stored)):
        for piece in gone:
            assert piece not in view, f"{piece!r} survives in {view!r}"
        for piece in kept:
            assert piece in view, f"{piece!r} was lost from {view!r}"
    assert secrets.redact_text(stored) == (stored, []), "redaction is idempotent"


@pytest.mark.parametrize("text", NEGATIVE)
def test_look_alikes_pass_unchanged(text: str) -> None:
    assert secrets.redact_text(text) == (text, [])


def test_a_secret_used_as_a_key_is_redacted_and_named() -> None:
    data = {"key": "cfg", "value": {GH: "deploy", "ok": {ANT: 1}}, "metadata": {j("DB_PASS=", "hunter2x"): True}}
    stored, notes = secrets.scrub(data, "redact")
    dumped = repr(stored)
    assert GH not in dumped and ANT not in dumped and "hunter2x" not in dumped
    assert "deploy" in dumped and stored["value"]["ok"] == {"[REDACTED:Anthropic API key]": 1}
    assert any(note.startswith("GitHub token in key of value") for note in notes), notes
    assert data["value"][GH] == "deploy", "the caller's object is not mutated"


def test_two_secret_keys_in_one_object_both_survive_as_distinct_keys() -> None:
    other = GH[:-4] + "ZZZZ"
    stored, _ = secrets.scrub({"value": {GH: 1, other: 2}}, "redact")
    assert sorted(stored["value"].values()) == [1, 2]
    assert all("REDACTED" in key for key in stored["value"])


def test_a_list_of_topics_and_imported_keys_are_scanned() -> None:
    stored, notes = secrets.scrub({"topics": ["deploy", GH], "imports": [{"labels": {ANT: "x"}}]}, "redact")
    assert GH not in repr(stored) and ANT not in repr(stored)
    assert len(notes) == 2


@pytest.mark.parametrize(
    ("value", "gone"),
    [
        pytest.param({"db": {"password": j("hun", "ter2")}}, "hunter2", id="password field"),
        pytest.param({"DB_PASS": j("x", "1")}, "x1", id="env-style field"),
        pytest.param(
            {"auths": {"ghcr.io": {"auth": b64("bob:dockerpw1")}}},
            b64("bob:dockerpw1"),
            id="docker config as an object",
        ),
        pytest.param({"api_token": j("tok", "9f8e7d6c")}, "tok9f8e7d6c", id="api_token field"),
        pytest.param({"private_key_id": j("a1b2c3d4", "e5f60718")}, "a1b2c3d4e5f60718", id="private_key_id field"),
    ],
)
def test_a_credential_field_in_structured_data_is_redacted(value: dict[str, Any], gone: str) -> None:
    stored, notes = secrets.scrub({"value": value}, "redact")
    assert gone not in repr(stored) and notes


def test_an_aws_secret_is_redacted_when_its_key_id_is_in_another_field() -> None:
    data = {"type": "fact", "content": "deploy account", "metadata": {"key_id": KEY_ID, "value": MIXED40}}
    stored, notes = secrets.scrub(data, "redact")
    assert MIXED40 not in repr(stored) and KEY_ID not in repr(stored)
    assert stored["metadata"]["value"] == "[REDACTED:AWS secret key]"
    assert "AWS secret key in metadata.value" in notes


def test_a_mixed_case_40_character_string_alone_is_kept() -> None:
    data = {"type": "fact", "content": "deploy account", "metadata": {"value": MIXED40}}
    assert secrets.scrub(data, "redact") == (data, [])


def test_graph_node_metadata_never_stores_an_aws_secret_whose_key_id_is_beside_it(app: App) -> None:
    from contextflow.adapters.cli import main

    code = main(["add", "deploy account", "--type", "fact", "--meta", f"key_id={KEY_ID}", "--meta", f"value={MIXED40}"])
    assert code == 0
    raw = b"".join(path.read_bytes() for path in app.store.folder.glob("events.*.jsonl")).decode()
    assert "graph.node" in raw and "deploy account" in raw
    assert MIXED40 not in raw and KEY_ID not in raw


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"password": "${DB_PASSWORD}", "secret": "the cache was stale"}, id="placeholder and prose"),
        pytest.param({"auth": "oauth", "token_count": "12", "passwords_rotated": "yes"}, id="ordinary fields"),
        pytest.param({"password": ""}, id="empty password"),
    ],
)
def test_ordinary_fields_that_look_like_credentials_pass(value: dict[str, Any]) -> None:
    data = {"value": value}
    assert secrets.scrub(data, "redact") == (data, [])


@pytest.mark.anyio
async def test_secret_keys_and_split_tokens_are_neither_stored_nor_echoed(app: App) -> None:
    split = j(GH[:18], "\u200b", GH[18:])
    async with connect(app) as client:
        stored = await client.call_tool("context_set", {"key": "cfg:deploy", "value": {GH: {"DB_PASS": "X1!"}}})
        noted = await client.call_tool("append_shared_note", {"agent": "a", "text": f"token {split}", "tags": ["t"]})
        got = await client.call_tool("context_get", {"key": "cfg:deploy"})
        read = await client.call_tool("read_shared_context", {"format": "json"})
    for result in (stored, noted, got, read):
        assert not result.is_error, text_of(result)
        shown = " ".join(block.text for block in result.content) + repr(result.structured_content)
        # "X1!" cannot occur in ids or times (lower-case letters and digits), so finding it means the password leaked
        assert GH not in clean(shown) and GH[:18] not in shown and "X1!" not in shown
    assert "GitHub token in key of value" in " ".join(block.text for block in stored.content)
    raw = b"".join(path.read_bytes() for path in app.store.folder.glob("events.*.jsonl")).decode()
    assert GH[:18] not in raw and "X1!" not in raw

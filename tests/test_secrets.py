"""Secrets are redacted (or refused) before anything reaches the logs; public keys pass.

Fake credentials are assembled at run time so this file holds no literal that a secret
scanner would flag.
"""

from __future__ import annotations

import pytest

from contextflow.app import App
from contextflow.core import secret_rules, secrets
from contextflow.core.errors import InputError
from tests.conftest import text_of

A40 = "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3gH5jK7m"


def fake(*parts: str) -> str:
    return "".join(parts)


TOKENS = {
    "private key (OpenSSH)": fake(
        "-----BEGIN OPENSSH ",
        "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n",
        "AAAAMwAAAAtzc2gtZWQyNTUxOQ\n-----END OPENSSH ",
        "PRIVATE KEY-----",
    ),
    "private key (RSA PEM)": fake(
        "-----BEGIN RSA ", "PRIVATE KEY-----\nMIIEowIBAAKCAQEA", A40, "\n-----END RSA ", "PRIVATE KEY-----"
    ),
    "private key (PKCS8 in JSON)": fake(
        '{"private_key": "-----BEGIN ',
        "PRIVATE KEY-----\\nMIIEvQIBADANBg",
        A40,
        "\\n-----END ",
        'PRIVATE KEY-----\\n"}',
    ),
    "private key (PGP)": fake(
        "-----BEGIN PGP ", "PRIVATE KEY BLOCK-----\n\nlQOYBF", A40, "\n-----END PGP ", "PRIVATE KEY BLOCK-----"
    ),
    "private key (torn, no END)": fake("-----BEGIN EC ", "PRIVATE KEY-----\nMHcCAQEEI", A40),
    "AWS access key id": fake("AKIA", "QWERTYUIOPASDFGH"),
    "AWS secret key": fake("aws_secret_access_key = ", A40),
    "GitHub classic token": fake("ghp_", A40[:36]),
    "GitHub fine-grained token": fake("github_pat_", "11ABCDEFG0", A40, A40[:20]),
    "GitLab token": fake("glpat-", A40[:20]),
    "Slack bot token": fake("xoxb-", "123456789012-1234567890123-", A40[:24]),
    "Slack webhook": fake("https://hooks.slack.com/services/T0000/B0000/", A40[:24]),
    "OpenAI project key": fake("sk-proj-", A40, A40),
    "OpenAI legacy key": fake("sk-", A40[:20], "T3BlbkFJ", A40[:20]),
    "Anthropic key": fake("sk-ant-api03-", A40, A40),
    "Google API key": fake("AIza", "Sy", A40[:33]),
    "Google OAuth token": fake("ya29.", A40),
    "Stripe live key": fake("sk_live_", A40[:24]),
    "Stripe test key": fake("sk_test_", A40[:24]),
    "Hugging Face token": fake("hf_", A40[:34]),
    "npm token": fake("npm_", A40[:36]),
    "PyPI token": fake("pypi-AgEIcHlwaS5vcmc", A40, A40),
    "SendGrid key": fake("SG.", A40[:22], ".", A40, "abc"),
    "JWT bearer": fake(
        "Authorization: Bearer ",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        ".",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        ".",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    "opaque bearer": fake("curl -H 'Authorization: Bearer ", A40, "'"),
    "URL credentials": fake("git clone https://deploy:", "s3cr3t-", A40[:10], "@git.example.com/repo.git"),
    "password assignment": fake("DB_PASSWORD=", "Tr0ub4dor", "&3x"),
    "Azure storage key": fake("DefaultEndpointsProtocol=https;AccountKey=", A40, A40, "abcdefgh=="),
}

PUBLIC = {
    "seed 000 machine facts": "chisel's SSH fingerprint is SHA256:jgoxosqXz0aqPLAX6mv3lE0S8QVb8qd2oJkD4iZ1y3M, "
    "ip 192.168.1.7",
    "ssh public key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@chisel",
    "rsa public key": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQC7" + A40 + A40 + " me@anvil",
    "md5 fingerprint": "MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48",
    "PEM public key": "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n"
    "-----END PUBLIC KEY-----",
    "PGP public key": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBF" + A40 + "\n-----END PGP PUBLIC KEY BLOCK-----",
    "certificate": "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE" + A40 + "\n-----END CERTIFICATE-----",
    "git and sha256 hashes": "commit 3f786850e387550fdab836ed7e6dc881de23001b, sha256 "
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "prose about secrets": "Rotate the API key tomorrow; the password policy needs 12 characters. Token budget: 4000.",
    "placeholders": "password=${DB_PASSWORD} api_key: <your key here> secret = [REDACTED:credential]",
    "a contextflow id": "see node 7K3QF9ZP2M4XW8RT and session feature/login-flow",
}


@pytest.mark.parametrize("name", TOKENS)
def test_each_kind_of_secret_is_replaced_and_named(name: str) -> None:
    original = "before " + TOKENS[name] + " after"
    cleaned, kinds = secrets.redact_text(original)
    assert kinds, f"{name} was not detected"
    assert "[REDACTED:" in cleaned
    assert cleaned.startswith("before ")
    for piece in (A40[:20], "Tr0ub4dor", "QWERTYUIOPASDFGH", "SflKxwRJSMeKKF2QT4fw"):
        assert piece not in cleaned


@pytest.mark.parametrize("name", PUBLIC)
def test_public_keys_fingerprints_and_prose_pass_unchanged(name: str) -> None:
    assert secrets.redact_text(PUBLIC[name]) == (PUBLIC[name], [])


def test_a_whole_private_key_block_is_removed_not_just_its_header() -> None:
    cleaned, kinds = secrets.redact_text("key:\n" + TOKENS["private key (OpenSSH)"] + "\nthanks")
    assert cleaned == "key:\n[REDACTED:private key]\nthanks"
    assert kinds == ["private key"]


def test_redaction_is_idempotent() -> None:
    once, _ = secrets.redact_text(" ".join(TOKENS.values()))
    assert secrets.redact_text(once) == (once, [])


def test_nested_values_are_scrubbed_and_the_fields_are_named() -> None:
    data = {
        "key": "machine:chisel",
        "value": {
            "ssh": {"fingerprint": PUBLIC["md5 fingerprint"]},
            "tokens": ["fine", TOKENS["GitHub classic token"]],
        },
    }
    cleaned, notes = secrets.scrub(data, "redact")
    assert cleaned["value"]["tokens"][1] == "[REDACTED:GitHub token]"
    assert cleaned["value"]["ssh"] == data["value"]["ssh"]
    assert notes == ["GitHub token in value.tokens[1]"]
    assert cleaned["redacted"] == notes
    assert data["value"]["tokens"][1] == TOKENS["GitHub classic token"], "the caller's object is not mutated"


def test_clean_data_comes_back_as_the_same_object() -> None:
    data = {"text": "nothing to see", "tags": ["a", "b"]}
    assert secrets.scrub(data, "redact") == (data, [])
    assert secrets.scrub(data, "redact")[0] is data


def test_very_deep_values_do_not_exhaust_the_stack() -> None:
    deep: object = TOKENS["Stripe live key"]
    for _ in range(5000):
        deep = [deep]
    _, notes = secrets.scrub({"value": deep}, "redact")
    assert len(notes) == 1 and notes[0].startswith("Stripe")


def test_the_log_on_disk_never_holds_the_secret(app: App) -> None:
    token = TOKENS["Anthropic key"]
    event = app.store.append("note", {"agent": "claude", "text": f"use {token} for the demo"})
    assert event.data["text"] == "use [REDACTED:Anthropic API key] for the demo"
    assert event.data["redacted"] == ["Anthropic API key in text"]
    raw = b"".join(path.read_bytes() for path in app.store.folder.glob("events.*.jsonl"))
    assert token.encode() not in raw
    assert b"REDACTED" in raw


def test_refuse_mode_fails_the_write_and_stores_nothing(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFLOW_SECRETS", "refuse")
    app = App.open()  # the setting of the environment the app is opened with
    token = TOKENS["GitHub classic token"]
    with pytest.raises(InputError) as caught:
        app.store.append("note", {"agent": "claude", "text": token})
    assert "GitHub token in text" in str(caught.value)
    assert token not in str(caught.value)
    assert app.store.event_count == 0


def test_off_mode_stores_text_verbatim(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFLOW_SECRETS", "off")
    app = App.open()
    token = TOKENS["GitHub classic token"]
    assert app.store.append("note", {"agent": "claude", "text": token}).data["text"] == token


def test_an_unknown_mode_is_a_clear_error(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFLOW_SECRETS", "maybe")
    with pytest.raises(InputError, match=r"CONTEXTFLOW_SECRETS='maybe'.*redact.*refuse.*off"):
        App.open()  # resolved once, when the app opens
    assert app.store.append("note", {"agent": "claude", "text": "hello"})  # an app opened before keeps its mode


def test_the_mode_comes_from_the_environment_the_app_is_given_not_the_process(app: App) -> None:
    import os

    token = TOKENS["GitHub classic token"]
    refusing = App.open({**os.environ, "CONTEXTFLOW_SECRETS": "refuse"})
    assert os.environ.get("CONTEXTFLOW_SECRETS") is None
    with pytest.raises(InputError):
        refusing.store.append("note", {"agent": "claude", "text": token})


@pytest.mark.anyio
async def test_a_tool_reply_tells_the_agent_what_was_redacted(client) -> None:  # type: ignore[no-untyped-def]
    token = TOKENS["AWS access key id"]
    result = await client.call_tool(
        "append_shared_note", {"agent": "claude", "text": f"deploy key {token}", "session_id": "s"}
    )
    assert not result.is_error
    notice = " ".join(block.text for block in result.content)
    assert "Redacted before storing" in notice and "AWS Access Key in text" in notice
    assert token not in notice
    assert result.structured_content["redacted"] == ["AWS Access Key in text"]
    read = await client.call_tool("read_shared_context", {"session_id": "s", "format": "json"})
    assert token not in text_of(read)
    assert "[REDACTED:AWS Access Key]" in text_of(read)


@pytest.fixture
def refusing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXTFLOW_SECRETS", "refuse")  # before the server's app opens


@pytest.mark.anyio
async def test_refusal_reaches_the_agent_as_a_tool_error(refusing, client) -> None:  # type: ignore[no-untyped-def]
    result = await client.call_tool(
        "write_shared_handoff", {"agent": "codex", "summary": "done", "next_steps": [TOKENS["Slack bot token"]]}
    )
    assert result.is_error
    assert "Slack" in text_of(result) and "next_steps[0]" in text_of(result)
    assert "CONTEXTFLOW_SECRETS=redact" in text_of(result)


def test_library_patterns_are_cached_per_machine_and_a_bad_cache_is_rebuilt() -> None:
    cache_file = secret_rules.pattern_cache_file()
    cache_file.unlink(missing_ok=True)
    fresh = secret_rules.library_patterns()
    assert cache_file.is_file()
    assert secret_rules.library_patterns() == fresh
    assert {row[0] for row in fresh} >= {"AWS Access Key", "GitHub Token", "Slack Token", "JSON Web Token"}
    cache_file.write_text("not json")
    assert secret_rules.library_patterns() == fresh
    assert secret_rules.library_patterns() == fresh, "the rebuilt cache reads back"


def _batch_corpus() -> list[tuple[str, dict[str, object]]]:
    """Events as an import writes them: mostly clean, with every kind of secret and every public
    look-alike in a field, a key, a list, a credential-named field, text to clean, and a private key
    whose BEGIN and END lines land in two neighbouring events."""
    clean = [("graph.node", {"content": f"entity {i} works at Acme", "tags": ["kind:person"]}) for i in range(40)]
    dirty: list[tuple[str, dict[str, object]]] = []
    for name, token in TOKENS.items():
        dirty.append(("graph.node", {"content": f"{name}: {token}", "metadata": {"n": 1}}))
        dirty.append(("graph.node", {"content": "x", "metadata": {"note": ["fine", token]}}))
    dirty += [("graph.node", {"content": text, "tags": ["a:b"]}) for text in PUBLIC.values()]
    dirty += [
        ("graph.node", {"content": "y", "metadata": {"password": "hunter2hunter2"}}),
        ("graph.node", {"content": "y", "metadata": {"secret": "the cache was stale"}}),
        ("graph.node", {"content": fake("ghp_", A40[:18], "\u200b", A40[18:36])}),
        ("graph.node", {"content": fake("-----BEGIN RSA ", "PRIVATE KEY-----\nMIIEowIBAAKCAQEA")}),
        ("graph.node", {"content": fake(A40, "\n-----END RSA ", "PRIVATE KEY-----")}),
        ("graph.node", {fake("ghp_", A40[:36]): "a secret as a key"}),
    ]
    return [item for pair in zip(clean, dirty, strict=False) for item in pair] + clean[len(dirty) :] + dirty[40:]


@pytest.mark.parametrize("seed", range(5))
def test_a_batch_is_scrubbed_exactly_as_each_event_alone(seed: int) -> None:
    import random

    items = _batch_corpus()
    random.Random(seed).shuffle(items)
    assert len(items) >= secrets.BATCH_MIN
    alone = [(kind, secrets.scrub(data, "redact")[0]) for kind, data in items]
    assert secrets.scrub_items(items) == alone
    assert any("redacted" in data for _, data in alone)


REWRITE_SAMPLES = [
    'ibm_cloud_iam_api_key = "'
    + A40
    + 'Ab3d" and cloudant_password: '
    + "0f" * 32
    + "\nsoftlayer_api_key => "
    + "a1" * 32
    + ", ibm_cos_hmac_secret_access_key   "
    + "0f" * 24
    + " done",
    fake(
        "Authorization: Bearer ",
        "eyJhbGciOiJIUzI1NiJ9",
        ".",
        "eyJzdWIiOiIxIn0",
        ".",
        A40,
        " and unsigned eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.",
    ),
    fake("//registry.npmjs.org/:_authToken=", "npm_", A40[:36], "\n//npm.pkg.github.com/owner/:_authToken=", A40[:36]),
]


@pytest.mark.parametrize("index", range(len(secret_rules.LIBRARY_REWRITES)))
def test_each_rewrite_of_a_library_pattern_still_applies_and_finds_what_the_original_finds(index: int) -> None:
    import re

    old, _ = secret_rules.LIBRARY_REWRITES[index]
    touched = [(pattern, flags) for _, pattern, flags, _ in secret_rules.library_patterns() if old in pattern]
    assert touched, f"detect-secrets no longer has {old!r}: update or drop the rewrite"
    for pattern, flags in touched:
        original, linear = re.compile(pattern, flags), re.compile(secret_rules.rewritten(pattern), flags)
        found = [match.group(0) for match in original.finditer(REWRITE_SAMPLES[index])]
        assert [match.group(0) for match in linear.finditer(REWRITE_SAMPLES[index])] == found
    assert any(re.compile(pattern, flags).search(REWRITE_SAMPLES[index]) for pattern, flags in touched)


# -- evidence and the scan's shortcuts ---------------------------------------------------------


def test_evidence_redacts_a_learned_value_wherever_it_repeats_and_only_as_a_whole_word() -> None:
    evidence = secrets.Evidence()
    evidence.learn_all(["export API_TOKEN=" + A40, "nothing here"])
    assert evidence.values == {A40: "credential"}
    assert evidence.safe(f"used {A40}.") == "used [REDACTED:credential]."
    assert evidence.safe(f"x{A40}y") == f"x{A40}y"  # inside a longer word: another thing


def test_evidence_of_texts_holding_nothing_is_one_scan_and_learns_nothing() -> None:
    evidence = secrets.Evidence()
    evidence.learn_all(["ls -1", "all tests passed", "fix the bug"])
    assert evidence.values == {} and evidence.safe("all tests passed") == "all tests passed"


@pytest.mark.parametrize(
    "text",
    ["plain prose with nothing in it", "password: " + A40 + " and ghp_" + A40[:36], "a: b\nkey=x; s.y", ""],
)
def test_the_rules_chosen_by_needles_are_those_the_needle_check_runs(text: str) -> None:
    lowered = text.lower()
    expected = [rule for rule in secret_rules.rules() if not rule.needles or any(n in lowered for n in rule.needles)]
    assert secrets._rules_for(text) == expected


def test_nothing_to_redact_agrees_with_scrub() -> None:
    assert secrets.nothing_to_redact({"a": ["plain", {"b": "text"}]})
    assert not secrets.nothing_to_redact({"a": ["DB_PASSWORD=" + A40]})
    assert not secrets.nothing_to_redact({"password": A40})  # a credential-named field: scrub looks closer

"""Redaction by evidence, not shape: a value is exempt only when it really is a reference (`$VAR`,
`${VAR}`, `%VAR%`, `<placeholder>`, `{{ secrets.X }}`, a mask), and a tag or punctuation after a
credential never shields it. Every context rule x every value shape x what follows: 0 in clear in
the store (the generated corpus in `secret_corpus.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextflow.adapters.cli import main
from contextflow.core import secrets
from tests.hostile.secret_corpus import AFTER, TEMPLATES, VALUES, credential_texts, docker_auth


def stored(store_dir: Path) -> bytes:
    return b"".join(path.read_bytes() for path in store_dir.glob("events.*.jsonl"))


def test_every_generated_credential_form_is_redacted_in_the_store(app, store_dir):
    corpus = list(credential_texts())
    assert len(corpus) > len(TEMPLATES) * len(VALUES) * (len(AFTER) - 1)
    items = [("note", {"project": "shared", "session_id": "s1", "agent": "me", "text": text}) for *_, text in corpus]
    app.store.append_many(items)
    written = stored(store_dir).decode()
    clear = [(rule, shape, after) for rule, shape, after, core, _ in corpus if core in written]
    assert not clear, f"{len(clear)} of {len(corpus)} in clear, e.g. {clear[:8]}"


def test_a_tag_after_a_credential_stays_and_the_credential_goes():
    text, kinds = secrets.redact_text("machine h login u password S3cretQ9</ctx:remember>")
    assert kinds and "S3cretQ9" not in text and text.endswith("</ctx:remember>")


def test_docker_auth_holding_a_paren_is_redacted():
    text, kinds = secrets.redact_text(docker_auth())
    assert kinds and "auth" in text and "[REDACTED" in text


@pytest.mark.parametrize(
    "text",
    [
        "psql postgres://app:Tr0ub4dor(3)x@db/app",
        "machine h login u password S3cretQ9</ctx:remember>",
    ],
)
def test_the_reported_notes_leave_no_password_in_the_log(text, store_dir, capsys):
    assert main(["note", "--agent", "a", text]) == 0
    written = stored(store_dir)
    assert b"Tr0ub4dor" not in written and b"S3cretQ9" not in written


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=$DB_PASSWORD and API_TOKEN=${API_TOKEN} and SECRET_KEY=${SECRET_KEY:-dev}",
        "set DB_PASSWORD=%DB_PASSWORD% on Windows",
        "API_TOKEN=<your token> or password: <password here>",
        "password: {{ secrets.DB_PASSWORD }} and MYSQL_PWD={{ vault_mysql_pwd }}",
        'password = "********" and PGPASSWORD=xxxxxxxx and secret: "[REDACTED]"',
        "postgres://app:${DB_PASS}@db/app and https://user:<password>@host/x",
        "machine h login u password $NETRC_PASSWORD",
        "curl -u admin:$API_PASSWORD https://api.example.com",
        "mysql -u root -p$MYSQL_PWD shop",
        "password = config.db.password; token_key = self.signing_key",
        'password: "%(db_password)s" and api_key = "{api_key}"',
    ],
)
def test_real_references_are_kept(text):
    assert secrets.redact_text(text) == (text, [])
